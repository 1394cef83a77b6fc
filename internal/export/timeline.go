package export

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Timeline is one thread's timed events of one kind of data, in time order: what it ran (or waited
// in) when.
type Timeline struct {
	Name     string // "thread 1 (pid 4242, tid 4243)", and the kind of data where not clock profiling
	Process  string // its process: "seed002 (pid 4242)"
	Pid, Tid uint32
	Spans    []Span // in order of Start
}

// Span is one event's interval: its stack ran, or waited, from Start to End (ns since the
// profile's StartNS).
type Span struct {
	Start, End int64
	Funcs      []int // indexes into Functions, the root first
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
	for _, sp := range tl.Spans {
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
		for _, sp := range p.Timelines[i].Spans {
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
// multiple of 2^22, above Linux's largest).
func Chrome(p *Profile, w io.Writer) error {
	if err := checkTimelines(p); err != nil {
		return err
	}
	type event struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat,omitempty"`
		Ph   string         `json:"ph"`
		Ts   float64        `json:"ts"`
		Dur  *float64       `json:"dur,omitempty"`
		Pid  uint32         `json:"pid"`
		Tid  uint64         `json:"tid"`
		Args map[string]any `json:"args,omitempty"`
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	out := struct {
		TraceEvents     []event        `json:"traceEvents"`
		DisplayTimeUnit string         `json:"displayTimeUnit"`
		OtherData       map[string]any `json:"otherData"`
	}{TraceEvents: []event{}, DisplayTimeUnit: "ns", OtherData: map[string]any{"exporter": "er", "startTimeUnixNs": p.StartNS}}
	named := map[uint32]bool{}
	used := map[[2]uint64]bool{}
	for i := range p.Timelines {
		tl := &p.Timelines[i]
		tid := uint64(tl.Tid)
		for n := uint64(1); used[[2]uint64{uint64(tl.Pid), tid}]; n++ {
			tid = uint64(tl.Tid) + n<<22
		}
		used[[2]uint64{uint64(tl.Pid), tid}] = true
		if !named[tl.Pid] {
			named[tl.Pid] = true
			out.TraceEvents = append(out.TraceEvents, event{Name: "process_name", Ph: "M", Pid: tl.Pid, Tid: tid, Args: map[string]any{"name": tl.Process}})
		}
		out.TraceEvents = append(out.TraceEvents,
			event{Name: "thread_name", Ph: "M", Pid: tl.Pid, Tid: tid, Args: map[string]any{"name": tl.Name}},
			event{Name: "thread_sort_index", Ph: "M", Pid: tl.Pid, Tid: tid, Args: map[string]any{"sort_index": i}})
		type open struct {
			f     int
			start int64
		}
		type span struct {
			f, depth   int
			start, end int64
		}
		var stack []open
		var spans []span
		walk(tl, func(f int, at int64) { stack = append(stack, open{f, at}) }, func(f int, at int64) {
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			spans = append(spans, span{f: f, depth: len(stack), start: o.start, end: at})
		})
		// Callers before callees: by start, then depth.
		sort.SliceStable(spans, func(a, b int) bool {
			if spans[a].start != spans[b].start {
				return spans[a].start < spans[b].start
			}
			return spans[a].depth < spans[b].depth
		})
		for _, sp := range spans {
			fn := &p.Functions[sp.f]
			d := us(sp.end - sp.start)
			ev := event{Name: fn.Name, Ph: "X", Ts: us(sp.start), Dur: &d, Pid: tl.Pid, Tid: tid}
			if fn.File != "" {
				ev.Args = map[string]any{"file": fn.File}
			}
			out.TraceEvents = append(out.TraceEvents, ev)
		}
	}
	return json.NewEncoder(w).Encode(&out)
}
