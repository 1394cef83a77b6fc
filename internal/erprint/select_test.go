package erprint

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
)

func TestParseIDSet(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"all", "all"}, {"ALL", "all"}, {"3", "3"}, {"1,3-5", "1,3-5"}, {"0-0,7", "0,7"},
	} {
		m, err := parseIDSet(c.in)
		if err != nil || m.String() != c.want {
			t.Errorf("parseIDSet(%q) = %s, %v; want %s", c.in, m, err, c.want)
		}
	}
	m, _ := parseIDSet("1,3-5")
	for n, want := range map[int64]bool{0: false, 1: true, 2: false, 3: true, 5: true, 6: false} {
		if m.has(n) != want {
			t.Errorf("1,3-5 has %d: %v", n, !want)
		}
	}
	for _, bad := range []string{"", "x", "1,", "5-3", "-2", "1-", "1.5", "1;2"} {
		if _, err := parseIDSet(bad); err == nil {
			t.Errorf("parseIDSet(%q) did not fail", bad)
		}
	}
	if (idSet{}).String() != "none" || (idSet{}).has(1) {
		t.Error("the zero idSet holds nothing")
	}
}

func TestParseSelSpec(t *testing.T) {
	sp, err := parseSelSpec("1:1-4+2:5, 6", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		exp, n int64
		want   bool
	}{{1, 1, true}, {1, 4, true}, {1, 5, false}, {2, 5, true}, {2, 6, true}, {2, 1, false}, {3, 1, false}} {
		if sp.has(c.exp, c.n) != c.want {
			t.Errorf("1:1-4+2:5,6: experiment %d item %d: %v", c.exp, c.n, !c.want)
		}
	}
	if sp.forExp(1) != "1-4" || sp.forExp(2) != "5,6" || sp.forExp(3) != "none" || sp.isAll() {
		t.Errorf("forExp: %q %q %q", sp.forExp(1), sp.forExp(2), sp.forExp(3))
	}
	sp, _ = parseSelSpec("all:2", 2)
	if !sp.has(1, 2) || !sp.has(2, 2) || sp.has(2, 1) || sp.forExp(2) != "2" {
		t.Error("all:2")
	}
	sp, _ = parseSelSpec("all", 2)
	if !sp.isAll() || sp.forExp(1) != "all" {
		t.Error("all")
	}
	if !(selSpec{}).isAll() || !(selSpec{}).has(5, 99) {
		t.Error("the zero selSpec selects everything")
	}
	for _, bad := range []string{"", "3:1", "0:1", "1:", "1:x", "a:1", "1-2-3"} {
		if _, err := parseSelSpec(bad, 2); err == nil {
			t.Errorf("parseSelSpec(%q) did not fail", bad)
		}
	}
}

func TestFilterExpressions(t *testing.T) {
	ev := &analysis.EventInfo{Exp: 1, Kind: analysis.DataSync, Pid: 500, Tid: 502, Thread: 3, CPU: -1, Time: 2_500_000_000, Dur: 1000, Sample: 4}
	for expr, want := range map[string]int64{
		"THRID==3":                               1,
		"thrid == 3 && lwpid == 502":             1,
		"EXPID==1":                               0,
		"EXPID==2 && PID==500":                   1,
		"CPUID":                                  -1,
		"SAMPLE IN (1, 4, 7)":                    1,
		"SAMPLE in (1,2)":                        0,
		"!(SAMPLE IN (1,2)) && THRID IN (3)":     1,
		"TSTAMP > 2.4e9 && TSTAMP <= 2.5e9":      1,
		"TSTAMP_LO":                              2_499_999_000,
		"TSTAMP_HI - TSTAMP":                     0,
		"EVT_TIME / 7":                           142,
		"EVT_TIME % 7":                           6,
		"EVT_TIME / 0":                           0,
		"EVT_TIME % 0":                           0,
		"1 + 2 * 3":                              7,
		"(1 + 2) * 3":                            9,
		"10 - 4 - 3":                             3,
		"1 << 4 | 1":                             17,
		"0x10 & 0x18 ^ 1":                        17,
		"~0":                                     -1,
		"-THRID":                                 -3,
		"1 || 0 && 0":                            1,
		"2 < 3 == 1":                             1,
		"THRID == 3 ? 10 : 20":                   10,
		"THRID != 3 ? 10 : SAMPLE > 2 ? 30 : 40": 30,
		"TSTAMP / 1000000000":                    2,
		"1 IN (0, 1) == 1":                       1,
	} {
		f, err := parseFilter(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := f(ev); got != want {
			t.Errorf("%s = %d, want %d", expr, got, want)
		}
	}
	for expr, msg := range map[string]string{
		"THRID = 3":            `at column 7: "=" is not an operator; compare with ==`,
		"THREAD==3":            `at column 1: unknown field "THREAD"`,
		"THRID==":              `the expression ends too soon`,
		"(THRID==3":            `expected )`,
		"THRID 3":              `at column 7 ("3"): expected an operator`,
		"SAMPLE IN 3":          `expected ( or a stack (USTACK, XSTACK, MSTACK, LEAF) after IN`,
		"SAMPLE IN (1 2)":      `expected , or ) in the list after IN`,
		"TSTAMP > 1.5":         `1.5 is not a whole number`,
		"THRID==3 $":           `at column 10: unexpected "$"`,
		"THRID ? 1":            `expected : of ?:`,
		"0xZZ":                 `"0xZZ" is not a number`,
		"":                     `the expression ends too soon`,
		"99999999999999999999": `is not a whole number`,
	} {
		_, err := parseFilter(expr)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want one with %q", expr, err, msg)
		}
	}
}

