package synth

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
	"er/internal/objfile"
)

var small = Spec{Samples: 20_000, Functions: 2_000, Threads: 8, Stacks: 4_000, Seed: 1, Duration: 10e9}

// Full is the size the web GUI must stay responsive on.
var Full = Spec{Samples: 1_000_000, Functions: 20_000, Threads: 16, Stacks: 50_000, Seed: 1, Duration: 60e9}

func writeOpen(t *testing.T, sp Spec) *experiment.Data {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small.1.er")
	if err := Write(dir, sp); err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Warnings) > 0 {
		t.Fatalf("warnings opening the experiment: %q", d.Warnings)
	}
	return d
}

func TestSmall(t *testing.T) {
	d := writeOpen(t, small)

	// The samples: their number, periods, threads, times and modes.
	if d.ClockTable().Len() != small.Samples {
		t.Fatalf("%d clock samples, want %d", d.ClockTable().Len(), small.Samples)
	}
	last := map[uint32]int64{}
	var modes [3]int
	for _, s := range d.ClockSamples() {
		if s.Pid != Pid || s.Period != DefaultInterval || s.Stack == 0 {
			t.Fatalf("sample %+v", s)
		}
		if t0, ok := last[s.Tid]; ok && s.Time < t0 {
			t.Fatalf("thread %d: sample at %d after one at %d", s.Tid, s.Time, t0)
		}
		if s.Time < 0 || s.Time > small.Duration {
			t.Fatalf("sample at %d, outside [0, %d]", s.Time, small.Duration)
		}
		last[s.Tid] = s.Time
		modes[s.Mode]++
		// Kernel-mode samples, and only those, start with kernel frames.
		if k := d.Stacks[s.Stack][0] >= experiment.KernelBase; k != (s.Mode == experiment.ModeKernel) {
			t.Fatalf("sample in %v mode with stack %x", s.Mode, d.Stacks[s.Stack])
		}
	}
	if len(last) != small.Threads {
		t.Errorf("%d threads, want %d", len(last), small.Threads)
	}
	if modes[experiment.ModeUser] == 0 || modes[experiment.ModeKernel] == 0 || modes[experiment.ModeUnknown] != 0 {
		t.Errorf("samples by mode (unknown, user, kernel): %v", modes)
	}
	t.Logf("samples by mode (unknown, user, kernel): %v", modes)

	// The stacks: at most Stacks of them, 3 to 40 user frames, rooted at _start or clone3.
	if n := len(d.Stacks) - 1; n > small.Stacks || n < small.Stacks/2 {
		t.Errorf("%d stacks used, want at most %d (and most of them)", n, small.Stacks)
	}
	exe, lib := d.Archives[ExePath], d.Archives[LibPath]
	if exe == nil || lib == nil || d.Archives["[kernel]"] == nil {
		t.Fatalf("archives: %v", slices.Collect(maps.Keys(d.Archives)))
	}
	var roots [2]uint64
	for _, s := range exe.Symbols {
		if s.Name == "_start" {
			roots[0] = s.Addr
		}
	}
	for _, s := range lib.Symbols {
		if s.Name == "clone3" {
			roots[1] = s.Addr
		}
	}
	var maxUser int
	for id, st := range d.Stacks[1:] {
		user := 0
		for _, pc := range st {
			if pc < experiment.KernelBase {
				user++
			}
		}
		maxUser = max(maxUser, user)
		if user < 3 || user > 40 {
			t.Errorf("stack %d has %d user frames: %x", id+1, user, st)
		}
		var root uint64
		switch outer := st[len(st)-1]; {
		case outer >= exeBase && outer < libBase:
			root = outer - exeBase - 1
		default:
			root = outer - libBase - 1
		}
		if root < roots[0] || root >= roots[0]+48 {
			if s := symbolAt(lib, root); s == nil || s.Name != "clone3" {
				t.Fatalf("stack %d does not start at _start or clone3: %x", id+1, st)
			}
		}
	}
	t.Logf("%d stacks; at most %d user frames", len(d.Stacks)-1, maxUser)

	// The archives: Functions symbols in the executable, in order, not overlapping; names demangle.
	if len(exe.Symbols) != small.Functions || len(lib.Symbols) != libCount {
		t.Errorf("%d symbols in the executable, %d in the library; want %d and %d",
			len(exe.Symbols), len(lib.Symbols), small.Functions, libCount)
	}
	mangled := 0
	for _, a := range d.Archives {
		for i, s := range a.Symbols {
			if s.Size == 0 || i > 0 && a.Symbols[i-1].Addr+a.Symbols[i-1].Size > s.Addr {
				t.Fatalf("%s: symbol %q at %#x size %d overlaps the one before or has no size", a.Path, s.Name, s.Addr, s.Size)
			}
			if strings.HasPrefix(s.Name, "_Z") {
				mangled++
				if objfile.Demangle(s.Name, objfile.NameLong) == s.Name {
					t.Errorf("%q does not demangle", s.Name)
				}
			}
		}
	}
	if mangled < small.Functions/3 || mangled > small.Functions*3/4 {
		t.Errorf("%d mangled names of %d", mangled, small.Functions)
	}

	// The analysis: every sample, the CPU time written, most functions on some stack.
	p, err := analysis.Analyze([]*experiment.Data{d}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) > 0 {
		t.Errorf("analysis warnings: %q", p.Warnings)
	}
	if p.Events != int64(small.Samples) {
		t.Errorf("%d events analysed, want %d", p.Events, small.Samples)
	}
	want := int64(small.Samples) * DefaultInterval
	if got := p.Total[analysis.MetricTotalCPU]; got != want {
		t.Errorf("total CPU %d, want %d", got, want)
	}
	if u, s := p.Total[analysis.MetricUserCPU], p.Total[analysis.MetricSystemCPU]; u+s != want || s == 0 || s > want/2 {
		t.Errorf("user CPU %d, system %d, total %d", u, s, want)
	}
	var objs []string
	exeObj := -1
	for i, o := range p.Objects {
		objs = append(objs, o.Name)
		if o.Path == ExePath {
			exeObj = i
		}
	}
	for _, o := range []string{"<bigapp>", "<libsynth.so>", "<vmlinux>"} {
		if !slices.Contains(objs, o) {
			t.Errorf("load objects %q: no %s", objs, o)
		}
	}
	withSamples, withExcl := 0, 0
	for i, f := range p.Functions {
		if f.Object != exeObj {
			continue
		}
		if f.Kind != analysis.FuncSymbol {
			t.Errorf("function %q of the executable is of kind %d", f.Name, f.Kind)
		}
		if p.Inclusive(i)[analysis.MetricTotalCPU] > 0 {
			withSamples++
		}
		if p.Exclusive(i)[analysis.MetricTotalCPU] > 0 {
			withExcl++
		}
	}
	t.Logf("functions of the executable with samples: %d inclusive, %d exclusive, of %d", withSamples, withExcl, small.Functions)
	if withSamples < small.Functions*9/10 {
		t.Errorf("%d functions of %d with samples, want at least 90%%", withSamples, small.Functions)
	}

	// A few stacks carry most samples.
	var perStack []int64
	for s := range p.NumStacks() {
		_, v := p.Stack(s)
		perStack = append(perStack, v[analysis.MetricTotalCPU])
	}
	slices.Sort(perStack)
	slices.Reverse(perStack)
	var top int64
	for _, v := range perStack[:min(50, len(perStack))] {
		top += v
	}
	t.Logf("the 50 heaviest of %d function stacks carry %.0f%% of the CPU time", len(perStack), 100*float64(top)/float64(want))
	if top < want/3 {
		t.Errorf("the 50 heaviest stacks carry %d of %d ns", top, want)
	}
}

