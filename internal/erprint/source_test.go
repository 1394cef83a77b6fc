package erprint

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/debuginfo"
	"er/internal/experiment"
)

// annotateExe is the program of the line, instruction, source and disassembly tests (see its source).
const annotateExe = "testdata/annotate.elf"

// annotateExperiment is a synthetic experiment of testdata/annotate.elf whose stacks are real
// addresses of it: main calls work (80 samples on the bodies of its two loops, lines 21 and 23), caller1 (20 in hot,
// inlined), caller2 (30 in hot, 5 of its own); 2 samples are in _start, which has no lines.
func annotateExperiment(t testing.TB) *experiment.Data {
	t.Helper()
	exe, err := filepath.Abs(annotateExe)
	if err != nil {
		t.Fatal(err)
	}
	a, err := archive.Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	info, err := debuginfo.Open(exe)
	if err != nil || !info.HasDWARF {
		t.Fatalf("debug information of %s: %v", exe, err)
	}
	sym := func(name string) experiment.Symbol {
		for _, s := range a.Symbols {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("no symbol %s in %s", name, exe)
		return experiment.Symbol{}
	}
	lineAddr := func(fn string, line int) uint64 {
		s := sym(fn)
		for _, r := range info.Rows(s.Addr, s.Addr+s.Size) {
			if r.Line == line {
				return r.Lo
			}
		}
		t.Fatalf("no line %d in %s", line, fn)
		return 0
	}
	// The return addresses of main's calls.
	main := sym("main")
	of, err := analysis.OpenObjectFile(exe, a)
	if err != nil {
		t.Fatal(err)
	}
	code, err := of.Code(main.Addr, main.Addr+main.Size)
	if err != nil {
		t.Fatal(err)
	}
	ret := map[string]uint64{}
	for pc := main.Addr; len(code) > 0; {
		in, err := x86asm.Decode(code, 64)
		if err != nil {
			t.Fatalf("main at %#x: %v", pc, err)
		}
		if rel, ok := in.Args[0].(x86asm.Rel); ok && in.Op == x86asm.CALL {
			target := pc + uint64(in.Len) + uint64(int64(rel))
			for _, fn := range []string{"caller1", "caller2", "work"} {
				if sym(fn).Addr == target {
					ret[fn] = pc + uint64(in.Len)
				}
			}
		}
		pc += uint64(in.Len)
		code = code[in.Len:]
	}
	if len(ret) != 3 {
		t.Fatalf("main's calls: %v", ret)
	}
	const base = 0x555555554000
	b := &builder{pid: 77, seen: map[string]uint32{}, d: &experiment.Data{
		Dir:      "annotate.1.er",
		Stacks:   []experiment.Stack{nil},
		Archives: map[string]*experiment.Archive{exe: a},
		Mappings: []experiment.Mapping{{Pid: 77, Start: base, End: base + 0x5000, Path: exe, UnloadTime: -1}},
	}}
	add := func(n int, frames ...uint64) {
		var st experiment.Stack
		for _, f := range frames {
			st = append(st, base+f)
		}
		b.d.Stacks = append(b.d.Stacks, st)
		id := uint32(len(b.d.Stacks) - 1)
		for range n {
			b.t += period
			b.d.AddClock([]experiment.ClockSample{{Time: b.t, Pid: 77, Tid: 77, Mode: experiment.ModeUser, Period: period, Stack: id}})
		}
	}
	add(50, lineAddr("work", 21), ret["work"])
	add(30, lineAddr("work", 23), ret["work"])
	add(20, lineAddr("caller1", 10), ret["caller1"])
	add(30, lineAddr("caller2", 9), ret["caller2"])
	add(5, sym("caller2").Addr, ret["caller2"])
	add(2, sym("_start").Addr+4)
	b.d.Log = demoLog(77, b.t+period)
	b.d.Log.Command = []string{"./annotate"}
	return b.d
}

// annotateEnv opens annotate.1.er and reads load objects' files.
func annotateEnv() env {
	e := testEnv()
	e.open = func(dir string) (*experiment.Data, error) {
		if dir != "annotate.1.er" {
			return nil, fmt.Errorf("open %s/log.xml: no such file or directory", dir)
		}
		return annotateExperiment(&testing.T{}), nil
	}
	e.openFile = analysis.OpenObjectFile
	return e
}

// runAnnotate runs er print on annotate.1.er and returns a transcript with the working directory
// removed from paths.
func runAnnotate(t *testing.T, args ...string) (string, int) {
	t.Helper()
	annotateExperiment(t) // fails the test, with the reason, when the program cannot be read
	var out, errb bytes.Buffer
	args = append(args, "annotate.1.er")
	code := run(args, strings.NewReader(""), &out, &errb, annotateEnv())
	cwd, _ := os.Getwd()
	var b strings.Builder
	fmt.Fprintf(&b, "$ er print %s\n--- exit %d\n--- stdout\n%s", strings.Join(args, " "), code, out.String())
	if errb.Len() > 0 {
		fmt.Fprintf(&b, "--- stderr\n%s", errb.String())
	}
	return strings.ReplaceAll(b.String(), cwd+"/", ""), code
}

// TestGoldenSource: annotated source of functions and of the file, with the source found through
// pathmap, setpath or addpath, or not found; thresholds; CSV; errors.
func TestGoldenSource(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"source_not_found", []string{"-source", "work"}, exitOK},
		{"source_pathmap", []string{"-pathmap", "/src", ".", "-source", "work", "-source", "caller2", "-source", "hot"}, exitOK},
		{"source_file", []string{"-setpath", "testdata", "-source", "annotate.c"}, exitOK},
		{"source_addpath_sthresh", []string{"-addpath", "testdata", "-sthresh", "30", "-source", "work"}, exitOK},
		{"source_csv", []string{"-pathmap", "/src", ".", "-printmode", "csv", "-source", "caller1"}, exitOK},
		{"source_metrics", []string{"-pathmap", "/src", ".", "-metrics", "i.%totalcpu:e.user", "-source", "caller2"}, exitOK},
		{"source_errors", []string{"-source", "nosuch"}, exitUsage},
		{"source_bad_n", []string{"-source", "annotate.c", "2"}, exitUsage},
		{"source_no_lines", []string{"-source", "_start"}, exitError},
		{"source_bad_threshold", []string{"-sthresh", "120"}, exitUsage},
		{"pathmap_relative", []string{"-pathmap", "src", "."}, exitUsage},
	}
	for _, c := range cases {
		got, code := runAnnotate(t, c.args...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, got)
		}
		checkGolden(t, c.name, got)
	}
}

