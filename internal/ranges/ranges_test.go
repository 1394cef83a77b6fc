package ranges

import (
	"cmp"
	"fmt"
	"iter"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// seg is a test value: a name and the file offset of its range's start.
type seg struct {
	name       string
	start, end uint64
	off        uint64
}

func (s seg) Cut(start, end uint64) seg {
	return seg{name: s.name, start: start, end: end, off: s.off + start - s.start}
}

func describe(m *Map[seg]) string {
	var out []string
	for s := range m.All() {
		out = append(out, fmt.Sprintf("%s[%#x,%#x)+%#x", s.name, s.start, s.end, s.off))
	}
	return strings.Join(out, " ")
}

func add(m *Map[seg], name string, start, end, off uint64) {
	m.Add(start, end, seg{name, start, end, off})
}

func TestMap(t *testing.T) {
	var m Map[seg]
	add(&m, "a", 0x1000, 0x5000, 0)
	add(&m, "b", 0x8000, 0x9000, 0x2000)
	add(&m, "c", 0x2000, 0x3000, 0) // splits a; the right part's offset moves with it
	if got, want := describe(&m), "a[0x1000,0x2000)+0x0 c[0x2000,0x3000)+0x0 a[0x3000,0x5000)+0x2000 b[0x8000,0x9000)+0x2000"; got != want {
		t.Errorf("after a split: %s\nwant %s", got, want)
	}
	for addr, want := range map[uint64]string{0x1000: "a", 0x2fff: "c", 0x3000: "a", 0x8fff: "b", 0xfff: "", 0x5000: "", 0x9000: ""} {
		if _, _, v, ok := m.Find(addr); v.name != want || ok != (want != "") {
			t.Errorf("Find(%#x) = %q, %v; want %q", addr, v.name, ok, want)
		}
	}
	c := m // a copy, as for a forked process
	c.Remove(0, 0x2800)
	add(&c, "d", 0x4000, 0x8800, 0x100) // cuts the end of a and the start of b
	if got, want := describe(&c), "c[0x2800,0x3000)+0x800 a[0x3000,0x4000)+0x2000 d[0x4000,0x8800)+0x100 b[0x8800,0x9000)+0x2800"; got != want {
		t.Errorf("the copy: %s\nwant %s", got, want)
	}
	if got, want := describe(&m), "a[0x1000,0x2000)+0x0 c[0x2000,0x3000)+0x0 a[0x3000,0x5000)+0x2000 b[0x8000,0x9000)+0x2000"; got != want {
		t.Errorf("the original after changes to its copy: %s\nwant %s", got, want)
	}
	add(&c, "e", 0x2900, 0x2a00, 0) // inside c: c before and after it
	add(&c, "f", 5, 5, 0)           // empty: nothing
	if got, want := describe(&c), "c[0x2800,0x2900)+0x800 e[0x2900,0x2a00)+0x0 c[0x2a00,0x3000)+0xa00 a[0x3000,0x4000)+0x2000 d[0x4000,0x8800)+0x100 b[0x8800,0x9000)+0x2800"; got != want {
		t.Errorf("a range inside another: %s\nwant %s", got, want)
	}
}

func depth[V any](t *node[V]) int {
	if t == nil {
		return 0
	}
	return 1 + max(depth(t.l), depth(t.r))
}

// TestMapBalanced: ranges added in address order (as mmap places them, downwards) keep the tree
// shallow, so that each change and lookup visits O(log n) nodes, not the O(n) of a sorted slice
// (issue 27: the mappings of er import were a slice filtered at each MMAP record).
func TestMapBalanced(t *testing.T) {
	const n = 1 << 17
	var up, down Map[seg]
	for i := range uint64(n) {
		add(&up, "u", i*0x2000, i*0x2000+0x1000, 0)
		add(&down, "d", (n-i)*0x2000, (n-i)*0x2000+0x1000, 0)
	}
	// A treap of random priorities is as deep as a random binary search tree: about 2.99 ln n
	// (35 here) at most, all but certainly below 3 times that.
	for _, m := range []*Map[seg]{&up, &down} {
		if d := depth(m.root); d > 100 {
			t.Errorf("%d ranges in a tree of depth %d", n, d)
		}
	}
}

// model is the reference: a slice in address order, each change a scan of it.
type model []seg

func sortModel(md model) model {
	slices.SortFunc(md, func(a, b seg) int { return cmp.Compare(a.start, b.start) })
	return md
}

// cut puts s (nil: nothing) in [start, end), cutting what it overlaps, as Map does.
func (md model) cut(start, end uint64, s *seg) model {
	if end <= start {
		return md
	}
	var out model
	for _, o := range md {
		if o.end <= start || o.start >= end {
			out = append(out, o)
			continue
		}
		if o.start < start {
			out = append(out, o.Cut(o.start, start))
		}
		if o.end > end {
			out = append(out, o.Cut(end, o.end))
		}
	}
	if s != nil {
		out = append(out, *s)
	}
	return sortModel(out)
}

// whole puts s (nil: nothing) in [start, end), removing whole what it overlaps, as Whole does; it
// returns what it removed, in address order.
func (md model) whole(start, end uint64, s *seg) (model, []seg) {
	if end <= start {
		return md, nil
	}
	var out model
	var removed []seg
	for _, o := range md {
		if o.start < end && start < o.end {
			removed = append(removed, o)
		} else {
			out = append(out, o)
		}
	}
	if s != nil {
		out = append(out, *s)
	}
	return sortModel(out), removed
}

func (md model) find(addr uint64) (seg, bool) {
	for _, o := range md {
		if o.start <= addr && addr < o.end {
			return o, true
		}
	}
	return seg{}, false
}

// ops is what TestMapAgainstModel needs of a Map or a Whole: the change, checked against the model
// as it goes, and a copy.
type ops interface {
	change(start, end uint64, s *seg, md model) (model, error)
	Find(addr uint64) (start, end uint64, v seg, ok bool)
	Len() int
	All() iter.Seq[seg]
	copy() ops
}

type cutOps struct{ Map[seg] }

func (m *cutOps) change(start, end uint64, s *seg, md model) (model, error) {
	if s == nil {
		m.Remove(start, end)
	} else {
		m.Add(start, end, *s)
	}
	return md.cut(start, end, s), nil
}

func (m *cutOps) copy() ops { c := *m; return &c }

type wholeOps struct{ Whole[seg] }

func (w *wholeOps) change(start, end uint64, s *seg, md model) (model, error) {
	var got []seg
	note := func(s, e uint64, v seg) {
		if s != v.start || e != v.end {
			got = append(got, seg{name: "bad range " + v.name})
		}
		got = append(got, v)
	}
	if s == nil {
		w.Remove(start, end, note)
	} else {
		w.Add(start, end, *s, note)
	}
	md, want := md.whole(start, end, s)
	if !slices.Equal(got, want) {
		return md, fmt.Errorf("[%#x, %#x) removed %v, want %v", start, end, got, want)
	}
	return md, nil
}

func (w *wholeOps) copy() ops { c := *w; return &c }

// TestMapAgainstModel: random adds (overlapping what is there), removals and lookups, on a Map and
// on a Whole, give what the naive model gives: the same lookups, the same ranges removed (a Whole's,
// in address order), the same Len; and the copies taken along the way still hold what the model
// held when they were taken, after all the changes made to the map since.
func TestMapAgainstModel(t *testing.T) {
	for _, kind := range []struct {
		name string
		m    ops
	}{{"cut", &cutOps{}}, {"whole", &wholeOps{}}} {
		t.Run(kind.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(1, 2))
			m := kind.m
			var md model
			type snap struct {
				m  ops
				md model
			}
			var snaps []snap
			for i := range 20000 {
				start := rnd.Uint64N(1 << 16)
				end := start + rnd.Uint64N(1<<10)
				var err error
				switch op := rnd.IntN(10); {
				case op < 6:
					md, err = m.change(start, end, &seg{fmt.Sprint(i), start, end, rnd.Uint64N(1 << 20)}, md)
				case op < 8:
					md, err = m.change(start, end, nil, md)
				default:
					s, e, v, ok := m.Find(start)
					want, wok := md.find(start)
					if ok != wok || v != want || ok && (s != want.start || e != want.end) {
						t.Fatalf("op %d: Find(%#x) = %#x, %#x, %+v, %v; want %+v, %v", i, start, s, e, v, ok, want, wok)
					}
				}
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if m.Len() != len(md) {
					t.Fatalf("op %d: Len %d, want %d", i, m.Len(), len(md))
				}
				if i%1000 == 0 {
					snaps = append(snaps, snap{m.copy(), slices.Clone(md)})
				}
			}
			for i, s := range append(snaps, snap{m, md}) {
				if got := slices.Collect(s.m.All()); !slices.Equal(got, []seg(s.md)) || s.m.Len() != len(s.md) {
					t.Fatalf("copy %d: %d ranges (Len %d), the model %d; the first: %v", i, len(got), s.m.Len(), len(s.md), got[:min(5, len(got))])
				}
			}
		})
	}
}

