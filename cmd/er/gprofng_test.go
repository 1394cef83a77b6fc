package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// needGprofng skips when GNU gprofng is not installed; it records the experiments these tests read.
func needGprofng(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the test programs cannot be built")
	}
	if _, err := exec.LookPath("gprofng"); err != nil {
		t.Skip("gprofng is not installed: no gprofng experiment can be recorded (Debian: binutils 2.40, gprofng)")
	}
}

// gprofngProg builds testdata/NAME.c for gprofng, which cannot read DWARF 5 (gcc 12's default).
func gprofngProg(t *testing.T, name string) string {
	t.Helper()
	return cbuild(t, name, "-O1", "-gdwarf-4", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls", "-pthread")
}

// gprofngCollect records an experiment with gprofng collect app and returns its directory.
func gprofngCollect(t *testing.T, env []string, opts []string, prog ...string) string {
	t.Helper()
	exp := filepath.Join(t.TempDir(), "g.er")
	cmd := exec.Command("gprofng", append(append(append([]string{"collect", "app", "-o", exp}, opts...), "--"), prog...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gprofng collect app: %v\n%s", err, out)
	}
	return exp
}

// gprofngDisplay runs gprofng display text with args.
func gprofngDisplay(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("gprofng", append([]string{"display", "text"}, args...)...).Output()
	if err != nil {
		t.Fatalf("gprofng display text %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// heapList is a -leaks or -allocs listing: its summary line, and each entry's instances, bytes
// and functions (leaf first; "" where gprofng could not name one: <static>@0x... (<lib>)).
type heapList struct {
	summary string
	entries []heapEntry
}

type heapEntry struct {
	head  string // "Instances = 3, Bytes Leaked = 3000"
	funcs []string
}

var heapHead = regexp.MustCompile(`^(Leak|Allocation) #\d+, (.*)$`)

func parseHeapList(out string) heapList {
	var l heapList
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Summary Results:"):
			l.summary = line
		case heapHead.MatchString(line):
			l.entries = append(l.entries, heapEntry{head: heapHead.FindStringSubmatch(line)[2]})
		case strings.HasPrefix(line, "  ") && len(l.entries) > 0:
			f := strings.TrimSpace(line)
			f, _, _ = strings.Cut(f, " + ")
			if strings.HasPrefix(f, "<static>@") {
				f = ""
			}
			e := &l.entries[len(l.entries)-1]
			e.funcs = append(e.funcs, f)
		}
	}
	return l
}

// matches says whether er's entry is gprofng's: the same instances and bytes, and the same
// functions where gprofng names them.
func (g heapEntry) matches(e heapEntry) bool {
	if g.head != e.head || len(g.funcs) != len(e.funcs) {
		return false
	}
	for i := range g.funcs {
		if g.funcs[i] != "" && g.funcs[i] != e.funcs[i] {
			return false
		}
	}
	return true
}

// compareHeapLists checks that er's listing has gprofng's summary and entries (in any order
// among entries of equal bytes).
func compareHeapLists(t *testing.T, what, gp, erOut string) {
	t.Helper()
	g, e := parseHeapList(gp), parseHeapList(erOut)
	if g.summary == "" || g.summary != e.summary {
		t.Errorf("%s: er print says %q, gprofng %q", what, e.summary, g.summary)
	}
	used := make([]bool, len(e.entries))
	for _, ge := range g.entries {
		found := false
		for i, ee := range e.entries {
			if !used[i] && ge.matches(ee) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("%s: gprofng's %s %q has no equal in er print's", what, ge.head, ge.funcs)
		}
	}
	if len(g.entries) != len(e.entries) {
		t.Errorf("%s: er print lists %d, gprofng %d", what, len(e.entries), len(g.entries))
	}
	if t.Failed() {
		t.Logf("gprofng display text:\n%s\ner print:\n%s", gp, erOut)
	}
}

// TestGprofngHeap: er print reads a heap-tracing experiment that gprofng recorded, and finds the
// leaks and allocations gprofng's own display finds: the same count, bytes and stacks.
func TestGprofngHeap(t *testing.T) {
	needGprofng(t)
	exp := gprofngCollect(t, nil, []string{"-p", "on", "-H", "on"}, gprofngProg(t, "heap"))
	for _, view := range []string{"-leaks", "-allocs"} {
		gp := gprofngDisplay(t, view, exp)
		r := er(t, "", nil, "print", view, exp)
		if r.code != 0 {
			t.Fatalf("er print %s: exit %d\n%s", view, r.code, r.stderr)
		}
		compareHeapLists(t, view, gp, r.stdout)
	}
	// The Analyzer reads it too: its static report has the heap views' functions.
	html := filepath.Join(t.TempDir(), "html")
	if r := er(t, "", nil, "analyzer", "--html", html, exp); r.code != 0 {
		t.Fatalf("er analyzer --html: exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(html, "data.js"))
	if err != nil || !strings.Contains(string(b), "leak_direct") || !strings.Contains(string(b), "grow_leak") {
		t.Errorf("the Analyzer's report names neither leak_direct nor grow_leak (%v)", err)
	}
}

// functionRows parses the rows of a -functions listing of n metric columns: name -> the
// columns as printed.
func functionRows(out string, n int) map[string]string {
	rows := map[string]string{}
	num := regexp.MustCompile(`^[0-9.]+$`)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) <= n || !num.MatchString(f[0]) || !num.MatchString(f[n-1]) {
			continue
		}
		rows[strings.Join(f[n:], " ")] = strings.Join(f[:n], " ")
	}
	return rows
}

// TestGprofngClock: er print reads a clock-profiling experiment that gprofng recorded, with the
// same exclusive and inclusive CPU time (samples of 10.007 ms) per function as gprofng's display.
func TestGprofngClock(t *testing.T) {
	needGprofng(t)
	exp := gprofngCollect(t, []string{"ER_TEST_UNIT=0.03"}, []string{"-p", "on"}, gprofngProg(t, "seed002"))
	args := []string{"-metrics", "e.totalcpu:i.totalcpu", "-functions", exp}
	gp := functionRows(gprofngDisplay(t, args...), 2)
	r := er(t, "", nil, append([]string{"print"}, args...)...)
	if r.code != 0 {
		t.Fatalf("er print: exit %d\n%s", r.code, r.stderr)
	}
	e := functionRows(r.stdout, 2)
	if gp["<Total>"] == "" || gp["<Total>"] == "0. 0." {
		t.Fatalf("gprofng recorded no samples:\n%v", gp)
	}
	compared := 0
	for name, g := range gp {
		if strings.HasPrefix(name, "<static>@") {
			continue // a function gprofng could not name; er names it
		}
		compared++
		if e[name] != g {
			t.Errorf("%s: er print %q, gprofng %q", name, e[name], g)
		}
	}
	t.Logf("%d functions compared; <Total> %s", compared, gp["<Total>"])
	if t.Failed() {
		t.Logf("er print:\n%s", r.stdout)
	}
}

// TestGprofngIO: the I/O totals of an I/O-tracing experiment that gprofng recorded, as gprofng
// counts them: bytes and calls read and written, other calls, errors.
func TestGprofngIO(t *testing.T) {
	needGprofng(t)
	dir := t.TempDir()
	exp := gprofngCollect(t, nil, []string{"-p", "off", "-i", "on"}, gprofngProg(t, "ioprog"), dir)
	args := []string{"-metrics", "i+ioreadbytes:i+ioreadcnt:i+iowritebytes:i+iowritecnt:i+ioothercnt:i+ioerrorcnt", "-functions", exp}
	total := func(out string) string {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 7 && f[6] == "<Total>" {
				return strings.Join(f[:6], " ")
			}
		}
		return ""
	}
	g := total(gprofngDisplay(t, args...))
	r := er(t, "", nil, append([]string{"print"}, args...)...)
	if e := total(r.stdout); g == "" || e != g {
		t.Errorf("<Total>: er print %q, gprofng %q\n%s%s", e, g, r.stdout, r.stderr)
	}

	// Per file: the same counts, other I/O calls (lseek, fsync, fflush, fseek) under <Other IO
	// activity>. The fclose that gprofng records without a descriptor is er's <unknown file>,
	// and in no file of gprofng's (its -ioactivity <Total> is one call short of its -functions').
	args = []string{"-metrics", "e+ioreadcnt:e+iowritecnt:e+ioothercnt:e+ioerrorcnt", "-ioactivity", exp}
	files := func(out string) map[string]string {
		rows := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 5 && regexp.MustCompile(`^\d+$`).MatchString(f[0]) {
				rows[strings.Join(f[4:], " ")] = strings.Join(f[:4], " ")
			}
		}
		delete(rows, "<Total>")
		return rows
	}
	gf := files(gprofngDisplay(t, args...))
	r = er(t, "", nil, append([]string{"print"}, args...)...)
	ef := files(r.stdout)
	if ef[analysisUnknownFile] != "0 0 1 0" {
		t.Errorf("<unknown file>: er print %q, want the fclose", ef[analysisUnknownFile])
	}
	delete(ef, analysisUnknownFile)
	if gf["<Other IO activity>"] != "0 0 4 0" || !reflect.DeepEqual(ef, gf) {
		t.Errorf("-ioactivity: er print %v, gprofng %v\n%s", ef, gf, r.stdout)
	}
}

// analysisUnknownFile is er's name for a descriptor whose opening was not traced.
const analysisUnknownFile = "<unknown file>"

// TestGprofngSync: the synchronization waits of an experiment that gprofng recorded, per function.
func TestGprofngSync(t *testing.T) {
	needGprofng(t)
	exp := gprofngCollect(t, nil, []string{"-p", "off", "-s", "on"}, gprofngProg(t, "syncprog"))
	args := []string{"-metrics", "i.sync:i.syncn", "-functions", exp}
	g := functionRows(gprofngDisplay(t, args...), 2)
	r := er(t, "", nil, append([]string{"print"}, args...)...)
	e := functionRows(r.stdout, 2)
	for _, name := range []string{"<Total>", "lock_a", "lock_b", "pthread_mutex_lock"} {
		if g[name] == "" || e[name] != g[name] {
			t.Errorf("%s: er print %q, gprofng %q", name, e[name], g[name])
		}
	}
	if t.Failed() {
		t.Logf("er print:\n%s%s", r.stdout, r.stderr)
	}
}

// sampleFigures parses a -sample_detail listing of gprofng display text or er print: for each
// sample (0 for the aggregate), its start and end times and its user and system CPU, in ms.
func sampleFigures(t *testing.T, out string) map[int][4]int64 {
	t.Helper()
	re := regexp.MustCompile(`^\s*(Sample Number|Start Time \(sec\.\)|End Time \(sec\.\)|User CPU(?: \(sec\.\))?|System CPU(?: \(sec\.\))?): *(\S+)`)
	figs := map[int][4]int64{}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] == "Sample Number" {
			n, _ = strconv.Atoi(m[2])
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		f := figs[n]
		i := map[string]int{"Start Time (sec.)": 0, "End Time (sec.)": 1, "User CPU": 2, "User CPU (sec.)": 2, "System CPU": 3, "System CPU (sec.)": 3}[m[1]]
		f[i] = int64(math.Round(v * 1000))
		figs[n] = f
	}
	return figs
}

