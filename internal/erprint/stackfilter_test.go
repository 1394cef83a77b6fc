package erprint

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
)

// TestStackFilters: filters on the call stack of demo.1.er, whose figures are exact: compute runs
// 90 samples called by main and 24 called by worker (thread 2), of 133.
func TestStackFilters(t *testing.T) {
	s, _ := testSession(t, "demo.1.er")
	if all := totalCPU(t, s); all != 133*period {
		t.Fatalf("total %d", all)
	}
	for _, c := range []struct {
		filter  string
		samples int64
	}{
		{"INSTK(main)", 109},
		{"INSTK(worker)", 24},
		{"INSTK(main) || INSTK(worker)", 133},
		{"INSTK(main) && INSTK(worker)", 0},
		{"!INSTK(worker)", 109},
		{`INSTK("worker")`, 24},
		{"instk( compute )", 114},
		{"INSTK(sum(double const*, int))", 29}, // the long name, with its parentheses and comma
		{"INSTK(_Z3sumPKdi)", 29},              // the mangled name
		{"INSTK(sum)", 29},                     // the short name
		{`FNAME("compute") SOME IN USTACK`, 114},
		{`(FNAME("compute") SOME IN USTACK)`, 114},
		{`FNAME("comp.*") SOME IN XSTACK`, 114},
		{`FNAME("comp") SOME IN MSTACK`, 0}, // the whole name must match
		{`FNAME("main|worker") SOME IN USTACK`, 133},
		{`FNAME("main|worker") IN USTACK`, 0}, // both
		{`FNAME("compute|worker") IN USTACK`, 24},
		{`(FNAME("main"), FNAME("compute")) ORDERED IN USTACK`, 90},
		{`(FNAME("main"), FNAME("compute") ORDERED IN USTACK)`, 90}, // the operator inside, as the Oracle manual writes it
		{`(FNAME("worker"), FNAME("compute")) ORDERED IN USTACK`, 24},
		{`(FNAME("compute"), FNAME("main")) ORDERED IN USTACK`, 0}, // callers first
		{`(FNAME("main"), FNAME("sum.*")) ORDERED IN USTACK`, 0},   // consecutive frames: main calls compute, not sum
		{`(FNAME("compute"), FNAME("sum.*")) ORDERED IN USTACK`, 29},
		{`(FNAME("fib"), FNAME("fib")) ORDERED IN USTACK`, 5}, // recursion
		{`(FNAME("fib"), FNAME("fib"), FNAME("fib")) ORDERED IN USTACK`, 5},
		{`(FNAME("fib"), FNAME("fib"), FNAME("fib"), FNAME("fib")) ORDERED IN USTACK`, 0},
		{`LEAF IN (FNAME("compute"))`, 60},
		{`LEAF IN FNAME("compute")`, 60},
		{`FNAME("compute") IN LEAF`, 60},
		{`FNAME("compute") SOME IN LEAF`, 60},
		{`(FNAME("main"), FNAME("compute")) IN USTACK`, 90},
		{`(FNAME("main"), FNAME("compute")) SOME IN USTACK`, 133 - 24 + 24},
		{`FNAME("nosuch") IN USTACK`, 0},
		{"THRID == 2 && INSTK(compute)", 24},
		{"THRID == 1 ? INSTK(compute) : 0", 90},
		{"INSTK(compute) + INSTK(main) == 2", 90},
	} {
		if err := s.execLine("filters " + c.filter); err != nil {
			t.Errorf("filters %s: %v", c.filter, err)
			continue
		}
		if got := totalCPU(t, s); got != c.samples*period {
			t.Errorf("filters %s: %d samples, want %d", c.filter, got/period, c.samples)
		}
	}
}

// TestStackFiltersByID: function ids, as printmode json gives them, in lists beside a stack, and
// LEAF compared with them.
func TestStackFiltersByID(t *testing.T) {
	s, _ := testSession(t, "demo.1.er")
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	id := func(name string) int {
		fs := p.FindFunctions(name)
		if len(fs) != 1 {
			t.Fatalf("%d functions named %s", len(fs), name)
		}
		return fs[0]
	}
	mainF, compute, worker := id("main"), id("compute"), id("worker")
	for _, c := range []struct {
		filter  string
		samples int64
	}{
		{fmt.Sprintf("%d SOME IN USTACK", worker), 24},
		{fmt.Sprintf("(%d) IN USTACK", worker), 24},
		{fmt.Sprintf("(%d, %d) ORDERED IN MSTACK", mainF, compute), 90},
		{fmt.Sprintf("(%d, %d) ORDERED IN MSTACK", compute, mainF), 0},
		{fmt.Sprintf("(%d, %d) IN USTACK", worker, compute), 24},
		{fmt.Sprintf("(%d, %d) SOME IN USTACK", worker, mainF), 133},
		{fmt.Sprintf("LEAF == %d", compute), 60},
		{fmt.Sprintf("LEAF IN (%d, %d)", compute, worker), 60},
		{fmt.Sprintf(`(%d, FNAME("compute")) ORDERED IN USTACK`, worker), 24},
	} {
		if err := s.execLine("filters " + c.filter); err != nil {
			t.Errorf("filters %s: %v", c.filter, err)
			continue
		}
		if got := totalCPU(t, s); got != c.samples*period {
			t.Errorf("filters %s: %d samples, want %d", c.filter, got/period, c.samples)
		}
	}
}

