// Package kindtest holds a toy kind of data for tests: it shows that a kind is one descriptor.
package kindtest

import (
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
)

// Units is what each toy event adds to the toy metric.
const Units = 3

// Register adds the toy kind until the test ends: its fake reader makes one event of each clock
// sample of an experiment, worth Units toy units ("toycnt", "Toy Units") at the sample's stack, with
// the sample's process, thread and time.
func Register(t testing.TB) analysis.DataKind {
	t.Helper()
	toy := &analysis.Kind{Name: "toy-tracing", Title: "Toy tracing", Noun: "toy", Record: "-X on",
		Setting: experiment.SettingKey("toy_tracing"),
		Metrics: []analysis.Metric{{Name: "toycnt", Title: "Toy Units", Short: "Toy Units"}},
		Len:     func(d *experiment.Data) int { return len(d.Clock) },
		Info: func(d *experiment.Data, i int, ev *analysis.EventInfo) {
			c := &d.Clock[i]
			ev.Pid, ev.Tid, ev.Time = c.Pid, c.Tid, c.Time
		},
		Stack: func(d *experiment.Data, i int) uint32 { return d.Clock[i].Stack },
		Prepare: func(*analysis.KindRun) analysis.KindEvents {
			return analysis.KindEvents{Values: func(_ int, out []int64) int64 { out[0] = Units; return 0 }}
		},
	}
	id := analysis.RegisterKind(toy)
	t.Cleanup(func() { analysis.RemoveKind(id) })
	return id
}