// TestCopy: a copy of a Map or of a Whole is made in no steps and does not see the changes made to
// the original after it (ranges added over its ranges, cut, removed), nor the original the
// copy's, as a forked process and its parent do not see each other's mmaps.
func TestCopy(t *testing.T) {
	const n = 1000
	fill := func(add func(start, end uint64, s seg)) {
		for i := range uint64(n) {
			add(i*0x2000, i*0x2000+0x1000, seg{fmt.Sprint(i), i * 0x2000, i*0x2000 + 0x1000, 0})
		}
	}
	// change overlaps every range: each is cut in two (or replaced whole), and a third removed.
	change := func(add func(start, end uint64, s seg), remove func(start, end uint64)) {
		for i := range uint64(n) {
			a := i*0x2000 + 0x800
			add(a, a+0x1000, seg{"new", a, a + 0x1000, 0})
		}
		remove(0, n/3*0x2000)
	}
	check := func(t *testing.T, what string, got []seg, want []seg) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d ranges, want %d; the first %v", what, len(got), len(want), got[:min(3, len(got))])
		}
	}
	t.Run("cut", func(t *testing.T) {
		var m Map[seg]
		fill(func(s, e uint64, v seg) { m.Add(s, e, v) })
		before := slices.Collect(m.All())
		c := m
		if c.Steps() != m.Steps() || c.Len() != n {
			t.Errorf("the copy: %d steps, %d ranges; the original %d, %d", c.Steps(), c.Len(), m.Steps(), m.Len())
		}
		change(func(s, e uint64, v seg) { m.Add(s, e, v) }, m.Remove)
		if m.Len() != 2*n-2*(n/3) {
			t.Errorf("the original changed: %d ranges", m.Len())
		}
		check(t, "the copy after changes to the original", slices.Collect(c.All()), before)
		changed := slices.Collect(m.All())
		c.Remove(0, 1<<62)
		check(t, "the original after the copy's removal", slices.Collect(m.All()), changed)
		if _, _, v, ok := m.Find(n/2*0x2000 + 0x900); !ok || v.name != "new" {
			t.Errorf("the original's Find: %+v, %v", v, ok)
		}
	})
	t.Run("whole", func(t *testing.T) {
		var w Whole[seg]
		fill(func(s, e uint64, v seg) { w.Add(s, e, v, nil) })
		before := slices.Collect(w.All())
		c := w
		if c.Steps() != w.Steps() || c.Len() != n {
			t.Errorf("the copy: %d steps, %d ranges; the original %d, %d", c.Steps(), c.Len(), w.Steps(), w.Len())
		}
		removed := 0
		count := func(uint64, uint64, seg) { removed++ }
		change(func(s, e uint64, v seg) { w.Add(s, e, v, count) }, func(s, e uint64) { w.Remove(s, e, count) })
		if removed != n+n/3 || w.Len() != n-n/3 {
			t.Errorf("the original changed: %d removed, %d left", removed, w.Len())
		}
		check(t, "the copy after changes to the original", slices.Collect(c.All()), before)
		changed := slices.Collect(w.All())
		c.Remove(0, 1<<62, nil)
		check(t, "the original after the copy's removal", slices.Collect(w.All()), changed)
		if _, _, v, ok := c.Find(0x10); ok {
			t.Errorf("the copy's Find after its removal of all: %+v", v)
		}
	})
}

