// Package analysis turns the events and call stacks of experiments into function, load-object, source-line and instruction metrics.
package analysis

import "er/internal/experiment"

// Metric is one kind of value that events carry: a column of er_print's tables. Every event adds a
// value (possibly 0) to every metric, so new data types (heap bytes, synchronization wait, hardware
// counter events, more clock microstates) are new metrics with a function that fills them from an event.
type Metric struct {
	Name  string // keyword in metric specs: "totalcpu"
	Title string // full name: "Total CPU Time"
	Short string // column header after the flavor: "Total CPU" (as in "Excl. Total CPU")
	Time  bool   // values are nanoseconds, shown as seconds; otherwise counts
}

// ClockMetrics are the metrics of clock-profiling data, in column order. On Linux a clock sample
// is in user or kernel mode; Total CPU Time is the sum of both (and of samples of unknown mode).
var ClockMetrics = []Metric{
	{Name: "totalcpu", Title: "Total CPU Time", Short: "Total CPU", Time: true},
	{Name: "user", Title: "User CPU Time", Short: "User CPU", Time: true},
	{Name: "system", Title: "System CPU Time", Short: "Sys. CPU", Time: true},
}

// Indexes of the clock metrics in ClockMetrics and in every value vector of a Profile.
const (
	MetricTotalCPU = iota
	MetricUserCPU
	MetricSystemCPU
)

// clockValues sets out (len(ClockMetrics) values) to what clock sample s adds to each metric.
func clockValues(s *experiment.ClockSample, out []int64) {
	out[MetricTotalCPU] = s.Period
	out[MetricUserCPU] = 0
	out[MetricSystemCPU] = 0
	switch s.Mode {
	case experiment.ModeUser:
		out[MetricUserCPU] = s.Period
	case experiment.ModeKernel:
		out[MetricSystemCPU] = s.Period
	}
}

// MetricIndex returns the index of the metric named name in ms, or -1.
func MetricIndex(ms []Metric, name string) int {
	for i, m := range ms {
		if m.Name == name {
			return i
		}
	}
	return -1
}
