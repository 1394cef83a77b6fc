package collect

import (
	"math/bits"
	"runtime"
	"strings"
	"testing"

	"er/internal/experiment"
	"er/internal/perfabi"
)

// TestMappingsScale: a process that maps 50,000 pages, one mmap each at falling addresses (as mmap
// places them), then forks: its mapping records, and the fork's copy of them into the child, cost er
// O(n log n) steps and O(n) memory, and the copies of the live set and of the unwinder's space that
// the fork makes cost nothing (they share the parent's trees). Measured without timing: the steps of
// the live sets and of the unwinder's address spaces (at most 16 n log2 n for the 100,000 mappings
// of the two, each copy counted as the parent's work again), that the parent's and the child's sets
// have the steps the parent's had before the fork (no node visited to copy them: re-adding the
// mappings took n log n more), and the
// bytes allocated (at most 4 KiB a mapping; the unwinder's space rebuilt its slice at every mapping,
// 10 GB for 50,000, and the live sets and map.xml's list were scanned whole at each: O(n²) steps).
func TestMappingsScale(t *testing.T) {
	const n = 50000
	s := testSession(t, Spec{Interval: IntervalOn})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		addr := uint64(0x7f0000000000) - uint64(i)*0x2000
		s.handle(&perfabi.Mmap{Pid: 10, Tid: 10, Addr: addr, Len: 0x1000, Filename: "/x/lib.so", Executable: true, Time: uint64(2000 + i)})
	}
	liveSteps, spaceSteps := s.live[10].Steps(), s.stacks.spaces[10].Steps()
	s.handle(&perfabi.Fork{Pid: 11, Ppid: 10, Tid: 11, Ptid: 10, Time: 2000 + n})
	runtime.ReadMemStats(&after)
	child := s.cur[11]
	if child == nil || child.w == nil {
		t.Fatal("the fork made no subexperiment")
	}
	if got := len(s.live.of(11)); got != n {
		t.Fatalf("the child has %d live mappings, want %d", got, n)
	}
	if sp := s.stacks.spaces[10]; sp == nil || sp.Len() != n || s.stacks.spaces[11].Len() != n {
		t.Fatalf("the unwinder's spaces: %v", s.stacks.spaces)
	}
	for _, c := range []struct {
		what                  string
		before, parent, child int64
	}{
		{"live set", liveSteps, s.live[10].Steps(), s.live[11].Steps()},
		{"unwinder's space", spaceSteps, s.stacks.spaces[10].Steps(), s.stacks.spaces[11].Steps()},
	} {
		if c.parent != c.before || c.child != c.before {
			t.Errorf("the fork's copy of the %s visited nodes: %d steps before it, the parent's %d and the child's %d after", c.what, c.before, c.parent, c.child)
		}
	}
	steps := s.live.steps() + s.stacks.spaces[10].Steps() + s.stacks.spaces[11].Steps()
	bound := int64(16 * 2 * n * bits.Len(2*n))
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d mappings and a fork: %d steps (bound %d), %d MB allocated", n, steps, bound, alloc>>20)
	if steps > bound {
		t.Errorf("%d steps for %d mappings and their copy, more than %d (16 n log2 n)", steps, 2*n, bound)
	}
	if alloc > 2*n*4096 {
		t.Errorf("%d MB allocated for %d mappings and their copy, more than 4 KiB a mapping", alloc>>20, 2*n)
	}
	// The mapping records are right: the parent's and the child's mappings in their experiments.
	s.processGone(10, 3000+n)
	if err := s.w.Flush(); err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(s.w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Mappings) != n || d.Mappings[0].UnloadTime != 3000+n {
		t.Errorf("the founder's map.xml: %d mappings, the first unloaded at %d", len(d.Mappings), d.Mappings[0].UnloadTime)
	}
}

// TestLiveMappingsFork: a fork's copy of the live mappings is the child's own: the child's mapping
// over one of them removes it, whole, from the child only; the parent's later mapping is not the
// child's; a fork from a process with none leaves the child none (not what its pid had before).
func TestLiveMappingsFork(t *testing.T) {
	l := liveMappings{}
	for i, p := range []string{"/a", "/b", "/c"} {
		l.add(experiment.Mapping{Pid: 10, Start: uint64(i+1) << 20, End: uint64(i+1)<<20 + 0x3000, Path: p})
	}
	l.fork(10, 11)
	l.add(experiment.Mapping{Pid: 11, Start: 2<<20 + 0x1000, End: 2<<20 + 0x2000, Path: "/d"})
	l.add(experiment.Mapping{Pid: 10, Start: 4 << 20, End: 4<<20 + 0x1000, Path: "/e"})
	paths := func(pid uint32) string {
		var out []string
		for _, m := range l.of(pid) {
			out = append(out, m.Path)
		}
		return strings.Join(out, " ")
	}
	if got, want := paths(10), "/a /b /c /e"; got != want {
		t.Errorf("the parent's mappings: %s, want %s", got, want)
	}
	if got, want := paths(11), "/a /d /c"; got != want {
		t.Errorf("the child's mappings: %s, want %s", got, want)
	}
	if l.holds(11, 2<<20) || !l.holds(10, 2<<20) || l.holds(11, 4<<20) {
		t.Errorf("holds: the child %v at /b's start, the parent %v; the child %v at /e", l.holds(11, 2<<20), l.holds(10, 2<<20), l.holds(11, 4<<20))
	}
	l.fork(12, 11)
	if got := paths(11); got != "" {
		t.Errorf("a fork from a process without mappings left the child %s", got)
	}
}
