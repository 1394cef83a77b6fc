package analysis

import (
	"testing"

	"er/internal/experiment"
)

func TestFuncNameStyles(t *testing.T) {
	fk := newFake("main", "_ZN2ns5Shape4areaEv", "_ZNSt6vectorIiSaIiEE9push_backERKi@plt")
	fk.sample(1, "main", "_ZN2ns5Shape4areaEv")
	fk.sample(1, "_ZNSt6vectorIiSaIiEE9push_backERKi@plt") // a PLT stub stays a function only when nothing calls it
	p := analyze(t, fk.d)
	area, pb := fn(t, p, "_ZN2ns5Shape4areaEv"), fn(t, p, "_ZNSt6vectorIiSaIiEE9push_backERKi@plt")
	cases := []struct {
		f     int
		style NameStyle
		want  string
	}{
		{area, NameLong, "ns::Shape::area()"},
		{area, NameShort, "ns::Shape::area"},
		{area, NameMangled, "_ZN2ns5Shape4areaEv"},
		{pb, NameShort, "std::vector::push_back@plt"},
		{fn(t, p, "main"), NameLong, "main"},
		{0, NameMangled, "<Total>"},
	}
	for _, c := range cases {
		if got := p.FuncName(c.f, c.style); got != c.want {
			t.Errorf("FuncName(%s, %s) = %q, want %q", p.Functions[c.f].Name, StyleName(c.style), got, c.want)
		}
	}
}

func TestNameStyle(t *testing.T) {
	for _, s := range []string{"long", "short", "mangled"} {
		st, ok := ParseNameStyle(s)
		if !ok || StyleName(st) != s {
			t.Errorf("ParseNameStyle(%q) = %v, %v", s, st, ok)
		}
	}
	if _, ok := ParseNameStyle("full"); ok {
		t.Error("accepted full")
	}
}

func TestFindFunctions(t *testing.T) {
	fk := newFake("main", "_ZN2ns5Shape4areaEv", "dup")
	fk.addObject("/lib/liba.so", 0x7f0000000000, 0x1000, "dup")
	fk.sample(1, "main", "_ZN2ns5Shape4areaEv")
	fk.sample(1, "main", "dup")
	fk.d.Stacks = append(fk.d.Stacks, []uint64{progBase + 0x1000 + 2*symSpan + 4}) // prog's dup
	fk.d.AddClock([]experiment.ClockSample{{Pid: progPid, Period: 1, Stack: uint32(len(fk.d.Stacks) - 1)}})
	p := analyze(t, fk.d)
	for _, name := range []string{"ns::Shape::area()", "ns::Shape::area", "_ZN2ns5Shape4areaEv"} {
		if fs := p.FindFunctions(name); len(fs) != 1 || p.FuncName(fs[0], NameShort) != "ns::Shape::area" {
			t.Errorf("FindFunctions(%q) = %v", name, fs)
		}
	}
	dups := p.FindFunctions("dup")
	if len(dups) != 2 || p.Objects[p.Functions[dups[0]].Object].Name != "<liba.so>" || p.Objects[p.Functions[dups[1]].Object].Name != "<prog>" {
		t.Errorf("dup: %v", dups)
	}
	if fs := p.FindFunctions("nothing"); len(fs) != 0 {
		t.Errorf("nothing: %v", fs)
	}
}
