package analysis_test

import (
	"testing"

	"er/internal/analysis"
	"er/internal/experiment"
	"er/internal/kindtest"
)

// fnNamed finds the only function of p named name.
func fnNamed(t *testing.T, p *analysis.Profile, name string) int {
	t.Helper()
	fs := p.FindFunctions(name)
	if len(fs) != 1 {
		t.Fatalf("%d functions named %q", len(fs), name)
	}
	return fs[0]
}

// TestSymbolicFrames: symbolic frames resolve through the symbolic mappings of their time to
// methods of the mapping's object, one function per name, with the positions' source lines; a
// method id reused for another method is each in its own time; a frame no mapping names is a
// method of no name; every view (functions, callers-callees, lines, PCs) agrees.
func TestSymbolicFrames(t *testing.T) {
	d, err := experiment.Open(kindtest.WriteSymbolic(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := analysis.Analyze([]*experiment.Data{d}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const ms = int64(1e6)
	main, run, other, anon := fnNamed(t, p, "Toy.main"), fnNamed(t, p, "Toy.run"), fnNamed(t, p, "Toy.other"), fnNamed(t, p, "<method 9 of table 1>")
	for _, c := range []struct {
		f          int
		excl, incl int64
	}{{main, 0, 6 * ms}, {run, 3 * ms, 3 * ms}, {other, 2 * ms, 2 * ms}, {anon, ms, ms}} {
		if e, i := p.Exclusive(c.f)[0], p.Inclusive(c.f)[0]; e != c.excl || i != c.incl {
			t.Errorf("%s: exclusive %d, inclusive %d; want %d, %d", p.Functions[c.f].Name, e, i, c.excl, c.incl)
		}
	}
	for _, f := range []int{main, run, other} {
		if fu := p.Functions[f]; fu.Kind != analysis.FuncMethod || p.Objects[fu.Object].Name != "<toy>" {
			t.Errorf("%s: kind %d in %s, want a method of <toy>", fu.Name, fu.Kind, p.Objects[fu.Object].Name)
		}
	}
	if o := p.Objects[p.Functions[anon].Object].Name; o != analysis.UnknownName {
		t.Errorf("the method of no name is in %s, want %s", o, analysis.UnknownName)
	}
	cc, err := p.CallersCallees([]int{main})
	if err != nil {
		t.Fatal(err)
	}
	callees := map[int]int64{}
	for _, a := range cc.Callees {
		callees[a.Func] = a.Value[0]
	}
	if callees[run] != 3*ms || callees[other] != 2*ms || callees[anon] != ms || len(callees) != 3 {
		t.Errorf("Toy.main's callees: %v", callees)
	}
	lt := p.Lines()
	for _, c := range []struct {
		line       int
		excl, incl int64
	}{{12, 3 * ms, 3 * ms}, {20, 2 * ms, 2 * ms}, {3, 0, 6 * ms}, {10, 0, 0}} {
		e, i, ok := lt.FileLine("Toy.java", c.line)
		if c.incl == 0 {
			if ok {
				t.Errorf("Toy.java:%d has metrics %v, %v; want none (no sample is at its positions)", c.line, e, i)
			}
			continue
		}
		if !ok || e[0] != c.excl || i[0] != c.incl {
			t.Errorf("Toy.java:%d: exclusive %v, inclusive %v (%v); want %d, %d", c.line, e, i, ok, c.excl, c.incl)
		}
	}
	pcs := p.PCs()
	if i := pcs.Find(p.Functions[run].Object, run, 7); i < 0 || pcs.Exclusive(i)[0] != 3*ms {
		t.Errorf("Toy.run's position 7 in the PCs view: index %d", i)
	}
}

// TestSymbolicFrameValues: the encoding keeps table, method and position, stays in the
// non-canonical range, and a position's line is the last entry's at or before it.
func TestSymbolicFrameValues(t *testing.T) {
	pc := experiment.SymbolicFrame(experiment.MaxSymbolicTable, 0xffffffff, 0xffff)
	if !experiment.IsSymbolic(pc) || pc >= experiment.KernelBase {
		t.Fatalf("%#x is not symbolic below the kernel", pc)
	}
	if tb, m, pos, ok := experiment.SplitSymbolic(experiment.SymbolicFrame(3, 77, 9)); !ok || tb != 3 || m != 77 || pos != 9 {
		t.Errorf("split: %d %d %d %v", tb, m, pos, ok)
	}
	if experiment.IsSymbolic(0x7fffffffffff) || experiment.IsSymbolic(experiment.KernelBase) {
		t.Error("a user or kernel address taken for symbolic")
	}
	m := experiment.SymbolicMapping(1, 1, 5, "[toy]", "f", "", []experiment.PosLine{{Pos: 2, Line: 10}, {Pos: 4, Line: 12}}, 0, -1)
	for pos, want := range map[uint16]int{0: 0, 2: 10, 3: 10, 4: 12, 9: 12} {
		if got := m.LineAt(pos); got != want {
			t.Errorf("line of position %d: %d, want %d", pos, got, want)
		}
	}
}
