package safedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bothWays runs t with openat2 and with the component-wise fallback.
func bothWays(t *testing.T, test func(t *testing.T)) {
	for _, v := range []bool{true, false} {
		name := map[bool]string{true: "openat2", false: "fallback"}[v]
		t.Run(name, func(t *testing.T) {
			old := useOpenat2.Load()
			useOpenat2.Store(v)
			defer useOpenat2.Store(old)
			test(t)
		})
	}
}

func mustOpen(t *testing.T, p string) *Dir {
	t.Helper()
	d, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func wantLink(t *testing.T, err error, path string) {
	t.Helper()
	var le *LinkError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T), want a *LinkError", err, err)
	}
	if le.Path != path {
		t.Errorf("LinkError.Path %q, want %q", le.Path, path)
	}
	if !strings.Contains(err.Error(), "does not follow links") {
		t.Errorf("message %q does not say why", err)
	}
}

// empty reports whether directory p has no entries.
func empty(t *testing.T, p string) {
	t.Helper()
	es, err := os.ReadDir(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 0 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v: something was written through a link", p, names)
	}
}

func TestLinkedDirectoryRefused(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, elsewhere := t.TempDir(), t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(root, "archives")); err != nil {
			t.Fatal(err)
		}
		d := mustOpen(t, root)
		_, err := d.MkdirAll("archives/objects/abc", 0o755)
		wantLink(t, err, filepath.Join(root, "archives"))
		_, err = d.Sub("archives")
		wantLink(t, err, filepath.Join(root, "archives"))
		_, err = d.Create("archives/x", 0o644)
		wantLink(t, err, filepath.Join(root, "archives"))
		empty(t, elsewhere)
	})
}

func TestLinkedInnerDirectoryRefused(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, elsewhere := t.TempDir(), t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "archives"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Join(root, "archives", "objects")); err != nil {
			t.Fatal(err)
		}
		d := mustOpen(t, root)
		_, err := d.MkdirAll("archives/objects/abc", 0o755)
		wantLink(t, err, filepath.Join(root, "archives/objects"))
		empty(t, elsewhere)
	})
}

func TestMkdirAllCreates(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root := t.TempDir()
		d := mustOpen(t, root)
		sub, err := d.MkdirAll("a/b/c", 0o755)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if sub.Path() != filepath.Join(root, "a/b/c") {
			t.Errorf("Path %q", sub.Path())
		}
		if err := sub.WriteFile("f", []byte("hello"), 0o640); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, "a/b/c/f"))
		if err != nil || string(b) != "hello" {
			t.Fatalf("read %q, %v", b, err)
		}
		fi, err := d.Lstat("a/b/c/f")
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o640 || fi.Size() != 5 {
			t.Errorf("mode %v size %d, want -rw-r----- 5", fi.Mode(), fi.Size())
		}
	})
}

// WriteFile replaces a link at its name (the link, not its target) and never opens an old file.
func TestWriteFileReplacesLink(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, elsewhere := t.TempDir(), t.TempDir()
		target := filepath.Join(elsewhere, "passwd")
		if err := os.WriteFile(target, []byte("root:x:0:0"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, "log.xml")); err != nil {
			t.Fatal(err)
		}
		d := mustOpen(t, root)
		if err := d.WriteFile("log.xml", []byte("<experiment/>"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(target); string(b) != "root:x:0:0" {
			t.Errorf("the link's target was written: %q", b)
		}
		fi, err := os.Lstat(filepath.Join(root, "log.xml"))
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("log.xml: %v, %v; want a regular file", fi, err)
		}
		es, _ := os.ReadDir(root)
		if len(es) != 1 {
			t.Errorf("%d entries left, want log.xml alone", len(es))
		}
	})
}

func TestOpenFileRefusesLink(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root := t.TempDir()
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(root, "files.xml")); err != nil {
			t.Fatal(err)
		}
		d := mustOpen(t, root)
		_, err := d.OpenFile("files.xml")
		wantLink(t, err, filepath.Join(root, "files.xml"))
		_, err = d.Create("files.xml", 0o644)
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("Create over a link: %v, want it to exist", err)
		}
	})
}

func TestNamesGoDownOnly(t *testing.T) {
	d := mustOpen(t, t.TempDir())
	for _, n := range []string{"", "/etc", "../x", "a/../../x", "a//b", "./a"} {
		if _, err := d.Sub(n); err == nil || errors.As(err, new(*LinkError)) {
			t.Errorf("Sub(%q): %v, want a name error", n, err)
		}
	}
}

func TestOpenExperiment(t *testing.T) {
	root := t.TempDir()
	if _, err := OpenExperiment(root, false); err == nil || !strings.Contains(err.Error(), "not an experiment") {
		t.Errorf("an empty directory: %v", err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "x"), filepath.Join(root, "log.xml")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExperiment(root, false); err == nil {
		t.Errorf("log.xml a link: opened")
	}
	if err := os.WriteFile(filepath.Join(root, "map.xml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenExperiment(root, false)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	link := filepath.Join(t.TempDir(), "link.er")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if d, err := OpenExperiment(link, false); err != nil {
		t.Errorf("a link named by the caller: %v", err)
	} else {
		d.Close()
	}
	_, err = OpenExperiment(link, true)
	wantLink(t, err, link)
}

func TestFileTimesAndEntries(t *testing.T) {
	root := t.TempDir()
	d := mustOpen(t, root)
	f, err := d.Create("f", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Unix(1700000000, 123456789)
	if err := Chtimes(f, when, when); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := d.Symlink("f", "l"); err != nil {
		t.Fatal(err)
	}
	if err := d.Lchtimes("l", when.Add(time.Second), when.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := d.Mkdir("sub", 0o700); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(root, "f"))
	if !fi.ModTime().Equal(when) {
		t.Errorf("mtime %v, want %v", fi.ModTime(), when)
	}
	li, _ := os.Lstat(filepath.Join(root, "l"))
	if !li.ModTime().Equal(when.Add(time.Second)) {
		t.Errorf("link mtime %v", li.ModTime())
	}
	df, err := d.File()
	if err != nil {
		t.Fatal(err)
	}
	es, err := df.ReadDir(-1)
	df.Close()
	if err != nil || len(es) != 3 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	if err := d.Remove("l"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "f")); err != nil {
		t.Errorf("removing the link removed its target: %v", err)
	}
}
