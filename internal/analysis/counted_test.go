package analysis

import (
	"math"
	"testing"

	"er/internal/experiment"
)

func TestCountedPeriods(t *testing.T) {
	d := &experiment.Data{Log: experiment.Log{Pid: 7, ThreadCPU: []experiment.ThreadCount{{Tid: 7, CPUNS: 1050}, {Tid: 8, CPUNS: 5000}}}}
	// Thread 7: three samples of 333 ns (999 ns) and a count of 1050 ns: weighted to add up to 1050.
	// Thread 8: one sample of 1000 ns and a count of 5000: too far apart, kept as sampled.
	// Thread 9: no count.
	for _, s := range []experiment.ClockSample{{Pid: 7, Tid: 7, Period: 333}, {Pid: 7, Tid: 8, Period: 1000},
		{Pid: 7, Tid: 7, Period: 333}, {Pid: 7, Tid: 9, Period: 400}, {Pid: 7, Tid: 7, Period: 333}} {
		d.Clock = append(d.Clock, s)
	}
	got := countedPeriods(d)
	want := []int64{350, 1000, 350, 400, 350}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("countedPeriods = %v, want %v", got, want)
		}
	}
	if countedPeriods(&experiment.Data{Clock: d.Clock}) != nil {
		t.Error("no counts: want nil")
	}
}

// TestCountedPeriodsSaturate: periods and a thread count whose sums pass the largest int64 give
// weighted periods that are never negative and add up to it, not wrapped ones.
func TestCountedPeriodsSaturate(t *testing.T) {
	const big = int64(1) << 62
	d := &experiment.Data{Log: experiment.Log{Pid: 7, ThreadCPU: []experiment.ThreadCount{{Tid: 7, CPUNS: math.MaxInt64}}}}
	for range 4 {
		d.Clock = append(d.Clock, experiment.ClockSample{Pid: 7, Tid: 7, Period: big})
	}
	got := countedPeriods(d)
	var sum int64
	for _, v := range got {
		if v < 0 {
			t.Fatalf("countedPeriods = %v: a negative period", got)
		}
		sum = AddSat(sum, v)
	}
	if sum != math.MaxInt64 {
		t.Errorf("countedPeriods = %v, adding up to %d, want %d", got, sum, int64(math.MaxInt64))
	}
}
