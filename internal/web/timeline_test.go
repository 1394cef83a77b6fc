package web

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
)

// TestTimelineAndRange checks the timeline's bins and stacks, and that a time range filters every view
// as er print's filter does.
func TestTimelineAndRange(t *testing.T) {
	_, ts, exp := testServer(t)
	var tl struct {
		Rows []struct {
			Label string  `json:"label"`
			Tid   uint32  `json:"tid"`
			Leaf  []int32 `json:"leaf"`
			Count []int32 `json:"count"`
		} `json:"rows"`
		Names map[int32]string `json:"names"`
	}
	get(t, ts, "/api/timeline?t0=0&t1=2000002001&w=20", 200, &tl)
	if len(tl.Rows) != 2 || tl.Rows[0].Tid != 100 || tl.Rows[1].Tid != 101 {
		t.Fatalf("rows %+v", tl.Rows)
	}
	r0 := tl.Rows[0]
	// Bins of just over 100 ms: thread 1 has 10 samples of leafA or leafB and 2 or 3 of work in
	// each (the first: 10 to 100 ms, and work at 40 and 80).
	if tl.Names[r0.Leaf[0]] != "leafA" || tl.Names[r0.Leaf[19]] != "leafB" || r0.Count[0] != 12 {
		t.Errorf("thread 1: bin 0 %s (%d events), bin 19 %s", tl.Names[r0.Leaf[0]], r0.Count[0], tl.Names[r0.Leaf[19]])
	}
	var total int32
	for _, c := range r0.Count {
		total += c
	}
	if total != 250 {
		t.Errorf("thread 1 has %d events in its bins, want 250", total)
	}
	get(t, ts, "/api/timeline?w=0", 400, nil)
	get(t, ts, "/api/timeline?t0=5&t1=5", 400, nil)

	var ev struct {
		Found  bool `json:"found"`
		Time   int64
		Frames []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"frames"`
	}
	get(t, ts, "/api/event?row=0&t=1500000000&tol=5000000", 200, &ev)
	if !ev.Found || ev.Time != 1_500_000_000 || len(ev.Frames) != 3 || ev.Frames[0].Name != "leafB" || ev.Frames[2].Name != "main" {
		t.Errorf("event at 1.5 s: %+v", ev)
	}

	var fs filterState
	post(t, ts, "/api/filter", `{"range":[0,500000000]}`, 200, &fs)
	if fs.Range == nil || fs.Text != "TSTAMP >= 0 && TSTAMP < 500000000" {
		t.Errorf("filter state %+v", fs)
	}
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	want := printRows(t, "-filters", "TSTAMP >= 0 && TSTAMP < 500000000", "-functions", exp)
	if tbl.Rows[0].Cells[0].V != want[0].v["e.totalcpu"] || want[0].v["e.totalcpu"] != 49*period+49*period+12*period {
		t.Errorf("total in range %d, er print %d", tbl.Rows[0].Cells[0].V, want[0].v["e.totalcpu"])
	}
	for _, r := range tbl.Rows {
		if r.Name == "leafB" {
			t.Errorf("leafB in the first half: %+v", r)
		}
	}
	// The frames of the timeline name functions of the profile now shown.
	get(t, ts, "/api/event?row=0&t=200000000&tol=5000000", 200, &ev)
	leafA := findRow(t, tbl.Rows, "leafA")
	if ev.Frames[0].ID != leafA.ID {
		t.Errorf("leafA is function %d in the event, %d in the list", ev.Frames[0].ID, leafA.ID)
	}
	// An expression combines with the range; a bad one leaves the filter as it was.
	post(t, ts, "/api/filter", `{"expr":"THRID == 2"}`, 200, &fs)
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 49*period || fs.Text != "TSTAMP >= 0 && TSTAMP < 500000000 && (THRID == 2)" {
		t.Errorf("range and thread 2: total %d, filter %q", tbl.Rows[0].Cells[0].V, fs.Text)
	}
	// The timeline shows every event; a frame that the selection leaves out has no id there.
	get(t, ts, "/api/event?row=0&t=1500000000&tol=5000000", 200, &ev)
	if !ev.Found || len(ev.Frames) != 3 || ev.Frames[0].Name != "leafB" || ev.Frames[0].ID != -1 {
		t.Errorf("event at 1.5 s under range and thread 2: %+v, want leafB with id -1", ev)
	}
	post(t, ts, "/api/filter", `{"expr":"NOSUCH == 1"}`, 400, nil)
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 49*period {
		t.Errorf("after a bad filter: total %d", tbl.Rows[0].Cells[0].V)
	}
	post(t, ts, "/api/filter", `{}`, 200, &fs)
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 450*period || fs.Text != "" {
		t.Errorf("cleared: total %d, filter %q", tbl.Rows[0].Cells[0].V, fs.Text)
	}
	post(t, ts, "/api/filter", `{"range":`, 400, nil)
}

// TestTimelineStates: with microstates each timeline row has a thread-state strip, each bin the state
// the thread's clock events spent most of it in; an event says its state; the function list has the
// microstate metrics.
func TestTimelineStates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ms.1.er")
	lg := experiment.Log{CollectorVersion: "er test", OS: "Linux", Arch: "x86_64", CPUs: 2, PageSize: 4096, WordSize: 64,
		Command: []string{"./prog"}, Pid: 100, EndTime: 2_000_000_000, Exited: true,
		Settings: []experiment.Setting{{Name: "clock_profiling", Value: "on"}, {Name: "clock_interval_ns", Value: "10000000"},
			{Name: experiment.SettingMicrostates, Value: "on"}}}
	w, err := experiment.Create(path, lg)
	if err != nil {
		t.Fatal(err)
	}
	w.AddMapping(experiment.Mapping{Pid: 100, Start: progBase, End: progBase + 0x10000, Path: progPath, UnloadTime: -1})
	id, err := w.Stack(stackOf("main", "work", "leafA"))
	if err != nil {
		t.Fatal(err)
	}
	for ts := int64(period); ts <= 1_000_000_000; ts += period { // on a CPU for 1 s
		if err := w.Clock(experiment.ClockSample{Time: ts, Pid: 100, Tid: 100, Mode: experiment.ModeUser, Period: period, Stack: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []experiment.ClockSample{ // asleep 0.5 s, then waiting for a CPU 0.5 s
		{Time: 1_500_000_000, Pid: 100, Tid: 100, Mode: experiment.ModeSleep, Period: 500_000_000, Stack: id},
		{Time: 2_000_000_000, Pid: 100, Tid: 100, Mode: experiment.ModeWaitCPU, Period: 500_000_000, Stack: id},
	} {
		if err := w.OffCPU(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writeProgArchive(t, path)
	s, err := Open([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	defer ts.Close()
	var tl struct {
		Rows []struct {
			State []int8 `json:"state"`
		} `json:"rows"`
	}
	get(t, ts, "/api/timeline?t0=0&t1=2000000000&w=4", 200, &tl)
	want := []int8{int8(analysis.StateUser), int8(analysis.StateUser), int8(analysis.StateOtherWait), int8(analysis.StateWaitCPU)}
	if len(tl.Rows) != 1 || !slices.Equal(tl.Rows[0].State, want) {
		t.Errorf("timeline rows %+v, want one with states %v", tl.Rows, want)
	}
	var ev struct {
		Found bool   `json:"found"`
		State string `json:"state"`
	}
	get(t, ts, "/api/event?row=0&t=1500000000&tol=1000", 200, &ev)
	if !ev.Found || ev.State != "Other Wait" {
		t.Errorf("event at 1.5 s: %+v, want Other Wait", ev)
	}
	post(t, ts, "/api/metrics", `{"spec":"e.total:e.owait:e.wait:name"}`, 200, nil)
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	var keys []string
	for _, c := range tbl.Columns {
		keys = append(keys, c.Key)
	}
	if len(tbl.Rows) == 0 || len(tbl.Rows[0].Cells) < 3 || tbl.Rows[0].Cells[0].V != 2_000_000_000 ||
		tbl.Rows[0].Cells[1].V != 500_000_000 || tbl.Rows[0].Cells[2].V != 500_000_000 {
		t.Errorf("function list columns %v, first row %+v: want <Total> with 2 s of Total Thread Time, 0.5 s of Other Wait and of Wait CPU", keys, tbl.Rows)
	}
}

// TestTimelineThreadNames: a thread that named itself (PR_SET_NAME, in log.xml) is labelled with its
// name in the timeline.
func TestTimelineThreadNames(t *testing.T) {
	exp := writeTestExperiment(t, t.TempDir())
	logPath := filepath.Join(exp, experiment.LogFile)
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	named := strings.Replace(string(b), "<end ", `<threadNames><thread time="1" pid="100" tid="101" name="worker"></thread></threadNames><end `, 1)
	if err := os.WriteFile(logPath, []byte(named), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	defer ts.Close()
	var tl struct {
		Rows []struct {
			Label string `json:"label"`
			Name  string `json:"name"`
		} `json:"rows"`
	}
	get(t, ts, "/api/timeline?w=10", 200, &tl)
	if len(tl.Rows) != 2 || tl.Rows[0].Label != "prog [100] T:1" || tl.Rows[1].Label != "prog [100] T:2 worker" || tl.Rows[1].Name != "worker" {
		t.Errorf("rows %+v, want the second labelled with its name", tl.Rows)
	}
}
