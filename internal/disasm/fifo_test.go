package disasm

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"er/internal/regfile"
)

// A FIFO (or a device) named where an object file is expected is refused at once, with an error that
// says what it is: opening it for reading would wait for a writer for ever.
func TestFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "prog")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	_, err := Code(fifo, 0x1000, 0x1010)
	var nr *regfile.NotRegularError
	if !errors.As(err, &nr) {
		t.Errorf("a FIFO: %v; want a not-regular-file error", err)
	}
}
