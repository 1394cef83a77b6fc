package kindtest

import (
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
)

// TestRegister: the toy kind is registered with its metric for the test, its metric is in a
// profile of an experiment with clock samples, and it is gone afterwards.
func TestRegister(t *testing.T) {
	n := len(analysis.Kinds)
	t.Run("registered", func(t *testing.T) {
		id := Register(t)
		d := &experiment.Data{Log: experiment.Log{Pid: 1}, Stacks: []experiment.Stack{nil},
			Clock: []experiment.ClockSample{{Pid: 1, Tid: 1, Period: 10}, {Pid: 1, Tid: 1, Period: 10}}}
		p, err := analysis.Analyze([]*experiment.Data{d}, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := analysis.MetricIndex(p.Metrics, "toycnt")
		if m < 0 || p.Metrics[m].Data != id || p.Total[m] != 2*Units || p.DataEvents[id] != 2 {
			t.Errorf("metrics %v, totals %v, events %v", p.Metrics, p.Total, p.DataEvents)
		}
	})
	if len(analysis.Kinds) != n {
		t.Errorf("%d kinds after the test, %d before", len(analysis.Kinds), n)
	}
}
