package analysis

import (
	"slices"
	"sort"

	"er/internal/experiment"
)

// procMaps finds the mapping that holds an address in one process at one time. The mappings
// active at a time t (LoadTime <= t < UnloadTime) change only at the load and unload times, so
// time is cut into epochs between those instants. Where active mappings overlap, the one loaded
// last wins (the later in the list among those loaded at once), as a later mmap over a range
// replaces the earlier one; a dynamic function wins over the mapping that holds its code.
//
// A program can map thousands of files one after another, each opening an epoch: a range list per
// epoch would take memory in mappings x epochs (50,000 mappings: 24 GB). Instead the epochs are
// the leaves of a segment tree, and each mapping is kept in the O(log epochs) nodes that cover its
// epochs exactly; each node gets a range list of its own mappings when first needed. The mapping
// holding an address in epoch e is the winner among the nodes on the path from e's leaf to the
// root, each found by binary search: O(log^2) a lookup, memory O(mappings x log epochs).
type procMaps struct {
	maps    []*experiment.Mapping
	changes []int64      // sorted distinct load and unload times
	leaves  int          // a power of two, at least the number of epochs
	nodes   [][]int32    // by tree node (1 is the root; leaf e is leaves+e): mappings active in all its epochs, by rank
	lists   []*rangeList // by tree node: the range list of its mappings, built when first needed
}

// rangeList is a sorted list of disjoint address ranges, each owned by a mapping (its index).
type rangeList struct {
	start, end []uint64
	owner      []int32
}

func newProcMaps(maps []*experiment.Mapping) *procMaps {
	pm := &procMaps{maps: maps}
	seen := map[int64]bool{}
	for _, m := range maps {
		for _, t := range []int64{m.LoadTime, m.UnloadTime} {
			if t >= 0 && !seen[t] {
				seen[t] = true
				pm.changes = append(pm.changes, t)
			}
		}
	}
	sort.Slice(pm.changes, func(i, j int) bool { return pm.changes[i] < pm.changes[j] })
	epochs := len(pm.changes) + 1
	pm.leaves = 1
	for pm.leaves < epochs {
		pm.leaves *= 2
	}
	pm.nodes = make([][]int32, 2*pm.leaves)
	pm.lists = make([]*rangeList, 2*pm.leaves)
	// Mappings go into the nodes by rank, the loser first, so each node's list is by rank too.
	order := make([]int32, len(maps))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return pm.ranksBelow(order[a], order[b]) })
	for _, i := range order {
		m := maps[i]
		if m.Start >= m.End {
			continue
		}
		lo := sort.Search(epochs, func(e int) bool { return pm.instant(e) >= m.LoadTime })
		hi := epochs
		if m.UnloadTime >= 0 {
			hi = sort.Search(epochs, func(e int) bool { return pm.instant(e) >= m.UnloadTime })
		}
		// Epochs [lo, hi): the nodes that cover them exactly.
		for l, r := lo+pm.leaves, hi+pm.leaves; l < r; l, r = l/2, r/2 {
			if l&1 == 1 {
				pm.nodes[l] = append(pm.nodes[l], i)
				l++
			}
			if r&1 == 1 {
				r--
				pm.nodes[r] = append(pm.nodes[r], i)
			}
		}
	}
	return pm
}

// instant is the first instant of epoch e, which tells the mappings active in it.
func (pm *procMaps) instant(e int) int64 {
	switch {
	case e > 0:
		return pm.changes[e-1]
	case len(pm.changes) > 0:
		return pm.changes[0] - 1
	}
	return 0
}

// epoch returns the epoch of time t: the number of change times <= t.
func (pm *procMaps) epoch(t int64) int {
	return sort.Search(len(pm.changes), func(i int) bool { return pm.changes[i] > t })
}

// beats reports whether mapping a wins over mapping b where both hold an address.
func (pm *procMaps) beats(a, b int32) bool {
	return pm.ranksBelow(b, a) || !pm.ranksBelow(a, b) && a > b
}

