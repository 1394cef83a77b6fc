package erprint

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"er/internal/report"
)

// jsonFunctions runs er print -printmode json with args and returns its one table.
func jsonFunctions(t *testing.T, args ...string) *report.JSONTable {
	t.Helper()
	out, _ := runOut(t, append([]string{"-printmode", "json"}, args...)...)
	doc := jsonDoc(t, out)
	if len(doc) != 1 || len(doc[0].Tables) != 1 {
		t.Fatalf("er print %v: not one table:\n%s", args, out)
	}
	return doc[0].Tables[0]
}

// TestEngineFunctions checks that the engine's function list is er print's, row for row, with each
// row linked to its function, and that filters, sorts and function commands act as er print's.
func TestEngineFunctions(t *testing.T) {
	e, err := newEngine([]string{"demo.1.er"}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec("functions")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tables) != 1 {
		t.Fatalf("functions gave %d tables", len(res.Tables))
	}
	tbl := res.Tables[0]
	want := jsonFunctions(t, "-functions", "demo.1.er")
	if len(tbl.Rows) != len(want.Rows) {
		t.Fatalf("%d rows, er print has %d", len(tbl.Rows), len(want.Rows))
	}
	p, err := e.Profile()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range tbl.Rows {
		if r.Name != want.Rows[i].Name || r.ID-1 != want.Rows[i].ID {
			t.Errorf("row %d: %q (function %d), er print %q (%d)", i, r.Name, r.ID-1, want.Rows[i].Name, want.Rows[i].ID)
		}
		for j, c := range tbl.Columns {
			if got, w := r.Cells[j].Value, cell(t, want, i, c.Key).V; got != w {
				t.Errorf("row %d %s: %v, er print %v", i, c.Key, got, w)
			}
		}
		if r.ID < 1 || e.FuncName(r.ID-1) != r.Name {
			t.Errorf("row %d (%s) is linked to function %d (%q)", i, r.Name, r.ID-1, e.FuncName(r.ID-1))
		}
	}
	if len(p.EventList) != int(p.Events) || p.Events == 0 {
		t.Errorf("event list has %d events, the profile %d", len(p.EventList), p.Events)
	}
	if got := e.SortKey(); got != "e.totalcpu" {
		t.Errorf("sort key %q", got)
	}
	cols := e.Columns()
	if len(cols) != 2 || cols[0].Key != "e.totalcpu" || cols[0].Inclusive || !cols[1].Inclusive {
		t.Errorf("columns %+v", cols)
	}

	// A function command by index: the callers-callees of the second row's function.
	f := tbl.Rows[1].ID - 1
	cc, err := e.ExecFunc("csingle", f)
	if err != nil {
		t.Fatal(err)
	}
	center := -1
	for _, r := range cc.Tables[0].Rows {
		if r.Section == "Stack Fragment" {
			center = r.ID - 1
		}
	}
	if center != f {
		t.Errorf("csingle of function %d centres on %d", f, center)
	}
	if _, err := e.ExecFunc("csingle", len(p.Functions)); err == nil {
		t.Error("csingle of a function beyond the profile: no error")
	}

	// A filter gives a new profile without events kept once KeepEvents is off.
	e.KeepEvents(false)
	if _, err := e.Exec("filters THRID == 1"); err != nil {
		t.Fatal(err)
	}
	p2, err := e.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if p2 == p || p2.EventList != nil || p2.Events >= p.Events {
		t.Errorf("filtered profile: %d events of %d, event list %d", p2.Events, p.Events, len(p2.EventList))
	}
	want = jsonFunctions(t, "-filters", "THRID == 1", "-functions", "demo.1.er")
	res, err = e.Exec("functions")
	if err != nil {
		t.Fatal(err)
	}
	if got, w := res.Tables[0].Rows[0].Cells[0].Value, cell(t, want, 0, "e.totalcpu").V; got != w {
		t.Errorf("filtered total %v, er print %v", got, w)
	}
	if e.Filter() != "THRID == 1" {
		t.Errorf("filter %q", e.Filter())
	}
	if e.NameIn(p, f) != e.FuncName(p2.FindFunctions(e.NameIn(p, f))[0]) {
		t.Errorf("NameIn gives %q", e.NameIn(p, f))
	}

	// Text: the same command printed for people.
	var b strings.Builder
	if err := e.WriteText(&b, "metrics e.totalcpu:name"); err != nil {
		t.Fatal(err)
	}
	if e.MetricSpec() != "e.totalcpu:name" {
		t.Errorf("metric spec %q", e.MetricSpec())
	}
	if _, err := e.Exec("nosuchcommand"); err == nil {
		t.Error("an unknown command: no error")
	}
}