// TestInstkIsInclusive: for every function of every kind of data (clock, heap, synchronization,
// I/O), the events that INSTK(f) keeps add up, metric by metric, to f's inclusive values of all
// events, and with those of !INSTK(f) to the totals; the callers-callees view of f shows the same
// callers and callees.
func TestInstkIsInclusive(t *testing.T) {
	for _, exp := range []string{"demo.1.er", "heap.1.er", "io.1.er"} {
		s, _ := testSession(t, exp)
		all, err := s.profile()
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for f := 1; f < len(all.Functions); f++ {
			name := all.FuncName(f, analysis.NameLong)
			if !all.Used(f) || len(all.FindFunctions(name)) != 1 {
				continue
			}
			checked++
			if err := s.execLine("filters INSTK(" + name + ")"); err != nil {
				t.Fatalf("%s: filters INSTK(%s): %v", exp, name, err)
			}
			in, err := s.profile()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(in.Total, all.Inclusive(f)) {
				t.Errorf("%s: INSTK(%s): totals %v, want the inclusive values %v", exp, name, in.Total, all.Inclusive(f))
			}
			if !slices.Equal(in.Inclusive(f), all.Inclusive(f)) || !slices.Equal(in.Exclusive(f), all.Exclusive(f)) {
				t.Errorf("%s: INSTK(%s): %s's values changed", exp, name, name)
			}
			if err := s.execLine("filters !INSTK(" + name + ")"); err != nil {
				t.Fatal(err)
			}
			out, err := s.profile()
			if err != nil {
				t.Fatal(err)
			}
			for m := range all.Total {
				if in.Total[m]+out.Total[m] != all.Total[m] {
					t.Errorf("%s: INSTK(%s) and its negation: metric %s adds up to %d + %d, want %d", exp, name, all.Metrics[m].Name,
						in.Total[m], out.Total[m], all.Total[m])
				}
			}
		}
		if checked < 8 {
			t.Errorf("%s: %d functions checked", exp, checked)
		}
		if err := s.execLine("filters"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStackFilterViews: INSTK(worker) in the views: compute's only caller is worker, and the
// lists of events count only worker's thread.
func TestStackFilterViews(t *testing.T) {
	got, code := runCase([]string{"-filters", "INSTK(worker)", "-csingle", "compute", "-thread_list", "demo.1.er"}, "")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	_, callers, _ := strings.Cut(got, "== Callers\n")
	callers, _, _ = strings.Cut(callers, "\n\n")
	if want := "0.240 100.00   worker"; strings.TrimSpace(callers) != want {
		t.Errorf("compute's callers under INSTK(worker): %q, want %q; in\n%s", callers, want, got)
	}
	if !strings.Contains(got, "  1  yes  4242       1  4242       0  0.      0.") || !strings.Contains(got, "  1  yes  4242       2  4243      24  0.240 100.00") {
		t.Errorf("thread_list under INSTK(worker):\n%s", got)
	}
	s, _ := testSession(t, "demo.1.er")
	if err := s.execLine("filters INSTK(worker)"); err != nil {
		t.Fatal(err)
	}
	byThread := map[int]int{}
	s.eachEvent(0, func(ev *analysis.EventInfo, _, _ int64) { byThread[ev.Thread]++ })
	if len(byThread) != 1 || byThread[2] != 24 {
		t.Errorf("events by thread under INSTK(worker): %v, want thread 2: 24", byThread)
	}
}

// TestStackFilterOncePerStack: a stack operation is computed once for each distinct stack that the
// events reach, not for each event; one that also looks at the thread is not remembered, while the
// stack operation inside it still is.
func TestStackFilterOncePerStack(t *testing.T) {
	s, _ := testSession(t, "demo.1.er")
	all, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	stacks := map[int32]bool{}
	events := 0
	for _, st := range all.EventStacks(0, analysis.DataClock) {
		stacks[st] = true
		events++
	}
	for _, expr := range []string{"INSTK(compute)", "INSTK(compute) && THRID == 2", `(FNAME("main"), FNAME("compute")) ORDERED IN USTACK || LEAF == 3`} {
		c, err := compileFilter(expr, nil)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		q, err := all.Refilter(func(ev *analysis.EventInfo) bool { calls++; return c.eval(ev) != 0 }, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.memos) != 1 || c.memos[0].evals != len(stacks) || calls != events || !c.stacks {
			t.Errorf("%s: %d memos, %d computed for %d events of %d stacks (stacks %v); want 1 memo, %d", expr, len(c.memos), c.memos[0].evals, calls, len(stacks), c.stacks, len(stacks))
		}
		if q.Events == 0 {
			t.Errorf("%s kept nothing", expr)
		}
	}
	// Without a stack operation, no memo and no stacks.
	if c, err := compileFilter("THRID == 2", nil); err != nil || c.stacks || len(c.memos) != 0 {
		t.Errorf("THRID == 2: stacks %v, memos %d, %v", c.stacks, len(c.memos), err)
	}
}

// TestFnameFollowsNameStyle: FNAME matches names as the name command shows them, and follows a
// change of style.
func TestFnameFollowsNameStyle(t *testing.T) {
	s, _ := testSession(t, "demo.1.er")
	for _, c := range []struct {
		name, filter string
		samples      int64
	}{
		{"long", `FNAME("sum\(.*") SOME IN USTACK`, 29},
		{"short", `FNAME("sum\(.*") SOME IN USTACK`, 0},
		{"short", `FNAME("sum") SOME IN USTACK`, 29},
		{"mangled", `FNAME("_Z3sum.*") SOME IN USTACK`, 29},
		{"mangled", `FNAME("sum") SOME IN USTACK`, 0},
		{"long", `FNAME("geom::Circle::area\(\)") SOME IN USTACK`, 15},
	} {
		for _, line := range []string{"name " + c.name, "filters " + c.filter} {
			if err := s.execLine(line); err != nil {
				t.Fatal(err)
			}
		}
		if got := totalCPU(t, s); got != c.samples*period {
			t.Errorf("name %s, filters %s: %d samples, want %d", c.name, c.filter, got/period, c.samples)
		}
	}
	// A change of style alone changes what the filter keeps.
	for _, line := range []string{"name long", `filters FNAME("sum\(.*") SOME IN USTACK`, "name short"} {
		if err := s.execLine(line); err != nil {
			t.Fatal(err)
		}
	}
	if got := totalCPU(t, s); got != 0 {
		t.Errorf("after name short: %d samples, want 0", got/period)
	}
}

func TestStackFilterErrors(t *testing.T) {
	for expr, msg := range map[string]string{
		"USTACK":                             `at column 1 ("USTACK"): a call stack is not a number`,
		`FNAME("a")`:                         `a set of functions (FNAME) is not a number`,
		"(1, 2)":                             `a list is not a number`,
		"(1, 2) + 1":                         `a list is not a number`,
		"USTACK IN (1)":                      `a call stack is on the left of IN`,
		`FNAME("(") SOME IN USTACK`:          `FNAME's regular expression: error parsing regexp`,
		`FNAME(a) SOME IN USTACK`:            `expected a string in double quotes: FNAME("name")`,
		`FNAME("a" SOME IN USTACK`:           `expected ) after FNAME's string`,
		`FNAME SOME IN USTACK`:               `expected ( after FNAME`,
		`FNAME("a) SOME IN USTACK`:           `at column 7: the string does not end`,
		"INSTK(main":                         `at column 6: INSTK's ( is not closed`,
		"INSTK()":                            `INSTK names no function`,
		"INSTK":                              `expected ( after INSTK`,
		`FNAME("a") SOME USTACK`:             `expected IN after SOME`,
		`FNAME("a") ORDERED USTACK`:          `expected IN after ORDERED`,
		`FNAME("a") SOME IN 3`:               `expected ( or a stack (USTACK, XSTACK, MSTACK, LEAF) after SOME IN`,
		`1 ORDERED IN FNAME("a")`:            `ORDERED IN needs a stack`,
		`1 ORDERED IN (FNAME("a"))`:          `the list after ORDERED IN holds a set of functions (FNAME); it holds numbers`,
		`1 IN (USTACK)`:                      `the list after IN holds a call stack`,
		`(USTACK, 1) IN USTACK`:              `the list holds a call stack`,
		`"main"`:                             `a string goes in FNAME("regexp") or INSTK("name")`,
		`INSTK(a) ? USTACK : 1`:              `a call stack is not a number`,
		`!FNAME("a")`:                        `a set of functions (FNAME) is not a number`,
		`FNAME("a") SOME IN USTACK == (1,2)`: `a list is not a number`,
	} {
		_, err := parseFilter(expr)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want one with %q", expr, err, msg)
		}
	}
}

// TestStackFilterWarnsNoFunction: a name that no function has is warned about, and selects nothing.
func TestStackFilterWarnsNoFunction(t *testing.T) {
	got, code := runCase([]string{"-filters", `INSTK(nosuch) || FNAME("comp") SOME IN USTACK || INSTK(main)`, "-limit", "1", "-functions", "demo.1.er"}, "")
	for _, want := range []string{
		`er print: warning: filters: INSTK("nosuch") names no function of the loaded experiments (functions lists them): it matches none`,
		`er print: warning: filters: FNAME("comp") names no function`,
		"1.091 100.00", // main's 109 samples
	} {
		if !strings.Contains(got, want) || code != 0 {
			t.Errorf("exit %d; want %q in\n%s", code, want, got)
		}
	}
	if strings.Contains(got, `INSTK("main") names`) {
		t.Errorf("main was warned about:\n%s", got)
	}
}

// TestRestArg: in a script, filters takes the rest of its line as written (FNAME's strings keep
// their quotes and blanks), or the one string in double quotes that gprofng's scripts give it.
func TestRestArg(t *testing.T) {
	for line, want := range map[string]string{
		`filters FNAME("a  b") SOME IN USTACK`:   `FNAME("a  b") SOME IN USTACK`,
		`filters "FNAME(\"a\") SOME IN USTACK"`:  `FNAME("a") SOME IN USTACK`,
		`filters "THRID == 1"`:                   `THRID == 1`,
		`filters "a\\b"`:                         `a\b`,
		"filters THRID == 2 &&\tCPUID   == 1  ":  `THRID == 2 && CPUID == 1`,
		"  thread_select   1, 2  ":               `1, 2`,
		`filters "a" || "b"`:                     `"a" || "b"`,
		`filters FNAME("x\"  y") SOME IN USTACK`: `FNAME("x\"  y") SOME IN USTACK`,
		`filters`:                                ``,
	} {
		if got := restArg(line); got != want {
			t.Errorf("restArg(%q) = %q, want %q", line, got, want)
		}
	}
	for _, script := range []string{
		"filters FNAME(\"worker\") SOME IN USTACK\nlimit 1\nfunctions\n",
		"filters \"FNAME(\\\"worker\\\") SOME IN USTACK\"\nlimit 1\nfunctions\n",
	} {
		got, code := runCase([]string{"demo.1.er"}, script)
		if code != 0 || !strings.Contains(got, "Current filter: FNAME(\"worker\") SOME IN USTACK\n") || !strings.Contains(got, "0.240 100.00  0.240 100.00   <Total>") {
			t.Errorf("exit %d:\n%s", code, got)
		}
	}
}

// BenchmarkStackFilter600k refilters a profile of 600,000 clock samples over 50,000 stacks of 10 to
// 40 frames in 20,000 functions with a filter on fields and with filters on the stack: the stack
// operations are computed once per stack, so they cost about what a field comparison does.
func BenchmarkStackFilter600k(b *testing.B) {
	d := bigExperiment(20_000, 50_000, 600_000)
	e := testEnv()
	e.open = func(string) (*experiment.Data, error) { return d, nil }
	s := newSession(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, e)
	if err := s.load([]string{"big.er"}); err != nil {
		b.Fatal(err)
	}
	all, err := s.profile()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, expr string }{
		{"fields", "THRID == 3 || TSTAMP > 3e9"},
		{"INSTK", "INSTK(func00042)"},
		{"FNAME", `FNAME("func0004.") SOME IN USTACK`},
		{"ORDERED", `(FNAME("func000.*"), FNAME("func001.*")) ORDERED IN USTACK`},
		{"LEAF", `LEAF IN (FNAME("func1.*"))`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var kept int64
			for b.Loop() {
				f, err := compileFilter(c.expr, nil)
				if err != nil {
					b.Fatal(err)
				}
				q, err := all.Refilter(func(ev *analysis.EventInfo) bool { return f.eval(ev) != 0 }, false)
				if err != nil {
					b.Fatal(err)
				}
				kept = q.Events
			}
			b.ReportMetric(float64(kept), "kept")
		})
	}
}

