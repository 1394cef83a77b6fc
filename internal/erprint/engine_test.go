package erprint

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"er/internal/report"
)

// jsonFunctions runs er print -printmode json with args and returns the rows of its one table.
func jsonFunctions(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out, code := runCase(append([]string{"-printmode", "json"}, args...), "")
	if code != 0 {
		t.Fatalf("er print %v: exit %d\n%s", args, code, out)
	}
	out = out[strings.Index(out, "--- stdout\n")+len("--- stdout\n"):]
	out = out[:strings.Index(out, "\n")]
	var tbl struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &tbl); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return tbl.Rows
}

// nanos reads a time value of a row of er print's JSON (seconds with 9 decimals) as nanoseconds.
func nanos(row map[string]any, key string) int64 {
	v, _ := row["values"].(map[string]any)[key].(float64)
	return int64(math.Round(v * 1e9))
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
	if len(tbl.Rows) != len(want) {
		t.Fatalf("%d rows, er print has %d", len(tbl.Rows), len(want))
	}
	p, err := e.Profile()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range tbl.Rows {
		if r.Name != want[i]["name"] {
			t.Errorf("row %d: %q, er print %q", i, r.Name, want[i]["name"])
		}
		for j, c := range tbl.Columns {
			if got, w := r.Cells[j].Value, nanos(want[i], c.Key); got != w {
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
	if got, w := res.Tables[0].Rows[0].Cells[0].Value, nanos(want[0], "e.totalcpu"); got != w {
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

// TestEngineRowIDsNotPrinted checks that linking rows to functions leaves er print's JSON alone.
func TestEngineRowIDsNotPrinted(t *testing.T) {
	var b strings.Builder
	tbl := &report.Table{Columns: []report.Column{{Title: "X", Key: "x", Kind: report.Count, Value: true}}, NameTitle: "Name",
		Rows: []report.Row{{ID: 7, Name: "f", Cells: []report.Cell{{Value: 1}}}}}
	if err := report.Write(&b, tbl, report.Mode{Kind: report.JSONMode}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "7") {
		t.Errorf("the row's ID is printed: %s", b.String())
	}
}
