package analysis

import (
	"slices"
	"testing"

	"er/internal/experiment"
)

func TestClockValues(t *testing.T) {
	out := make([]int64, len(ClockMetrics))
	for _, c := range []struct {
		mode experiment.Mode
		want []int64
	}{
		{experiment.ModeUser, []int64{10, 10, 0}},
		{experiment.ModeKernel, []int64{10, 0, 10}},
		{experiment.ModeUnknown, []int64{10, 0, 0}},
	} {
		clockValues(c.mode, 10, true, out)
		if !slices.Equal(out, c.want) {
			t.Errorf("mode %v: %v, want %v", c.mode, out, c.want)
		}
	}
	// With the microstates: totalcpu user system wait ulock text data owait total wall.
	all := make([]int64, len(ClockMetrics)+len(MicrostateMetrics))
	for _, c := range []struct {
		mode experiment.Mode
		wall bool
		want []int64
	}{
		{experiment.ModeUser, true, []int64{10, 10, 0, 0, 0, 0, 0, 0, 10, 10}},
		{experiment.ModeKernel, false, []int64{10, 0, 10, 0, 0, 0, 0, 0, 10, 0}},
		{experiment.ModeWaitCPU, true, []int64{0, 0, 0, 10, 0, 0, 0, 0, 10, 10}},
		{experiment.ModeSleep, false, []int64{0, 0, 0, 0, 0, 0, 0, 10, 10, 0}},
		{experiment.ModeTextFault, false, []int64{0, 0, 0, 0, 0, 10, 0, 0, 10, 0}},
		{experiment.ModeDataFault, true, []int64{0, 0, 0, 0, 0, 0, 10, 0, 10, 10}},
	} {
		all[MetricUserLock] = 99 // cleared
		clockValues(c.mode, 10, c.wall, all)
		if !slices.Equal(all, c.want) {
			t.Errorf("mode %v wall %v: %v, want %v", c.mode, c.wall, all, c.want)
		}
	}
	clockValues(experiment.ModeSleep, 7, false, all)
	userLock(all)
	if want := []int64{0, 0, 0, 0, 7, 0, 0, 0, 7, 0}; !slices.Equal(all, want) {
		t.Errorf("a sleep on a lock: %v, want %v", all, want)
	}
	if MetricIndex(ClockMetrics, "system") != MetricSystemCPU || MetricIndex(ClockMetrics, "heapsize") != -1 {
		t.Error("MetricIndex")
	}
}
