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
	"syscall"
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
	src, bin, orig := buildLines(t, t.TempDir())
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
		if c.Kind == archive.KindObject || c.Kind == archive.KindCompact { // -a usedsrc: compact archives
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

// buildLines copies testdata/lines.c into dir and builds it there (gcc -O1 -g): the source's path,
// the program's and the source's text.
func buildLines(t *testing.T, dir string) (src, bin string, text []byte) {
	t.Helper()
	src = filepath.Join(dir, "lines.c")
	text, err := os.ReadFile(filepath.Join("..", "..", "testdata", "lines.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, text, 0o644); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "lines")
	if out, err := exec.Command("gcc", "-O1", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return src, bin, text
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
	if _, ok := fix.Lookup(archive.KindCompact, bin, nil); !ok { // -a usedldobjects: compact archives
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
		{[]string{"-a", "all", dir}, 2, `unknown archiving mode "all": use off, on, ldobjects, usedldobjects, src, usedsrc or copy`},
		{[]string{"-m", "(", dir}, 2, "-m: error parsing regexp"},
		{nil, 2, "no experiment given"},
	} {
		r := erArchive(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("er archive %q: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

// indexed lists the paths of what exp's archive index holds: load objects (copies and compact
// archives) and sources.
func indexed(t *testing.T, exp string) (objects, sources []string) {
	t.Helper()
	ix, err := archive.ReadIndex(exp)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ix.Copies {
		if c.Kind == archive.KindSource {
			sources = append(sources, c.Path)
		} else {
			objects = append(objects, c.Path)
		}
	}
	return objects, sources
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

// TestCollectArchiveLinks: er collect's own archiving at the end of a run writes nothing through a
// link that someone put into the experiment while it ran (here the target itself, as a user who
// can write there would): archives/ made a link to another directory gets no symbol archive and no
// copy, and er collect says why. Before, the symbol archives and the copies went where the link
// pointed.
func TestCollectArchiveLinks(t *testing.T) {
	needCollect(t)
	bin := cprog(t, "lines")
	exp := filepath.Join(t.TempDir(), "test.1.er")
	elsewhere := t.TempDir()
	script := fmt.Sprintf("rm -rf %s/archives && ln -s %s %s/archives && exec %s 1", exp, elsewhere, exp, bin)
	r := er(t, "", nil, "collect", "-o", exp, "/bin/sh", "-c", script)
	t.Logf("er collect: exit %d\n%s", r.code, r.stderr)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d", r.code)
	}
	if es, err := os.ReadDir(elsewhere); err != nil || len(es) != 0 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("er collect wrote %q where archives/ points (%v)", names, err)
	}
	link := filepath.Join(exp, "archives")
	if !strings.Contains(r.stderr, link+" is a symbolic link or passes through one") {
		t.Errorf("er collect does not say that it did not archive because %s is a link", link)
	}
	h := er(t, "", nil, "print", "-header", exp)
	if !strings.Contains(h.stdout, "load objects not archived: "+link+" is a symbolic link") {
		t.Errorf("the experiment's log does not say why its load objects have no symbol archives:\n%s", h.stdout)
	}
}

// TestCompactArchivesShowTheSame: er print shows the same from the default archives (compact: the
// used functions' code and the debug information of their lines) as from whole copies (-a copy),
// and as from the original files, for a program with a shared library of its own, inlined code in
// each, and a stripped library whose debug information is in a separate file found by
// .gnu_debuglink; after the program was rebuilt, the libraries, the debug file and the sources were
// moved away. The compact archives still show the stripped library's lines once its debug file is
// gone, which a whole copy of it cannot.
func TestCompactArchivesShowTheSame(t *testing.T) {
	needCollect(t)
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir, dbg := t.TempDir(), t.TempDir()
	for _, f := range []string{"archprog.c", "archown.c", "archstrip.c"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	sh("gcc", "-O2", "-g", "-Wl,--build-id", "-fPIC", "-shared", "-o", "libarchown.so", "archown.c")
	sh("gcc", "-O2", "-g", "-Wl,--build-id", "-fPIC", "-shared", "-o", "libarchstrip.so", "archstrip.c")
	sh("objcopy", "--only-keep-debug", "libarchstrip.so", "libarchstrip.so.debug")
	sh("strip", "libarchstrip.so")
	sh("objcopy", "--add-gnu-debuglink=libarchstrip.so.debug", "libarchstrip.so")
	build := func() {
		sh("gcc", "-O2", "-g", "-Wl,--build-id", "-o", "archprog", "archprog.c", "-L.", "-larchown", "-larchstrip", "-Wl,-rpath,"+dir)
	}
	build()
	// The whole copy of the stripped library finds its debug file by build id once it is moved:
	// the debug directories searched are the same in every run.
	env := []string{"ER_DEBUG_DIR=" + dbg + ":/usr/lib/debug"}

	exp, r := collectExp(t, env, "-a", "off", filepath.Join(dir, "archprog"), "20000000")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	copied := filepath.Join(t.TempDir(), "copy.1.er")
	if r := er(t, "", nil, "cp", exp, copied); r.code != 0 {
		t.Fatalf("er cp: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct{ exp, mode string }{{exp, "usedsrc"}, {copied, "copy"}} {
		r := er(t, "", env, "archive", "-a", c.mode, c.exp)
		t.Logf("er archive -a %s: exit %d\n%s%s", c.mode, r.code, r.stdout, r.stderr)
		if r.code != 0 || !strings.Contains(r.stdout, "archives/ holds ") {
			t.Errorf("er archive -a %s: exit %d, want 0 and the size of archives/", c.mode, r.code)
		}
	}
	compactSize, copySize := treeBytes(t, filepath.Join(exp, "archives")), treeBytes(t, filepath.Join(copied, "archives"))
	t.Logf("archives/: %d bytes by default (compact), %d with -a copy", compactSize, copySize)
	if compactSize*4 > copySize {
		t.Errorf("the default archives take %d bytes, more than a quarter of the whole copies' %d", compactSize, copySize)
	}
	if t.Failed() {
		t.FailNow()
	}

	commands := [][]string{{"-functions"}, {"-lines"}, {"-pcs"}, {"-callers-callees"}, {"-objects"}}
	for _, f := range []string{"main_work", "own_work", "strip_work"} {
		commands = append(commands, []string{"-source", f}, []string{"-disasm", f})
	}
	views := func(exp string) (map[string]string, string) {
		out := map[string]string{}
		var stderr strings.Builder
		for _, c := range commands {
			r := er(t, "", env, append(append([]string{"print"}, c...), exp)...)
			if r.code != 0 {
				t.Fatalf("er print %s %s: exit %d\n%s", strings.Join(c, " "), exp, r.code, r.stderr)
			}
			out[strings.Join(c, " ")] = withoutPaths(r.stdout)
			stderr.WriteString(r.stderr)
		}
		return out, stderr.String()
	}
	base, _ := views(exp)
	for _, want := range []string{"mix", "own_step", "strip_step"} {
		if !strings.Contains(base["-lines"], want) {
			t.Fatalf("with the original files, -lines shows no line of %s (the inlined code): the test program is not what it should be\n%s", want, base["-lines"])
		}
	}

	// Rebuilt, moved: the program rebuilt from an edited source, the libraries, the debug file and
	// the sources moved away; the stripped library's debug file found by build id only.
	gone := filepath.Join(dir, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"libarchown.so", "libarchstrip.so", "libarchstrip.so.debug", "archown.c", "archstrip.c"} {
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(gone, f)); err != nil {
			t.Fatal(err)
		}
	}
	orig, _ := os.ReadFile(filepath.Join(dir, "archprog.c"))
	if err := os.WriteFile(filepath.Join(dir, "archprog.c"), append([]byte("/* rebuilt */\nint rebuilt;\n"), orig...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"libarchown.so", "libarchstrip.so"} { // to link the rebuilt program
		os.Symlink(filepath.Join(gone, f), filepath.Join(dir, f))
	}
	build()
	for _, f := range []string{"libarchown.so", "libarchstrip.so"} {
		os.Remove(filepath.Join(dir, f))
	}
	debug, err := os.ReadFile(filepath.Join(gone, "libarchstrip.so.debug"))
	if err != nil {
		t.Fatal(err)
	}
	id := buildIDOf(t, filepath.Join(gone, "libarchstrip.so"))
	byID := filepath.Join(dbg, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(byID), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(byID, debug, 0o644); err != nil {
		t.Fatal(err)
	}

	fromCopies, copyWarnings := views(copied)
	fromCompact, compactWarnings := views(exp)
	for _, lib := range []string{"archprog: the original changed", "libarchown.so: the original is missing", "libarchstrip.so: the original is missing"} {
		if !strings.Contains(compactWarnings, "using the archived copy of "+filepath.Join(dir, lib)) ||
			!strings.Contains(copyWarnings, "using the archived copy of "+filepath.Join(dir, lib)) {
			t.Errorf("er print does not say that it uses the archived copy of %s\ncompact:\n%s\ncopies:\n%s", lib, compactWarnings, copyWarnings)
		}
	}
	for _, c := range commands {
		k := strings.Join(c, " ")
		if fromCompact[k] != base[k] {
			t.Errorf("er print %s from the compact archives differs from the original files':\n%s\nwas\n%s", k, fromCompact[k], base[k])
		}
		if fromCopies[k] != fromCompact[k] {
			t.Errorf("er print %s from the whole copies differs from the compact archives':\n%s\ncompact:\n%s", k, fromCopies[k], fromCompact[k])
		}
	}
	// The debug file gone too: the compact archive holds the lines it had.
	if err := os.Remove(byID); err != nil {
		t.Fatal(err)
	}
	again, _ := views(exp)
	for _, c := range commands {
		if k := strings.Join(c, " "); again[k] != base[k] {
			t.Errorf("er print %s from the compact archives, the debug file gone, differs from the original files':\n%s\nwas\n%s", k, again[k], base[k])
		}
	}
	t.Logf("%d views the same from the original files, the compact archives and the whole copies", len(commands))
}

// treeBytes is the bytes of the files under dir.
func treeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			fi, ierr := e.Info()
			if ierr != nil {
				return ierr
			}
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// buildIDOf is the GNU build id of the ELF file at path.
func buildIDOf(t *testing.T, path string) string {
	t.Helper()
	a, err := archive.Build(path)
	if err != nil || len(a.BuildID) < 4 {
		t.Fatalf("build id of %s: %q, %v", path, a.BuildID, err)
	}
	return a.BuildID
}

// TestArchiveOthersExperiment: er archive, run by root on an experiment of another user (nobody),
// runs itself again as that user: the program profiled is copied, the source file of its lines
// that only root may read (0600) is not, said with why, and what is written belongs to nobody.
// Before, root's er archive copied the source file too, into nobody's experiment.
func TestArchiveOthersExperiment(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: acting as another user needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} { // nobody searches them
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, bin, _ := buildLines(t, dir)
	exp := filepath.Join(dir, "test.1.er")
	if r := er(t, "", nil, "collect", "-a", "off", "-o", exp, bin, "1"); r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	err := filepath.Walk(exp, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o600); err != nil {
		t.Fatal(err)
	}
	r := er(t, "", nil, "archive", "-a", "copy", exp)
	t.Logf("er archive -a copy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	for _, want := range []string{
		"er archive: " + exp + " belongs to nobody (uid 65534): it is archived as that user",
		"er archive: warning: " + src + ": not archived: it belongs to user 0 and others may not read it (mode 0600)\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	objects, sources := indexed(t, exp)
	// Sources that nobody may read are archived (a sample can fall in an inline of stdlib.h, atoi's):
	// the program's own, root's and of mode 0600, is not.
	if r.code != 0 || !contains(objects, bin) || contains(sources, src) {
		t.Errorf("exit %d; archived objects %q, sources %q; want 0, %s among the objects and not %s among the sources", r.code, objects, sources, bin, src)
	}
	err = filepath.Walk(filepath.Join(exp, "archives"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Sys().(*syscall.Stat_t).Uid != 65534 {
			t.Errorf("%s belongs to uid %d, want 65534, the experiment's owner", p, fi.Sys().(*syscall.Stat_t).Uid)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