func TestFindSource(t *testing.T) {
	s := newSession(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, testEnv())
	s.dirs = []string{"exp.1.er"}
	sf := s.findSource("/src/testdata/annotate.c")
	want := "/src/testdata/annotate.c, exp.1.er/annotate.c, exp.1.er/archives/annotate.c, annotate.c"
	if sf.path != "" || strings.Join(sf.tried, ", ") != want {
		t.Errorf("found %q, tried %q", sf.path, sf.tried)
	}
	if msg := sf.notFound("/src/testdata/annotate.c"); !strings.Contains(msg, "tried "+want) || !strings.Contains(msg, "pathmap") {
		t.Errorf("message %q", msg)
	}
	// A pathmap applies to whole path components only.
	if err := s.pathmap([]string{"/sr", "/nowhere"}); err != nil {
		t.Fatal(err)
	}
	if err := s.pathmap([]string{"/src/", "./"}); err != nil {
		t.Fatal(err)
	}
	sf = s.findSource("/src/testdata/annotate.c")
	if sf.path != "testdata/annotate.c" || len(sf.lines) != 32 || !strings.HasPrefix(sf.lines[5], "static volatile") {
		t.Errorf("found %q (%d lines), tried %q", sf.path, len(sf.lines), sf.tried)
	}
	if err := s.setpath([]string{"a::b"}); err != nil || strings.Join(s.searchPath, ",") != "a,b" {
		t.Errorf("setpath: %q %v", s.searchPath, err)
	}
	if err := s.addpath([]string{"c"}); err != nil || strings.Join(s.searchPath, ",") != "a,b,c" {
		t.Errorf("addpath: %q %v", s.searchPath, err)
	}
	// A relative recorded path is looked for under each directory too.
	s.searchPath = []string{"."}
	s.pathmaps = nil
	if sf := s.findSource("testdata/annotate.c"); sf.path != "testdata/annotate.c" {
		t.Errorf("relative path: %q tried %q", sf.path, sf.tried)
	}
}

