package expfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// mkExp makes a small fake experiment dir/name (log.xml and a data file) and returns its path.
func mkExp(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(p, "archives"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(p, "log.xml"), "<experiment/>\n")
	write(t, filepath.Join(p, "profile.clock"), "samples of "+name)
	write(t, filepath.Join(p, "archives", "a.out.1234.ar"), "symbols")
	return p
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadGroup(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	a := mkExp(t, dir, "a.er")
	b := mkExp(t, filepath.Join(dir, "sub"), "b.er")
	c := mkExp(t, other, "c.er")
	g := filepath.Join(dir, "g.erg")
	write(t, g, GroupHeader+"  \r\n# a comment\n\n  a.er  \nsub/b.er/\r\n"+c+"\n")
	got, err := ReadGroup(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a, b, c}; !slices.Equal(got, want) {
		t.Errorf("ReadGroup = %q, want %q", got, want)
	}
	// A relative group path gives paths relative to the current directory.
	t.Chdir(filepath.Join(dir, "sub"))
	got, err = ReadGroup("../g.erg")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"../a.er", "../sub/b.er", c}; !slices.Equal(got, want) {
		t.Errorf("ReadGroup(../g.erg) = %q, want %q", got, want)
	}
	// An empty group is valid.
	write(t, filepath.Join(dir, "empty.erg"), GroupHeader+"\n")
	if got, err := ReadGroup(filepath.Join(dir, "empty.erg")); err != nil || len(got) != 0 {
		t.Errorf("empty group: %q, %v", got, err)
	}
}