// session loads the synthetic experiments for a test.
func testSession(t *testing.T, dirs ...string) (*session, *strings.Builder) {
	t.Helper()
	var out strings.Builder
	s := newSession(strings.NewReader(""), &out, &strings.Builder{}, testEnv())
	if err := s.load(dirs); err != nil {
		t.Fatal(err)
	}
	return s, &out
}

func totalCPU(t *testing.T, s *session) int64 {
	t.Helper()
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	return p.Total[analysis.MetricTotalCPU]
}

// TestSelectionsPartition: every thread, sample, CPU or experiment alone adds up, to the
// nanosecond, to the whole; and a filter expression gives the same as the selection.
func TestSelectionsPartition(t *testing.T) {
	s, _ := testSession(t, "demo.1.er", "demo.2.er")
	all := totalCPU(t, s)
	if all != 155*period {
		t.Fatalf("total %d", all)
	}
	for _, c := range []struct {
		cmd    string
		filter string
		specs  []string
		want   []int64
	}{
		{"thread_select", "THRID==%s", []string{"1", "2"}, []int64{(109 + 22) * period, 24 * period}},
		{"lwp_select", "LWPID==%s", []string{"4242", "4243", "5151"}, []int64{109 * period, 24 * period, 22 * period}},
		{"cpu_select", "CPUID==%s", []string{"0", "1"}, []int64{77 * period, 78 * period}},
		{"sample_select", "SAMPLE==%s", []string{"1", "2"}, []int64{(99 + 22) * period, 34 * period}},
		{"experiment_select", "EXPID==%s", []string{"1", "2"}, []int64{133 * period, 22 * period}},
	} {
		var sum int64
		for k, spec := range c.specs {
			if err := s.execLine(c.cmd + " " + spec); err != nil {
				t.Fatal(err)
			}
			got := totalCPU(t, s)
			sum += got
			if got != c.want[k] {
				t.Errorf("%s %s: total %d, want %d", c.cmd, spec, got, c.want[k])
			}
			if err := s.execLine(c.cmd + " all"); err != nil {
				t.Fatal(err)
			}
			if err := s.execLine("filters " + strings.ReplaceAll(c.filter, "%s", spec)); err != nil {
				t.Fatal(err)
			}
			if got2 := totalCPU(t, s); got2 != got {
				t.Errorf("filters %s: total %d, %s gave %d", c.filter, got2, c.cmd, got)
			}
			if err := s.execLine("filters"); err != nil {
				t.Fatal(err)
			}
		}
		if sum != all {
			t.Errorf("%s: the parts add up to %d, want %d", c.cmd, sum, all)
		}
		if got := totalCPU(t, s); got != all {
			t.Errorf("after %s all and filters none: %d, want %d", c.cmd, got, all)
		}
	}
	// Selections combine: thread 2 of experiment 1 in sample 2 (after 1 s), on CPU 1.
	for _, line := range []string{"thread_select 1:2", "sample_select 2", "cpu_select 1"} {
		if err := s.execLine(line); err != nil {
			t.Fatal(err)
		}
	}
	if got := totalCPU(t, s); got != 12*period {
		t.Errorf("combined: %d, want %d", got, 12*period)
	}
	if err := s.execLine("filters TSTAMP < 1.3e9"); err != nil {
		t.Fatal(err)
	}
	if got := totalCPU(t, s); got != 10*period {
		t.Errorf("combined with a filter: %d, want %d", got, 10*period)
	}
}

