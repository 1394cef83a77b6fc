package cachedir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// said collects what is said for the test, and gives it back.
func said(t *testing.T) func() []string {
	t.Helper()
	var mu sync.Mutex
	var msgs []string
	old := Warn
	Warn = func(m string) {
		mu.Lock()
		msgs = append(msgs, m)
		mu.Unlock()
	}
	t.Cleanup(func() { Warn = old })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := msgs
		msgs = nil
		return out
	}
}

func TestRoot(t *testing.T) {
	msgs := said(t)
	base := t.TempDir()
	dir := filepath.Join(base, "a", "er")
	root := Root(dir)
	if !strings.HasPrefix(root, "/proc/self/fd/") || Root(dir) != root {
		t.Fatalf("Root(%s) = %q, then %q; want one /proc/self/fd/N", dir, root, Root(dir))
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the directory made: %v, %v; want a directory of mode 0700", fi, err)
	}
	// Renamed away, with a link to elsewhere put in its place: the cache is still the directory opened.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir+".old", "f")); err != nil {
		t.Errorf("a file written through the root is not in the directory opened: %v", err)
	}
	if b, err := ReadFile(filepath.Join(root, "f"), 10); err != nil || string(b) != "x" {
		t.Errorf("ReadFile = %q, %v; want x", b, err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("written where the swapped-in link points: %v", entries)
	}
	if m := msgs(); len(m) != 0 {
		t.Errorf("said %q, want nothing", m)
	}
	if Root("") != "" {
		t.Error(`Root("") is not ""`)
	}
	// Cannot be made (a file where a directory would be): no cache, and nothing said.
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := Root(filepath.Join(file, "er")); r != "" || len(msgs()) != 0 {
		t.Errorf("Root under a file = %q; want \"\", nothing said", r)
	}
}

// TestRootRefuses: a cache directory that another user owns, that others may enter, or that is not
// a directory is not used, and is said once with why. Before, er used any of them (and followed a
// link there).
func TestRootRefuses(t *testing.T) {
	msgs := said(t)
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ dir, why string }{
		{open, "its mode is 0755: others may enter it; chmod 700 " + open},
		{fifo, "it is a named pipe (FIFO), not a directory; remove it, and er makes the directory"},
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ dir, why string }{other,
			"it belongs to uid 65534, not to uid 0 who runs er, and that user could put files in it for er to read; use a directory of your own (set ER_CACHE_DIR, or HOME)"})
	}
	for _, c := range cases {
		if r := Root(c.dir); r != "" {
			t.Errorf("Root(%s) = %q, want it refused", c.dir, r)
		}
		Root(c.dir)
		want := "the cache directory " + c.dir + " is not used: " + c.why
		if m := msgs(); len(m) != 1 || m[0] != want {
			t.Errorf("Root(%s) twice said %q, want once %q", c.dir, m, want)
		}
	}
}

// TestReadFileRefuses: a file in the cache that is a FIFO, a link or another user's is not read
// (not waited on, not followed), and is said once. Before, the cache's readers (os.ReadFile)
// followed links and waited on a FIFO for a writer.
func TestReadFileRefuses(t *testing.T) {
	msgs := said(t)
	dir := filepath.Join(t.TempDir(), "er")
	root := Root(dir)
	if root == "" {
		t.Fatal("no cache directory")
	}
	fifo := filepath.Join(root, "sum-fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "planted")
	if err := os.WriteFile(target, []byte("planted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, "sum-link")); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, what string }{
		{"sum-fifo", "a named pipe (FIFO)"},
		{"sum-link", "a symbolic link"},
	}
	if os.Geteuid() == 0 {
		if err := os.WriteFile(filepath.Join(root, "sum-other"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(root, "sum-other"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ name, what string }{"sum-other", "a file of uid 65534"})
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(filepath.Join(root, c.name), 100)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			if w, werr := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); werr == nil {
				w.Close() // let the reader go
			}
			err = <-done
			t.Errorf("ReadFile(%s) waited until the test's deadline", c.name)
		}
		cancel()
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%s): %v, want it refused", c.name, err)
		}
		if Usable(filepath.Join(root, c.name)) {
			t.Errorf("Usable(%s)", c.name)
		}
		want := "the cache file " + filepath.Join(dir, c.name) + " is not read: it is " + c.what + ", and er keeps only regular files of its own there (remove it)"
		if m := msgs(); len(m) != 1 || m[0] != want {
			t.Errorf("%s: said %q, want once %q", c.name, m, want)
		}
	}
	if _, err := ReadFile(filepath.Join(root, "missing"), 10); !errors.Is(err, fs.ErrNotExist) || len(msgs()) != 0 {
		t.Errorf("a missing file: %v, want fs.ErrNotExist and nothing said", err)
	}
	big := filepath.Join(root, "big")
	if err := os.WriteFile(big, make([]byte, 11), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big, 10); err == nil {
		t.Error("ReadFile of 11 bytes with a limit of 10: no error")
	}
	msgs()
	if !Usable(big) {
		t.Error("a regular file of the user's own is not usable")
	}
}
