package kindtest

import (
	"path/filepath"
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
)

// TestRegister: the toy kind is registered with its metric for the test, its metric is in a
// profile of an experiment with a toy table (and none of the clock samples' values), and it is
// gone afterwards.
func TestRegister(t *testing.T) {
	n := len(analysis.Kinds)
	t.Run("registered", func(t *testing.T) {
		id := Register(t)
		dir := filepath.Join(t.TempDir(), "t.er")
		w, err := experiment.Create(dir, experiment.Log{FormatVersion: experiment.FormatVersion, Pid: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := w.Clock(experiment.ClockSample{Time: int64(i + 1), Pid: 1, Tid: 1, Period: 10, Mode: experiment.ModeUser}); err != nil {
				t.Fatal(err)
			}
		}
		w.UpdateLog(func(l *experiment.Log) { l.EndTime = 10 })
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := Record(t, dir); got != 2 {
			t.Fatalf("recorded %d toy events, want 2", got)
		}
		d, err := experiment.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := analysis.Analyze([]*experiment.Data{d}, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := analysis.MetricIndex(p.Metrics, "toycnt")
		if m < 0 || p.Metrics[m].Data != id || p.Total[m] != 2*Units || p.DataEvents[id] != 2 {
			t.Errorf("metrics %v, totals %v, events %v", p.Metrics, p.Total, p.DataEvents)
		}
		// A toy event without a clock sample is counted all the same: the kind reads its own table.
		d.SetClock(nil)
		p, err = analysis.Analyze([]*experiment.Data{d}, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m := analysis.MetricIndex(p.Metrics, "toycnt"); m < 0 || p.Total[m] != 2*Units {
			t.Errorf("without clock samples: metrics %v, totals %v", p.Metrics, p.Total)
		}
	})
	if len(analysis.Kinds) != n {
		t.Errorf("%d kinds after the test, %d before", len(analysis.Kinds), n)
	}
}
