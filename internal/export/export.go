// Package export writes profiles for other tools' viewers: pprof's profile.proto, FlameGraph's folded stacks, speedscope's JSON and Chrome's trace events.
package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"
)

// Profile is what an export holds: the metrics, and the distinct call stacks with their values.
type Profile struct {
	Metrics    []Metric
	Stacks     []Stack
	Functions  []Function
	Objects    []Object
	Locations  []Location // the distinct instructions of the stacks; nil: pprof gets a location per function
	Main       int        // the object of the target program, -1 when unknown
	StartNS    int64      // wall clock at the start, Unix ns
	DurationNS int64
	Comments   []string
	Timelines  []Timeline // the threads' timed events, for the evented formats
}

// Location is an instruction of the stacks, with its functions (more than one where code was
// inlined).
type Location struct {
	Object int    // index into Objects, -1 for none
	Addr   uint64 // its link-time address; 0 for none
	Lines  []Line // innermost first: the inlined functions, then the function of the symbol table
}

// Line is a function of a Location and its source line there (in the function's File).
type Line struct {
	Func int // index into Functions
	Line int // 0 when unknown
}

// Label is a numeric label of a stack: "pid", "tid", "thread".
type Label struct {
	Key   string
	Value int64
}

// Metric is one value of every stack: a sample type.
type Metric struct {
	Name string // "totalcpu", "heapallocbytes"
	Unit string // "nanoseconds", "bytes" or "count"
}

// Stack is one distinct call stack and its metrics' values at it (its exclusive values: the events
// whose stack it is).
type Stack struct {
	Funcs  []int   // indexes into Functions, the root first
	Locs   []int   // indexes into Locations, the leaf first; nil when the profile has no Locations
	Labels []Label // the thread the values are of; nil when they are of all threads
	Values []int64
}

// Function is a function of the stacks.
type Function struct {
	Name       string // as er print shows it
	SystemName string // the symbol
	File       string // its source file, "" when unknown
	Object     int    // index into Objects, -1 for none
	Addr       uint64
}

// Object is a load object.
type Object struct {
	Path    string
	BuildID string
}

