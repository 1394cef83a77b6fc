package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func testProfile() *Profile {
	return &Profile{
		Metrics:   []Metric{{"totalcpu", "nanoseconds"}, {"heapallocbytes", "bytes"}},
		Functions: []Function{{Name: "main", Object: 1, Addr: 0x1100}, {Name: "f;g", SystemName: "_Z1fv", Object: 1}, {Name: "malloc", Object: 2}},
		Objects:   []Object{{Path: "<Total>"}, {Path: "/bin/prog", BuildID: "abcd"}, {Path: "/lib/libc.so.6"}},
		Main:      1,
		Stacks: slices.Values([]Stack{
			{Funcs: []int{0}, Values: []int64{10, 0}},
			{Funcs: []int{0, 1}, Values: []int64{30, 0}},
			{Funcs: []int{0, 1, 2}, Values: []int64{0, 4096}},
			{Funcs: []int{0, 2}, Values: []int64{0, 0}}, // no value: left out
		}),
		StartNS: 1700000000000000000, DurationNS: 2e9,
	}
}

// TestPprof: the profile reads back with pprof's own parser: a sample type per metric, a sample per
// stack with a value (leaf first), a mapping per load object with the main one first.
func TestPprof(t *testing.T) {
	var b bytes.Buffer
	if err := Pprof(testProfile(), &b); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 2 || p.SampleType[0].Unit != "nanoseconds" || p.SampleType[1].Type != "heapallocbytes" {
		t.Errorf("sample types %v", p.SampleType)
	}
	if len(p.Sample) != 3 {
		t.Fatalf("%d samples, want 3", len(p.Sample))
	}
	leaf := func(s *profile.Sample) string { return s.Location[0].Line[0].Function.Name }
	if s := p.Sample[1]; leaf(s) != "f;g" || s.Value[0] != 30 || len(s.Location) != 2 || s.Location[1].Line[0].Function.Name != "main" {
		t.Errorf("sample 2: %v", s)
	}
	if len(p.Mapping) != 2 || p.Mapping[0].File != "/bin/prog" || p.Mapping[0].BuildID != "abcd" {
		t.Errorf("mappings %v", p.Mapping)
	}
	if p.Sample[2].Location[0].Mapping.File != "/lib/libc.so.6" || p.DurationNanos != 2e9 {
		t.Errorf("malloc's mapping %v, duration %d", p.Sample[2].Location[0].Mapping, p.DurationNanos)
	}
}