// ranksBelow says whether mapping a ranks below mapping b, ties aside: a dynamic function ranks
// above the mapping its code is in (a runtime's perf map names code in anonymous memory whose
// mprotects come later), and the later loaded above the earlier.
func (pm *procMaps) ranksBelow(a, b int32) bool {
	ma, mb := pm.maps[a], pm.maps[b]
	if da, db := ma.IsDynamic(), mb.IsDynamic(); da != db {
		return db
	}
	return ma.LoadTime < mb.LoadTime
}

// find returns the mapping holding addr during epoch e, or nil.
func (pm *procMaps) find(e int, addr uint64) *experiment.Mapping {
	best := int32(-1)
	for x := e + pm.leaves; x >= 1; x /= 2 {
		if len(pm.nodes[x]) == 0 {
			continue
		}
		rl := pm.lists[x]
		if rl == nil {
			rl = buildRanges(pm.maps, pm.nodes[x])
			pm.lists[x] = rl
		}
		i := sort.Search(len(rl.start), func(i int) bool { return rl.start[i] > addr }) - 1
		if i < 0 || addr >= rl.end[i] {
			continue
		}
		if o := rl.owner[i]; best < 0 || pm.beats(o, best) {
			best = o
		}
	}
	if best < 0 {
		return nil
	}
	return pm.maps[best]
}

// buildRanges makes the range list of mappings ids (indexes into maps, by rank: each wins over those
// before it). Each piece between two boundaries goes to the best mapping covering it: the mappings
// are laid from the best down, each taking only the pieces still free, which a "next free piece"
// forest finds without walking the taken ones again.
func buildRanges(maps []*experiment.Mapping, ids []int32) *rangeList {
	bounds := make([]uint64, 0, 2*len(ids))
	for _, i := range ids {
		bounds = append(bounds, maps[i].Start, maps[i].End)
	}
	slices.Sort(bounds)
	bounds = uniq(bounds)
	pieces := len(bounds) - 1
	owner := make([]int32, pieces)
	next := make([]int32, pieces+1) // next[p] leads to the first free piece >= p; pieces is the end
	for p := range owner {
		owner[p] = -1
		next[p] = int32(p)
	}
	next[pieces] = int32(pieces)
	free := func(p int32) int32 {
		root := p
		for next[root] != root {
			root = next[root]
		}
		for next[p] != root { // shorten the path for the next walk
			next[p], p = root, next[p]
		}
		return root
	}
	for k := len(ids) - 1; k >= 0; k-- {
		m := maps[ids[k]]
		p, _ := slices.BinarySearch(bounds, m.Start)
		for q := free(int32(p)); int(q) < pieces && bounds[q] < m.End; q = free(q) {
			owner[q] = ids[k]
			next[q] = q + 1
		}
	}
	rl := &rangeList{}
	for p := range pieces {
		if owner[p] < 0 {
			continue
		}
		if n := len(rl.owner); n > 0 && rl.owner[n-1] == owner[p] && rl.end[n-1] == bounds[p] {
			rl.end[n-1] = bounds[p+1]
			continue
		}
		rl.start = append(rl.start, bounds[p])
		rl.end = append(rl.end, bounds[p+1])
		rl.owner = append(rl.owner, owner[p])
	}
	return rl
}

func uniq(s []uint64) []uint64 {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// symbolSize is the size of sym, one of syms: its own, or the distance to the next symbol at a
// higher address.
func symbolSize(syms []experiment.Symbol, sym experiment.Symbol) uint64 {
	if sym.Size > 0 {
		return sym.Size
	}
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > sym.Addr })
	if i < len(syms) {
		return syms[i].Addr - sym.Addr
	}
	return 0
}

// gapAt returns the range [start, end) of the gap between symbols that holds vaddr, an address in
// no symbol: from the end of the symbols just below it to the next symbol above it (end 0 when there
// is none).
func gapAt(syms []experiment.Symbol, vaddr uint64) (start, end uint64) {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > vaddr })
	if i < len(syms) {
		end = syms[i].Addr
	}
	for j := i - 1; j >= 0 && syms[j].Addr == syms[i-1].Addr; j-- {
		if e := syms[j].Addr + syms[j].Size; e <= vaddr {
			start = max(start, e)
		}
	}
	return start, end
}
