package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"er/internal/export/schematest"
)

// timelineProfile is testProfile with two threads' timelines: thread 1 runs main;f (10 ns), then
// main (joined: it begins 1 ns after, within a tenth of its 20 ns), then after a gap main;f;malloc,
// and a span overlapping it (cut); thread 2 has one span.
func timelineProfile() *Profile {
	p := testProfile()
	p.Timelines = []Timeline{
		{Name: "thread 1 (pid 7, tid 7)", Process: "prog (pid 7)", Pid: 7, Tid: 7, Spans: slices.Values([]Span{
			{Start: 0, End: 10, Funcs: []int{0, 1}},
			{Start: 11, End: 31, Funcs: []int{0}},
			{Start: 100, End: 110, Funcs: []int{0, 1, 2}},
			{Start: 105, End: 120, Funcs: []int{0, 1}},
			{Start: 120, End: 120, Funcs: []int{0}}, // empty: left out
		})},
		{Name: "thread 2 (pid 7, tid 8)", Process: "prog (pid 7)", Pid: 7, Tid: 8, Spans: slices.Values([]Span{{Start: 5, End: 9, Funcs: []int{2}}})},
		{Name: "thread 1 (pid 7, tid 7) heap", Process: "prog (pid 7)", Pid: 7, Tid: 7, Spans: slices.Values([]Span{{Start: 50, End: 60, Funcs: []int{0, 2}}})},
	}
	return p
}

// TestWalk: frames open and close in time order, common callers staying open, as timelineProfile says.
func TestWalk(t *testing.T) {
	p := timelineProfile()
	var got []string
	walk(&p.Timelines[0], func(f int, at int64) { got = append(got, fmt.Sprintf("O%d@%d", f, at)) },
		func(f int, at int64) { got = append(got, fmt.Sprintf("C%d@%d", f, at)) })
	want := "O0@0 O1@0 C1@10 C0@31 O0@100 O1@100 O2@100 C2@110 C1@120 C0@120"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("walk: %s\nwant  %s", s, want)
	}
}

