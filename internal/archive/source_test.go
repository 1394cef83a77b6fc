package archive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsSourceName(t *testing.T) {
	for path, want := range map[string]bool{
		"/src/a.c": true, "/src/a.h": true, "/src/a.cpp": true, "/src/A.C": true, "/src/m.F90": true, "/src/x.go": true,
		"/src/lib.rs": true, "/src/start.S": true, "/usr/include/c++/12/vector": true, "/usr/local/include/foo": true,
		"/etc/shadow": false, "/home/u/.ssh/id_rsa": false, "/src/key.pem": false, "/src/.c": false, "/src/Makefile": false,
		"/src/a.c.orig": false, "/src/include/vector": false,
	} {
		if got := isSourceName(path); got != want {
			t.Errorf("isSourceName(%s) = %v, want %v", path, got, want)
		}
	}
}

func TestCheckSource(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("int x;\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := file("own.c", 0o600)
	shared := file("shared.h", 0o644)
	big := file("big.c", 0o644)
	if err := os.Truncate(big, MaxSourceSize+1); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.c")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub.h")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{own, ""},
		{shared, ""},
		{"/etc/passwd", "it is in /etc, where no source files are"},
		{"/proc/self/environ", "it is in /proc, where no source files are"},
		{link, "it leads to /etc/passwd, and it is in /etc, where no source files are"},
		{big, "more than a source file that is copied may hold (67108864 bytes)"},
		{sub, "not a regular file but a directory"},
		{filepath.Join(dir, "gone.c"), "no such file"},
	} {
		err := CheckSource(c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckSource(%s): %v", c.path, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckSource(%s): %v, want %q", c.path, err, c.want)
		}
	}
	if os.Geteuid() != 0 {
		return
	}
	// As root: another user's file is copied only when others, or root's groups, may read it.
	private := file("private.c", 0o600)
	groupOnly := file("group.c", 0o640)
	for _, p := range []string{private, groupOnly} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{private, groupOnly} {
		if err := CheckSource(p); err == nil || !strings.Contains(err.Error(), "it belongs to user 65534 and others may not read it") {
			t.Errorf("CheckSource(%s): %v, want it refused", p, err)
		}
	}
}

// TestCheckObject: a load object is not copied from /proc, /sys or /dev, named there or reached by a
// link: /proc/self/exe is a program, by a link that resolves to its path, and /proc/kcore is an ELF
// file of 128 TiB. Before, nothing checked where a load object named by an experiment was.
func TestCheckObject(t *testing.T) {
	dir := t.TempDir()
	obj := filepath.Join(dir, "libx.so")
	if err := os.WriteFile(obj, []byte("\x7fELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "liby.so")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{obj, ""},
		{"/proc/self/exe", "it is in /proc, where no load objects are"},
		{"/proc/kcore", "it is in /proc, where no load objects are"},
		{"/sys/kernel/notes", "it is in /sys, where no load objects are"},
		{"/dev/zero", "it is in /dev, where no load objects are"},
		{link, "it leads to /dev/null, and it is in /dev, where no load objects are"},
	} {
		err := CheckObject(c.path)
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("CheckObject(%s): %v, want %q", c.path, err, c.want)
		}
	}
}
