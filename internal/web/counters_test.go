package web

import (
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
	"er/internal/report"
	"er/internal/synth"
)

// TestSyntheticCounters: the Analyzer's function list of a synthetic experiment with cycles and
// instructions (issue 15, acceptance 4): the cycles shown as time are the clock's CPU time exactly
// (24,016,800 cycles at 2.4 GHz for each sample of 10,007,000 ns); e+cycles their events; CPI and IPC
// the ratio of the events in each row, to the thousandth; the same in every row er print's engine
// computes.
func TestSyntheticCounters(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "synth.er")
	if err := synth.Write(exp, synth.Spec{Samples: 20_000, Functions: 300, Threads: 4, Stacks: 800, Seed: 11,
		Duration: 20e9, Counters: true}); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	t.Cleanup(ts.Close)
	// The overview's experiments table counts the events of every kind the experiment has, the
	// counters' too: before, it had four fixed columns (Clock, Heap, Sync, I/O) and no counters.
	d, err := experiment.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		EventKinds  []string `json:"eventKinds"`
		Experiments []struct{ Events []int64 }
	}
	get(t, ts, "/api/overview", 200, &o)
	if want := []int64{int64(d.ClockTable().Len()), int64(d.CounterTable().Len())}; !slices.Equal(o.EventKinds, []string{"Clock", "Counter"}) ||
		len(o.Experiments) != 1 || !slices.Equal(o.Experiments[0].Events, want) || want[1] == 0 {
		t.Errorf("overview: event kinds %q, experiments %+v; want Clock and Counter, %d", o.EventKinds, o.Experiments, want)
	}
	post(t, ts, "/api/metrics", `{"spec":"e.totalcpu:e.cycles:e+cycles:e+insts:e.cpi:e.ipc:name"}`, 200, nil)
	var tbl report.JSONTable
	get(t, ts, "/api/functions?limit=0", 200, &tbl)
	var kinds []string
	for _, c := range tbl.Columns {
		kinds = append(kinds, c.Kind)
	}
	if len(kinds) != 6 || kinds[1] != "time" || kinds[2] != "count" || kinds[4] != "ratio" || kinds[5] != "ratio" {
		t.Fatalf("columns %+v", tbl.Columns)
	}
	if len(tbl.Rows) < 50 {
		t.Fatalf("%d rows", len(tbl.Rows))
	}
	round := func(num, den int64) int64 { return (num*1000 + den/2) / den }
	for _, r := range tbl.Rows {
		cpu, cycT, cyc, insts, cpi, ipc := r.Cells[0].V, r.Cells[1].V, r.Cells[2].V, r.Cells[3].V, r.Cells[4].V, r.Cells[5].V
		if cycT != cpu || cyc*1_000_000_000 != cpu*synth.ClockHz {
			t.Errorf("%s: CPU %d ns, cycles %d ns and %d events; want the same time, and %d events", r.Name, cpu, cycT, cyc, cpu*synth.ClockHz/1e9)
		}
		if insts == 0 {
			if cpi != 0 || ipc != 0 {
				t.Errorf("%s: no instructions, CPI %d, IPC %d", r.Name, cpi, ipc)
			}
			continue
		}
		if cpi != round(cyc, insts) || ipc != round(insts, cyc) {
			t.Errorf("%s: %d cycles, %d instructions: CPI %d/1000, IPC %d/1000; want %d, %d", r.Name, cyc, insts, cpi, ipc,
				round(cyc, insts), round(insts, cyc))
		}
	}
	// A user leaf's own samples have its IPC: 0.5, 1, 1.5 or 2 (CPI 2, 1, 0.667, 0.5); a kernel function's come
	// from many user leaves.
	leafCPI := map[int64]bool{2000: true, 1000: true, 667: true, 500: true}
	n, leaves := 0, 0
	for _, r := range tbl.Rows[1:] {
		if r.Cells[3].V == 0 {
			continue
		}
		leaves++
		if leafCPI[r.Cells[4].V] {
			n++
		} else {
			t.Logf("%s: CPI %d/1000", r.Name, r.Cells[4].V)
		}
	}
	if n < leaves/2 {
		t.Errorf("%d of %d leaf functions have a leaf's CPI (2, 1, 0.667 or 0.5)", n, leaves)
	}
}

// TestDataSpaceTab: with counters the Analyzer has a Data Space tab, whose tables are er print's
// data_objects and data_layout; an experiment without data addresses says what to collect.
func TestDataSpaceTab(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "synth.er")
	if err := synth.Write(exp, synth.Spec{Samples: 100, Functions: 20, Threads: 1, Stacks: 20, Seed: 1, Duration: 1e9, Counters: true}); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	t.Cleanup(ts.Close)
	var o struct {
		Views []string `json:"views"`
	}
	get(t, ts, "/api/overview", 200, &o)
	if !slices.Contains(o.Views, "dataspace") {
		t.Errorf("views %v: no dataspace", o.Views)
	}
	var res struct {
		Tables []report.JSONTable `json:"tables"`
		Text   string             `json:"text"`
	}
	get(t, ts, "/api/table?cmd=data_objects", 200, &res)
	if len(res.Tables) != 0 || !strings.Contains(res.Text, "no counter recorded data addresses; collect with -h +NAME") {
		t.Errorf("data_objects without addresses: %+v", res)
	}
}
