package experiment

import (
	"cmp"
	"errors"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"

	"er/internal/heapreplay"
	"er/internal/keytable"
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
// counted in sk, as readEvents counts them. The blocks' times are read in parts side by side (as
// readEvents reads), and the blocks are read for the merge by a goroutine of their own, a few ahead
// of the replay.
func (tr *traceReader) replayHeap(tf *traceScan, sk *skipped) (warning string, err error) {
	bs := int64(tf.h.blockSize)
	if tf.size <= traceHeaderSize {
		return "", nil
	}
	// The least time of each block's heap records (math.MinInt64 for a block of none: it is read
	// first, for what it skips). This scan sees every block, and so every damaged one.
	n, least := tr.parts, tr.minPart
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	if least <= 0 {
		least = minTracePart
	}
	parts := tf.parts(n, least)
	type block struct{ off, first int64 }
	found := make([][]block, len(parts))
	dms := make([]damage, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, pt := range parts {
		wg.Go(func() {
			buf := make([]byte, min(bs, tf.size-traceHeaderSize))
			var blocks []block
			errs[i] = tf.scanRange(buf, pt[0], pt[1], func(r *traceRec) {
				off := traceHeaderSize + (r.off-traceHeaderSize)/bs*bs
				if len(blocks) == 0 || blocks[len(blocks)-1].off != off {
					blocks = append(blocks, block{off: off, first: math.MinInt64})
				}
				b := &blocks[len(blocks)-1]
				if t := tr.t(r.time); r.kind == recHeap && (b.first == math.MinInt64 || t < b.first) {
					b.first = t
				}
			}, &dms[i])
			found[i] = blocks
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	var dm damage
	var blocks []block
	for i := range parts {
		dm.add(dms[i])
		blocks = append(blocks, found[i]...)
	}
	slices.SortStableFunc(blocks, func(a, b block) int { return cmp.Compare(a.first, b.first) })

	// The reader: each block's events in time order (file order among equal times), in the order of
	// blocks, which is the order the merge takes them in; runs replayed come back for their memory.
	type readRun struct {
		run *heapRun // nil: the block has no events
		err error
	}
	ahead := make(chan readRun, 4)
	spare := make(chan *heapRun, 8)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(ahead)
		rd := &traceReader{d: &Data{}, base: tr.base}
		buf := make([]byte, min(bs, tf.size-traceHeaderSize))
		var again damage // the blocks' damage, seen twice
		for _, b := range blocks {
			var run *heapRun
			select {
			case run = <-spare:
			default:
				run = &heapRun{}
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
			if len(run.evs) == 0 {
				run = nil
			} else if !slices.IsSortedFunc(run.evs, func(a, b HeapEvent) int { return cmp.Compare(a.Time, b.Time) }) {
				sortRun(run)
			}
			select {
			case ahead <- readRun{run, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	sum := newHeapSummer(tr.d.HeapSummary)
	var runs runHeap
	for next := 0; next < len(blocks) || len(runs) > 0; {
		if next < len(blocks) && (len(runs) == 0 || blocks[next].first <= runs[0].evs[runs[0].next].Time) {
			rr := <-ahead
			if rr.err != nil {
				return "", rr.err
			}
			next++
			if rr.run != nil {
				runs.push(rr.run)
			}
			continue
		}
		r := runs[0]
		sum.add(&r.evs[r.next])
		if r.next++; r.next == len(r.evs) {
			runs[0] = runs[len(runs)-1]
			runs = runs[:len(runs)-1]
			select {
			case spare <- r:
			default:
			}
		}
		if len(runs) > 0 {
			runs.down(0)
		}
	}
	// The reader is done with sk: it sent every block.
	sum.finish()
	return dm.warning(tf.name), nil
}

// sortRun puts the events of run in time order, those of the same time in their order.
func sortRun(run *heapRun) {
	idx := make([]int, len(run.evs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(run.evs[a].Time, run.evs[b].Time) })
	evs, offs := make([]HeapEvent, len(idx)), make([]int64, len(idx))
	for i, j := range idx {
		evs[i], offs[i] = run.evs[j], run.offs[j]
	}
	run.evs, run.offs = evs, offs
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