// TestPhases checks that time ranges have different hot functions.
func TestPhases(t *testing.T) {
	d := writeOpen(t, small)
	hottest := func(from, to float64) string {
		p, err := analysis.Analyze([]*experiment.Data{d}, analysis.Options{Filter: func(ev *analysis.EventInfo) bool {
			return ev.Time >= int64(from*float64(small.Duration)) && ev.Time < int64(to*float64(small.Duration))
		}})
		if err != nil {
			t.Fatal(err)
		}
		best, name := int64(-1), ""
		for i, f := range p.Functions[1:] {
			if v := p.Exclusive(i + 1)[analysis.MetricTotalCPU]; v > best {
				best, name = v, f.Name
			}
		}
		return name
	}
	seen := map[string]bool{}
	for i := range len(phases) - 1 {
		h := hottest(phases[i], phases[i+1])
		t.Logf("phase %d: hottest function %s", i, objfile.Demangle(h, objfile.NameLong))
		seen[h] = true
	}
	if len(seen) < 3 {
		t.Errorf("%d different hottest functions in %d phases", len(seen), len(phases)-1)
	}
}

// TestDeterministic checks that a spec and seed always give the same experiment, and another seed another.
func TestDeterministic(t *testing.T) {
	sp := Spec{Samples: 3000, Functions: 300, Threads: 3, Stacks: 500, Seed: 7, Duration: 2e9}
	read := func(sp Spec) []byte {
		dir := filepath.Join(t.TempDir(), "d.1.er")
		if err := Write(dir, sp); err != nil {
			t.Fatal(err)
		}
		var all []byte
		for _, f := range []string{experiment.ClockFile, experiment.StacksFile, experiment.LogFile, experiment.MapFile} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	a, b := read(sp), read(sp)
	if !bytes.Equal(a, b) {
		t.Error("the same spec wrote different experiments")
	}
	sp.Seed++
	if bytes.Equal(a, read(sp)) {
		t.Error("another seed wrote the same experiment")
	}
}

// TestEdges writes tiny and odd specs.
func TestEdges(t *testing.T) {
	for _, sp := range []Spec{
		{Samples: 0, Functions: MinFunctions, Threads: 1, Stacks: 1, Duration: 1},
		{Samples: 100, Functions: MinFunctions, Threads: 1, Stacks: 1000, Duration: 5e8},
		{Samples: 1000, Functions: 50, Threads: 40, Stacks: 3, Duration: 3e9, Interval: 1_009_000},
	} {
		t.Run(fmt.Sprintf("%d_%d_%d_%d", sp.Samples, sp.Functions, sp.Threads, sp.Stacks), func(t *testing.T) {
			d := writeOpen(t, sp)
			if d.ClockTable().Len() != sp.Samples {
				t.Errorf("%d samples, want %d", d.ClockTable().Len(), sp.Samples)
			}
			p, err := analysis.Analyze([]*experiment.Data{d}, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			iv := cmp.Or(sp.Interval, DefaultInterval)
			if got := p.Total[analysis.MetricTotalCPU]; got != int64(sp.Samples)*iv {
				t.Errorf("total CPU %d, want %d", got, int64(sp.Samples)*iv)
			}
		})
	}
	for _, sp := range []Spec{
		{Samples: 10, Functions: MinFunctions - 1, Threads: 1, Stacks: 1, Duration: 1},
		{Samples: 10, Functions: 100, Threads: 0, Stacks: 1, Duration: 1},
		{Samples: 10, Functions: 100, Threads: 1, Stacks: 0, Duration: 1},
		{Samples: 10, Functions: 100, Threads: 1, Stacks: 1, Duration: 0},
	} {
		if err := Write(filepath.Join(t.TempDir(), "bad.er"), sp); err == nil {
			t.Errorf("Write(%+v) succeeded", sp)
		}
	}
}

func symbolAt(a *experiment.Archive, addr uint64) *experiment.Symbol {
	for i := range a.Symbols {
		if s := &a.Symbols[i]; addr >= s.Addr && addr < s.Addr+s.Size {
			return s
		}
	}
	return nil
}

func BenchmarkWrite1M(b *testing.B) {
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		if err := Write(filepath.Join(dir, fmt.Sprintf("big.%d.er", i+1)), Full); err != nil {
			b.Fatal(err)
		}
	}
}
