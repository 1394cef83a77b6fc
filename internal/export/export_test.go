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