// TestSelectErrors: bad specs are usage errors that say what is wrong, and leave the selection.
func TestSelectErrors(t *testing.T) {
	s, _ := testSession(t, "demo.1.er")
	if err := s.execLine("thread_select 2"); err != nil {
		t.Fatal(err)
	}
	for line, msg := range map[string]string{
		"thread_select 2:1":       "thread_select 2:1: experiment ids are 1 to 1 (experiment_list shows them), not 2",
		"sample_select 3-1":       `sample_select 3-1: list "3-1": "3-1": the range ends before it starts`,
		"cpu_select x":            `cpu_select x: list "x": "x": "x" is not a number (0 or more)`,
		"experiment_select 0":     "experiment_select 0: experiment ids are 1 to 1",
		"filters THRID = 2":       `filters THRID = 2: at column 7: "=" is not an operator; compare with ==`,
		"lwp_select":              "usage: lwp_select lwp_spec",
		"filters SAMPLE IN (1,2":  "expected , or )",
		"thread_select 1:1 + 1:x": `list "x"`,
	} {
		err := s.execLine(line)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), msg) || !errorsAs(err, &ue) {
			t.Errorf("%s: %v, want a usage error with %q", line, err, msg)
		}
	}
	if s.sel.threads.text != "2" {
		t.Errorf("a failed selection changed it: %q", s.sel.threads.text)
	}
	if got := totalCPU(t, s); got != 24*period {
		t.Errorf("thread 2: %d", got)
	}
}

func errorsAs(err error, ue **usageError) bool {
	u, ok := err.(*usageError)
	*ue = u
	return ok
}

// TestHeapLeaksSelected: leaks under a time filter are the leaked allocations among the selected
// events.
func TestHeapLeaksSelected(t *testing.T) {
	s, _ := testSession(t, "heap.1.er")
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	if p.Heap.Leaks.Count != 5 || p.Heap.Allocs.Count != 21 {
		t.Fatalf("unfiltered: %d leaks, %d allocations", p.Heap.Leaks.Count, p.Heap.Allocs.Count)
	}
	// The first three events are leaky's three leaks.
	if err := s.execLine("filters TSTAMP <= 300000"); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.profile(); p.Heap.Leaks.Count != 3 || p.Heap.Leaks.Bytes != 3000 || p.Heap.Allocs.Count != 3 || p.Heap.Events != 3 {
		t.Errorf("first three events: %+v", p.Heap)
	}
	// good's allocations are freed after them: no leak, though the frees are not selected.
	if err := s.execLine("filters TSTAMP > 300000 && TSTAMP <= 2300000 && (TSTAMP / 100000) % 2 == 0"); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.profile(); p.Heap.Leaks.Count != 0 || p.Heap.Allocs.Count != 10 {
		t.Errorf("good's allocations: %+v", p.Heap)
	}
	// A field of the heap's events: HTYPE, the function (4 free), and HSIZE, the bytes asked for.
	var frees, big, bigBytes int64
	for _, e := range s.exps[0].HeapEvents() {
		if e.Op == experiment.HeapFree {
			frees++
		}
		if e.Op != experiment.HeapFree && e.Size >= 1000 {
			big, bigBytes = big+1, bigBytes+int64(e.Size)
		}
	}
	if err := s.execLine("filters HTYPE == 4"); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.profile(); p.Heap.Events != frees || p.Heap.Allocs.Count != 0 || frees == 0 {
		t.Errorf("HTYPE == 4: %+v; want the %d frees alone", p.Heap, frees)
	}
	if err := s.execLine("filters hsize >= 1000 && HTYPE != 4"); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.profile(); p.Heap.Allocs.Count != big || p.Heap.Allocs.Bytes != bigBytes || big == 0 || big == 21 {
		t.Errorf("HSIZE >= 1000: %+v; want %d allocations of %d bytes", p.Heap, big, bigBytes)
	}
}

