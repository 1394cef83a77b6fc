package experiment

import (
	"maps"
	"slices"

	"er/internal/heapreplay"
	"er/internal/keytable"
	"er/internal/sat"
)

// Heap traces replayed as they are read (Options.Summed): the events come from mergeTrace in
// the order a full read gives them, and the replay keeps the live blocks of the heap and one site
// per thread and stack.

// replayHeap replays the heap trace tf into tr.d.HeapSummary (see above). Records it skips are
// counted in sk, as readEvents counts them.
func (tr *traceReader) replayHeap(tf *traceScan, sk *skipped) (warning string, err error) {
	sum := newHeapSummer(tr.d.HeapSummary)
	w, err := mergeTrace(tr, tf, sk, func(d *Data) *[]HeapEvent { return &d.Heap }, func(e *HeapEvent) int64 { return e.Time }, sum.add)
	if err != nil {
		return "", err
	}
	sum.finish()
	return w, nil
}

// SummarizeHeap replaces the heap events of d (in time order, as the reader leaves them) with their
// summary, as reading with Options.Summed gives it.
func (d *Data) SummarizeHeap() {
	if d.HeapSummary == nil {
		d.HeapSummary = &HeapSummary{}
	}
	sum := newHeapSummer(d.HeapSummary)
	for i := range d.Heap {
		sum.add(&d.Heap[i])
	}
	sum.finish()
	d.Heap = nil
}

// heapSummer sums heap events into a HeapSummary as they come, each process's in time order:
// allocations are named by slots that hold their size and site while they live.
type heapSummer struct {
	hs    *HeapSummary
	st    heapreplay.Stats
	procs map[uint32]*summedProcess
	last  *summedProcess // the process of the last event
	slots []heapSlot
	free  []int32
}

// summedProcess is the heap of one process, and its sites by thread and stack.
type summedProcess struct {
	h     *heapreplay.Process
	peak  heapreplay.Peak
	sites keytable.Table // tid<<32 | stack -> index in Sites, but for the key 0 (zero)
	zero  int32          // the site of thread 0 and stack 0, -1 before it has one
}

type heapSlot struct {
	bytes int64
	site  int32
}

func newHeapSummer(hs *HeapSummary) *heapSummer {
	return &heapSummer{hs: hs, procs: map[uint32]*summedProcess{}}
}

// process returns the heap of process pid.
func (s *heapSummer) process(pid uint32) *summedProcess {
	if p := s.last; p != nil && p.peak.Pid == pid {
		return p
	}
	p := s.procs[pid]
	if p == nil {
		p = &summedProcess{peak: heapreplay.Peak{Pid: pid}, zero: -1}
		p.h = heapreplay.NewProcess(func(id int32) int64 { return s.slots[id].bytes }, func(id int32) { s.free = append(s.free, id) }, &s.st)
		s.procs[pid] = p
	}
	s.last = p
	return p
}

// add sums event e.
func (s *heapSummer) add(e *HeapEvent) {
	hs := s.hs
	p := s.process(e.Pid)
	key := uint64(e.Tid)<<32 | uint64(e.Stack)
	var si int32
	ok := true
	if key == 0 {
		si, ok = p.zero, p.zero >= 0
	} else {
		si, ok = p.sites.Get(key)
	}
	if !ok {
		si = int32(len(hs.Sites))
		if key == 0 {
			p.zero = si
		} else {
			p.sites.Put(key, si)
		}
		hs.Sites = append(hs.Sites, HeapSite{Time: e.Time, Pid: e.Pid, Tid: e.Tid, Stack: e.Stack})
	}
	site := &hs.Sites[si]
	site.Events++
	s.st.Events++
	hs.Last = max(hs.Last, e.Time)
	ev := e.Replay()
	id := int32(-1)
	if ev.Allocates() {
		if n := len(s.free); n > 0 {
			id, s.free = s.free[n-1], s.free[:n-1]
		} else {
			id = int32(len(s.slots))
			s.slots = append(s.slots, heapSlot{})
		}
		s.slots[id] = heapSlot{bytes: ev.Bytes(), site: si}
		site.Allocs++
		site.Bytes = sat.Add(site.Bytes, ev.Bytes())
	}
	p.h.Event(ev, id)
	if b := p.h.Bytes(); b > p.peak.Bytes {
		p.peak.Bytes, p.peak.Time = b, e.Time
	}
}

// finish sums the leaks (the blocks still live) and the processes' peaks, in the order of their
// pids, into the summary's statistics.
func (s *heapSummer) finish() {
	for _, pid := range slices.Sorted(maps.Keys(s.procs)) {
		p := s.procs[pid]
		p.h.EachLive(func(id int32) {
			sl := &s.slots[id]
			site := &s.hs.Sites[sl.site]
			site.Leaks++
			site.Leaked = sat.Add(site.Leaked, sl.bytes)
			s.st.Leaks.Add(sl.bytes, 0)
		})
		s.st.AddPeak(p.peak)
	}
	s.hs.Stats.Merge(&s.st)
}