// Pprof writes p as a gzipped profile.proto (the format of github.com/google/pprof: `go tool pprof`
// reads it): a sample per stack with a value per metric, a location per function, a mapping per load
// object with its build id.
func Pprof(p *Profile, w io.Writer) error {
	out := &profile.Profile{TimeNanos: p.StartNS, DurationNanos: p.DurationNS, Comments: p.Comments}
	for _, m := range p.Metrics {
		out.SampleType = append(out.SampleType, &profile.ValueType{Type: m.Name, Unit: m.Unit})
	}
	if len(p.Metrics) > 0 {
		out.DefaultSampleType = p.Metrics[0].Name
	}
	// The mappings of load objects (not of pseudo-objects: <Total>, <Unknown>), the main one first:
	// pprof names the profile after it.
	maps := make([]*profile.Mapping, len(p.Objects))
	for i, o := range p.Objects {
		if strings.HasPrefix(o.Path, "<") || o.Path == "" {
			continue
		}
		maps[i] = &profile.Mapping{File: o.Path, BuildID: o.BuildID, HasFunctions: true}
		if i == p.Main {
			out.Mapping = append([]*profile.Mapping{maps[i]}, out.Mapping...)
		} else {
			out.Mapping = append(out.Mapping, maps[i])
		}
	}
	for i, m := range out.Mapping {
		m.ID = uint64(i + 1)
		// Every location says its functions and lines (or is a function): pprof looks up nothing.
		m.HasFunctions = true
		if p.Locations != nil {
			m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames = true, true, true
		}
	}
	mapping := func(o int) *profile.Mapping {
		if o >= 0 && o < len(maps) {
			return maps[o]
		}
		return nil
	}
	funcs := make([]*profile.Function, len(p.Functions))
	for i, f := range p.Functions {
		funcs[i] = &profile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: f.SystemName, Filename: f.File}
		out.Function = append(out.Function, funcs[i])
	}
	// A location per function, or per instruction with its lines, innermost first (as pprof has them).
	var funcLocs, instrLocs []*profile.Location
	if p.Locations == nil {
		for i, f := range p.Functions {
			loc := &profile.Location{ID: uint64(i + 1), Address: f.Addr, Line: []profile.Line{{Function: funcs[i]}}, Mapping: mapping(f.Object)}
			funcLocs = append(funcLocs, loc)
		}
		out.Location = funcLocs
	} else {
		for i, l := range p.Locations {
			loc := &profile.Location{ID: uint64(i + 1), Address: l.Addr, Mapping: mapping(l.Object)}
			for _, ln := range l.Lines {
				if ln.Func < 0 || ln.Func >= len(funcs) {
					return fmt.Errorf("export: location %d: function %d of %d", i, ln.Func, len(funcs))
				}
				loc.Line = append(loc.Line, profile.Line{Function: funcs[ln.Func], Line: int64(ln.Line)})
			}
			instrLocs = append(instrLocs, loc)
		}
		out.Location = instrLocs
	}
	for _, s := range p.Stacks {
		if allZero(s.Values) {
			continue
		}
		smp := &profile.Sample{Value: append([]int64(nil), s.Values...)}
		if instrLocs != nil {
			for _, l := range s.Locs {
				if l < 0 || l >= len(instrLocs) {
					return fmt.Errorf("export: stack of location %d of %d", l, len(instrLocs))
				}
				smp.Location = append(smp.Location, instrLocs[l])
			}
		} else {
			for i := len(s.Funcs) - 1; i >= 0; i-- { // pprof: the leaf first
				if f := s.Funcs[i]; f < 0 || f >= len(funcLocs) {
					return fmt.Errorf("export: stack of function %d of %d", f, len(funcLocs))
				}
				smp.Location = append(smp.Location, funcLocs[s.Funcs[i]])
			}
		}
		for _, lb := range s.Labels {
			if smp.NumLabel == nil {
				smp.NumLabel = map[string][]int64{}
			}
			smp.NumLabel[lb.Key] = append(smp.NumLabel[lb.Key], lb.Value)
		}
		out.Sample = append(out.Sample, smp)
	}
	if err := out.CheckValid(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return out.Write(w)
}

// Folded writes p's stacks in the folded format of Brendan Gregg's FlameGraph (`flamegraph.pl`
// reads it): one line per stack, its functions from the root separated by ';', a space, and its value
// of metric m (stacks of value 0 left out).
func Folded(p *Profile, m int, w io.Writer) error {
	bw := bufio.NewWriter(w)
	var b strings.Builder
	for _, s := range p.Stacks {
		if s.Values[m] == 0 || len(s.Funcs) == 0 {
			continue
		}
		b.Reset()
		for i, f := range s.Funcs {
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteString(foldedName(p.Functions[f].Name))
		}
		fmt.Fprintf(bw, "%s %d\n", b.String(), s.Values[m])
	}
	return bw.Flush()
}

// foldedName makes a function name safe in a folded line: no ';' (the separator) and no newline.
func foldedName(name string) string {
	return strings.NewReplacer(";", ":", "\n", " ").Replace(name)
}

func allZero(v []int64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Speedscope writes p as speedscope's JSON file format (https://www.speedscope.app): a sampled
// profile per metric with a value, each distinct stack a sample (frames from the root) weighted by its
// value of the metric; then an evented profile per timeline (frames opening and closing in time
// order, ns since p's start), which speedscope shows as the thread's time line.
func Speedscope(p *Profile, name string, w io.Writer) error {
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
		for _, s := range p.Stacks {
			if s.Values[m] == 0 || len(s.Funcs) == 0 {
				continue
			}
			prof.Samples = append(prof.Samples, s.Funcs)
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
