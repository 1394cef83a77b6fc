// Package ranges holds non-overlapping address ranges with a value each in a persistent balanced
// tree (a process's mappings): changes and lookups take O(log n), a copy costs nothing.
package ranges

import (
	"iter"
	"math/rand/v2"
)

// The two kinds of map differ only in what becomes of a range that a change overlaps: a Map cuts
// it, keeping its parts outside the change (as mmap with MAP_FIXED and munmap do to a process's
// mappings); a Whole removes it whole and reports it (as map.xml unloads a mapping that another
// one overlaps). Both are the same tree:
//
//   - a treap, ordered by start and a heap by priority; the priorities are random, so the tree is
//     as deep as a random binary search tree (about 3 ln n at most) whatever order the ranges come
//     in: a crafted perf.data or target cannot choose them to unbalance it;
//   - persistent: a node is never changed once it is in a tree, only copied along the path to a
//     change, so that an assignment copies a map in O(1) (a fork of a process with 50,000 mappings)
//     and the copy does not see later changes of the original, nor the original the copy's;
//   - a change visits O(log n) nodes, and one more for each range it removes; a lookup O(log n).

// Cutter is a value that follows its range when the range is cut to [start, end) (a mapping's
// file offset moves with its start).
type Cutter[V any] interface {
	Cut(start, end uint64) V
}

// Map is a set of non-overlapping ranges [start, end), each with a value, where a change cuts the
// ranges it overlaps. The zero Map is empty; an assignment copies it in O(1), and neither copy sees
// the changes made to the other. It is not safe for concurrent use (a lookup counts its Steps).
type Map[V Cutter[V]] struct{ tree[V] }

// Add maps [start, end) to v, cutting the ranges it overlaps: their parts outside [start, end)
// stay, with the values Cut gives them (as mmap with MAP_FIXED does). An empty range (end <= start)
// changes nothing.
func (m *Map[V]) Add(start, end uint64, v V) {
	if end > start {
		m.put(start, end, leaf(start, end, v))
	}
}

// Remove unmaps [start, end), cutting the ranges it overlaps (as munmap does).
func (m *Map[V]) Remove(start, end uint64) {
	if end > start {
		m.put(start, end, nil)
	}
}

// put cuts [start, end) out of the map and puts x (nil: nothing) in its place.
func (m *Map[V]) put(start, end uint64, x *node[V]) {
	lo, gone, hi, ok := m.open(start, end)
	if !ok {
		m.insert(x)
		return
	}
	var before, after *node[V] // the parts outside [start, end) of the ranges that reached into it
	if first := lowest(gone, &m.steps); first.start < start {
		before = leaf(first.start, start, first.v.Cut(first.start, start))
	}
	if last := highest(gone, &m.steps); last.end > end {
		after = leaf(end, last.end, last.v.Cut(end, last.end))
	}
	m.close(lo, hi, before, x, after)
}

// Whole is a set of non-overlapping ranges [start, end), each with a value, where a change removes
// the ranges it overlaps whole and reports each. The zero Whole is empty; an assignment copies it in
// O(1), and neither copy sees the changes made to the other. It is not safe for concurrent use.
type Whole[V any] struct{ tree[V] }

// Add maps [start, end) to v, first removing every range that overlaps it: removed, when not nil,
// is called for each in address order, once v is in. An empty range (end <= start) is not added and
// removes nothing.
func (w *Whole[V]) Add(start, end uint64, v V, removed func(start, end uint64, v V)) {
	if end > start {
		w.put(start, end, leaf(start, end, v), removed)
	}
}

// Remove removes every range that overlaps [start, end), calling removed (when not nil) for each
// in address order, once they are all out.
func (w *Whole[V]) Remove(start, end uint64, removed func(start, end uint64, v V)) {
	if end > start {
		w.put(start, end, nil, removed)
	}
}

// put removes the ranges that overlap [start, end), puts x (nil: nothing) in their place and
// reports them.
func (w *Whole[V]) put(start, end uint64, x *node[V], removed func(start, end uint64, v V)) {
	lo, gone, hi, ok := w.open(start, end)
	if !ok {
		w.insert(x)
		return
	}
	w.close(lo, hi, x)
	report(gone, removed, &w.steps)
}

// report calls f for each range of t, the ranges that open took out, in address order.
func report[V any](t *node[V], f func(start, end uint64, v V), steps *int64) {
	if f == nil {
		return
	}
	var walk func(t *node[V])
	walk = func(t *node[V]) {
		for ; t != nil; t = t.r {
			*steps++
			walk(t.l)
			f(t.start, t.end, t.v)
		}
	}
	walk(t)
}

// tree is what Map and Whole share: the treap, its size and its work.
type tree[V any] struct {
	root  *node[V]
	n     int   // ranges
	steps int64 // nodes visited so far (Steps)
}

// node is a treap node. Once in a tree it is never changed: the trees that share it may be copies.
type node[V any] struct {
	start, end uint64
	v          V
	prio       uint64
	l, r       *node[V]
}