func TestReadGroupErrors(t *testing.T) {
	dir := t.TempDir()
	mkExp(t, dir, "a.er")
	os.Mkdir(filepath.Join(dir, "noLog.er"), 0o755)
	write(t, filepath.Join(dir, "file.er"), "")
	h := GroupHeader + "\n"
	for _, tc := range []struct {
		name, content string
		want          []string // substrings of the error
	}{
		{"empty.erg", "", []string{"empty.erg:1:", "first line", GroupHeader}},
		{"header.erg", "a.er\n", []string{"header.erg:1:", `"a.er"`, GroupHeader}},
		{"notexp.erg", h + "a.er\nnotes.txt\n", []string{"notexp.erg:3:", `"notes.txt" is not an experiment name`}},
		{"nested.erg", h + "other.erg\n", []string{"nested.erg:2:", "is an experiment group"}},
		{"missing.erg", h + "a.er\n\nnone.er\n", []string{"missing.erg:4:", "none.er", "no such experiment"}},
		{"nolog.erg", h + "noLog.er\n", []string{"nolog.erg:2:", "noLog.er", "no log.xml"}},
		{"file.erg", h + "file.er\n", []string{"file.erg:2:", "not a directory"}},
		{"dup.erg", h + "a.er\n./a.er/\n", []string{"dup.erg:3:", "listed again (first on line 2)"}},
		{"nul.erg", h + "a\x00.er\n", []string{"nul.erg:2:", "NUL"}},
	} {
		p := filepath.Join(dir, tc.name)
		write(t, p, tc.content)
		_, err := ReadGroup(p)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
	if _, err := ReadGroup(filepath.Join(dir, "absent.erg")); err == nil || !strings.Contains(err.Error(), "absent.erg: no such experiment group") {
		t.Errorf("missing group file: %v", err)
	}
	write(t, filepath.Join(dir, "g.txt"), h+"a.er\n")
	if _, err := ReadGroup(filepath.Join(dir, "g.txt")); err == nil || !strings.Contains(err.Error(), "must end in .erg") {
		t.Errorf("group named .txt: %v", err)
	}
}

func TestIsGroup(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good.erg"), GroupHeader+"\na.er\n")
	write(t, filepath.Join(dir, "crlf.erg"), GroupHeader+"\r\n")
	write(t, filepath.Join(dir, "bad.erg"), "#analyzer experiment\n")
	write(t, filepath.Join(dir, "short.erg"), "#")
	write(t, filepath.Join(dir, "good.txt"), GroupHeader+"\n")
	os.Mkdir(filepath.Join(dir, "dir.erg"), 0o755)
	os.Symlink("good.erg", filepath.Join(dir, "link.erg"))
	for name, want := range map[string]bool{"good.erg": true, "crlf.erg": true, "link.erg": true, "bad.erg": false,
		"short.erg": false, "good.txt": false, "dir.erg": false, "none.erg": false} {
		if got := IsGroup(filepath.Join(dir, name)); got != want {
			t.Errorf("IsGroup(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestAppendGroup(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	g := filepath.Join(dir, "g.erg")
	a := mkExp(t, dir, "a.er")
	b := mkExp(t, filepath.Join(dir, "runs"), "b.er")
	c := mkExp(t, other, "c.er")
	for _, e := range []string{a, b, c, a, filepath.Join(dir, "runs", ".", "b.er")} {
		if err := AppendGroup(g, e); err != nil {
			t.Fatalf("AppendGroup(%s): %v", e, err)
		}
	}
	data, _ := os.ReadFile(g)
	if want := GroupHeader + "\na.er\nruns/b.er\n" + c + "\n"; string(data) != want {
		t.Errorf("group file:\n%s\nwant:\n%s", data, want)
	}
	got, err := ReadGroup(g)
	if err != nil || !slices.Equal(got, []string{a, b, c}) {
		t.Errorf("ReadGroup after AppendGroup = %q, %v", got, err)
	}

	// Relative arguments, from the group's directory; an experiment that does not exist yet.
	t.Chdir(dir)
	if err := AppendGroup("h.erg", "later.er"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile("h.erg"); string(data) != GroupHeader+"\nlater.er\n" {
		t.Errorf("h.erg = %q", data)
	}

	// A hand-written file without a final newline gets one before the new line.
	write(t, "hand.erg", GroupHeader+"\na.er")
	if err := AppendGroup("hand.erg", b); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile("hand.erg"); string(data) != GroupHeader+"\na.er\nruns/b.er\n" {
		t.Errorf("hand.erg = %q", data)
	}

	write(t, "notgroup.erg", "something else\n")
	for _, tc := range []struct{ group, exp, want string }{
		{"notgroup.erg", "a.er", "notgroup.erg:1: not an experiment group"},
		{"g.txt", "a.er", "must end in .erg"},
		{"g.erg", "a.out", "an experiment's name ends in .er"},
		{"g.erg", "bad\nname.er", "line break"},
		{filepath.Join(dir, "nodir", "g.erg"), "a.er", "no such file or directory"},
	} {
		if err := AppendGroup(tc.group, tc.exp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AppendGroup(%q, %q) = %v, want an error with %q", tc.group, tc.exp, err, tc.want)
		}
	}
	if data, _ := os.ReadFile("notgroup.erg"); string(data) != "something else\n" {
		t.Errorf("a file that is not a group was changed: %q", data)
	}
}

// TestAppendGroupConcurrent: appends from many goroutines (as from several er collect runs) each land
// exactly once, with one header.
func TestAppendGroupConcurrent(t *testing.T) {
	g := filepath.Join(t.TempDir(), "par.erg")
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = AppendGroup(g, filepath.Join(filepath.Dir(g), fmt.Sprintf("r%d.er", i%(n/2))))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	entries, err := parseGroup(g)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.name]++
	}
	data, _ := os.ReadFile(g)
	if len(entries) != n/2 || len(seen) != n/2 || strings.Count(string(data), GroupHeader) != 1 {
		t.Errorf("%d entries, %d distinct, want %d each; file:\n%s", len(entries), len(seen), n/2, data)
	}
}

// A group file that is a FIFO or a device is refused without waiting or reading without end, and
// one larger than a group file may be is not read: before, IsGroup and AppendGroup blocked on a
// FIFO, and ReadGroup read /dev/zero until memory ran out.
func TestGroupSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.erg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.erg")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.erg")
	write(t, big, GroupHeader+"\n")
	if err := os.Truncate(big, maxGroupSize+1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, fifo + ": not a regular file but a named pipe (FIFO)"},
		{zero, zero + ": not a regular file but a character device"},
		{big, big + ": 16777217 bytes, more than a group file may hold (16777216 bytes)"},
	} {
		if c.path != big && IsGroup(c.path) {
			t.Errorf("IsGroup(%s) = true", c.path)
		}
		if _, err := ReadGroup(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadGroup(%s): %v, want %q", c.path, err, c.want)
		}
		if err := AppendGroup(c.path, filepath.Join(dir, "a.er")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AppendGroup(%s): %v, want %q", c.path, err, c.want)
		}
	}
}