func TestInlineCommand(t *testing.T) {
	got, code := runAnnotate(t, "-limit", "6", "-functions", "-inline", "off", "-functions", "-inline", "bogus")
	if code != exitUsage {
		t.Errorf("exit %d", code)
	}
	checkGolden(t, "inline_off", got)
	if strings.Count(got, "   hot\n") != 1 {
		t.Errorf("hot should be listed once, with inline on:\n%s", got)
	}
}

func TestHotLimits(t *testing.T) {
	its := []item{{kind: itemMetric, metric: 0, flavor: exclusive, value: true}, {kind: itemMetric, metric: 0, flavor: inclusive, value: true}}
	rows := []*metricRow{
		{excl: []int64{10, 0, 0}, incl: []int64{100, 0, 0}},
		{excl: []int64{8, 0, 0}, incl: []int64{8, 0, 0}},
		{excl: []int64{7, 0, 0}, incl: []int64{74, 0, 0}},
		{excl: []int64{0, 0, 0}, incl: []int64{75, 0, 0}},
	}
	h := hotLimits(its, len(rows), func(i int) *metricRow { return rows[i] }, func(int) bool { return true }, 75)
	var got []string
	for _, r := range rows {
		got = append(got, h.flag(r))
	}
	if strings.Join(got, ",") != "##,##,,##" {
		t.Errorf("flags %q", got)
	}
	none := hotLimits(its, 1, func(int) *metricRow { return &metricRow{excl: []int64{0, 0, 0}, incl: []int64{0, 0, 0}} },
		func(int) bool { return true }, 75)
	if f := none.flag(&metricRow{excl: []int64{0, 0, 0}, incl: []int64{0, 0, 0}}); f != "" {
		t.Errorf("all zero: %q", f)
	}
}

// TestAnnotateSums checks on the real program that the per-line metrics of the source view add up
// to the functions' metrics (the acceptance of annotated source).
func TestAnnotateSums(t *testing.T) {
	s := newSession(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, annotateEnv())
	if err := s.load([]string{"annotate.1.er"}); err != nil {
		t.Fatal(err)
	}
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	file := "/src/testdata/annotate.c"
	lt := p.Lines()
	var sum int64
	for line := 1; line <= 40; line++ {
		if e, _, ok := lt.FileLine(file, line); ok {
			sum += e[0]
		}
	}
	if want := int64(135 * period); sum != want {
		t.Errorf("lines of %s add up to %d, want %d (all samples but _start's)", file, sum, want)
	}
	for line, want := range map[int][2]int64{21: {50, 50}, 23: {30, 30}, 10: {20, 20}, 9: {30, 30}, 16: {5, 35},
		28: {0, 20}, 29: {0, 35}, 30: {0, 80}} {
		e, i, ok := lt.FileLine(file, line)
		if !ok || e[0] != want[0]*period || i[0] != want[1]*period {
			t.Errorf("line %d: exclusive %v inclusive %v, want %d and %d samples", line, e, i, want[0], want[1])
		}
	}
	if _, _, ok := lt.FileLine(file, 31); ok {
		t.Error("line 31 has events")
	}
}