func leaf[V any](start, end uint64, v V) *node[V] {
	return &node[V]{start: start, end: end, v: v, prio: rand.Uint64()}
}

// Len is the number of ranges.
func (t *tree[V]) Len() int { return t.n }

// Steps is the number of tree nodes the operations on the map (and on the maps it was copied from,
// before the copy) have visited: a measure of their work that tests can bound.
func (t *tree[V]) Steps() int64 { return t.steps }

// Find returns the range that holds addr, and its value.
func (t *tree[V]) Find(addr uint64) (start, end uint64, v V, ok bool) {
	var best *node[V]
	for x := t.root; x != nil; {
		t.steps++
		if x.start <= addr {
			best, x = x, x.r
		} else {
			x = x.l
		}
	}
	if best == nil || addr >= best.end {
		return 0, 0, v, false
	}
	return best.start, best.end, best.v, true
}

// All yields the values in the order of their ranges.
func (t *tree[V]) All() iter.Seq[V] {
	return func(yield func(V) bool) {
		var walk func(x *node[V]) bool
		walk = func(x *node[V]) bool {
			return x == nil || walk(x.l) && yield(x.v) && walk(x.r)
		}
		walk(t.root)
	}
}

// open splits the tree where a change of [start, end) goes: lo holds the ranges below it, gone
// those that overlap it (those that start in [start, end), and the last that starts below start
// where it reaches into [start, end)), hi those above. ok is false where nothing overlaps: then the
// tree is left whole, its nodes not even copied. The nodes of gone are the tree's own: they are
// not to be changed. close joins the parts again, with the leaves xs between them.
func (t *tree[V]) open(start, end uint64) (lo, gone, hi *node[V], ok bool) {
	from, ok := t.overlapped(start, end)
	if !ok {
		return nil, nil, nil, false
	}
	lo, rest := split(t.root, from, &t.steps)
	gone, hi = split(rest, end, &t.steps)
	t.n -= count(gone, &t.steps)
	return lo, gone, hi, true
}

func (t *tree[V]) close(lo, hi *node[V], xs ...*node[V]) {
	for _, x := range xs {
		if x != nil {
			lo = merge(lo, x, &t.steps)
			t.n++
		}
	}
	t.root = merge(lo, hi, &t.steps)
}

// overlapped reports whether a range overlaps [start, end), and where the first that does starts.
// The search for start passes the last range that starts below it and the first at or above it: the
// former overlaps where it ends above start (and is then the first), the latter where it starts below
// end.
func (t *tree[V]) overlapped(start, end uint64) (from uint64, ok bool) {
	var below, above *node[V]
	for x := t.root; x != nil; {
		t.steps++
		if x.start < start {
			below, x = x, x.r
		} else {
			above, x = x, x.l
		}
	}
	switch {
	case below != nil && below.end > start:
		return below.start, true
	case above != nil && above.start < end:
		return start, true
	}
	return 0, false
}

// insert adds x (when not nil), a new leaf that overlaps nothing, copying the nodes on its way down.
func (t *tree[V]) insert(x *node[V]) {
	if x != nil {
		t.root = insert(t.root, x, &t.steps)
		t.n++
	}
}

func insert[V any](t, x *node[V], steps *int64) *node[V] {
	if t == nil {
		return x
	}
	*steps++
	if x.prio > t.prio {
		x.l, x.r = split(t, x.start, steps)
		return x
	}
	c := *t
	if x.start < t.start {
		c.l = insert(t.l, x, steps)
	} else {
		c.r = insert(t.r, x, steps)
	}
	return &c
}

// split divides t into the ranges that start below key and those that start at or above it.
func split[V any](t *node[V], key uint64, steps *int64) (lo, hi *node[V]) {
	if t == nil {
		return nil, nil
	}
	*steps++
	c := *t
	if t.start < key {
		c.r, hi = split(t.r, key, steps)
		return &c, hi
	}
	lo, c.l = split(t.l, key, steps)
	return lo, &c
}

// merge joins a and b, whose ranges all start below b's.
func merge[V any](a, b *node[V], steps *int64) *node[V] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		*steps++
		c := *a
		c.r = merge(a.r, b, steps)
		return &c
	}
	*steps++
	c := *b
	c.l = merge(a, b.l, steps)
	return &c
}

// count is the number of ranges in t: those a change took out, each visited once.
func count[V any](t *node[V], steps *int64) int {
	if t == nil {
		return 0
	}
	*steps++
	return 1 + count(t.l, steps) + count(t.r, steps)
}

// lowest returns the range of the non-empty t that starts first, highest the one that starts last.
func lowest[V any](t *node[V], steps *int64) *node[V] {
	for t.l != nil {
		*steps++
		t = t.l
	}
	return t
}

func highest[V any](t *node[V], steps *int64) *node[V] {
	for t.r != nil {
		*steps++
		t = t.r
	}
	return t
}