// TestWholeCallback: the callback of a Whole's Add runs once the new range is in, and may change
// the map: one that puts back what lies outside the new range leaves the ends of a range that the
// new one covers only in part.
func TestWholeCallback(t *testing.T) {
	var w Whole[int]
	w.Add(0x1000, 0x5000, 1, nil)
	w.Add(0x6000, 0x7000, 2, nil)
	trim := func(start, end uint64) func(uint64, uint64, int) {
		return func(s, e uint64, v int) {
			if _, _, _, ok := w.Find(start); !ok {
				t.Errorf("[%#x, %#x) is not in when the callback runs", start, end)
			}
			if s < start {
				w.Add(s, start, v, nil)
			}
			if e > end {
				w.Add(end, e, v, nil)
			}
		}
	}
	w.Add(0x2000, 0x3000, 3, trim(0x2000, 0x3000))
	w.Add(0x4800, 0x6800, 4, trim(0x4800, 0x6800))
	var got []string
	for v := range w.All() {
		got = append(got, fmt.Sprint(v))
	}
	var spans []string
	for _, a := range []uint64{0x1000, 0x2000, 0x3000, 0x4800, 0x6800} {
		s, e, v, _ := w.Find(a)
		spans = append(spans, fmt.Sprintf("[%#x,%#x)=%d", s, e, v))
	}
	if g, want := strings.Join(spans, " ")+" "+strings.Join(got, ","), "[0x1000,0x2000)=1 [0x2000,0x3000)=3 [0x3000,0x4800)=1 [0x4800,0x6800)=4 [0x6800,0x7000)=2 1,3,1,4,2"; g != want || w.Len() != 5 {
		t.Errorf("got %s (%d ranges)\nwant %s", g, w.Len(), want)
	}
	// Empty ranges are neither added nor remove anything.
	w.Add(0x2800, 0x2800, 9, func(uint64, uint64, int) { t.Error("an empty range removed one") })
	w.Remove(0x2800, 0x2800, func(uint64, uint64, int) { t.Error("an empty removal removed one") })
	if w.Len() != 5 {
		t.Errorf("Len %d after empty changes, want 5", w.Len())
	}
}

