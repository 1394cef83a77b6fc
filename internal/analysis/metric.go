// Package analysis turns the events and call stacks of experiments into function, load-object, source-line and instruction metrics.
package analysis

import "er/internal/experiment"

// DataKind is a kind of data an experiment holds; each kind has its metrics.
type DataKind uint8

// Data kinds.
const (
	DataClock DataKind = iota // clock profiling
	DataHeap                  // heap tracing
	DataSync                  // synchronization wait tracing
	DataIO                    // I/O tracing
)

// String names the data kind as er print's messages do.
func (k DataKind) String() string {
	switch k {
	case DataClock:
		return "clock-profiling"
	case DataHeap:
		return "heap-tracing"
	case DataSync:
		return "synchronization-tracing"
	case DataIO:
		return "I/O-tracing"
	}
	return "unknown"
}

// Metric is one kind of value that events carry: a column of er_print's tables. Every event adds a
// value (possibly 0) to every metric, so new data types (heap bytes, synchronization wait, hardware
// counter events, more clock microstates) are new metrics with a function that fills them from an event.
type Metric struct {
	Name  string   // keyword in metric specs: "totalcpu"
	Title string   // full name: "Total CPU Time"
	Short string   // column header after the flavor: "Total CPU" (as in "Excl. Total CPU")
	Time  bool     // values are nanoseconds, shown as seconds; otherwise counts (or bytes)
	Data  DataKind // the data that fills it
}

// ClockMetrics are the metrics of clock-profiling data, in column order. On Linux a clock sample
// is in user or kernel mode; Total CPU Time is the sum of both (and of samples of unknown mode).
var ClockMetrics = []Metric{
	{Name: "totalcpu", Title: "Total CPU Time", Short: "Total CPU", Time: true},
	{Name: "user", Title: "User CPU Time", Short: "User CPU", Time: true},
	{Name: "system", Title: "System CPU Time", Short: "Sys. CPU", Time: true},
}

// HeapMetrics are the metrics of heap-tracing data (seed 000, table 2-3): allocations and their
// bytes at the allocating call stack, and the allocations never freed (leaks) and their bytes.
var HeapMetrics = []Metric{
	{Name: "heapallocbytes", Title: "Bytes Allocated", Short: "Bytes Allocated", Data: DataHeap},
	{Name: "heapalloccnt", Title: "Allocations", Short: "Allocations", Data: DataHeap},
	{Name: "heapleakbytes", Title: "Bytes Leaked", Short: "Bytes Leaked", Data: DataHeap},
	{Name: "heapleakcnt", Title: "Leaks", Short: "Leaks", Data: DataHeap},
}

// SyncMetrics are the metrics of synchronization wait tracing (seed 000, table 2-2): the time the
// traced calls waited, and their number.
var SyncMetrics = []Metric{
	{Name: "sync", Title: "Sync Wait Time", Short: "Sync Wait", Time: true, Data: DataSync},
	{Name: "syncn", Title: "Sync Wait Count", Short: "Sync Wait Count", Data: DataSync},
}

// IOMetrics are the metrics of I/O tracing: time, bytes and calls of reads and writes, time and
// calls of other I/O operations, and time and calls of the operations that failed.
var IOMetrics = []Metric{
	{Name: "ioreadtime", Title: "Read Time", Short: "Read Time", Time: true, Data: DataIO},
	{Name: "ioreadbytes", Title: "Read Bytes", Short: "Read Bytes", Data: DataIO},
	{Name: "ioreadcnt", Title: "Read Count", Short: "Read Count", Data: DataIO},
	{Name: "iowritetime", Title: "Write Time", Short: "Write Time", Time: true, Data: DataIO},
	{Name: "iowritebytes", Title: "Write Bytes", Short: "Write Bytes", Data: DataIO},
	{Name: "iowritecnt", Title: "Write Count", Short: "Write Count", Data: DataIO},
	{Name: "ioothertime", Title: "Other I/O Time", Short: "Other I/O Time", Time: true, Data: DataIO},
	{Name: "ioothercnt", Title: "Other I/O Count", Short: "Other I/O Count", Data: DataIO},
	{Name: "ioerrortime", Title: "I/O Error Time", Short: "I/O Error Time", Time: true, Data: DataIO},
	{Name: "ioerrorcnt", Title: "I/O Error Count", Short: "I/O Error Count", Data: DataIO},
}

// Indexes of the clock metrics in ClockMetrics and in every value vector of a Profile that has
// clock metrics: they come first.
const (
	MetricTotalCPU = iota
	MetricUserCPU
	MetricSystemCPU
)

