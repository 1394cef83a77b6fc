package export

import (
	"fmt"
	"io"
	"iter"
	"slices"
)

// Timeline is one thread's timed events of one kind of data, in time order: what it ran (or waited
// in) when.
type Timeline struct {
	Name     string // "thread 1 (pid 4242, tid 4243)", and the kind of data where not clock profiling
	Process  string // its process: "seed002 (pid 4242)"
	Pid, Tid uint32
	// Spans gives the spans in order of Start, each valid only during its call (its Funcs may be
	// reused for the next); the writers go over them more than once, and hold none of them.
	Spans iter.Seq[Span]
}

// Span is one event's interval: its stack ran, or waited, from Start to End (ns since the
// profile's StartNS).
type Span struct {
	Start, End int64
	Funcs      []int // indexes into Functions, the root first
}

// spans returns tl.Spans, or none.
func (tl *Timeline) spans() iter.Seq[Span] {
	if tl.Spans == nil {
		return func(func(Span) bool) {}
	}
	return tl.Spans
}

// walk replays a timeline's spans as frames opening and closing, in time order: consecutive spans
// keep their common callers open. A span that begins before the previous one ends is cut to begin
// where it ends; one that begins within a tenth of its length after the previous one ends is joined
// to it (the sampling clocks' jitter: a thread that runs on shows as one stretch); after a longer
// gap every frame is closed where the previous span ended.
func walk(tl *Timeline, open, close func(f int, at int64)) {
	var cur []int
	var end int64
	started := false
	closeTo := func(n int, at int64) {
		for len(cur) > n {
			close(cur[len(cur)-1], at)
			cur = cur[:len(cur)-1]
		}
	}
	for sp := range tl.spans() {
		start, stop := sp.Start, sp.End
		if started && start < end {
			start = end
		}
		if stop <= start {
			continue
		}
		if started && start > end {
			if start-end <= (stop-start)/10 {
				start = end
			} else {
				closeTo(0, end)
			}
		}
		k := 0
		for k < len(cur) && k < len(sp.Funcs) && cur[k] == sp.Funcs[k] {
			k++
		}
		closeTo(k, start)
		for _, f := range sp.Funcs[k:] {
			open(f, start)
			cur = append(cur, f)
		}
		started, end = true, stop
	}
	closeTo(0, end)
}

// checkTimelines reports a span with a function p does not have.
func checkTimelines(p *Profile) error {
	for i := range p.Timelines {
		for sp := range p.Timelines[i].spans() {
			for _, f := range sp.Funcs {
				if f < 0 || f >= len(p.Functions) {
					return fmt.Errorf("export: timeline %q: function %d of %d", p.Timelines[i].Name, f, len(p.Functions))
				}
			}
		}
	}
	return nil
}

// Chrome writes p's timelines in the Trace Event Format of Chrome's trace viewer (the JSON object
// form, which Perfetto, chrome://tracing and the Firefox Profiler import): a complete ("X") event
// per stretch of time a function was on a thread's stack, its callers' events around it, and
// metadata ("M") events naming the processes and threads. A thread with events of more than one
// kind of data has a track per kind: the later ones get thread ids of their own (the tid plus a
// multiple of 2^22, above Linux's largest). It writes as it goes, a thread at a time: it walks each
// timeline twice, first for the end of each stretch (the one thing it holds: 8 bytes a stretch of
// the thread it is writing), then writing the stretches in the order they begin (a caller before
// the functions it calls).
func Chrome(p *Profile, w io.Writer) error {
	if err := checkTimelines(p); err != nil {
		return err
	}
	j := newJSONWriter(w)
	j.raw(`{"traceEvents":[`)
	first := true
	meta := func(name string, pid uint32, tid uint64, arg string, text string, n int) {
		if !first {
			j.raw(",")
		}
		first = false
		j.raw(`{"name":`)
		j.str(name)
		j.raw(`,"ph":"M","ts":0,"pid":`)
		j.uint(uint64(pid))
		j.raw(`,"tid":`)
		j.uint(tid)
		j.raw(`,"args":{"` + arg + `":`)
		if arg == "name" {
			j.str(text)
		} else {
			j.int(int64(n))
		}
		j.raw("}}")
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	named := map[uint32]bool{}
	used := map[[2]uint64]bool{}
	var ends []int64 // the end of each stretch of the timeline, in the order they begin
	var open []int   // the stretches open, as indexes in ends
	for i := range p.Timelines {
		tl := &p.Timelines[i]
		tid := uint64(tl.Tid)
		for n := uint64(1); used[[2]uint64{uint64(tl.Pid), tid}]; n++ {
			tid = uint64(tl.Tid) + n<<22
		}
		used[[2]uint64{uint64(tl.Pid), tid}] = true
		if !named[tl.Pid] {
			named[tl.Pid] = true
			meta("process_name", tl.Pid, tid, "name", tl.Process, 0)
		}
		meta("thread_name", tl.Pid, tid, "name", tl.Name, 0)
		meta("thread_sort_index", tl.Pid, tid, "sort_index", "", i)
		ends, open = ends[:0], open[:0]
		walk(tl, func(int, int64) {
			open = append(open, len(ends))
			if len(ends) == cap(ends) { // double it (append grows a large slice by a quarter)
				ends = slices.Grow(ends, len(ends)+64)
			}
			ends = append(ends, 0)
		}, func(_ int, at int64) {
			ends[open[len(open)-1]] = at
			open = open[:len(open)-1]
		})
		k := 0
		walk(tl, func(f int, at int64) {
			fn := &p.Functions[f]
			if !first {
				j.raw(",")
			}
			first = false
			j.raw(`{"name":`)
			j.str(fn.Name)
			j.raw(`,"ph":"X","ts":`)
			j.float(us(at))
			j.raw(`,"dur":`)
			j.float(us(ends[k] - at))
			j.raw(`,"pid":`)
			j.uint(uint64(tl.Pid))
			j.raw(`,"tid":`)
			j.uint(tid)
			if fn.File != "" {
				j.raw(`,"args":{"file":`)
				j.str(fn.File)
				j.raw("}")
			}
			j.raw("}")
			k++
		}, func(int, int64) {})
	}
	j.raw(`],"displayTimeUnit":"ns","otherData":{"exporter":"er","startTimeUnixNs":`)
	j.int(p.StartNS)
	j.raw("}}\n")
	return j.flush()
}
