// Package analysis turns the events and call stacks of experiments into function, load-object, source-line and instruction metrics.
package analysis

import (
	"slices"

	"er/internal/experiment"
)

// DataKind is a kind of data an experiment holds, an index in Kinds; each kind has its metrics.
type DataKind uint8

// Metric is one kind of value that events carry: a column of er_print's tables. Every event adds a
// value (possibly 0) to every metric, so new data types (heap bytes, synchronization wait, hardware
// counter events, more clock microstates) are new metrics with a function that fills them from an event.
type Metric struct {
	Name  string   // keyword in metric specs: "totalcpu"
	Title string   // full name: "Total CPU Time"
	Short string   // column header after the flavor: "Total CPU" (as in "Excl. Total CPU")
	Time  bool     // values are nanoseconds, shown as seconds; otherwise counts (or bytes)
	Data  DataKind // the data that fills it
	// Count names the metric of the same events as counts, for a counter shown as time (cycles):
	// a metric list's "e+cycles" shows it.
	Count string
}

// ClockMetrics are the metrics of clock-profiling data, in column order. On Linux a clock sample
// is in user or kernel mode; Total CPU Time is the sum of both (and of samples of unknown mode).
var ClockMetrics = []Metric{
	{Name: "totalcpu", Title: "Total CPU Time", Short: "Total CPU", Time: true},
	{Name: "user", Title: "User CPU Time", Short: "User CPU", Time: true},
	{Name: "system", Title: "System CPU Time", Short: "Sys. CPU", Time: true},
}

// MicrostateMetrics follow ClockMetrics where an experiment recorded microstates (the off-CPU
// intervals of its threads, seed 001 table 6-1): the time threads waited for a CPU, slept on a user
// lock, slept in a major page fault on text or on data, or slept otherwise (system calls, stops);
// Total Thread Time is the sum of these and the CPU time, Wall Time that of the founder's main thread.
var MicrostateMetrics = []Metric{
	{Name: "wait", Title: "Wait CPU Time", Short: "Wait CPU", Time: true},
	{Name: "ulock", Title: "User Lock Time", Short: "User Lock", Time: true},
	{Name: "text", Title: "Text Page Fault Time", Short: "Text Fault", Time: true},
	{Name: "data", Title: "Data Page Fault Time", Short: "Data Fault", Time: true},
	{Name: "owait", Title: "Other Wait Time", Short: "Other Wait", Time: true},
	{Name: "total", Title: "Total Thread Time", Short: "Total Thread", Time: true},
	{Name: "wall", Title: "Wall Time", Short: "Wall", Time: true},
}

// HeapMetrics are the metrics of heap-tracing data (seed 000, table 2-3): allocations and their
// bytes at the allocating call stack, and the allocations never freed (leaks) and their bytes.
var HeapMetrics = []Metric{
	{Name: "heapallocbytes", Title: "Bytes Allocated", Short: "Bytes Allocated"},
	{Name: "heapalloccnt", Title: "Allocations", Short: "Allocations"},
	{Name: "heapleakbytes", Title: "Bytes Leaked", Short: "Bytes Leaked"},
	{Name: "heapleakcnt", Title: "Leaks", Short: "Leaks"},
}

// SyncMetrics are the metrics of synchronization wait tracing (seed 000, table 2-2): the time the
// traced calls waited, and their number.
var SyncMetrics = []Metric{
	{Name: "sync", Title: "Sync Wait Time", Short: "Sync Wait", Time: true},
	{Name: "syncn", Title: "Sync Wait Count", Short: "Sync Wait Count"},
}

// IOMetrics are the metrics of I/O tracing: time, bytes and calls of reads and writes, time and
// calls of other I/O operations, and time and calls of the operations that failed.
var IOMetrics = []Metric{
	{Name: "ioreadtime", Title: "Read Time", Short: "Read Time", Time: true},
	{Name: "ioreadbytes", Title: "Read Bytes", Short: "Read Bytes"},
	{Name: "ioreadcnt", Title: "Read Count", Short: "Read Count"},
	{Name: "iowritetime", Title: "Write Time", Short: "Write Time", Time: true},
	{Name: "iowritebytes", Title: "Write Bytes", Short: "Write Bytes"},
	{Name: "iowritecnt", Title: "Write Count", Short: "Write Count"},
	{Name: "ioothertime", Title: "Other I/O Time", Short: "Other I/O Time", Time: true},
	{Name: "ioothercnt", Title: "Other I/O Count", Short: "Other I/O Count"},
	{Name: "ioerrortime", Title: "I/O Error Time", Short: "I/O Error Time", Time: true},
	{Name: "ioerrorcnt", Title: "I/O Error Count", Short: "I/O Error Count"},
}

