package analysis

import (
	"testing"

	"er/internal/experiment"
)

func TestGapsAndSizes(t *testing.T) {
	syms := []experiment.Symbol{
		{Name: "a", Addr: 0x100, Size: 0x10},
		{Name: "alias0", Addr: 0x200, Size: 0x4},
		{Name: "alias1", Addr: 0x200, Size: 0x40},
		{Name: "open", Addr: 0x300}, // size 0: up to the next symbol
		{Name: "last", Addr: 0x400, Size: 0x8},
		{Name: "end", Addr: 0x500},
	}
	gaps := []struct{ addr, start, end uint64 }{
		{0x50, 0, 0x100}, {0x150, 0x110, 0x200}, {0x2f0, 0x240, 0x300}, {0x450, 0x408, 0x500},
	}
	for _, g := range gaps {
		if s, e := gapAt(syms, g.addr); s != g.start || e != g.end {
			t.Errorf("gapAt(%#x) = %#x, %#x, want %#x, %#x", g.addr, s, e, g.start, g.end)
		}
	}
	if s, e := gapAt(nil, 0x50); s != 0 || e != 0 {
		t.Errorf("gapAt(nil) = %#x, %#x", s, e)
	}
	for _, c := range []struct {
		i    int
		want uint64
	}{{0, 0x10}, {3, 0x100}, {5, 0}} {
		if got := symbolSize(syms, syms[c.i]); got != c.want {
			t.Errorf("symbolSize(%s) = %#x, want %#x", syms[c.i].Name, got, c.want)
		}
	}
}

func TestProcMaps(t *testing.T) {
	ms := []*experiment.Mapping{
		{Start: 0x1000, End: 0x3000, Path: "a", UnloadTime: -1},
		{Start: 0x2000, End: 0x4000, Path: "b", LoadTime: 10, UnloadTime: 20},
		{Start: 0x5000, End: 0x6000, Path: "c", LoadTime: 15, UnloadTime: -1},
	}
	pm := newProcMaps(ms)
	cases := []struct {
		t    int64
		addr uint64
		want string
	}{
		{0, 0x2500, "a"}, {0, 0x3500, ""}, {10, 0x1500, "a"}, {10, 0x2500, "b"}, {12, 0x3fff, "b"},
		{15, 0x5000, "c"}, {14, 0x5000, ""}, {20, 0x2500, "a"}, {20, 0x3500, ""}, {1 << 40, 0x5fff, "c"}, {0, 0x6000, ""},
	}
	for _, c := range cases {
		m := pm.find(pm.epoch(c.t), c.addr)
		got := ""
		if m != nil {
			got = m.Path
		}
		if got != c.want {
			t.Errorf("t=%d addr %#x: %q, want %q", c.t, c.addr, got, c.want)
		}
	}
	if objectName("/usr/lib/libc.so.6") != "<libc.so.6>" || objectName("[vdso]") != "<vdso>" || objectName(KernelPath) != KernelName {
		t.Error("objectName")
	}
}
