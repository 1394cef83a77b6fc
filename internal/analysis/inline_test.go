package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"er/internal/debuginfo"
	"er/internal/experiment"
)

// fakeDebug is debug information given as address ranges, each with its source frames.
type fakeDebug struct {
	ranges []fakeRange // sorted by lo
}

type fakeRange struct {
	lo, hi uint64
	frames []debuginfo.Frame
}

func (d *fakeDebug) add(lo, hi uint64, frames ...debuginfo.Frame) {
	d.ranges = append(d.ranges, fakeRange{lo, hi, frames})
	sort.Slice(d.ranges, func(i, j int) bool { return d.ranges[i].lo < d.ranges[j].lo })
}

func (d *fakeDebug) at(pc uint64) *fakeRange {
	for i := range d.ranges {
		if r := &d.ranges[i]; r.lo <= pc && pc < r.hi {
			return r
		}
	}
	return nil
}

func (d *fakeDebug) Frames(pc uint64) ([]debuginfo.Frame, bool) {
	if r := d.at(pc); r != nil {
		return r.frames, true
	}
	return nil, false
}

func (d *fakeDebug) Rows(lo, hi uint64) []debuginfo.LineRow {
	var out []debuginfo.LineRow
	for _, r := range d.ranges {
		if r.hi > lo && r.lo < hi {
			out = append(out, debuginfo.LineRow{Lo: max(r.lo, lo), Hi: min(r.hi, hi), File: r.frames[0].File, Line: r.frames[0].Line})
		}
	}
	return out
}

func (d *fakeDebug) Function(pc uint64) (debuginfo.Function, bool) {
	r := d.at(pc)
	if r == nil {
		return debuginfo.Function{}, false
	}
	last := r.frames[len(r.frames)-1]
	entry := last.Entry
	if entry == 0 {
		entry = r.lo
	}
	return debuginfo.Function{Name: last.Func, Lo: r.lo, Hi: r.hi, Entry: entry, DeclFile: last.File, DeclLine: last.Line}, true
}

