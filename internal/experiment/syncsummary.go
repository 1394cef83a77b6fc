package experiment

import "er/internal/sat"

// Synchronization traces summed as they are read (Options.Summed): the events come from mergeTrace
// in the order a full read gives them, and the sum keeps one site per thread and stack.

// sumSync sums the synchronization trace tf into tr.d.SyncSummary. Records it skips are counted in
// sk, as readEvents counts them.
func (tr *traceReader) sumSync(tf *traceScan, sk *skipped) (warning string, err error) {
	sum := newSyncSummer(tr.d.SyncSummary)
	return mergeTrace(tr, tf, sk, func(d *Data) *[]SyncEvent { return &d.Sync }, func(e *SyncEvent) int64 { return e.Time }, sum.add)
}

// SummarizeSync replaces the synchronization events of d (in time order, as the reader leaves them)
// with their sums, as reading with Options.Summed gives them.
func (d *Data) SummarizeSync() {
	if d.SyncSummary == nil {
		d.SyncSummary = &SyncSummary{}
	}
	sum := newSyncSummer(d.SyncSummary)
	for i := range d.Sync {
		sum.add(&d.Sync[i])
	}
	d.Sync = nil
}

// syncSummer sums synchronization events into a SyncSummary as they come.
type syncSummer struct {
	ss    *SyncSummary
	sites map[[3]uint32]int32 // pid, tid, stack -> index in Sites
}

func newSyncSummer(ss *SyncSummary) *syncSummer {
	return &syncSummer{ss: ss, sites: map[[3]uint32]int32{}}
}

func (s *syncSummer) add(e *SyncEvent) {
	key := [3]uint32{e.Pid, e.Tid, e.Stack}
	i, ok := s.sites[key]
	if !ok {
		i = int32(len(s.ss.Sites))
		s.sites[key] = i
		s.ss.Sites = append(s.ss.Sites, SyncSite{Time: e.Time, Pid: e.Pid, Tid: e.Tid, Stack: e.Stack})
	}
	site := &s.ss.Sites[i]
	site.Events++
	site.Wait = sat.Add(site.Wait, e.Wait)
	s.ss.Last = max(s.ss.Last, e.Time)
}

// Events returns the number of waits the sites stand for.
func (ss *SyncSummary) Events() int64 {
	var n int64
	for i := range ss.Sites {
		n = sat.Add(n, ss.Sites[i].Events)
	}
	return n
}
