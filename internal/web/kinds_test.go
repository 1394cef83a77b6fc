package web

import (
	"slices"
	"testing"

	"er/internal/kindtest"
)

// TestToyKindFunctions: a data kind added in a test (internal/kindtest: a descriptor, a fake reader,
// one metric) is in the Analyzer's overview and its Functions view, with no change to the web
// package (issue 13, acceptance 2). The test experiment has 450 clock samples, 50 of them in work.
func TestToyKindFunctions(t *testing.T) {
	kindtest.Register(t)
	_, ts, _ := testServer(t)
	var o struct {
		Kinds   []string         `json:"kinds"`
		Metrics []map[string]any `json:"metrics"`
	}
	get(t, ts, "/api/overview", 200, &o)
	if !slices.Contains(o.Kinds, "toy tracing") {
		t.Errorf("overview kinds %v", o.Kinds)
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
}
