package web

import (
	"net/http/httptest"
	"slices"
	"testing"

	"er/internal/kindtest"
)

// TestToyKindFunctions: a data kind added in a test (internal/kindtest: a descriptor, a fake reader,
// one metric) is in the Analyzer's overview and its Functions view, with no change to the web
// package (issue 13, acceptance 2). The test experiment has 450 clock samples, 50 of them in work.
func TestToyKindFunctions(t *testing.T) {
	kindtest.Register(t)
	exp := writeTestExperiment(t, t.TempDir())
	if n := kindtest.Record(t, exp); n != 450 {
		t.Fatalf("the toy collector recorded %d events, want 450", n)
	}
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	t.Cleanup(ts.Close)
	var o struct {
		Kinds       []string         `json:"kinds"`
		EventKinds  []string         `json:"eventKinds"`
		Metrics     []map[string]any `json:"metrics"`
		Experiments []struct{ Events []int64 }
		Histogram   struct {
			Series map[string][]int64 `json:"series"`
		} `json:"histogram"`
	}
	get(t, ts, "/api/overview", 200, &o)
	if !slices.Contains(o.Kinds, "toy tracing") {
		t.Errorf("overview kinds %v", o.Kinds)
	}
	// The experiments table counts its events, and the timeline's histogram has them.
	if !slices.Equal(o.EventKinds, []string{"Clock", "Toy"}) || len(o.Experiments) != 1 || !slices.Equal(o.Experiments[0].Events, []int64{450, 450}) {
		t.Errorf("overview event kinds %q, experiments %+v; want Clock and Toy, 450 each", o.EventKinds, o.Experiments)
	}
	var n int64
	for _, v := range o.Histogram.Series["toy"] {
		n += v
	}
	if n != 450 {
		t.Errorf("the histogram has %d toy events, want 450: %v", n, o.Histogram.Series)
	}
	var names []any
	for _, m := range o.Metrics {
		names = append(names, m["name"])
	}
	if !slices.Contains(names, any("toycnt")) {
		t.Errorf("overview metrics %v", names)
	}
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	col := map[string]int{}
	for j, c := range tbl.Columns {
		col[c.Key] = j
	}
	e, ok1 := col["e.toycnt"]
	i, ok2 := col["i.toycnt"]
	if !ok1 || !ok2 {
		t.Fatalf("columns %v: no e.toycnt and i.toycnt", tbl.Columns)
	}
	byName := map[string]row{}
	for _, r := range tbl.Rows {
		byName[r.Name] = r
	}
	if tot := byName["<Total>"]; tot.Cells[e].V != 450*kindtest.Units || tot.Cells[i].V != 450*kindtest.Units {
		t.Errorf("<Total> toy units %d, %d; want %d", tot.Cells[e].V, tot.Cells[i].V, 450*kindtest.Units)
	}
	if w := byName["work"]; w.Cells[e].V != 50*kindtest.Units || w.Cells[i].V != 250*kindtest.Units {
		t.Errorf("work toy units %d exclusive, %d inclusive; want %d, %d", w.Cells[e].V, w.Cells[i].V, 50*kindtest.Units, 250*kindtest.Units)
	}
	// A filter on its own column: the first 10 toy events, no clock sample.
	post(t, ts, "/api/filter", `{"expr":"TOYSEQ < 10"}`, 200, nil)
	get(t, ts, "/api/functions", 200, &tbl)
	if tot := tbl.Rows[0]; tot.Name != "<Total>" || tot.Cells[e].V != 10*kindtest.Units {
		t.Errorf("TOYSEQ < 10: %s has %d toy units; want <Total> with %d", tot.Name, tot.Cells[e].V, 10*kindtest.Units)
	}
}