// Indexes of the clock metrics in ClockMetrics and in every value vector of a Profile that has
// clock metrics: they come first, then the microstate metrics where recorded.
const (
	MetricTotalCPU = iota
	MetricUserCPU
	MetricSystemCPU
	MetricWaitCPU
	MetricUserLock
	MetricTextFault
	MetricDataFault
	MetricOtherWait
	MetricTotalThread
	MetricWall
)

// DataKinds reports which kinds of data the experiments hold, by DataKind. A kind counts when there
// are its events or when an experiment's settings say it was recorded (so that a short run without a
// sample keeps its CPU columns). With no data at all, clock data counts, so that an empty experiment
// shows the CPU metrics.
func DataKinds(exps []*experiment.Data) []bool {
	has := make([]bool, len(Kinds))
	for _, d := range exps {
		if d == nil {
			continue
		}
		for _, k := range Kinds {
			has[k.ID] = has[k.ID] || k.Len(d) > 0 || k.recorded(d)
		}
	}
	any := false
	for _, h := range has {
		any = any || h
	}
	if !any {
		has[DataClock] = true
	}
	return has
}

// clockOn reports whether an experiment's settings leave clock profiling on.
func clockOn(d *experiment.Data) bool {
	v, ok := d.Log.Setting(experiment.SettingClockProfiling)
	return !ok || v != "off"
}

// MetricsFor returns the metrics of the data the experiments hold, in the order of a Profile's
// value vectors: those of each kind in the order of Kinds (the clock metrics first). Analyze uses
// it for Profile.Metrics.
func MetricsFor(exps []*experiment.Data) []Metric {
	has := DataKinds(exps)
	var ms []Metric
	for _, k := range Kinds {
		if has[k.ID] {
			if k.MetricsOf != nil {
				ms = append(ms, k.MetricsOf(exps)...)
				continue
			}
			ms = append(ms, k.Metrics...)
			for _, g := range k.Extra {
				if slices.ContainsFunc(exps, g.Has) {
					ms = append(ms, g.Metrics...)
				}
			}
		}
	}
	return ms
}

// clockValues sets out (len(ClockMetrics) values, or with the MicrostateMetrics after them) to what a
// clock event of mode and period adds to each metric; wall says the event is of the founder's main
// thread. A sleep counts as Other Wait: a caller that knows its stack waited on a user lock moves it
// (userLock).
func clockValues(mode experiment.Mode, period int64, wall bool, out []int64) {
	clear(out)
	switch mode {
	case experiment.ModeUser:
		out[MetricUserCPU] = period
	case experiment.ModeKernel:
		out[MetricSystemCPU] = period
	}
	if mode.CPU() {
		out[MetricTotalCPU] = period
	}
	if len(out) <= MetricTotalThread {
		return
	}
	switch mode {
	case experiment.ModeWaitCPU:
		out[MetricWaitCPU] = period
	case experiment.ModeSleep:
		out[MetricOtherWait] = period
	case experiment.ModeTextFault:
		out[MetricTextFault] = period
	case experiment.ModeDataFault:
		out[MetricDataFault] = period
	}
	out[MetricTotalThread] = period
	if wall {
		out[MetricWall] = period
	}
}

// userLock moves a sleep's Other Wait to User Lock (clockValues' out).
func userLock(out []int64) {
	if len(out) > MetricOtherWait {
		out[MetricUserLock], out[MetricOtherWait] = out[MetricOtherWait], 0
	}
}

// The indexes of the I/O metrics in IOMetrics.
const (
	ioReadTime = iota
	ioReadBytes
	ioReadCnt
	ioWriteTime
	ioWriteBytes
	ioWriteCnt
	ioOtherTime
	ioOtherCnt
	ioErrTime
	ioErrCnt
)

// ioValues sets out (len(IOMetrics) values, zeroed) to what the n calls of I/O row e (one call, or
// the sums of a summed row) add to each metric: a failed call counts only as an error; IOInherited
// and unknown operations add nothing.
func ioValues(e *experiment.IOEvent, n int64, out []int64) {
	class := e.Op.Class()
	if class == 0 {
		return
	}
	if e.Err != 0 {
		out[ioErrTime], out[ioErrCnt] = e.Dur, n
		return
	}
	switch class {
	case experiment.IORead:
		out[ioReadTime], out[ioReadBytes], out[ioReadCnt] = e.Dur, e.Bytes, n
	case experiment.IOWrite:
		out[ioWriteTime], out[ioWriteBytes], out[ioWriteCnt] = e.Dur, e.Bytes, n
	default:
		out[ioOtherTime], out[ioOtherCnt] = e.Dur, n
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