// TestEngineRowIDs: a row linked to a function gives the function's index in JSON, as the
// Analyzer's rows do ("id"), -1 for a row of none; text and CSV do not print it.
func TestEngineRowIDs(t *testing.T) {
	tbl := &report.Table{Columns: []report.Column{{Title: "X", Key: "x", Kind: report.Count, Value: true}}, NameTitle: "Name",
		Rows: []report.Row{{ID: 8, Name: "f", Cells: []report.Cell{{Value: 1}}}, {Name: "g", Cells: []report.Cell{{Value: 2}}}}}
	for _, m := range []report.Mode{{Kind: report.TextMode}, {Kind: report.DelimitedMode, Delim: ','}} {
		var b strings.Builder
		if err := report.Write(&b, tbl, m); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "7") || strings.Contains(b.String(), "8") {
			t.Errorf("%s: the row's ID is printed: %s", m, b.String())
		}
	}
	jt := report.ToJSON(tbl)
	if jt.Rows[0].ID != 7 || jt.Rows[1].ID != -1 {
		t.Errorf("JSON ids %d, %d; want 7 and -1", jt.Rows[0].ID, jt.Rows[1].ID)
	}
}

// TestEngineTyped: the Analyzer's typed calls set the sort, the metrics and the filter without a
// command line, and View gives a view's tables as Exec of its name does; a bad filter expression and
// a sort key that is no column are errors. (The CPU times are the counts' weighted samples.)
func TestEngineTyped(t *testing.T) {
	e, err := newEngine([]string{"demo.1.er"}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	total := func() int64 {
		t.Helper()
		res, err := e.View("functions")
		if err != nil || len(res.Tables) != 1 {
			t.Fatalf("View(functions): %v, %d tables", err, len(res.Tables))
		}
		return res.Tables[0].Rows[0].Cells[0].Value
	}
	if err := e.SetMetrics("e.user:name"); err != nil || e.MetricSpec() != "e.user:name" {
		t.Fatalf("SetMetrics: %v, spec %q", err, e.MetricSpec())
	}
	if got := total(); got != 1_270_889_000 {
		t.Errorf("User CPU total %d", got)
	}
	if err := e.SetFilter("THRID == 1"); err != nil || e.Filter() != "THRID == 1" {
		t.Fatalf("SetFilter: %v, filter %q", err, e.Filter())
	}
	if got := total(); got != 1_030_721_000 {
		t.Errorf("User CPU of thread 1 %d", got)
	}
	if err := e.SetFilter(`THRID == "x"`); err == nil {
		t.Error(`SetFilter("THRID == \"x\""): no error`)
	}
	if err := e.SetFilter(""); err != nil || e.Filter() != "" || total() != 1_270_889_000 {
		t.Errorf("SetFilter(\"\"): %v, filter %q", err, e.Filter())
	}
	if err := e.SetSort("name"); err != nil || e.SortKey() != "name" {
		t.Errorf("SetSort(name): %v, key %q", err, e.SortKey())
	}
	if err := e.SetSort("e.nosuch"); err == nil {
		t.Error("SetSort(e.nosuch): no error")
	}
	a, errA := e.View("thread_list")
	b, errB := e.Exec("thread_list")
	if errA != nil || errB != nil || len(a.Tables) != 1 || len(b.Tables) != 1 || len(a.Tables[0].Rows) != len(b.Tables[0].Rows) {
		t.Errorf("View and Exec of thread_list differ: %v %v", errA, errB)
	}
}

// TestEngineFork: forks of one engine share its analysis but not its view: each sets its own
// filter, sort and metrics, and they may run at once (go test -race), each answering as an engine
// of its own would.
func TestEngineFork(t *testing.T) {
	tmpl, err := newEngine([]string{"demo.1.er"}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Profile(); err != nil {
		t.Fatal(err)
	}
	views := []struct{ filter, sort, metrics string }{
		{"", "", ""}, {"THRID == 1", "name", ""}, {"INSTK(compute)", "i.totalcpu", ""},
		{"THRID == 2", "", "i.%totalcpu:e.totalcpu:name"}, {`FNAME("sum.*") SOME IN USTACK`, "name", "e.totalcpu:name"},
	}
	answer := func(e *Engine, filter, sort, metrics string) string {
		if metrics != "" {
			if err := e.SetMetrics(metrics); err != nil {
				t.Error(err)
			}
		}
		if err := e.SetFilter(filter); err != nil {
			t.Error(err)
		}
		if sort != "" {
			if err := e.SetSort(sort); err != nil {
				t.Error(err)
			}
		}
		var b strings.Builder
		for _, cmd := range []string{"functions", "calltree", "thread_list", "lines"} {
			if err := e.WriteText(&b, cmd); err != nil {
				t.Error(err)
			}
		}
		for f := range 4 {
			res, _ := e.ExecFunc("csingle", f)
			b.WriteString(res.Text)
			for _, tb := range res.Tables {
				for _, r := range tb.Rows {
					b.WriteString(r.Name)
				}
			}
		}
		return b.String()
	}
	want := make([]string, len(views))
	for i, v := range views { // alone, each in an engine of its own
		e, err := newEngine([]string{"demo.1.er"}, testEnv())
		if err != nil {
			t.Fatal(err)
		}
		want[i] = answer(e, v.filter, v.sort, v.metrics)
	}
	forks := make([]*Engine, 4*len(views))
	for i := range forks {
		forks[i] = tmpl.Fork()
	}
	got := make([]string, len(forks))
	var wg sync.WaitGroup
	for i, e := range forks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := views[i%len(views)]
			got[i] = answer(e, v.filter, v.sort, v.metrics)
		}()
	}
	wg.Wait()
	for i := range forks {
		if w := want[i%len(views)]; got[i] != w {
			t.Errorf("fork %d (%+v) answers differently from an engine of its own:\n%s\nwant\n%s", i, views[i%len(views)], got[i], w)
		}
	}
	if tmpl.Filter() != "" || tmpl.SortKey() != "e.totalcpu" {
		t.Errorf("the forked engine has filter %q, sort %q", tmpl.Filter(), tmpl.SortKey())
	}
	p, _ := forks[0].Profile()
	base, _ := tmpl.Profile()
	if p == base || p.Unfiltered() != base {
		t.Error("a fork's unfiltered profile is not a copy of the shared one")
	}
}

// TestSetFilterKeepsView: a filter that cannot be compiled, or whose evaluation is stopped (its
// context done), leaves the engine's filter and profile as they were.
func TestSetFilterKeepsView(t *testing.T) {
	e, err := newEngine([]string{"demo.1.er"}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetFilter("THRID == 1"); err != nil {
		t.Fatal(err)
	}
	p, _ := e.Profile()
	if err := e.SetFilter("NOSUCH == 1"); err == nil || !strings.Contains(err.Error(), `unknown field "NOSUCH"`) {
		t.Errorf("a wrong filter: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.SetContext(ctx)
	err = e.SetFilter("INSTK(compute)")
	e.SetContext(nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "the analysis was stopped") {
		t.Errorf("a filter whose context is done: %v", err)
	}
	if q, _ := e.Profile(); e.Filter() != "THRID == 1" || q != p {
		t.Errorf("after the failed filters the engine has filter %q and profile %p, want %q and %p", e.Filter(), q, "THRID == 1", p)
	}
}
