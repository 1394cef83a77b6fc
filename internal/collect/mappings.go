package collect

import (
	"er/internal/experiment"
	"er/internal/ranges"
)

// liveMappings holds each process's executable mappings still mapped, by address, for the copy a fork
// makes of them: a new mapping replaces those it overlaps (they are gone whole, as the experiment's
// map.xml has them), in O(log n) (a scan of the list made a target's 50,000 mmaps cost O(n²)), and a
// fork's copy costs O(1) (the sets are persistent trees). A forked child's mappings keep the pid and
// load time of the process that mapped them until it maps something over them.
type liveMappings map[uint32]*ranges.Whole[experiment.Mapping]

// add records mapping m of process m.Pid.
func (l liveMappings) add(m experiment.Mapping) {
	pm := l[m.Pid]
	if pm == nil {
		pm = &ranges.Whole[experiment.Mapping]{}
		l[m.Pid] = pm
	}
	pm.Add(m.Start, m.End, m, nil)
}

// fork gives process child a copy of the mappings of process parent (none where it has none), in
// O(1): the two share the tree until either changes it.
func (l liveMappings) fork(parent, child uint32) {
	if pm := l[parent]; pm != nil {
		c := *pm
		l[child] = &c
		return
	}
	delete(l, child)
}

// of returns the mappings of process pid, in address order.
func (l liveMappings) of(pid uint32) []experiment.Mapping {
	pm := l[pid]
	if pm == nil {
		return nil
	}
	out := make([]experiment.Mapping, 0, pm.Len())
	for m := range pm.All() {
		out = append(out, m)
	}
	return out
}

// holds reports whether an executable mapping of process pid holds addr.
func (l liveMappings) holds(pid uint32, addr uint64) bool {
	pm := l[pid]
	if pm == nil {
		return false
	}
	_, _, _, ok := pm.Find(addr)
	return ok
}

// steps is the work of the operations so far (ranges.Whole.Steps), over all processes still there.
func (l liveMappings) steps() int64 {
	var n int64
	for _, pm := range l {
		n += pm.Steps()
	}
	return n
}
