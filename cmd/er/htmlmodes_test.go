package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHTMLKeepsModes (issue 27, item 19): er analyzer --html copies the source lines of the
// functions it shows into the report's data.js. With the program's source of mode 0600, the report's
// files are 0600 in a directory of 0700, and er analyzer says so; with the source 0644 (and the
// umask 022) they are 0644 in a 0755 directory. Before, the report was 0644 in a 0755 directory
// whatever it held.
func TestHTMLKeepsModes(t *testing.T) {
	needCollect(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, f := range []string{"twofuncs.c", "work.h"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, bin := filepath.Join(dir, "twofuncs.c"), filepath.Join(dir, "private")
	if out, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	exp, r := collectExp(t, nil, "-p", "on", bin, "3")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct {
		src, file, dir os.FileMode
		says           string
	}{
		{0o600, 0o600, 0o700, "only you can read it (its files are mode 0600): it holds the contents of " + src + ", mode 0600"},
		{0o640, 0o640, 0o750, "you and your group can read it (its files are mode 0640): it holds the contents of " + src + ", mode 0640"},
		{0o644, 0o644, 0o755, ""},
	} {
		if err := os.Chmod(src, c.src); err != nil {
			t.Fatal(err)
		}
		html := filepath.Join(t.TempDir(), "report")
		r := er(t, "", nil, "analyzer", "--html", html, exp)
		if r.code != 0 {
			t.Fatalf("er analyzer --html: exit %d\n%s", r.code, r.stderr)
		}
		data, err := os.ReadFile(filepath.Join(html, "data.js"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "WORK(k);") {
			t.Fatalf("source %04o: the report does not hold slow's source line WORK(k); the test cannot tell", c.src)
		}
		for _, f := range []string{"data.js", "index.html", "app.js", "style.css"} {
			if fi, err := os.Stat(filepath.Join(html, f)); err != nil || fi.Mode().Perm() != c.file {
				t.Errorf("source %04o: %s is mode %v (%v), want %04o", c.src, f, fi.Mode().Perm(), err, c.file)
			}
		}
		if fi, err := os.Stat(html); err != nil || fi.Mode().Perm() != c.dir {
			t.Errorf("source %04o: the report's directory is mode %v (%v), want %04o", c.src, fi.Mode().Perm(), err, c.dir)
		}
		if says := strings.Contains(r.stdout, "can read it"); says != (c.says != "") || c.says != "" && !strings.Contains(r.stdout, c.says) {
			t.Errorf("source %04o: er analyzer said %q, want %q", c.src, r.stdout, c.says)
		}
	}
}