func TestSelectGolden(t *testing.T) {
	one, two := "demo.1.er", "demo.2.er"
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"select_threads", []string{"-thread_select", "2", "-thread_list", "-functions", one, two}, exitOK},
		{"select_samples", []string{"-sample_select", "1:2+2:all", "-sample_list", "-overview", "-sample_detail", "-functions", one, two}, exitOK},
		{"select_cpus_lwps", []string{"-cpu_select", "1", "-lwp_select", "4242", "-cpu_list", "-thread_list", "-limit", "4", "-functions", one}, exitOK},
		{"select_experiments", []string{"-experiment_select", "2", "-experiment_list", "-sample_detail", "-functions", one, two}, exitOK},
		{"filters", []string{"-filters", "THRID==1 && TSTAMP > 0.5e9", "-limit", "5", "-functions", "-filters", "none", "-limit", "3", "-functions", one}, exitOK},
		{"filters_csv", []string{"-printmode", "csv", "-filters", "CPUID IN (0)", "-thread_select", "1", "-thread_list", "-cpu_list", one}, exitOK},
		{"describe", []string{"-describe", one, "heap.1.er", "io.1.er"}, exitOK},
		{"filters_stack", []string{"-filters", "INSTK(worker)", "-functions", "-csingle", "compute", "-filters", `(FNAME("main"), FNAME("compute")) ORDERED IN USTACK`,
			"-functions", "-filters", `LEAF IN (FNAME("compute")) && !INSTK(worker)`, "-lines", one}, exitOK},
		{"filters_stack_heap", []string{"-filters", "INSTK(leaky)", "-leaks", "-heapstat", "heap.1.er"}, exitOK},
		{"sample_detail", []string{"-sample_detail", one, two}, exitOK},
		{"filters_error", []string{"-filters", "THRID=1", "-functions", one}, exitUsage},
		{"select_error", []string{"-sample_select", "3:1", "-functions", one}, exitUsage},
	} {
		got, code := runCase(c.args, "")
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, got)
		}
		checkGolden(t, c.name, got)
	}
	// In a script, the rest of the line is the expression; "filters" alone removes it.
	got, code := runCase([]string{one}, "filters THRID == 2 &&\tCPUID == 1\nlimit 2\nfunctions\nfilters\nfunctions\nthread_select 1, 2\n")
	if code != exitOK {
		t.Errorf("script: exit %d\n%s", code, got)
	}
	checkGolden(t, "filters_script", got)
}

// TestRefilterSameAsAnalyze: a session analyses all events once, and a selection refilters that
// profile (analysis.Profile.Refilter). Every view of a selection must print the same whether
// views of all events came first or not (views compute lines, instructions and inlined functions
// on first use, in the state the profiles share), and warn the same.
func TestRefilterSameAsAnalyze(t *testing.T) {
	annotateExperiment(t)
	common := []string{"-functions", "-callers-callees", "-calltree", "-lines", "-pcs", "-objects", "-overview", "-statistics"}
	sels := func(more ...[]string) [][]string {
		return append([][]string{
			{"-filters", "THRID==1"},
			{"-filters", "TSTAMP > 0.3e9 && TSTAMP < 0.9e9"},
			{"-filters", "THRID==2 || CPUID==1"},
			{"-thread_select", "2"},
			{"-cpu_select", "1"},
			{"-filters", "THRID==99"}, // nothing
			{"-filters", "THRID==1", "-thread_select", "1", "-functions", "-filters", "none"},
		}, more...)
	}
	for _, c := range []struct {
		name  string
		env   env
		exps  []string
		views []string
		sels  [][]string
	}{
		{"demo", testEnv(), []string{"demo.1.er", "demo.2.er"}, common,
			sels([]string{"-experiment_select", "2"}, []string{"-sample_select", "1:2+2:all"})},
		{"heap", testEnv(), []string{"heap.1.er"},
			append(common, "-leaks", "-allocs", "-heap", "-heapstat"),
			sels([]string{"-filters", "TSTAMP > 0.0005e9"})},
		{"io", testEnv(), []string{"io.1.er"},
			append(common, "-ioactivity", "-iodetail", "-iocallstack", "-iostat", "-metrics", "e.%sync:i.%sync:e+syncn", "-functions"),
			sels([]string{"-filters", "TSTAMP > 0.0005e9"})},
		{"heap+io", testEnv(), []string{"heap.1.er", "io.1.er"},
			append(common, "-leaks", "-heapstat", "-iostat"),
			sels([]string{"-experiment_select", "1"})},
		{"annotate", annotateEnv(), []string{"annotate.1.er"},
			append(common, "-source", "work", "-disasm", "caller2", "-inline", "off", "-functions", "-lines", "-source", "caller1"),
			sels([]string{"-filters", "TSTAMP > 0.5e9"})},
	} {
		erPrint := func(args ...string) (string, []string) {
			var out, errb bytes.Buffer
			run(append(args, c.exps...), strings.NewReader(""), &out, &errb, c.env)
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			sort.Strings(lines)
			return out.String(), lines
		}
		for _, sel := range c.sels {
			name := c.name + " " + strings.Join(sel, " ")
			fresh := append(append([]string{"-limit", "0"}, sel...), c.views...)
			want, wantErr := erPrint(fresh...)
			head, headErr := erPrint("-limit", "0") // what loading the experiments prints
			// The same, after a view of all events and again after every view.
			for _, first := range [][]string{{"-functions"}, common} {
				pre := append([]string{"-limit", "0"}, first...)
				again := append(append(slices.Clone(pre), sel...), c.views...)
				got, gotErr := erPrint(again...)
				before, beforeErr := erPrint(pre...)
				if !strings.HasPrefix(got, before) {
					t.Fatalf("%s: the output does not start with that of %v", name, pre)
				}
				if got = got[len(before):]; got != strings.TrimPrefix(want, head) {
					t.Errorf("%s after %v: the views differ from a fresh session's:\n%s", name, first, diff(strings.TrimPrefix(want, head), got))
				}
				// Warnings: a new profile prints its own again; in any order.
				if extra := without(gotErr, beforeErr); !slices.Equal(extra, without(wantErr, headErr)) {
					t.Errorf("%s after %v: warnings %q, want %q", name, first, extra, wantErr)
				}
			}
		}
	}
}