// statCounts parses the counts of page faults and context switches of -statistics.
func statCounts(out string) map[string]string {
	re := regexp.MustCompile(`^\s*(Minor Page Faults|Major Page Faults|Voluntary context switches|Involuntary context switches): *(\d+)$`)
	c := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			c[m[1]] = m[2]
		}
	}
	return c
}

// TestGprofngSamples: the sample points of an experiment that gprofng recorded with periodic
// sampling: er print's -sample_detail shows gprofng's samples (the same times, user and system
// CPU in each and in all), -statistics its fault and context switch counts, and -sample_list as
// many samples as gprofng's.
func TestGprofngSamples(t *testing.T) {
	needGprofng(t)
	exp := gprofngCollect(t, nil, []string{"-p", "on", "-S", "1"}, gprofngProg(t, "cpubound"), "1", "2.5")
	g := sampleFigures(t, gprofngDisplay(t, "-sample_detail", exp))
	r := er(t, "", nil, "print", "-sample_detail", exp)
	if r.code != 0 {
		t.Fatalf("er print -sample_detail: exit %d\n%s", r.code, r.stderr)
	}
	e := sampleFigures(t, r.stdout)
	if len(g) < 2 || g[1][2] == 0 {
		t.Fatalf("gprofng shows no sample with CPU time: %v", g)
	}
	if !reflect.DeepEqual(e, g) {
		t.Errorf("samples (start, end, user, system ms): er print %v, gprofng %v\n%s", e, g, r.stdout)
	}
	t.Logf("%d samples; all: %v", len(g)-1, g[0])

	gs := statCounts(gprofngDisplay(t, "-statistics", exp))
	r = er(t, "", nil, "print", "-statistics", exp)
	if es := statCounts(r.stdout); len(gs) != 4 || !reflect.DeepEqual(es, gs) {
		t.Errorf("statistics: er print %v, gprofng %v", es, gs)
	}

	r = er(t, "", nil, "print", "-sample_list", exp)
	rows := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "1" && f[1] == "yes" {
			rows++
		}
	}
	if rows != len(g)-1 {
		t.Errorf("er print -sample_list lists %d samples, gprofng %d\n%s", rows, len(g)-1, r.stdout)
	}
}
