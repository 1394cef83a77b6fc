package experiment

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"er/internal/heapreplay"
	"er/internal/sat"
)

// Heap traces replayed as they are read (Options.HeapSummary).
//
// A thread writes its records into a block of its own, in the order of their times; a file's blocks
// are those runs, interleaved. The reader first notes the least time in each block, then merges the
// blocks by time (a block is read when the merge reaches its least time, and dropped when done), and
// replays the merged events: they come in the order a full read gives them after its stable sort
// (time, then place in the file), and at most the blocks that overlap in time are in memory at once,
// with the live blocks of the heap and one site per thread and stack.

// heapRun is one block of a heap trace in the merge: its events in time order and their offsets in
// the file (the order of events of the same time), and the next one to replay.
type heapRun struct {
	evs  []HeapEvent
	offs []int64
	next int
}

func (r *heapRun) before(o *heapRun) bool {
	a, b := &r.evs[r.next], &o.evs[o.next]
	return a.Time < b.Time || a.Time == b.Time && r.offs[r.next] < o.offs[o.next]
}

// runHeap is a min-heap of runs by their next event.
type runHeap []*heapRun

func (h runHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *runHeap) push(r *heapRun) {
	*h = append(*h, r)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !(*h)[i].before((*h)[p]) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

// replayHeap replays the heap trace tf into tr.d.HeapSummary (see above). Records it skips are
// counted in sk, as readEvents counts them.
func (tr *traceReader) replayHeap(tf *traceScan, sk *skipped) (warning string, err error) {
	bs := int64(tf.h.blockSize)
	if tf.size <= traceHeaderSize {
		return "", nil
	}
	buf := make([]byte, min(bs, tf.size-traceHeaderSize))
	// The least time of each block's heap records (math.MinInt64 for a block of none: it is read
	// first, for what it skips). This scan sees every block, and so every damaged one.
	type block struct{ off, first int64 }
	var blocks []block
	var dm damage
	if err := tf.scanRange(buf, traceHeaderSize, tf.size, func(r *traceRec) {
		off := traceHeaderSize + (r.off-traceHeaderSize)/bs*bs
		if len(blocks) == 0 || blocks[len(blocks)-1].off != off {
			blocks = append(blocks, block{off: off, first: math.MinInt64})
		}
		b := &blocks[len(blocks)-1]
		if t := tr.t(r.time); r.kind == recHeap && (b.first == math.MinInt64 || t < b.first) {
			b.first = t
		}
	}, &dm); err != nil {
		return "", err
	}
	slices.SortStableFunc(blocks, func(a, b block) int { return cmp.Compare(a.first, b.first) })

	hs := tr.d.HeapSummary
	rd := &traceReader{d: &Data{}, base: tr.base}
	var again damage     // the blocks' damage, seen twice
	var spare []*heapRun // runs replayed, whose memory the next blocks take
	// read returns block b's events in time order (file order among equal times).
	read := func(b block) (*heapRun, error) {
		run := &heapRun{}
		if n := len(spare); n > 0 {
			run, spare = spare[n-1], spare[:n-1]
		}
		rd.d.Heap, run.offs, run.next = run.evs[:0], run.offs[:0], 0
		err := tf.scanRange(buf, b.off, min(b.off+bs, tf.size), func(r *traceRec) {
			n := len(rd.d.Heap)
			rd.event(r, &tf.h, sk)
			if len(rd.d.Heap) > n {
				run.offs = append(run.offs, r.off)
			}
		}, &again)
		run.evs = rd.d.Heap
		if err != nil || len(run.evs) == 0 {
			spare = append(spare, run)
			return nil, err
		}
		if !slices.IsSortedFunc(run.evs, func(a, b HeapEvent) int { return cmp.Compare(a.Time, b.Time) }) {
			idx := make([]int, len(run.evs))
			for i := range idx {
				idx[i] = i
			}
			slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(run.evs[a].Time, run.evs[b].Time) })
			evs, os := make([]HeapEvent, len(idx)), make([]int64, len(idx))
			for i, j := range idx {
				evs[i], os[i] = run.evs[j], run.offs[j]
			}
			run.evs, run.offs = evs, os
		}
		return run, nil
	}

	sum := newHeapSummer(hs)
	var runs runHeap
	for next := 0; next < len(blocks) || len(runs) > 0; {
		if next < len(blocks) && (len(runs) == 0 || blocks[next].first <= runs[0].evs[runs[0].next].Time) {
			run, err := read(blocks[next])
			if err != nil {
				return "", err
			}
			next++
			if run != nil {
				runs.push(run)
			}
			continue
		}
		r := runs[0]
		sum.add(&r.evs[r.next])
		if r.next++; r.next == len(r.evs) {
			runs[0] = runs[len(runs)-1]
			runs = runs[:len(runs)-1]
			spare = append(spare, r)
		}
		if len(runs) > 0 {
			runs.down(0)
		}
	}
	sum.finish()
	return dm.warning(tf.name), nil
}

// SummarizeHeap replaces the heap events of d (in time order, as the reader leaves them) with their
// summary, as reading with Options.HeapSummary gives it.
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
	sites map[[3]uint32]int32 // pid, tid, stack -> index in hs.Sites
	slots []heapSlot
	free  []int32
}

type summedProcess struct {
	h    *heapreplay.Process
	peak heapreplay.Peak
}

type heapSlot struct {
	bytes int64
	site  int32
}

func newHeapSummer(hs *HeapSummary) *heapSummer {
	return &heapSummer{hs: hs, procs: map[uint32]*summedProcess{}, sites: map[[3]uint32]int32{}}
}

// add sums event e.
func (s *heapSummer) add(e *HeapEvent) {
	hs := s.hs
	key := [3]uint32{e.Pid, e.Tid, e.Stack}
	si, ok := s.sites[key]
	if !ok {
		si = int32(len(hs.Sites))
		s.sites[key] = si
		hs.Sites = append(hs.Sites, HeapSite{Time: e.Time, Pid: e.Pid, Tid: e.Tid, Stack: e.Stack})
	}
	site := &hs.Sites[si]
	site.Events++
	s.st.Events++
	hs.Last = max(hs.Last, e.Time)
	p := s.procs[e.Pid]
	if p == nil {
		p = &summedProcess{peak: heapreplay.Peak{Pid: e.Pid}}
		p.h = heapreplay.NewProcess(func(id int32) int64 { return s.slots[id].bytes }, func(id int32) { s.free = append(s.free, id) }, &s.st)
		s.procs[e.Pid] = p
	}
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