// without returns the lines of all that remain once each line of some is taken out once.
func without(all, some []string) []string {
	n := map[string]int{}
	for _, s := range some {
		n[s]++
	}
	var out []string
	for _, s := range all {
		if n[s] > 0 {
			n[s]--
			continue
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// TestRefilterMatchesAnalyze checks analysis.Profile.Refilter against analysis.Analyze with the
// same filter, on every figure both compute: totals, event counts, each function's exclusive and
// inclusive values and whether it is used, every call stack, line and instruction, the heap and
// I/O statistics and groups, and the event list. Functions are compared by name and object,
// since the two number them differently.
func TestRefilterMatchesAnalyze(t *testing.T) {
	annotateExperiment(t)
	for _, c := range []struct {
		env  env
		exps []string
		sels []string // er print commands that set the selection
	}{
		{testEnv(), []string{"demo.1.er", "demo.2.er"}, []string{"filters THRID==1", "filters TSTAMP > 0.3e9 && TSTAMP < 0.9e9",
			"thread_select 2", "cpu_select 1", "experiment_select 2", "sample_select 1:2+2:all", "filters THRID==99"}},
		{testEnv(), []string{"heap.1.er"}, []string{"filters TSTAMP > 0.0005e9", "filters THRID==1", "filters TSTAMP < 0.0004e9"}},
		{testEnv(), []string{"io.1.er"}, []string{"filters TSTAMP > 0.0005e9", "filters THRID==1"}},
		{testEnv(), []string{"heap.1.er", "io.1.er"}, []string{"experiment_select 1", "filters TSTAMP < 0.0005e9"}},
		{annotateEnv(), []string{"annotate.1.er"}, []string{"filters TSTAMP > 0.5e9", "filters TSTAMP < 0.3e9"}},
	} {
		for _, fold := range []bool{false, true} {
			s := newSession(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, c.env)
			if err := s.load(c.exps); err != nil {
				t.Fatal(err)
			}
			opts := analysis.Options{OpenFile: c.env.openFile, FoldInlines: fold, Events: true}
			all, err := analysis.Analyze(s.exps, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, sel := range c.sels {
				name := fmt.Sprintf("%v %s (fold %v)", c.exps, sel, fold)
				words := strings.Fields(sel)
				if err := s.exec(commandByName(t, words[0]), []string{strings.Join(words[1:], " ")}); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				opts.Filter = s.eventFilter()
				want, err := analysis.Analyze(s.exps, opts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := all.Refilter(opts.Filter, true)
				if err != nil {
					t.Fatal(err)
				}
				if want.Events == 0 && sel != "filters THRID==99" {
					t.Errorf("%s selects nothing: not a test", name)
				}
				if d := cmpProfiles(got, want); d != "" {
					t.Errorf("%s: Refilter differs from Analyze: %s", name, d)
				}
				s.exec(commandByName(t, "filters"), []string{"none"})
				s.sel = selection{}
				s.selectionChanged()
			}
		}
	}
}

func commandByName(t *testing.T, name string) *command {
	t.Helper()
	for i := range commands {
		if commands[i].name == name {
			return commands[i]
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}

// cmpProfiles describes the first difference between two profiles of the same experiments, or
// returns "".
func cmpProfiles(a, b *analysis.Profile) string {
	fkey := func(p *analysis.Profile, f int) string {
		fn := p.Functions[f]
		return fn.Name + "@" + p.Objects[fn.Object].Path
	}
	type vals struct{ excl, incl string }
	funcs := func(p *analysis.Profile) map[string]vals {
		m := map[string]vals{}
		for f := range p.Functions {
			if f == 0 || p.Used(f) {
				m[fkey(p, f)] = vals{fmt.Sprint(p.Exclusive(f)), fmt.Sprint(p.Inclusive(f))}
			}
		}
		return m
	}
	stacks := func(p *analysis.Profile) map[string]string {
		m := map[string]string{}
		for s := range p.NumStacks() {
			fr, v := p.Stack(s)
			var k []string
			for _, f := range fr {
				k = append(k, fkey(p, int(f)))
			}
			m[strings.Join(k, ";")] = fmt.Sprint(v)
		}
		return m
	}
	lines := func(p *analysis.Profile) map[string]string {
		m := map[string]string{}
		lt := p.Lines()
		for i, l := range lt.Lines {
			m[fmt.Sprintf("%s:%s:%d", fkey(p, l.Func), l.File, l.Line)] = fmt.Sprint(lt.Exclusive(i), lt.Inclusive(i))
		}
		return m
	}
	pcs := func(p *analysis.Profile) map[string]string {
		m := map[string]string{}
		pt := p.PCs()
		for i, in := range pt.PCs {
			m[fmt.Sprintf("%s:%s:%#x", fkey(p, in.Func), fkey(p, in.Symbol), in.Addr)] = fmt.Sprint(pt.Exclusive(i), pt.Inclusive(i))
		}
		return m
	}
	events := func(p *analysis.Profile) []string {
		var out []string
		for _, e := range p.EventList {
			fr, _ := p.Stack(int(e.Stack))
			var k []string
			for _, f := range fr {
				k = append(k, fkey(p, int(f)))
			}
			out = append(out, fmt.Sprint(e.Time, e.Dur, e.Pid, e.Tid, e.Exp, e.Kind, k))
		}
		return out
	}
	for _, c := range []struct {
		what string
		a, b any
	}{
		{"totals", a.Total, b.Total},
		{"events", a.Events, b.Events},
		{"data events", a.DataEvents, b.DataEvents},
		{"heap", a.Heap, b.Heap},
		{"I/O", a.IO, b.IO},
		{"I/O files", a.IOFiles, b.IOFiles},
		{"I/O descriptors", a.IODescriptors, b.IODescriptors},
		{"functions", funcs(a), funcs(b)},
		{"stacks", stacks(a), stacks(b)},
		{"lines", lines(a), lines(b)},
		{"instructions", pcs(a), pcs(b)},
		{"event list", events(a), events(b)},
	} {
		if !reflect.DeepEqual(c.a, c.b) {
			return fmt.Sprintf("%s:\n%v\nwant\n%v", c.what, c.a, c.b)
		}
	}
	return ""
}

// TestFilterNestingLimit: a filter nested deeper than maxFilterDepth is refused with the column where
// the limit was passed, whatever nests (parentheses, unary operators, ?:, long operator chains whose
// evaluation recurses), instead of overflowing the Go stack; one just inside the limit works.
func TestFilterNestingLimit(t *testing.T) {
	ev := &analysis.EventInfo{Thread: 3}
	deep := maxFilterDepth + 1
	for name, expr := range map[string]string{
		"parentheses": strings.Repeat("(", 200_000) + "1" + strings.Repeat(")", 200_000),
		"not":         strings.Repeat("!", 200_000) + "1",
		"minus":       strings.Repeat("-(", deep) + "1" + strings.Repeat(")", deep),
		"cond":        strings.Repeat("1 ? 2 : ", deep) + "3",
		"sum":         "1" + strings.Repeat(" + 1", 300_000),
		"in":          strings.Repeat("1 IN (", deep) + "1" + strings.Repeat(")", deep),
	} {
		_, err := parseFilter(expr)
		if err == nil || !strings.Contains(err.Error(), "nests deeper than 1000 levels") {
			t.Errorf("%s: error %v, want one saying it nests deeper than 1000 levels", name, err)
		}
	}
	_, err := parseFilter(strings.Repeat("(", 5) + strings.Repeat("!", 2_000))
	if want := `at column 1001 ("!"): the expression nests deeper than 1000 levels`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want one starting %q", err, want)
	}
	ok := strings.Repeat("(", maxFilterDepth-1) + "THRID" + strings.Repeat(")", maxFilterDepth-1)
	f, err := parseFilter(ok)
	if err != nil {
		t.Fatalf("%d parentheses: %v", maxFilterDepth-1, err)
	}
	if got := f(ev); got != 3 {
		t.Errorf("%d parentheses around THRID = %d, want 3", maxFilterDepth-1, got)
	}
	sum, err := parseFilter("THRID" + strings.Repeat(" + 1", maxFilterDepth-1))
	if err != nil {
		t.Fatalf("a chain of %d additions: %v", maxFilterDepth-1, err)
	}
	if got := f(ev); got != 3 {
		t.Errorf("THRID = %d, want 3", got)
	}
	if got := sum(ev); got != 3+maxFilterDepth-1 {
		t.Errorf("THRID + 1 ... = %d, want %d", got, 3+maxFilterDepth-1)
	}
}

// TestSamplesMemoryUnknown: an experiment whose sample points recorded no RSS or thread count (one
// of gprofng's) shows them as not recorded, not as 0, in the overview, the sample details and
// the statistics, and its times and counts as the points give them.
func TestSamplesMemoryUnknown(t *testing.T) {
	e := testEnv()
	e.open = func(dir string) (*experiment.Data, error) {
		d := demo1()
		d.Dir = dir
		for i := range d.Overview {
			o := &d.Overview[i]
			o.RSSBytes, o.NumThreads, o.MemoryUnknown = 0, 0, true
		}
		return d, nil
	}
	got, code := runCaseEnv([]string{"-overview", "-sample_detail", "-statistics", "g.er"}, "", e)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, got)
	}
	checkGolden(t, "samples_memory_unknown", got)
}

// TestKindFieldFilter: IOFD, a field of the I/O events, selects those of one descriptor; the
// synchronization events of the same experiment have none of it (0).
func TestKindFieldFilter(t *testing.T) {
	s, _ := testSession(t, "io.1.er")
	fds := map[int32]int64{}
	for _, e := range s.exps[0].IOEvents() {
		fds[e.FD]++
	}
	var fd int32 = -2
	for f, n := range fds {
		if f > 2 && n > 1 && n < int64(s.exps[0].IOTable().Len()) {
			fd = f
		}
	}
	if fd == -2 {
		t.Fatalf("io.1.er has no descriptor above 2 of some events: %v", fds)
	}
	if err := s.execLine(fmt.Sprintf("filters IOFD == %d", fd)); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.profile(); p.Events != fds[fd] {
		t.Errorf("IOFD == %d: %d events; want its %d calls", fd, p.Events, fds[fd])
	}
	// The synchronization events have no IOFD: a filter that names it selects none of them.
	if err := s.execLine("filters IOFD == 0 || EVT_TIME > 0"); err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, e := range s.exps[0].IOEvents() {
		if e.FD == 0 || e.Dur > 0 {
			want++
		}
	}
	if p, _ := s.profile(); p.Events != want || want == 0 {
		t.Errorf("IOFD == 0 || EVT_TIME > 0: %d events; want the %d I/O calls on 0 or that took time, no synchronization wait", p.Events, want)
	}
	// No kind has both STYPE and IOFD.
	if err := s.execLine("filters STYPE > 0 || IOFD > 0"); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.profile(); p.Events != 0 {
		t.Errorf("STYPE > 0 || IOFD > 0: %d events; want none", p.Events)
	}
}