func (d *fakeDebug) Files() []string {
	var out []string
	for _, r := range d.ranges {
		for _, f := range r.frames {
			out = append(out, f.File)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// frame is a source frame; inlined frames are marked by their caller coming after them.
func frame(fn, file string, line int) debuginfo.Frame {
	return debuginfo.Frame{Func: fn, File: file, Line: line}
}

func inlined(fn, file string, line int) debuginfo.Frame {
	return debuginfo.Frame{Func: fn, File: file, Line: line, Inlined: true}
}

// withFiles returns options whose OpenFile gives each path its fake debug information and code
// (code, when given, is the object's bytes from link-time address 0).
func withFiles(debug map[string]*fakeDebug, code map[string][]byte) Options {
	return Options{OpenFile: func(path string, a *experiment.Archive) (*ObjectFile, error) {
		of := &ObjectFile{Path: path}
		if d := debug[path]; d != nil {
			of.Debug = d
		}
		if c := code[path]; c != nil {
			of.Code = func(lo, hi uint64) ([]byte, error) {
				if hi > uint64(len(c)) || lo > hi {
					return nil, fmt.Errorf("no code at [%#x, %#x)", lo, hi)
				}
				return c[lo:hi], nil
			}
		}
		return of, nil
	}}
}

// at is a frame of a raw stack: a function and an offset in it (for callers, of the return address).
type at struct {
	fn  string
	off uint64
}

// rawSample adds a sample of period with the frames given root first.
func (fk *fake) rawSample(period int64, frames ...at) {
	var st experiment.Stack
	for i := len(frames) - 1; i >= 0; i-- {
		a, ok := fk.addr[frames[i].fn]
		if !ok {
			panic("unknown function " + frames[i].fn)
		}
		st = append(st, a+frames[i].off)
	}
	fk.d.Stacks = append(fk.d.Stacks, st)
	fk.d.AppendClock(experiment.ClockSample{Pid: progPid, Tid: progPid, Mode: experiment.ModeUser,
		Period: period, Stack: uint32(len(fk.d.Stacks) - 1)})
}

// inlineExample: hot() is inlined into caller1 and caller2; helper() is inlined into caller2 and
// also called out of line by main. Link-time addresses: main 0x1000, caller1 0x1100, caller2
// 0x1200, helper 0x1300.
func inlineExample() (*fake, Options) {
	fk := newFake("main", "caller1", "caller2", "helper")
	d := &fakeDebug{}
	d.add(0x1000, 0x10f0, frame("main", "x.c", 40))
	d.add(0x1100, 0x1110, frame("caller1", "x.c", 10))
	d.add(0x1110, 0x1140, inlined("hot", "x.c", 7), frame("caller1", "x.c", 11))
	d.add(0x1200, 0x1210, frame("caller2", "x.c", 20))
	d.add(0x1210, 0x1220, inlined("hot", "x.c", 6), frame("caller2", "x.c", 21))
	d.add(0x1220, 0x1240, inlined("helper", "x.c", 30), frame("caller2", "x.c", 22))
	d.add(0x1300, 0x1380, frame("helper", "x.c", 31))
	// main's code: nops, with a 5-byte call before each return address used below.
	code := make([]byte, 0x2000)
	for i := range code {
		code[i] = 0x90
	}
	for _, ra := range []uint64{0x1020, 0x1040, 0x1060} {
		copy(code[ra-5:], []byte{0xe8, 0, 0, 0, 0})
	}
	fk.rawSample(2, at{"main", 0x20}, at{"caller1", 0x18}) // in hot, inlined
	fk.rawSample(1, at{"main", 0x20}, at{"caller1", 0x04}) // caller1's own code
	fk.rawSample(3, at{"main", 0x40}, at{"caller2", 0x14}) // in hot, inlined
	fk.rawSample(4, at{"main", 0x40}, at{"caller2", 0x28}) // in helper, inlined
	fk.rawSample(5, at{"main", 0x60}, at{"helper", 0x08})  // helper out of line
	fk.rawSample(6, at{"main", 0x60}, at{"helper", 0x90})  // past the debug information: no line
	return fk, withFiles(map[string]*fakeDebug{"/bin/prog": d}, map[string][]byte{"/bin/prog": code})
}

func TestInlinedFunctions(t *testing.T) {
	fk, opt := inlineExample()
	p, err := Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int64{ // exclusive, inclusive
		"main": {0, 21}, "caller1": {1, 3}, "caller2": {0, 7}, "hot": {5, 5}, "helper": {15, 15},
	}
	for name, w := range want {
		f := fn(t, p, name)
		if e, i := p.Exclusive(f)[0], p.Inclusive(f)[0]; e != w[0] || i != w[1] {
			t.Errorf("%s: exclusive %d inclusive %d, want %d %d", name, e, i, w[0], w[1])
		}
	}
	hot := fn(t, p, "hot")
	if f := p.Functions[hot]; f.Kind != FuncInlined || p.Objects[f.Object].Name != "<prog>" {
		t.Errorf("hot: %+v", f)
	}
	if p.Functions[fn(t, p, "helper")].Kind != FuncSymbol {
		t.Error("helper, inlined and out of line, should be its symbol's function")
	}
	ccWant := map[string]struct{ callers, callees string }{
		"hot":     {"caller1=2 caller2=3", ""},
		"helper":  {"caller2=4 main=11", ""},
		"caller2": {"main=7", "helper=4 hot=3"},
		"main":    {"<Total>=21", "caller1=3 caller2=7 helper=11"},
	}
	for name, w := range ccWant {
		cc, err := p.CallersCallees([]int{fn(t, p, name)})
		if err != nil {
			t.Fatal(err)
		}
		if got := attrString(p, cc.Callers); got != w.callers {
			t.Errorf("callers of %s: %s, want %s", name, got, w.callers)
		}
		if got := attrString(p, cc.Callees); got != w.callees {
			t.Errorf("callees of %s: %s, want %s", name, got, w.callees)
		}
	}
	if got := stackNames(p, 0); got != "main caller1 hot" {
		t.Errorf("stack 0: %s", got)
	}
	checkIdentities(t, p)
	checkLinesPCs(t, p)

	lt := p.Lines()
	lineWant := map[string][2]int64{
		"hot x.c:7": {2, 2}, "hot x.c:6": {3, 3}, "caller1 x.c:10": {1, 1}, "caller1 x.c:11": {0, 2},
		"caller2 x.c:21": {0, 3}, "caller2 x.c:22": {0, 4}, "helper x.c:30": {4, 4}, "helper x.c:31": {5, 5},
		"helper -": {6, 6}, "main x.c:40": {0, 21},
	}
	checkLines(t, p, lt, lineWant)
	if e, i, ok := lt.FileLine("x.c", 7); !ok || e[0] != 2 || i[0] != 2 {
		t.Errorf("x.c:7: %v %v %v", e, i, ok)
	}
	if got := strings.Join(lt.Files(), " "); got != "x.c" {
		t.Errorf("files %q", got)
	}

	// Instructions: callers' frames are their call instructions, found in main's code.
	pt := p.PCs()
	main := fn(t, p, "main")
	for _, c := range []struct {
		addr uint64
		incl int64
	}{{0x101b, 3}, {0x103b, 7}, {0x105b, 11}} {
		i := pt.Find(p.Functions[main].Object, main, c.addr)
		if i < 0 || pt.Inclusive(i)[0] != c.incl || pt.Exclusive(i)[0] != 0 {
			t.Errorf("call at %#x: index %d", c.addr, i)
			continue
		}
		if in := pt.PCs[i]; in.Func != main || len(in.Frames) != 1 || in.Frames[0].Line != 40 {
			t.Errorf("call at %#x: %+v", c.addr, in)
		}
	}
	c1 := fn(t, p, "caller1")
	if i := pt.Find(p.Functions[c1].Object, c1, 0x1118); i < 0 || pt.PCs[i].Func != hot || pt.Exclusive(i)[0] != 2 {
		t.Errorf("caller1+0x18: %d", i)
	}
}

func TestFoldInlines(t *testing.T) {
	fk, opt := inlineExample()
	opt.FoldInlines = true
	p, err := Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if fs := p.FindFunctions("hot"); len(fs) != 0 {
		t.Errorf("hot is a function when folded: %v", fs)
	}
	want := map[string][2]int64{"main": {0, 21}, "caller1": {3, 3}, "caller2": {7, 7}, "helper": {11, 11}}
	for name, w := range want {
		f := fn(t, p, name)
		if e, i := p.Exclusive(f)[0], p.Inclusive(f)[0]; e != w[0] || i != w[1] {
			t.Errorf("%s: exclusive %d inclusive %d, want %d %d", name, e, i, w[0], w[1])
		}
	}
	checkIdentities(t, p)
	checkLinesPCs(t, p)
	// Lines keep the inlined code's source lines, as lines of the function it is inlined into.
	checkLines(t, p, p.Lines(), map[string][2]int64{
		"caller1 x.c:7": {2, 2}, "caller1 x.c:11": {0, 2}, "caller2 x.c:6": {3, 3}, "caller2 x.c:30": {4, 4},
	})
}

// checkLines compares lines named "func file:line" ("func -" without line) with their
// exclusive and inclusive first metric.
func checkLines(t *testing.T, p *Profile, lt *LineTable, want map[string][2]int64) {
	t.Helper()
	for name, w := range want {
		f, where, _ := strings.Cut(name, " ")
		sl := SourceLine{Func: fn(t, p, f)}
		if where != "-" {
			file, line, _ := strings.Cut(where, ":")
			sl.File = file
			fmt.Sscan(line, &sl.Line)
		}
		i := lt.Find(sl)
		if i < 0 {
			t.Errorf("no line %s", name)
			continue
		}
		if e, in := lt.Exclusive(i)[0], lt.Inclusive(i)[0]; e != w[0] || in != w[1] {
			t.Errorf("line %s: exclusive %d inclusive %d, want %d %d", name, e, in, w[0], w[1])
		}
	}
}

// checkLinesPCs checks that the exclusive metrics of each function's lines, and of its
// instructions, add up to the function's; that a line's or instruction's inclusive metric is at
// least its exclusive one and at most its function's inclusive one; and that the lines of a file
// add up to the file's.
func checkLinesPCs(t *testing.T, p *Profile) {
	t.Helper()
	nm := len(p.Metrics)
	lt, pt := p.Lines(), p.PCs()
	lineSum := make([]int64, len(p.Functions)*nm)
	for i, l := range lt.Lines {
		addTo(lineSum, l.Func, lt.Exclusive(i))
		for m := range nm {
			if e, in := lt.Exclusive(i)[m], lt.Inclusive(i)[m]; e > in || in > p.Inclusive(l.Func)[m] {
				t.Errorf("line %+v metric %d: exclusive %d inclusive %d, function inclusive %d", l, m, e, in, p.Inclusive(l.Func)[m])
			}
		}
	}
	pcSum := make([]int64, len(p.Functions)*nm)
	for i, in := range pt.PCs {
		addTo(pcSum, in.Func, pt.Exclusive(i))
		for m := range nm {
			if e, inc := pt.Exclusive(i)[m], pt.Inclusive(i)[m]; e > inc || inc > p.Inclusive(in.Func)[m] && inc > p.Inclusive(in.Symbol)[m] {
				t.Errorf("instruction %+v metric %d: exclusive %d inclusive %d", in, m, e, inc)
			}
		}
	}
	for f := 1; f < len(p.Functions); f++ {
		want := p.Exclusive(f)
		if got := lineSum[f*nm : (f+1)*nm]; !slices.Equal(got, want) {
			t.Errorf("%s: lines add up to %v, exclusive %v", p.FuncName(f, NameLong), got, want)
		}
		if got := pcSum[f*nm : (f+1)*nm]; !slices.Equal(got, want) {
			t.Errorf("%s: instructions add up to %v, exclusive %v", p.FuncName(f, NameLong), got, want)
		}
	}
	fileSum := map[string]int64{}
	for i, l := range lt.Lines {
		if l.File != "" {
			fileSum[l.File] += lt.Exclusive(i)[0]
		}
	}
	for file, sum := range fileSum {
		var got int64
		for line := 0; line < 1000; line++ {
			if e, _, ok := lt.FileLine(file, line); ok {
				got += e[0]
			}
		}
		if got != sum {
			t.Errorf("file %s: lines add up to %d, functions' lines %d", file, got, sum)
		}
	}
}

// randomInlineProfile is randomProfile with debug information: every function's code from 0x80 to
// 0xc0 holds one or two inlined functions, named after other functions (which then merge with them)
// or not ("inl0", "inl1"), and some addresses have no line.
func randomInlineProfile(t *testing.T, r *rand.Rand, nFuncs, nStacks int, fold bool) *Profile {
	var names []string
	for i := range nFuncs {
		names = append(names, fmt.Sprintf("f%d", i))
	}
	fk := newFake(names...)
	d := &fakeDebug{}
	pool := append(slices.Clone(names), "inl0", "inl1")
	for i, name := range names {
		lo := 0x1000 + uint64(i)*symSpan
		d.add(lo, lo+0x80, frame(name, "r.c", 100*i+1))
		chain := []debuginfo.Frame{frame(name, "r.c", 100*i+2)}
		for k := range 1 + r.IntN(2) {
			chain = append([]debuginfo.Frame{inlined(pool[r.IntN(len(pool))], "r.c", 100*i+10+k)}, chain...)
		}
		d.add(lo+0x80, lo+0xc0, chain...)
	}
	offs := []uint64{0x04, 0x20, 0x90, 0xa0, 0xd0}
	for range nStacks {
		var st []at
		for range 1 + r.IntN(8) {
			st = append(st, at{names[r.IntN(len(names))], offs[r.IntN(len(offs))]})
		}
		fk.rawSample(1+r.Int64N(1000), st...)
		fk.d.ClockTable().Cols[experiment.ClockColMode].Set(fk.d.ClockTable().Len()-1, int64(experiment.Mode(r.IntN(3))))
	}
	opt := withFiles(map[string]*fakeDebug{"/bin/prog": d}, nil)
	opt.FoldInlines = fold
	p, err := Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPropertiesInlinedFunctions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 30 {
		p := randomInlineProfile(t, r, 2+i%5, 1+r.IntN(60), i%3 == 0)
		checkIdentities(t, p)
		checkLinesPCs(t, p)
		if t.Failed() {
			t.Fatalf("failed on random profile %d", i)
		}
	}
}

// TestLocalFunctionFromDWARF: an address between the symbols of a stripped object is named by the
// object's debug information when it has some, and is a <static> function otherwise.
func TestLocalFunctionFromDWARF(t *testing.T) {
	fk := newFake("main", "other")
	gap := uint64(symSpan - 0x10) // main's symbol ends here; "other" starts at symSpan
	fk.rawSample(3, at{"main", 0x20}, at{"main", gap + 4})
	d := &fakeDebug{}
	d.add(0x1000, 0x1000+gap, frame("main", "x.c", 3))
	d.add(0x1000+gap, 0x1000+symSpan, frame("local_helper", "x.c", 9))
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{withFiles(map[string]*fakeDebug{"/bin/prog": d}, nil), "local_helper"},
		{Options{}, fmt.Sprintf("<static>@0x%x (<prog>)", 0x1000+gap)},
	} {
		p, err := Analyze([]*experiment.Data{fk.d}, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for f := range p.Functions {
			if p.FuncName(f, NameLong) == tc.want && p.Exclusive(f)[0] == 3 {
				found = true
			}
		}
		if !found {
			var names []string
			for f := range p.Functions {
				names = append(names, p.FuncName(f, NameLong))
			}
			t.Errorf("no function %q with the sample's 3 ns; functions: %q", tc.want, names)
		}
	}
}
