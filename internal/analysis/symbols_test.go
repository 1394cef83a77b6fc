package analysis

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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
		{Start: 0x5800, End: 0x5900, Path: experiment.DynamicPath, Func: "d", UnloadTime: -1}, // code a runtime named in c
		{Start: 0x5800, End: 0x6000, Path: "e", LoadTime: 30, UnloadTime: -1},                 // c made executable again (an mprotect)
	}
	pm := newProcMaps(ms)
	cases := []struct {
		t    int64
		addr uint64
		want string
	}{
		{0, 0x2500, "a"}, {0, 0x3500, ""}, {10, 0x1500, "a"}, {10, 0x2500, "b"}, {12, 0x3fff, "b"},
		{15, 0x5000, "c"}, {14, 0x5000, ""}, {20, 0x2500, "a"}, {20, 0x3500, ""}, {1 << 40, 0x5fff, "e"}, {0, 0x6000, ""},
		{0, 0x5800, experiment.DynamicPath}, {20, 0x5800, experiment.DynamicPath}, {30, 0x58ff, experiment.DynamicPath}, {30, 0x5900, "e"}, {20, 0x5900, "c"},
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

// bruteFind is what procMaps.find must answer: of the mappings active at time t (the epoch's) that
// hold addr, a dynamic function before any other, then the one loaded last, the later in the list
// among those loaded at the same time.
func bruteFind(ms []*experiment.Mapping, t int64, addr uint64) *experiment.Mapping {
	var best *experiment.Mapping
	for _, m := range ms {
		if m.LoadTime <= t && (m.UnloadTime < 0 || t < m.UnloadTime) && m.Start <= addr && addr < m.End &&
			(best == nil || m.IsDynamic() && !best.IsDynamic() || m.IsDynamic() == best.IsDynamic() && m.LoadTime >= best.LoadTime) {
			best = m
		}
	}
	return best
}

// TestProcMapsMatchesBruteForce: random overlapping mappings loaded and unloaded at random times
// (some at the same instant, some never unloaded, some empty): every lookup finds what scanning
// all mappings finds.
func TestProcMapsMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		n := 1 + r.IntN(60)
		ms := make([]*experiment.Mapping, n)
		for i := range ms {
			start := uint64(r.IntN(40)) * 0x1000
			m := &experiment.Mapping{Start: start, End: start + uint64(r.IntN(8))*0x1000, Path: fmt.Sprint(i),
				LoadTime: int64(r.IntN(30)) - 2, UnloadTime: -1}
			if r.IntN(3) > 0 {
				m.UnloadTime = m.LoadTime + int64(r.IntN(20))
			}
			if r.IntN(5) == 0 {
				m.Path, m.Func = experiment.DynamicPath, fmt.Sprint("f", i) // a dynamic function
			}
			ms[i] = m
		}
		pm := newProcMaps(ms)
		for range 400 {
			tm := int64(r.IntN(60)) - 5
			addr := uint64(r.IntN(50*0x1000)) + uint64(r.IntN(2))*0xfff
			e := pm.epoch(tm)
			// The epoch's mappings are those active at its first instant.
			rep := int64(0)
			switch {
			case e > 0:
				rep = pm.changes[e-1]
			case len(pm.changes) > 0:
				rep = pm.changes[0] - 1
			}
			got, want := pm.find(e, addr), bruteFind(ms, rep, addr)
			if got != want {
				t.Fatalf("round %d: t=%d (epoch %d) addr %#x: got %v, want %v", round, tm, e, addr, got, want)
			}
		}
	}
}

// manyMappings returns n one-page mappings of one file, each loaded at its own time: all kept when
// unmap is false (at increasing addresses), else each unloaded when the next is loaded, at one address
// (what a program that maps and unmaps a file in a loop records).
func manyMappings(n int, unmap bool) []*experiment.Mapping {
	ms := make([]*experiment.Mapping, n+1)
	ms[0] = &experiment.Mapping{Start: progBase, End: progBase + 0x100000, Path: "/bin/prog", UnloadTime: -1}
	for i := 1; i <= n; i++ {
		m := &experiment.Mapping{Start: 0x7f0000000000 - uint64(i)*0x1000, Path: "/tmp/blob", LoadTime: int64(i) * 10, UnloadTime: -1}
		if unmap {
			m.Start, m.UnloadTime = 0x7f0000000000, int64(i)*10+10
		}
		m.End = m.Start + 0x1000
		ms[i] = m
	}
	return ms
}

// TestProcMapsMemoryLinear: 5,000 mappings, each opening an epoch, looked up in every epoch, take
// memory in proportion to the mappings, not to mappings x epochs (a range list per epoch took
// 5,000 x 2,500 ranges: some 500 MB allocated).
func TestProcMapsMemoryLinear(t *testing.T) {
	const n = 5000
	for _, unmap := range []bool{false, true} {
		ms := manyMappings(n, unmap)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		pm := newProcMaps(ms)
		for i := 1; i <= n; i++ {
			e := pm.epoch(int64(i) * 10)
			if m := pm.find(e, progBase+0x10); m != ms[0] {
				t.Fatalf("epoch %d: the executable: %v", e, m)
			}
			if m := pm.find(e, ms[i].Start+0x10); m != ms[i] {
				t.Fatalf("epoch %d: mapping %d: %v", e, i, m)
			}
		}
		runtime.ReadMemStats(&after)
		// 5,000 mappings in about log2(5,000) = 13 nodes each, a range list for each node used:
		// at most some 16 bytes x 2 ranges x 13 nodes x 5,000 mappings, 2 MB; allow 8.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Errorf("unmap %v: %d mappings looked up in each epoch allocated %d bytes, want at most %d", unmap, n, alloc, 8<<20)
		}
	}
}
