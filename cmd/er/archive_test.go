package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"er/internal/archive"
	"er/internal/erarchive"
)

// erArchive runs `er archive` (erarchive.Main) with args.
func erArchive(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := erarchive.Main(args, &out, &errb)
	return result{out.String(), errb.String(), code}
}

// withoutPaths drops the header lines that name the files read, which differ when copies are read.
func withoutPaths(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "Source file:") && !strings.HasPrefix(l, "Object file:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestArchiveDeletedBinaryEditedSource: after `er archive -a usedsrc`, er print shows the function
// names, the source text as it was profiled and the instructions of a binary that was deleted and a
// source file that was edited, from the archived copies, and says so. Without the archive, the same
// commands find no source or code (today's messages).
func TestArchiveDeletedBinaryEditedSource(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "lines.c")
	orig, err := os.ReadFile(filepath.Join("..", "..", "testdata", "lines.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "lines")
	if out, err := exec.Command("gcc", "-O1", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	exp, r := collectExp(t, nil, "-a", "off", bin, "2")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	bare, r := collectExp(t, nil, "-a", "off", bin, "1") // never archived
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}

	before := map[string]result{}
	for _, cmd := range []string{"-source", "-disasm"} {
		before[cmd] = er(t, "", nil, "print", cmd, "work", exp)
		if before[cmd].code != 0 {
			t.Fatalf("er print %s work: exit %d\n%s", cmd, before[cmd].code, before[cmd].stderr)
		}
	}

	a := erArchive(t, "-a", "usedsrc", exp)
	t.Logf("er archive -a usedsrc: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	if a.code != 0 || !regexp.MustCompile(`archived [1-9]\d* load objects? and 1 source file`).MatchString(a.stdout) {
		t.Fatalf("er archive: exit %d, want the program's load objects and lines.c archived\n%s%s", a.code, a.stdout, a.stderr)
	}
	ix, err := archive.ReadIndex(exp)
	if err != nil {
		t.Fatal(err)
	}
	var objects, sources []string
	for _, c := range ix.Copies {
		if c.Kind == archive.KindObject {
			objects = append(objects, c.Path)
		} else {
			sources = append(sources, c.Path)
		}
	}
	t.Logf("archived load objects %q, sources %q", objects, sources)
	if !contains(objects, bin) || len(sources) != 1 || sources[0] != src {
		t.Errorf("index: load objects %q, sources %q; want %s among the objects and exactly %s as source", objects, sources, bin, src)
	}
	files := archiveFiles(t, exp)

	// Idempotent: a second run copies nothing.
	a2 := erArchive(t, exp)
	if a2.code != 0 || !strings.Contains(a2.stdout, "archived 0 load objects and 0 source files (0 bytes); "+strconv.Itoa(len(ix.Copies))+" already archived") {
		t.Errorf("second er archive: exit %d, want nothing copied and %d already archived\n%s%s", a2.code, len(ix.Copies), a2.stdout, a2.stderr)
	}
	if again := archiveFiles(t, exp); strings.Join(again, "\n") != strings.Join(files, "\n") {
		t.Errorf("second er archive changed archives/:\n%q\nwas\n%q", again, files)
	}

	// Delete the binary, edit the source: three lines more at the top, the first loop's text changed.
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	edited := "/* one */\n/* two */\n/* three */\n" + strings.Replace(string(orig), "x = x * 6364136223846793005UL", "x = x * 3UL /* edited */", 1)
	if err := os.WriteFile(src, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}

	binWarning := "er print: warning: using the archived copy of " + bin + ": the original is missing"
	srcWarning := "er print: warning: using the archived copy of " + src + ": the original changed"
	fn := er(t, "", nil, "print", "-functions", exp)
	if fn.code != 0 || !regexp.MustCompile(`(?m)^\s*[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+work$`).MatchString(fn.stdout) ||
		strings.Count(fn.stderr, binWarning) != 1 {
		t.Errorf("er print -functions: exit %d, want work and the warning %q once\n%s%s", fn.code, binWarning, fn.stdout, fn.stderr)
	}
	s := er(t, "", nil, "print", "-source", "work", exp)
	t.Logf("er print -source work, after:\n%s%s", s.stdout, s.stderr)
	if s.code != 0 || !strings.Contains(s.stdout, "23. \tfor (long i = 0; i < 5 * n; i++) x = x * 6364136223846793005UL") ||
		strings.Contains(s.stdout, "edited") || strings.Count(s.stderr, binWarning) != 1 || strings.Count(s.stderr, srcWarning) != 1 {
		t.Errorf("er print -source work: exit %d, want the original line 23 and the warnings %q and %q once each\n%s%s",
			s.code, binWarning, srcWarning, s.stdout, s.stderr)
	}
	if got, want := withoutPaths(s.stdout), withoutPaths(before["-source"].stdout); got != want {
		t.Errorf("er print -source work from the copies differs from before:\n%s\nwas\n%s", got, want)
	}
	d := er(t, "", nil, "print", "-disasm", "work", exp)
	if d.code != 0 || !regexp.MustCompile(`\[  23\]\s+[0-9a-f]+:\s+(imul|lea|add|mov)`).MatchString(d.stdout) ||
		strings.Count(d.stderr, binWarning) != 1 || strings.Count(d.stderr, srcWarning) != 1 {
		t.Errorf("er print -disasm work: exit %d, want instructions of line 23 and both warnings once\n%s%s", d.code, d.stdout, d.stderr)
	}
	if got, want := withoutPaths(d.stdout), withoutPaths(before["-disasm"].stdout); got != want {
		t.Errorf("er print -disasm work from the copies differs from before:\n%s\nwas\n%s", got, want)
	}
	t.Logf("-source: %d lines, -disasm: %d lines, the same as before the binary was deleted and the source edited",
		strings.Count(s.stdout, "\n"), strings.Count(d.stdout, "\n"))

	// The experiment that was not archived: names from the symbol archive, no source, no code.
	fn = er(t, "", nil, "print", "-functions", bare)
	if fn.code != 0 || !strings.Contains(fn.stdout, "work") || strings.Contains(fn.stderr, "archived copy") {
		t.Errorf("unarchived er print -functions: exit %d\n%s%s", fn.code, fn.stdout, fn.stderr)
	}
	s = er(t, "", nil, "print", "-source", "work", bare)
	if s.code == 0 || !strings.Contains(s.stderr, "cannot be read or is not the file that was profiled") {
		t.Errorf("unarchived er print -source work: exit %d, want no source lines\n%s%s", s.code, s.stdout, s.stderr)
	}
	d = er(t, "", nil, "print", "-disasm", "work", bare)
	if d.code == 0 || !strings.Contains(d.stderr, "no code") {
		t.Errorf("unarchived er print -disasm work: exit %d, want no code\n%s%s", d.code, d.stdout, d.stderr)
	}
}

// TestArchiveSubexperiment: the files of a subexperiment go into its founder's archives/, and er
// print reads a subexperiment's copies from there.
func TestArchiveSubexperiment(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "lines")
	data, err := os.ReadFile(cbuild(t, "lines", "-O1", "-g"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	founder, r := collectExp(t, nil, "-a", "off", cprog(t, "seed002"))
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	sub := filepath.Join(founder, "_f1.er") // as a descendant's experiment is named
	if r := er(t, "", nil, "collect", "-a", "off", "-o", sub, bin, "1"); r.code != 0 {
		t.Fatalf("er collect -o %s: exit %d\n%s", sub, r.code, r.stderr)
	}
	a := erArchive(t, "-a", "usedldobjects", founder)
	if a.code != 0 {
		t.Fatalf("er archive: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	fix, err := archive.ReadIndex(founder)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fix.Lookup(archive.KindObject, bin, nil); !ok {
		t.Errorf("the founder's index lacks the subexperiment's %s: %+v", bin, fix.Copies)
	}
	if _, err := os.Stat(filepath.Join(sub, "archives", archive.IndexFile)); !os.IsNotExist(err) {
		t.Errorf("the subexperiment has an index of its own: %v", err)
	}
	// -n: the founder only; nothing of the subexperiment is archived again or anew.
	if n := erArchive(t, "-n", "-a", "usedldobjects", founder); n.code != 0 || !strings.Contains(n.stdout, "archived 0 load objects") {
		t.Errorf("er archive -n: exit %d\n%s%s", n.code, n.stdout, n.stderr)
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	d := er(t, "", nil, "print", "-disasm", "work", sub)
	if d.code != 0 || !strings.Contains(d.stdout, "ret") || !strings.Contains(d.stderr, "using the archived copy of "+bin+": the original is missing") {
		t.Errorf("er print -disasm work %s: exit %d, want the code from the founder's copy\n%s%s", sub, d.code, d.stdout, d.stderr)
	}
}

// TestArchiveErrors: er archive on things that are not experiments, and bad arguments.
func TestArchiveErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{filepath.Join(dir, "none.er")}, 1, "none.er: no such experiment"},
		{[]string{file}, 1, "file: not an experiment: a file"},
		{[]string{dir}, 1, "not an experiment: it has no log.xml or map.xml"},
		{[]string{"-a", "all", dir}, 2, `unknown archiving mode "all": use off, on, ldobjects, usedldobjects, src or usedsrc`},
		{[]string{"-m", "(", dir}, 2, "-m: error parsing regexp"},
		{nil, 2, "no experiment given"},
	} {
		r := erArchive(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("er archive %q: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// archiveFiles lists the files under exp/archives with their sizes and modification times.
func archiveFiles(t *testing.T, exp string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(exp, "archives"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %s", p, fi.Size(), fi.ModTime()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCollectArchivesByDefault: er collect archives the load objects and sources with events
// (-a usedsrc), so an experiment still shows source and disassembly after the binary is deleted and
// the source edited (acceptance 5), and er print says which copy it uses.
func TestCollectArchivesByDefault(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	orig, err := os.ReadFile(filepath.Join("..", "..", "testdata", "lines.c"))
	if err != nil {
		t.Fatal(err)
	}
	src, bin := filepath.Join(dir, "lines.c"), filepath.Join(dir, "lines")
	if err := os.WriteFile(src, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O1", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	exp, r := collectExp(t, nil, bin, "1")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(orig), "5 * n", "7 * n + 1")
	if err := os.WriteFile(src, []byte("/* edited */\n"+edited), 0o644); err != nil {
		t.Fatal(err)
	}
	p := er(t, "", nil, "print", "-source", "work", "-disasm", "work", exp)
	if p.code != 0 {
		t.Fatalf("er print: exit %d\n%s", p.code, p.stderr)
	}
	if !strings.Contains(p.stdout, "5 * n") || strings.Contains(p.stdout, "7 * n + 1") {
		t.Errorf("-source work does not show the original source:\n%s", p.stdout)
	}
	if !strings.Contains(p.stderr, "archived copy") {
		t.Errorf("er print does not say it used the archived copies:\n%s", p.stderr)
	}
	if !strings.Contains(p.stdout, "imul") && !strings.Contains(p.stdout, "mul") {
		t.Errorf("-disasm work shows no instructions:\n%s", p.stdout)
	}
}
