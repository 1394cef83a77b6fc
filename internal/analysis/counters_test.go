package analysis

import (
	"testing"

	"er/internal/experiment"
)

func TestCyclesNS(t *testing.T) {
	if got := CyclesNS(24_016_800, 2_400_000_000); got != 10_007_000 {
		t.Errorf("24,016,800 cycles at 2.4 GHz: %d ns, want 10,007,000", got)
	}
	if got := CyclesNS(5, 0); got != 0 {
		t.Errorf("without a clock rate: %d", got)
	}
}

// TestCounterMetrics: one metric per counter recorded, by metric name across experiments; cycles as
// time with a metric of their events beside where every experiment that counted them knows its clock
// rate, as events where one does not; the software clocks as time.
func TestCounterMetrics(t *testing.T) {
	a := &experiment.Data{Log: experiment.Log{ClockHz: 2e9, Counters: []experiment.Counter{
		{Name: "cycles", Metric: "cycles", Title: "CPU Cycles", Unit: "CPU-cycles"},
		{Name: "insts", Metric: "insts", Title: "Instructions Executed", Unit: "events"},
	}}}
	b := &experiment.Data{Log: experiment.Log{ClockHz: 3e9, Counters: []experiment.Counter{
		{Name: "insts", Metric: "insts", Title: "Instructions Executed", Unit: "events"},
		{Name: "task-clock", Metric: "task-clock", Title: "Task Clock", Unit: "ns"},
	}}}
	ms := counterMetrics([]*experiment.Data{a, b})
	want := []Metric{
		{Name: "cycles", Title: "CPU Cycles", Short: "CPU Cycles", Time: true, Data: DataCounters, Count: "cycles_events"},
		{Name: "cycles_events", Title: "CPU Cycles Events", Short: "CPU Cycles Events", Data: DataCounters},
		{Name: "insts", Title: "Instructions Executed", Short: "Instructions Executed", Data: DataCounters},
		{Name: "task-clock", Title: "Task Clock", Short: "Task Clock", Time: true, Data: DataCounters},
	}
	if len(ms) != len(want) {
		t.Fatalf("metrics %+v", ms)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("metric %d: %+v, want %+v", i, ms[i], want[i])
		}
	}
	c := &experiment.Data{Log: experiment.Log{Counters: a.Log.Counters[:1]}} // no clock rate
	if ms := counterMetrics([]*experiment.Data{a, c}); len(ms) != 2 || ms[0].Name != "cycles" || ms[0].Time || ms[0].Count != "" {
		t.Errorf("cycles where a clock rate is unknown: %+v", ms)
	}
	// The default metric list: each counter, exclusive and inclusive, time or value, with percentages;
	// not the events of a counter shown as time.
	got := counterKind.DefaultsFor(append([]Metric{{Name: "totalcpu", Data: DataClock}}, want...))
	if w := []string{"e.%cycles", "i.%cycles", "e+%insts", "i+%insts", "e.%task-clock", "i.%task-clock"}; len(got) != len(w) {
		t.Errorf("defaults %v, want %v", got, w)
	} else {
		for i := range w {
			if got[i] != w[i] {
				t.Errorf("defaults %v, want %v", got, w)
				break
			}
		}
	}
}
