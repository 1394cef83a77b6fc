package analysis

import (
	"sort"

	"er/internal/experiment"
)

// procMaps finds the mapping that holds an address in one process at one time. The mappings
// active at a time t (LoadTime <= t < UnloadTime) change only at the load and unload times, so
// time is cut into epochs between those instants, and each epoch gets a sorted, non-overlapping
// list of address ranges, built when first needed.
type procMaps struct {
	maps    []*experiment.Mapping
	changes []int64 // sorted distinct load and unload times
	epochs  []*rangeList
}

// rangeList is a sorted list of disjoint address ranges, each owned by a mapping.
type rangeList struct {
	start, end []uint64
	owner      []*experiment.Mapping
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
	pm.epochs = make([]*rangeList, len(pm.changes)+1)
	return pm
}

// epoch returns the epoch of time t: the number of change times <= t.
func (pm *procMaps) epoch(t int64) int {
	return sort.Search(len(pm.changes), func(i int) bool { return pm.changes[i] > t })
}

// find returns the mapping holding addr during epoch e, or nil.
func (pm *procMaps) find(e int, addr uint64) *experiment.Mapping {
	rl := pm.epochs[e]
	if rl == nil {
		rl = pm.build(e)
		pm.epochs[e] = rl
	}
	i := sort.Search(len(rl.start), func(i int) bool { return rl.start[i] > addr }) - 1
	if i < 0 || addr >= rl.end[i] {
		return nil
	}
	return rl.owner[i]
}

// build makes the range list of epoch e. Where active mappings overlap, the one loaded last wins,
// as a later mmap over a range replaces the earlier one.
func (pm *procMaps) build(e int) *rangeList {
	t := int64(0)
	switch {
	case e > 0:
		t = pm.changes[e-1]
	case len(pm.changes) > 0:
		t = pm.changes[0] - 1
	}
	var active []*experiment.Mapping
	for _, m := range pm.maps {
		if m.LoadTime <= t && (m.UnloadTime < 0 || t < m.UnloadTime) && m.Start < m.End {
			active = append(active, m)
		}
	}
	sort.SliceStable(active, func(i, j int) bool { return active[i].LoadTime < active[j].LoadTime })
	// Cut the address space at every boundary and give each piece to the last mapping covering it.
	var bounds []uint64
	for _, m := range active {
		bounds = append(bounds, m.Start, m.End)
	}
	sort.Slice(bounds, func(i, j int) bool { return bounds[i] < bounds[j] })
	bounds = uniq(bounds)
	owner := make([]*experiment.Mapping, len(bounds))
	for _, m := range active {
		i := sort.Search(len(bounds), func(i int) bool { return bounds[i] >= m.Start })
		for ; i < len(bounds) && bounds[i] < m.End; i++ {
			owner[i] = m
		}
	}
	rl := &rangeList{}
	for i := 0; i+1 < len(bounds); i++ {
		if owner[i] == nil {
			continue
		}
		if n := len(rl.owner); n > 0 && rl.owner[n-1] == owner[i] && rl.end[n-1] == bounds[i] {
			rl.end[n-1] = bounds[i+1]
			continue
		}
		rl.start = append(rl.start, bounds[i])
		rl.end = append(rl.end, bounds[i+1])
		rl.owner = append(rl.owner, owner[i])
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