// stepper is what TestStepsBound needs of a Map or a Whole: a change of a range, and the count of
// the ranges a Whole removed.
type stepper interface {
	add(start, end uint64, v seg)
	remove(start, end uint64)
	Find(addr uint64) (start, end uint64, v seg, ok bool)
	Len() int
	Steps() int64
	removed() int
}

type cutStepper struct{ Map[seg] }

func (m *cutStepper) add(start, end uint64, v seg) { m.Add(start, end, v) }
func (m *cutStepper) remove(start, end uint64)     { m.Remove(start, end) }
func (m *cutStepper) removed() int                 { return -1 }

type wholeStepper struct {
	Whole[seg]
	gone int
}

func (w *wholeStepper) count(uint64, uint64, seg)    { w.gone++ }
func (w *wholeStepper) add(start, end uint64, v seg) { w.Add(start, end, v, w.count) }
func (w *wholeStepper) remove(start, end uint64)     { w.Remove(start, end, w.count) }
func (w *wholeStepper) removed() int                 { return w.gone }

// TestStepsBound: in a Map and in a Whole, 50,000 mappings added one at a time, at falling
// addresses (as mmap places them), rising ones, and at random, then each looked up and the whole
// space unmapped, take at most 8 n log2 n steps; and 50,000 added, then 50,000 more each over the
// end of one and the start of the next (cutting them or removing them whole), then a removal of
// all, at most 12 n log2 n: the work of O(log n) a change or a lookup and O(1) for each range
// removed (a change over ranges follows a search path, two split paths and two merge spines),
// where a sorted slice or a scan takes O(n²) (1.25 billion).
func TestStepsBound(t *testing.T) {
	const n = 50000
	const page = 4096
	r := rand.New(rand.NewPCG(3, 4))
	perm := r.Perm(n)
	for _, order := range []struct {
		name string
		addr func(i int) uint64
	}{
		{"falling", func(i int) uint64 { return uint64(2*n-i) * 2 * page }},
		{"rising", func(i int) uint64 { return uint64(i) * 2 * page }},
		{"random", func(i int) uint64 { return uint64(perm[i]) * 2 * page }},
	} {
		for _, kind := range []struct {
			name string
			make func() stepper
		}{{"cut", func() stepper { return &cutStepper{} }}, {"whole", func() stepper { return &wholeStepper{} }}} {
			t.Run(kind.name+"/"+order.name, func(t *testing.T) {
				fill := func(m stepper) {
					for i := range n {
						a := order.addr(i)
						m.add(a, a+page, seg{fmt.Sprint(i), a, a + page, 0})
					}
				}
				check := func(what string, m stepper, bound int64, removed int) {
					t.Logf("%s: %d steps (bound %d)", what, m.Steps(), bound)
					if m.Len() != 0 {
						t.Errorf("%s: %d ranges left after a removal of all", what, m.Len())
					}
					if got := m.removed(); got != -1 && got != removed {
						t.Errorf("%s: %d ranges removed, want %d", what, got, removed)
					}
					if m.Steps() > bound {
						t.Errorf("%s: %d steps, more than %d", what, m.Steps(), bound)
					}
				}
				m := kind.make()
				fill(m)
				for i := range n {
					if _, _, v, ok := m.Find(order.addr(i) + 8); !ok || v.name != fmt.Sprint(i) {
						t.Fatalf("Find of mapping %d: %+v, %v", i, v, ok)
					}
				}
				m.remove(0, 1<<62)
				check(fmt.Sprintf("%d adds, %d finds and a removal of all", n, n), m, int64(8*n*bits.Len(n)), n)
				m = kind.make()
				fill(m)
				for i := range n {
					a := order.addr(i) + page/2
					m.add(a, a+2*page, seg{"over", a, a + 2*page, 0})
				}
				m.remove(0, 1<<62)
				// Every range added went, whole: under one added later, or in the removal of all.
				check(fmt.Sprintf("%d adds, %d adds over them and a removal of all", n, n), m, int64(12*n*bits.Len(n)), 2*n)
			})
		}
	}
}

// BenchmarkAdd50000 adds 50,000 one-page ranges at falling addresses.
func BenchmarkAdd50000(b *testing.B) {
	for b.Loop() {
		var m Whole[int]
		for i := range 50000 {
			a := uint64(100000-i) * 8192
			m.Add(a, a+4096, i, nil)
		}
	}
}

// BenchmarkFind looks up addresses in a map of 200 ranges (a process's load objects).
func BenchmarkFind(b *testing.B) {
	var m Whole[int]
	for i := range 200 {
		m.Add(uint64(i)<<20, uint64(i)<<20+1<<19, i, nil)
	}
	i := uint64(0)
	for b.Loop() {
		i = (i*0x9e3779b97f4a7c15 + 1) % 200
		if _, _, _, ok := m.Find(i<<20 + 100); !ok {
			b.Fatal("not found: ", i)
		}
	}
}
