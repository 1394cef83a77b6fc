package collect

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReleaseInHelper(t *testing.T) {
	t.Run("shell", testReleaseInHelper)
	t.Run("er", func(t *testing.T) {
		// Where there is no shell, the helper is this program run again.
		defer func(s []string) { holderShell = s }(holderShell)
		holderShell = []string{filepath.Join(t.TempDir(), "no-shell"), "-c", "read x"}
		testReleaseInHelper(t)
	})
}

func testReleaseInHelper(t *testing.T) {
	// A pipe's write end stands for an event's file: the helper holds it after er closed its own, so
	// the read end ends only when the helper has exited.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	stop, pid, ok := handOff([]int{fd})
	if !ok {
		t.Fatal("no helper started")
	}
	// Its output goes nowhere: holding er's, it kept a reader of er's output waiting for its end.
	for _, n := range []string{"1", "2"} {
		if to, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", n)); err != nil || to != os.DevNull {
			t.Errorf("the helper's file %s is %q (%v), want %s", n, to, err, os.DevNull)
		}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		t.Error("the file is still open in er")
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, r)
		done <- err
	}()
	// The helper holds it: no end of file until it is let go (were it not held, the end would come at
	// once; a loaded machine can only make this check pass, not fail).
	select {
	case <-done:
		t.Fatal("the file was released before the helper was let go")
	case <-time.After(200 * time.Millisecond):
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the helper still holds the file 60 s after it was let go")
	}
}
