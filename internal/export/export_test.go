package export

import (
	"bytes"
	"encoding/json"
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
		Stacks: []Stack{
			{Funcs: []int{0}, Values: []int64{10, 0}},
			{Funcs: []int{0, 1}, Values: []int64{30, 0}},
			{Funcs: []int{0, 1, 2}, Values: []int64{0, 4096}},
			{Funcs: []int{0, 2}, Values: []int64{0, 0}}, // no value: left out
		},
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
	p.Stacks = []Stack{
		{Funcs: []int{0, 1, 3}, Locs: []int{0, 1}, Values: []int64{20, 0}, Labels: []Label{{"pid", 7}, {"tid", 8}, {"thread", 2}}},
		{Funcs: []int{0, 1, 3}, Locs: []int{0, 1}, Values: []int64{30, 0}, Labels: []Label{{"pid", 7}, {"tid", 7}, {"thread", 1}}},
	}
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
	p.Stacks[0].Locs = []int{5}
	if err := Pprof(p, &b); err == nil || !strings.Contains(err.Error(), "location 5 of 2") {
		t.Errorf("a stack of a location beyond the table: %v", err)
	}
}