// TestStackFilterOrOneMemo: 200 FNAME(...) SOME IN USTACK terms joined by || are remembered per
// stack as one expression: one memo, computed once per distinct stack, where each term had its own
// (200 lookups per event: a 7 KB filter of them on 1.2 million samples held the Analyzer 43 s), and
// the events kept are those whose stack holds one of the functions named.
func TestStackFilterOrOneMemo(t *testing.T) {
	s, _ := testSession(t, "demo.1.er")
	all, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	var names []string // functions on some stacks (under 40% of the total)
	for f := 1; f < len(all.Functions); f++ {
		if all.Used(f) && all.Inclusive(f)[0]*5 < all.Total[0]*2 {
			names = append(names, all.FuncName(f, analysis.NameLong))
		}
	}
	named := map[string]bool{}
	var terms []string
	for i := range 200 {
		n := fmt.Sprintf("nosuch%d", i)
		if i%50 == 7 { // four of them name functions of the profile
			n = names[i/50%len(names)]
			named[n] = true
		}
		terms = append(terms, fmt.Sprintf(`FNAME(".*%s") SOME IN USTACK`, regexp.QuoteMeta(n)))
	}
	c, err := compileFilter(strings.Join(terms, " || "), nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := all.Refilter(func(ev *analysis.EventInfo) bool { return c.eval(ev) != 0 }, false)
	if err != nil {
		t.Fatal(err)
	}
	stacks := map[int32]bool{}
	for _, st := range all.EventStacks(0, analysis.DataClock) {
		stacks[st] = true
	}
	if len(c.memos) != 1 || c.memos[0].evals != len(stacks) {
		evals := -1
		if len(c.memos) > 0 {
			evals = c.memos[0].evals
		}
		t.Errorf("%d memos (the first computed %d times), want 1 computed once for each of the %d stacks", len(c.memos), evals, len(stacks))
	}
	want, err := all.Refilter(func(ev *analysis.EventInfo) bool {
		fr, _ := ev.Prof.Stack(int(ev.Stack))
		for _, f := range fr {
			if named[ev.Prof.FuncName(int(f), analysis.NameLong)] {
				return true
			}
		}
		return false
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if q.Events != want.Events || !slices.Equal(q.Total, want.Total) || q.Events == 0 || q.Events == all.Events {
		t.Errorf("kept %d events %v; those whose stack holds %v: %d %v (of %d)", q.Events, q.Total, named, want.Events, want.Total, all.Events)
	}
}

// TestFilterTermsBounded: a filter of more FNAME and INSTK terms than maxFilterSets is refused,
// saying how many it has and how to write fewer. (A chain of || is bounded by maxFilterDepth; a
// list holds any number at one level.)
func TestFilterTermsBounded(t *testing.T) {
	terms := make([]string, maxFilterSets+1)
	for i := range terms {
		terms[i] = fmt.Sprintf(`FNAME("f%d")`, i)
	}
	list := func(n int) string { return "(" + strings.Join(terms[:n], ", ") + ") SOME IN USTACK" }
	_, err := compileFilter(list(len(terms)), nil)
	if err == nil || !strings.Contains(err.Error(), "the expression has 1001 FNAME and INSTK terms; at most 1000 are allowed") ||
		!strings.Contains(err.Error(), `FNAME("a|b|c") SOME IN USTACK`) {
		t.Errorf("1001 terms: %v", err)
	}
	if _, err := compileFilter(list(maxFilterSets), nil); err != nil {
		t.Errorf("1000 terms: %v", err)
	}
}

// TestRequiredLiterals: the strings that every match of a regular expression holds, which FNAME
// looks for before running the expression: those of its top-level sequence, none from an
// alternation, an optional part or a case-folded one.
func TestRequiredLiterals(t *testing.T) {
	for _, c := range []struct {
		re   string
		want []string
	}{
		{".*parse.*17", []string{"parse", "17"}},
		{"app::Parser::parse\\(char const\\*\\)", []string{"app::Parser::parse(char const*)"}},
		{"a|b", nil},
		{"(?i)abc", nil},
		{"foo(bar)+x?baz", []string{"foo", "bar", "baz"}},
		{"x(y|z)w", []string{"x", "w"}},
		{"[ab]cd", []string{"cd"}},
		{"(", nil},
	} {
		got := requiredLiterals(c.re)
		if !slices.Equal(got, c.want) {
			t.Errorf("requiredLiterals(%q) = %q, want %q", c.re, got, c.want)
		}
	}
}