// TestFolded: a line per stack of one metric, from the root, ';' in a name made ':'.
func TestFolded(t *testing.T) {
	var b bytes.Buffer
	if err := Folded(testProfile(), 0, &b); err != nil {
		t.Fatal(err)
	}
	if want := "main 10\nmain;f:g 30\n"; b.String() != want {
		t.Errorf("folded %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := Folded(testProfile(), 1, &b); err != nil || !strings.HasSuffix(b.String(), "main;f:g;malloc 4096\n") {
		t.Errorf("folded bytes %q, %v", b.String(), err)
	}
}

// TestSpeedscope: a sampled profile per metric with values, the shared frames by function, the
// stacks from the root with their weights.
func TestSpeedscope(t *testing.T) {
	var b bytes.Buffer
	if err := Speedscope(testProfile(), "prog", &b); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Schema string `json:"$schema"`
		Shared struct {
			Frames []struct{ Name string } `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Type, Name, Unit     string
			StartValue, EndValue int64
			Samples              [][]int
			Weights              []int64
		} `json:"profiles"`
	}
	if err := json.Unmarshal(b.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if f.Schema != "https://www.speedscope.app/file-format-schema.json" || len(f.Shared.Frames) != 3 || f.Shared.Frames[1].Name != "f;g" {
		t.Errorf("file %+v", f)
	}
	if len(f.Profiles) != 2 {
		t.Fatalf("%d profiles, want 2", len(f.Profiles))
	}
	cpu := f.Profiles[0]
	if cpu.Type != "sampled" || cpu.Unit != "nanoseconds" || cpu.EndValue != 40 || len(cpu.Samples) != 2 ||
		len(cpu.Samples[1]) != 2 || cpu.Samples[1][0] != 0 || cpu.Weights[1] != 30 {
		t.Errorf("totalcpu profile %+v", cpu)
	}
	if heap := f.Profiles[1]; heap.Unit != "bytes" || heap.EndValue != 4096 || len(heap.Samples[0]) != 3 {
		t.Errorf("heap profile %+v", heap)
	}
}

// TestPprofLines: with Locations, a location per instruction with its lines innermost first (an
// inlined function before the one it is inlined into), samples with their threads' labels, and
// mappings that say pprof need look nothing up.
func TestPprofLines(t *testing.T) {
	p := testProfile()
	p.Functions = append(p.Functions, Function{Name: "g", File: "/src/x.c", Object: 1})
	p.Locations = []Location{
		{Object: 1, Addr: 0x1118, Lines: []Line{{Func: 3, Line: 7}, {Func: 1, Line: 11}}},
		{Object: 1, Addr: 0x101b, Lines: []Line{{Func: 0, Line: 40}}},
	}
	stacks := []Stack{
		{Funcs: []int{0, 1, 3}, Locs: []int{0, 1}, Values: []int64{20, 0}, Labels: []Label{{"pid", 7}, {"tid", 8}, {"thread", 2}}},
		{Funcs: []int{0, 1, 3}, Locs: []int{0, 1}, Values: []int64{30, 0}, Labels: []Label{{"pid", 7}, {"tid", 7}, {"thread", 1}}},
	}
	p.Stacks = slices.Values(stacks)
	var b bytes.Buffer
	if err := Pprof(p, &b); err != nil {
		t.Fatal(err)
	}
	q, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Location) != 2 || len(q.Sample) != 2 {
		t.Fatalf("%d locations, %d samples", len(q.Location), len(q.Sample))
	}
	s := q.Sample[0]
	leaf := s.Location[0]
	if leaf.Address != 0x1118 || len(leaf.Line) != 2 || leaf.Line[0].Function.Name != "g" || leaf.Line[0].Line != 7 ||
		leaf.Line[0].Function.Filename != "/src/x.c" || leaf.Line[1].Function.Name != "f;g" || leaf.Line[1].Line != 11 {
		t.Errorf("leaf location %+v", leaf)
	}
	if s.Location[1].Line[0].Function.Name != "main" || s.Location[1].Line[0].Line != 40 || s.Location[1].Mapping.File != "/bin/prog" {
		t.Errorf("caller location %+v", s.Location[1])
	}
	if s.NumLabel["tid"][0] != 8 || s.NumLabel["thread"][0] != 2 || q.Sample[1].NumLabel["tid"][0] != 7 || s.Value[0] != 20 {
		t.Errorf("labels %v and %v, value %v", s.NumLabel, q.Sample[1].NumLabel, s.Value)
	}
	if m := q.Mapping[0]; !m.HasFunctions || !m.HasFilenames || !m.HasLineNumbers || !m.HasInlineFrames {
		t.Errorf("mapping %+v", m)
	}
	stacks[0].Locs = []int{5}
	if err := Pprof(p, &b); err == nil || !strings.Contains(err.Error(), "location 5 of 2") {
		t.Errorf("a stack of a location beyond the table: %v", err)
	}
}

// wholeSpeedscope is Speedscope as it was before it streamed, which built the file whole in
// memory: the reference its output must equal byte for byte.
// It wrote p as speedscope's JSON file format (https://www.speedscope.app): a sampled
// profile per metric with a value, each distinct stack a sample (frames from the root) weighted by its
// value of the metric; then an evented profile per timeline (frames opening and closing in time
// order, ns since p's start), which speedscope shows as the thread's time line.
func wholeSpeedscope(p *Profile, name string, w io.Writer) error {
	if err := checkTimelines(p); err != nil {
		return err
	}
	type frame struct {
		Name string `json:"name"`
		File string `json:"file,omitempty"`
	}
	type sampled struct {
		Type       string  `json:"type"`
		Name       string  `json:"name"`
		Unit       string  `json:"unit"`
		StartValue int64   `json:"startValue"`
		EndValue   int64   `json:"endValue"`
		Samples    [][]int `json:"samples"`
		Weights    []int64 `json:"weights"`
	}
	type file struct {
		Schema string `json:"$schema"`
		Shared struct {
			Frames []frame `json:"frames"`
		} `json:"shared"`
		Profiles           []any  `json:"profiles"`
		Name               string `json:"name"`
		ActiveProfileIndex int    `json:"activeProfileIndex"`
		Exporter           string `json:"exporter"`
	}
	type frameEvent struct {
		Type  string `json:"type"` // "O" or "C"
		At    int64  `json:"at"`
		Frame int    `json:"frame"`
	}
	type evented struct {
		Type       string       `json:"type"`
		Name       string       `json:"name"`
		Unit       string       `json:"unit"`
		StartValue int64        `json:"startValue"`
		EndValue   int64        `json:"endValue"`
		Events     []frameEvent `json:"events"`
	}
	out := file{Schema: "https://www.speedscope.app/file-format-schema.json", Name: name, Exporter: "er", Profiles: []any{}}
	for _, f := range p.Functions {
		out.Shared.Frames = append(out.Shared.Frames, frame{Name: f.Name, File: f.File})
	}
	for m, mt := range p.Metrics {
		unit := "none"
		switch mt.Unit {
		case "nanoseconds", "bytes":
			unit = mt.Unit
		}
		prof := sampled{Type: "sampled", Name: mt.Name, Unit: unit, Samples: [][]int{}, Weights: []int64{}}
		for s := range p.stacks() {
			if s.Values[m] == 0 || len(s.Funcs) == 0 {
				continue
			}
			prof.Samples = append(prof.Samples, slices.Clone(s.Funcs))
			prof.Weights = append(prof.Weights, s.Values[m])
			prof.EndValue += s.Values[m]
		}
		if len(prof.Samples) > 0 {
			out.Profiles = append(out.Profiles, prof)
		}
	}
	for i := range p.Timelines {
		tl := &p.Timelines[i]
		prof := evented{Type: "evented", Name: tl.Process + ": " + tl.Name, Unit: "nanoseconds"}
		walk(tl, func(f int, at int64) { prof.Events = append(prof.Events, frameEvent{"O", at, f}) },
			func(f int, at int64) { prof.Events = append(prof.Events, frameEvent{"C", at, f}) })
		if len(prof.Events) > 0 {
			prof.StartValue, prof.EndValue = prof.Events[0].At, prof.Events[len(prof.Events)-1].At
			out.Profiles = append(out.Profiles, prof)
		}
	}
	if out.Shared.Frames == nil {
		out.Shared.Frames = []frame{}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(&out)
}

// generated is testProfile with n stacks and a timeline of n spans (stacks of one to three
// functions in turn, each opening and closing frames), made one at a time as the writers ask.
func generated(n int) *Profile {
	p := testProfile()
	funcs := []int{0, 1, 2}
	p.Stacks = func(yield func(Stack) bool) {
		vals := []int64{0, 0}
		for i := range n {
			vals[0], vals[1] = int64(i%7), int64(i%5)
			if !yield(Stack{Funcs: funcs[:1+i%3], Values: vals}) {
				return
			}
		}
	}
	p.Timelines = []Timeline{{Name: "thread 1", Process: "prog", Pid: 7, Tid: 7, Spans: func(yield func(Span) bool) {
		for i := range n {
			if !yield(Span{Start: int64(i) * 100, End: int64(i)*100 + 90 - int64(i%2)*60, Funcs: funcs[:1+i%3]}) {
				return
			}
		}
	}}}
	return p
}

// allocated returns the bytes that f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestStreamingMemory: Speedscope and Chrome write their files as they go: what they allocate does
// not grow with the stacks and the events (a million stacks took 6.5 GB to export to speedscope,
// the file built whole in memory, and its JSON again), beyond Chrome's end of each stretch of the
// thread it writes (8 bytes a stretch, in a slice that grows by doubling: 32 bytes a stretch
// allocated at most).
func TestStreamingMemory(t *testing.T) {
	small, large := generated(1000), generated(50_000)
	stretches := 0
	walk(&large.Timelines[0], func(int, int64) { stretches++ }, func(int, int64) {})
	for _, f := range []struct {
		name  string
		write func(*Profile) error
		slack uint64 // what may grow
	}{
		{"speedscope", func(p *Profile) error { return Speedscope(p, "prog", io.Discard) }, 0},
		{"chrome", func(p *Profile) error { return Chrome(p, io.Discard) }, 4 * 8 * uint64(stretches)},
	} {
		var err error
		s := allocated(func() { err = f.write(small) })
		l := allocated(func() { err = errors.Join(err, f.write(large)) })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes allocated for 50,000 stacks and spans (%d stretches), %d for 1,000", f.name, l, stretches, s)
		if l > s+f.slack+16<<10 {
			t.Errorf("%s: %d bytes allocated for 50,000 stacks and spans, %d for 1,000: more than %d bytes more", f.name, l, s, f.slack+16<<10)
		}
	}
}
