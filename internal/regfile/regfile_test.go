package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	linkToZero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", linkToZero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, kind string
	}{
		{fifo, "a named pipe (FIFO)"}, // would block an open for reading until a writer came
		{linkToZero, "a character device"},
		{"/dev/null", "a character device"},
		{dir, "a directory"},
	} {
		_, _, err := Open(c.path)
		var nr *NotRegularError
		if !errors.As(err, &nr) {
			t.Errorf("Open(%s): %v, want a *NotRegularError", c.path, err)
			continue
		}
		if want := c.path + ": not a regular file but " + c.kind; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Open(%s): %q, want it to start %q", c.path, err, want)
		}
		if _, err := ReadFile(c.path, 1<<20, "x"); !errors.As(err, &nr) {
			t.Errorf("ReadFile(%s): %v, want a *NotRegularError", c.path, err)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		b, err := ReadFile(p, 5, "f")
		if err != nil || string(b) != "hello" {
			t.Errorf("ReadFile(%s) = %q, %v; want hello", p, b, err)
		}
	}
	_, err := ReadFile(file, 4, "the test file")
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 5 || tl.Limit != 4 {
		t.Fatalf("ReadFile with limit 4: %v, want a *TooLargeError of 5 bytes over 4", err)
	}
	if want := file + ": 5 bytes, more than the test file may hold (4 bytes)"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%q, want it to start %q", err, want)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 10, "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if err := Check(file); err != nil {
		t.Errorf("Check(%s): %v", file, err)
	}
	if err := Check("/dev/null"); err == nil {
		t.Error("Check(/dev/null): no error")
	}
}

func TestKind(t *testing.T) {
	for m, want := range map[fs.FileMode]string{0: "a regular file", fs.ModeDir: "a directory", fs.ModeNamedPipe: "a named pipe (FIFO)",
		fs.ModeSocket: "a socket", fs.ModeDevice | fs.ModeCharDevice: "a character device", fs.ModeDevice: "a block device",
		fs.ModeSymlink: "a symbolic link", fs.ModeIrregular: "a special file"} {
		if got := Kind(m); got != want {
			t.Errorf("Kind(%v) = %q, want %q", m, got, want)
		}
	}
}

// TestOpenRefusesKernelFiles: a file of /proc or /sys is regular by its mode but made up by the
// kernel as it is read (/proc/kcore: 128 TiB; /proc/self/environ: the reader's environment), so no
// experiment holds or names one. Before, Open opened them as any regular file.
func TestOpenRefusesKernelFiles(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "libx.so")
	if err := os.Symlink("/proc/self/status", link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, fs string }{
		{"/proc/self/status", "procfs"},
		{link, "procfs"}, // through a link: the file opened is checked, not the name
		{"/sys/kernel/notes", "sysfs"},
	} {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("%s: %v; not tried", c.path, err)
			continue
		}
		f, _, err := Open(c.path)
		if err == nil {
			f.Close()
			t.Errorf("Open(%s) opened it; want an error", c.path)
			continue
		}
		if want := c.path + ": a file of the kernel's " + c.fs + " (such as /proc or /sys), not one that an experiment holds or names; it is not read"; err.Error() != want {
			t.Errorf("Open(%s): %q, want %q", c.path, err, want)
		}
		if pe := (*PseudoFileError)(nil); !errors.As(err, &pe) || pe.FS != c.fs {
			t.Errorf("Open(%s): %T, want a *PseudoFileError of %s", c.path, err, c.fs)
		}
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, _, err := Open(file); err != nil {
		t.Errorf("Open of a file on disk: %v", err)
	} else {
		f.Close()
	}
}
