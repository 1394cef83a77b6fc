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
		clockValues(c.mode, 10, out)
		if !slices.Equal(out, c.want) {
			t.Errorf("mode %v: %v, want %v", c.mode, out, c.want)
		}
	}
	if MetricIndex(ClockMetrics, "system") != MetricSystemCPU || MetricIndex(ClockMetrics, "heapsize") != -1 {
		t.Error("MetricIndex")
	}
}