// TestArchivedSource: a source file that is missing, or differs from the copy that er archive kept,
// is read from the copy, with a warning; the same file is read as it is, silently.
func TestArchivedSource(t *testing.T) {
	tmp := t.TempDir()
	exp := filepath.Join(tmp, "exp.1.er")
	src := filepath.Join(tmp, "prog.c")
	if err := os.WriteFile(src, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := archive.ReadIndex(exp)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := ix.Add(archive.KindSource, src, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Write(); err != nil {
		t.Fatal(err)
	}
	find := func() (*sourceFile, string) {
		var stderr bytes.Buffer
		s := newSession(strings.NewReader(""), &bytes.Buffer{}, &stderr, testEnv())
		s.dirs = []string{exp}
		return s.findSource(src), stderr.String()
	}
	if sf, warn := find(); sf.path != src || warn != "" {
		t.Errorf("unchanged: found %q, warned %q; want the original, silently", sf.path, warn)
	}
	for _, c2 := range []struct {
		name, content, why string
	}{
		{"edited", "line one\nline 2\n", "the original changed"},
		{"missing", "", "the original is missing"},
	} {
		if c2.content != "" {
			os.WriteFile(src, []byte(c2.content), 0o644)
		} else {
			os.Remove(src)
		}
		sf, warn := find()
		if sf.path != ix.FilePath(c) || strings.Join(sf.lines, "|") != "line one|line two" || sf.err != nil ||
			warn != "er print: warning: using the archived copy of "+src+": "+c2.why+"\n" {
			t.Errorf("%s: found %q %q %v, warned %q; want the copy and %q", c2.name, sf.path, sf.lines, sf.err, warn, c2.why)
		}
	}
}

// TestSourceRefusesWhatArchiveRefuses: debug information can name any file (a #line directive naming
// /etc/shadow); er print shows a source file only where er archive would copy it
// (archive.CheckSource), and says why not instead of the lines.
func TestSourceRefusesWhatArchiveRefuses(t *testing.T) {
	tmp := t.TempDir()
	secret := filepath.Join(tmp, "secret.txt")
	if err := os.WriteFile(secret, []byte("password\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(tmp, "ok.c")
	if err := os.WriteFile(ok, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, why string }{
		{secret, "its name is not a source file's"},
		{"/etc/passwd", "it is in /etc, where no source files are"},
	}
	if _, err := os.Stat("/etc/shadow"); err == nil {
		cases = append(cases, struct{ name, why string }{"/etc/shadow", "it is in /etc, where no source files are"})
	}
	for _, c := range cases {
		s := newSession(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, testEnv())
		sf := s.findSource(c.name)
		msg := sf.notFound(c.name)
		if sf.lines != nil || sf.err == nil || !strings.Contains(msg, "Source file "+c.name+" is not shown: "+c.why) {
			t.Errorf("%s: %d lines, error %v, message %q; want no lines and %q", c.name, len(sf.lines), sf.err, msg, c.why)
		}
	}
	s := newSession(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, testEnv())
	if sf := s.findSource(ok); sf.err != nil || strings.Join(sf.lines, "|") != "int main(void) { return 0; }" {
		t.Errorf("%s: lines %q, error %v", ok, sf.lines, sf.err)
	}
}

// TestReadSourceFIFO: a source file that is a named pipe by the time it is read (findSource and
// the archive index check the kind first, but the file can change after) is refused at once with
// an error naming it, instead of hanging er print on the open; so is one larger than er archive
// copies.
func TestReadSourceFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "prog.c")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := readLines(fifo)
	if want := fifo + ": not a regular file but a named pipe (FIFO)"; lines != nil || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("readLines(FIFO) = %q, %v; want an error starting %q", lines, err, want)
	}
	big := filepath.Join(t.TempDir(), "big.c")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, archive.MaxSourceSize+1); err != nil {
		t.Fatal(err)
	}
	lines, err = readLines(big)
	if want := fmt.Sprintf("%s: %d bytes, more than a source file shown", big, archive.MaxSourceSize+1); lines != nil || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("readLines(%d bytes) = %d lines, %v; want an error starting %q", archive.MaxSourceSize+1, len(lines), err, want)
	}
}