// TestSpeedscopeEvented: an evented profile per timeline after the sampled ones, its events those
// of walk.
func TestSpeedscopeEvented(t *testing.T) {
	var b bytes.Buffer
	if err := Speedscope(timelineProfile(), "prog", &b); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Profiles []struct {
			Type, Name, Unit     string
			StartValue, EndValue int64
			Events               []struct {
				Type  string
				At    int64
				Frame int
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Profiles) != 5 {
		t.Fatalf("%d profiles, want 2 sampled and 3 evented", len(f.Profiles))
	}
	ev := f.Profiles[2]
	var got []string
	for _, e := range ev.Events {
		got = append(got, fmt.Sprintf("%s%d@%d", e.Type, e.Frame, e.At))
	}
	if ev.Type != "evented" || ev.Name != "prog (pid 7): thread 1 (pid 7, tid 7)" || ev.Unit != "nanoseconds" || ev.StartValue != 0 || ev.EndValue != 120 ||
		strings.Join(got, " ") != "O0@0 O1@0 C1@10 C0@31 O0@100 O1@100 O2@100 C2@110 C1@120 C0@120" {
		t.Errorf("thread 1: %s %q %s [%d, %d] %s", ev.Type, ev.Name, ev.Unit, ev.StartValue, ev.EndValue, strings.Join(got, " "))
	}
	if e := f.Profiles[3]; e.StartValue != 5 || e.EndValue != 9 || len(e.Events) != 2 {
		t.Errorf("thread 2: %+v", e)
	}
}

// TestSpeedscopeSchema: er's speedscope file (sampled and evented profiles) is valid by speedscope's
// published schema, and a file the schema forbids (a frame event of type "X") is not.
func TestSpeedscopeSchema(t *testing.T) {
	var b bytes.Buffer
	if err := Speedscope(timelineProfile(), "prog", &b); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "prog.json")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := schematest.Speedscope(t, file); err != nil {
		t.Errorf("er's file is invalid: %v", err)
	}
	bad := strings.Replace(b.String(), `"type":"C"`, `"type":"X"`, 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := schematest.Speedscope(t, file); err == nil {
		t.Error("a frame event of type X passes the schema")
	}
}

// chromeTrace is the Trace Event Format's JSON object form, as far as the tests read it.
type chromeTrace struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Ph   string         `json:"ph"`
		Ts   *float64       `json:"ts"`
		Dur  *float64       `json:"dur"`
		Pid  *uint32        `json:"pid"`
		Tid  *uint64        `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
	DisplayTimeUnit string `json:"displayTimeUnit"`
}

// checkChrome checks a trace by the Trace Event Format's documented structure: an object with a
// traceEvents array; every event a name, a phase, a pid and a tid; complete events ("X") a ts and a
// positive dur, each thread's nesting (an event that starts inside another ends inside it) and in
// order of ts; metadata events ("M") naming a process or thread with args.name. It returns the
// complete events as "pid/tid name@ts+dur", and the metadata as "pid/tid process_name=NAME".
func checkChrome(t *testing.T, data []byte) []string {
	t.Helper()
	var tr chromeTrace
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("not a trace object: %v", err)
	}
	if tr.TraceEvents == nil {
		t.Fatal("no traceEvents")
	}
	stacks := map[string][]int64{} // per thread: the ends of the events open, in ns
	last := map[string]int64{}
	var out []string
	for i, e := range tr.TraceEvents {
		if e.Name == "" || e.Pid == nil || e.Tid == nil {
			t.Fatalf("event %d: no name, pid or tid", i)
		}
		th := fmt.Sprintf("%d/%d", *e.Pid, *e.Tid)
		switch e.Ph {
		case "M":
			arg := "name"
			if e.Name == "thread_sort_index" {
				arg = "sort_index"
			}
			name := e.Args[arg]
			if name == nil || (e.Name != "process_name" && e.Name != "thread_name" && e.Name != "thread_sort_index") {
				t.Errorf("event %d: metadata %s %v", i, e.Name, e.Args)
			}
			out = append(out, fmt.Sprintf("%s %s=%v", th, e.Name, name))
		case "X":
			if e.Ts == nil || e.Dur == nil || *e.Dur <= 0 {
				t.Fatalf("event %d: complete event without ts or a positive dur", i)
			}
			// In ns: the µs of the file are ns / 1e3, whose sums a float would round.
			ts, end := int64(math.Round(*e.Ts*1e3)), int64(math.Round(*e.Ts*1e3))+int64(math.Round(*e.Dur*1e3))
			if prev, ok := last[th]; ok && ts < prev {
				t.Errorf("event %d: ts %d ns before the thread's previous %d", i, ts, last[th])
			}
			last[th] = ts
			st := stacks[th]
			for len(st) > 0 && st[len(st)-1] <= ts {
				st = st[:len(st)-1]
			}
			if len(st) > 0 && end > st[len(st)-1] {
				t.Errorf("event %d (%s, %d ns+%g µs): ends after the event around it (%d ns)", i, e.Name, ts, *e.Dur, st[len(st)-1])
			}
			stacks[th] = append(st, end)
			out = append(out, fmt.Sprintf("%s %s@%g+%g", th, e.Name, *e.Ts, *e.Dur))
		default:
			t.Errorf("event %d: phase %q", i, e.Ph)
		}
	}
	return out
}

// TestChrome: the timelines as complete events nesting per thread, named threads and processes, a
// second kind of data of a thread on a track of its own.
func TestChrome(t *testing.T) {
	var b bytes.Buffer
	if err := Chrome(timelineProfile(), &b); err != nil {
		t.Fatal(err)
	}
	got := checkChrome(t, b.Bytes())
	want := []string{
		"7/7 process_name=prog (pid 7)", "7/7 thread_name=thread 1 (pid 7, tid 7)", "7/7 thread_sort_index=0",
		"7/7 main@0+0.031", "7/7 f:g@0+0.01", "7/7 main@0.1+0.02", "7/7 f:g@0.1+0.02", "7/7 malloc@0.1+0.01",
		"7/8 thread_name=thread 2 (pid 7, tid 8)", "7/8 thread_sort_index=1", "7/8 malloc@0.005+0.004",
		"7/4194311 thread_name=thread 1 (pid 7, tid 7) heap", "7/4194311 thread_sort_index=2",
		"7/4194311 main@0.05+0.01", "7/4194311 malloc@0.05+0.01",
	}
	// f;g is the function's name: the trace keeps it.
	for i := range want {
		want[i] = strings.Replace(want[i], "f:g", "f;g", 1)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trace:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A span of a function the profile lacks is an error, not a panic.
	p := timelineProfile()
	p.Timelines[1].Spans = slices.Values([]Span{{Start: 5, End: 9, Funcs: []int{9}}})
	if err := Chrome(p, &b); err == nil || !strings.Contains(err.Error(), "function 9 of 3") {
		t.Errorf("bad function: %v", err)
	}
}

// randomTimelines returns testProfile with random timelines (overlapping, joined and separate
// spans, random stacks of a few functions, recursion among them), and their spans.
func randomTimelines(r *rand.Rand) (*Profile, [][]Span) {
	p := testProfile()
	var all [][]Span
	for k := range 1 + r.IntN(3) {
		tl := Timeline{Name: fmt.Sprint("thread ", k), Process: "prog", Pid: 7, Tid: uint32(7 + k%2)}
		var at int64
		var spans []Span
		for range r.IntN(30) {
			at += r.Int64N(40) - 10
			sp := Span{Start: at, End: at + r.Int64N(30)}
			for range 1 + r.IntN(4) {
				sp.Funcs = append(sp.Funcs, r.IntN(len(p.Functions)))
			}
			spans = append(spans, sp)
		}
		tl.Spans = slices.Values(spans)
		p.Timelines = append(p.Timelines, tl)
		all = append(all, spans)
	}
	return p, all
}

// TestPropertiesChrome: random timelines give complete events that nest in every thread.
func TestPropertiesChrome(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		p, spans := randomTimelines(r)
		var b bytes.Buffer
		if err := Chrome(p, &b); err != nil {
			t.Fatal(err)
		}
		checkChrome(t, b.Bytes())
		if t.Failed() {
			t.Fatalf("random timelines %d: %+v", i, spans)
		}
	}
}

// wholeChrome is Chrome as it was before it streamed, which built the trace whole in memory:
// the reference its output must equal byte for byte.
// It wrote p's timelines in the Trace Event Format of Chrome's trace viewer (the JSON object
// form, which Perfetto, chrome://tracing and the Firefox Profiler import): a complete ("X") event
// per stretch of time a function was on a thread's stack, its callers' events around it, and
// metadata ("M") events naming the processes and threads. A thread with events of more than one
// kind of data has a track per kind: the later ones get thread ids of their own (the tid plus a
// multiple of 2^22, above Linux's largest).
func wholeChrome(p *Profile, w io.Writer) error {
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

// TestStreamedAsWhole: Speedscope and Chrome, which write as they go, write what they wrote when they
// built their files whole (wholeSpeedscope, wholeChrome), byte for byte, for random stacks and
// timelines.
func TestStreamedAsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 300 {
		p, _ := randomTimelines(r)
		p.Functions = append(p.Functions, Function{Name: "<Unknown> \"a&b\"\u2028", File: "/src/é.c"})
		var stacks []Stack
		for range r.IntN(20) {
			s := Stack{Values: []int64{r.Int64N(3) * r.Int64N(1e12), r.Int64N(2) * r.Int64N(5000)}}
			for range r.IntN(5) {
				s.Funcs = append(s.Funcs, r.IntN(len(p.Functions)))
			}
			stacks = append(stacks, s)
		}
		p.Stacks = slices.Values(stacks)
		p.StartNS = r.Int64()
		for _, f := range []struct {
			name          string
			stream, whole func(*Profile, io.Writer) error
		}{
			{"speedscope", func(p *Profile, w io.Writer) error { return Speedscope(p, "prog<1>", w) }, func(p *Profile, w io.Writer) error { return wholeSpeedscope(p, "prog<1>", w) }},
			{"chrome", Chrome, wholeChrome},
		} {
			var got, want bytes.Buffer
			if err := f.stream(p, &got); err != nil {
				t.Fatal(err)
			}
			if err := f.whole(p, &want); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("profile %d, %s:\n%s\nwant\n%s", i, f.name, got.String(), want.String())
			}
		}
	}
}
