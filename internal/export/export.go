// Package export writes profiles for other tools' viewers: pprof's profile.proto, FlameGraph's folded stacks, speedscope's JSON and Chrome's trace events.
package export

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/google/pprof/profile"
)

// Profile is what an export holds: the metrics, and the distinct call stacks with their values.
type Profile struct {
	Metrics []Metric
	// Stacks gives the stacks one at a time, each valid only during its call (its slices may be
	// reused for the next); the writers go over them more than once, and hold none of them.
	Stacks     iter.Seq[Stack]
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
	for s := range p.stacks() {
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
	for s := range p.stacks() {
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

// stacks returns p.Stacks, or none.
func (p *Profile) stacks() iter.Seq[Stack] {
	if p.Stacks == nil {
		return func(func(Stack) bool) {}
	}
	return p.Stacks
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
// order, ns since p's start), which speedscope shows as the thread's time line. It writes as it
// goes: it goes over the stacks three times a metric (its total, the samples, the weights) and
// over each timeline twice (its first and last times, the events), holding none of them.
func Speedscope(p *Profile, name string, w io.Writer) error {
	if err := checkTimelines(p); err != nil {
		return err
	}
	j := newJSONWriter(w)
	j.raw(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[`)
	for i, f := range p.Functions {
		if i > 0 {
			j.raw(",")
		}
		j.raw(`{"name":`)
		j.str(f.Name)
		if f.File != "" {
			j.raw(`,"file":`)
			j.str(f.File)
		}
		j.raw("}")
	}
	j.raw(`]},"profiles":[`)
	profiles := 0
	next := func() {
		if profiles > 0 {
			j.raw(",")
		}
		profiles++
	}
	for m, mt := range p.Metrics {
		unit := "none"
		switch mt.Unit {
		case "nanoseconds", "bytes":
			unit = mt.Unit
		}
		samples, total := 0, int64(0)
		for s := range p.stacks() {
			if s.Values[m] != 0 && len(s.Funcs) > 0 {
				samples++
				total += s.Values[m]
			}
		}
		if samples == 0 {
			continue
		}
		next()
		j.raw(`{"type":"sampled","name":`)
		j.str(mt.Name)
		j.raw(`,"unit":`)
		j.str(unit)
		j.raw(`,"startValue":0,"endValue":`)
		j.int(total)
		// each writes item of each stack with a value of the metric, as the items of an array.
		each := func(item func(s Stack)) {
			first := true
			for s := range p.stacks() {
				if s.Values[m] == 0 || len(s.Funcs) == 0 {
					continue
				}
				if !first {
					j.raw(",")
				}
				first = false
				item(s)
			}
		}
		j.raw(`,"samples":[`)
		each(func(s Stack) {
			j.raw("[")
			for i, f := range s.Funcs {
				if i > 0 {
					j.raw(",")
				}
				j.int(int64(f))
			}
			j.raw("]")
		})
		j.raw(`],"weights":[`)
		each(func(s Stack) { j.int(s.Values[m]) })
		j.raw("]}")
	}
	for i := range p.Timelines {
		tl := &p.Timelines[i]
		events, firstAt, lastAt := 0, int64(0), int64(0)
		at := func(_ int, at int64) {
			if events == 0 {
				firstAt = at
			}
			events++
			lastAt = at
		}
		walk(tl, at, at)
		if events == 0 {
			continue
		}
		next()
		j.raw(`{"type":"evented","name":`)
		j.str(tl.Process + ": " + tl.Name)
		j.raw(`,"unit":"nanoseconds","startValue":`)
		j.int(firstAt)
		j.raw(`,"endValue":`)
		j.int(lastAt)
		j.raw(`,"events":[`)
		first := true
		event := func(typ string) func(int, int64) {
			return func(f int, at int64) {
				if !first {
					j.raw(",")
				}
				first = false
				j.raw(typ)
				j.int(at)
				j.raw(`,"frame":`)
				j.int(int64(f))
				j.raw("}")
			}
		}
		walk(tl, event(`{"type":"O","at":`), event(`{"type":"C","at":`))
		j.raw("]}")
	}
	j.raw(`],"name":`)
	j.str(name)
	j.raw(`,"activeProfileIndex":0,"exporter":"er"}` + "\n")
	return j.flush()
}