// DataKinds reports which kinds of data the experiments hold. Clock data counts when there are
// clock samples or when an experiment was recorded with clock profiling on (so that a short run
// without a sample keeps its CPU columns); a tracing kind counts when there are its events or an
// experiment's settings say it was traced ("heap_tracing", "sync_tracing", "io_tracing" not "off").
// With no data at all, clock data counts, so that an empty experiment shows the CPU metrics.
func DataKinds(exps []*experiment.Data) (has [4]bool) {
	for _, d := range exps {
		if d == nil {
			continue
		}
		has[DataClock] = has[DataClock] || len(d.Clock) > 0
		has[DataHeap] = has[DataHeap] || len(d.Heap) > 0
		has[DataSync] = has[DataSync] || len(d.Sync) > 0
		has[DataIO] = has[DataIO] || len(d.IO) > 0
		for _, s := range d.Log.Settings {
			on := s.Value != "off" && s.Value != "0" && s.Value != ""
			switch s.Name {
			case "clock_interval_ns":
				has[DataClock] = has[DataClock] || on && clockOn(d)
			case "heap_tracing":
				has[DataHeap] = has[DataHeap] || on
			case "sync_tracing":
				has[DataSync] = has[DataSync] || on
			case "io_tracing":
				has[DataIO] = has[DataIO] || on
			}
		}
	}
	if !has[DataHeap] && !has[DataSync] && !has[DataIO] {
		has[DataClock] = true
	}
	return has
}

// clockOn reports whether an experiment's settings leave clock profiling on.
func clockOn(d *experiment.Data) bool {
	for _, s := range d.Log.Settings {
		if s.Name == "clock_profiling" && s.Value == "off" {
			return false
		}
	}
	return true
}

// MetricsFor returns the metrics of the data the experiments hold, in the order of a Profile's
// value vectors: the clock metrics first (when there is clock data), then heap, synchronization
// and I/O metrics. Analyze uses it for Profile.Metrics.
func MetricsFor(exps []*experiment.Data) []Metric {
	has := DataKinds(exps)
	var ms []Metric
	if has[DataClock] {
		ms = append(ms, ClockMetrics...)
	}
	if has[DataHeap] {
		ms = append(ms, HeapMetrics...)
	}
	if has[DataSync] {
		ms = append(ms, SyncMetrics...)
	}
	if has[DataIO] {
		ms = append(ms, IOMetrics...)
	}
	return ms
}

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

// layout holds the index of each tracing metric in a Profile's value vectors, or -1 when absent.
type layout struct {
	clock                                    int // index of totalcpu (the clock metrics follow it), or -1
	allocCnt, allocBytes, leakCnt, leakBytes int
	sync, syncN                              int
	readTime, readBytes, readCnt             int
	writeTime, writeBytes, writeCnt          int
	otherTime, otherCnt                      int
	errTime, errCnt                          int
}

func newLayout(ms []Metric) layout {
	i := func(name string) int { return MetricIndex(ms, name) }
	return layout{
		clock:    i("totalcpu"),
		allocCnt: i("heapalloccnt"), allocBytes: i("heapallocbytes"), leakCnt: i("heapleakcnt"), leakBytes: i("heapleakbytes"),
		sync: i("sync"), syncN: i("syncn"),
		readTime: i("ioreadtime"), readBytes: i("ioreadbytes"), readCnt: i("ioreadcnt"),
		writeTime: i("iowritetime"), writeBytes: i("iowritebytes"), writeCnt: i("iowritecnt"),
		otherTime: i("ioothertime"), otherCnt: i("ioothercnt"),
		errTime: i("ioerrortime"), errCnt: i("ioerrorcnt"),
	}
}

// set adds v to out[i] when the metric is present.
func set(out []int64, i int, v int64) {
	if i >= 0 {
		out[i] = AddSat(out[i], v)
	}
}

// syncValues adds what synchronization event e adds to each metric to out.
func (l *layout) syncValues(e *experiment.SyncEvent, out []int64) {
	set(out, l.sync, e.Wait)
	set(out, l.syncN, 1)
}

// ioValues adds what I/O event e adds to each metric to out: a failed call counts only as an
// error; IOInherited and unknown operations add nothing.
func (l *layout) ioValues(e *experiment.IOEvent, out []int64) {
	class := e.Op.Class()
	if class == 0 {
		return
	}
	if e.Err != 0 {
		set(out, l.errTime, e.Dur)
		set(out, l.errCnt, 1)
		return
	}
	switch class {
	case experiment.IORead:
		set(out, l.readTime, e.Dur)
		set(out, l.readBytes, e.Bytes)
		set(out, l.readCnt, 1)
	case experiment.IOWrite:
		set(out, l.writeTime, e.Dur)
		set(out, l.writeBytes, e.Bytes)
		set(out, l.writeCnt, 1)
	default:
		set(out, l.otherTime, e.Dur)
		set(out, l.otherCnt, 1)
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
