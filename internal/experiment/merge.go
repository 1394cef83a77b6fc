package experiment

import (
	"cmp"
	"math"
	"slices"
)

// Trace files read as a stream, in time order (Options.Summed).
//
// A thread writes its records into a block of its own, in the order of their times; a file's blocks
// are those runs, interleaved. mergeTrace first notes the least time in each block (the file read in
// parts side by side, as readEvents reads), then merges the blocks by time: a block is read when the
// merge reaches its least time, by a goroutine of its own a few blocks ahead, and dropped when done.
// The events come in the order a full read gives them after its stable sort (time, then place in the
// file), and at most the blocks that overlap in time are in memory at once.

// mergeRun is one block of a trace file in the merge: its events in time order, their times and
// offsets in the file (the order of events of the same time), and the next one to give.
type mergeRun[E any] struct {
	evs         []E
	times, offs []int64
	next        int
}

func (r *mergeRun[E]) before(o *mergeRun[E]) bool {
	a, b := r.times[r.next], o.times[o.next]
	return a < b || a == b && r.offs[r.next] < o.offs[o.next]
}

// sort puts the events in time order, those of the same time in their order.
func (r *mergeRun[E]) sort() {
	idx := make([]int, len(r.evs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(r.times[a], r.times[b]) })
	evs, times, offs := make([]E, len(idx)), make([]int64, len(idx)), make([]int64, len(idx))
	for i, j := range idx {
		evs[i], times[i], offs[i] = r.evs[j], r.times[j], r.offs[j]
	}
	r.evs, r.times, r.offs = evs, times, offs
}

// runHeap is a min-heap of runs by their next event.
type runHeap[E any] []*mergeRun[E]

func (h runHeap[E]) down(i int) {
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

func (h *runHeap[E]) push(r *mergeRun[E]) {
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

// mergeTrace calls each with every event of the trace file tf in time order, events of the same time
// in file order (see above). events picks the slice of a Data that the reader's event fills for
// tf's kind, and at gives an event's time. Records it skips are counted in sk, as readEvents counts
// them; the warning is of the damaged blocks.
func mergeTrace[E any](tr *traceReader, tf *traceScan, sk *skipped, events func(*Data) *[]E, at func(*E) int64,
	each func(*E)) (warning string, err error) {
	bs := int64(tf.h.blockSize)
	if tf.size <= traceHeaderSize {
		return "", nil
	}
	kind := eventKinds[tf.h.kind]
	// The least time of each block's event records (math.MinInt64 for a block of none: it is read
	// first, for what it skips). This scan sees every block, and so every damaged one.
	parts := tr.fileParts(tf)
	type block struct{ off, first int64 }
	found := make([][]block, len(parts))
	dms := make([]damage, len(parts))
	if err := eachPart(len(parts), func(i int) error {
		buf := make([]byte, min(bs, tf.size-traceHeaderSize))
		var blocks []block
		err := tf.scanRange(buf, parts[i][0], parts[i][1], func(r *traceRec) {
			off := traceHeaderSize + (r.off-traceHeaderSize)/bs*bs
			if len(blocks) == 0 || blocks[len(blocks)-1].off != off {
				blocks = append(blocks, block{off: off, first: math.MinInt64})
			}
			b := &blocks[len(blocks)-1]
			if t := tr.t(r.time); r.kind == kind && (b.first == math.MinInt64 || t < b.first) {
				b.first = t
			}
		}, &dms[i])
		found[i] = blocks
		return err
	}); err != nil {
		return "", err
	}
	var dm damage
	var blocks []block
	for i := range parts {
		dm.add(dms[i])
		blocks = append(blocks, found[i]...)
	}
	slices.SortStableFunc(blocks, func(a, b block) int { return cmp.Compare(a.first, b.first) })

	// The reader: each block's events in time order, in the order of blocks, which is the order the
	// merge takes them in; runs merged come back for their memory.
	type readRun struct {
		run *mergeRun[E] // nil: the block has no events
		err error
	}
	ahead := make(chan readRun, 4)
	spare := make(chan *mergeRun[E], 8)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(ahead)
		rd := &traceReader{d: &Data{}, base: tr.base}
		evs := events(rd.d)
		buf := make([]byte, min(bs, tf.size-traceHeaderSize))
		var again damage // the blocks' damage, seen twice
		for _, b := range blocks {
			var run *mergeRun[E]
			select {
			case run = <-spare:
			default:
				run = &mergeRun[E]{}
			}
			*evs, run.times, run.offs, run.next = run.evs[:0], run.times[:0], run.offs[:0], 0
			err := tf.scanRange(buf, b.off, min(b.off+bs, tf.size), func(r *traceRec) {
				n := len(*evs)
				rd.event(r, &tf.h, sk)
				if len(*evs) > n {
					run.times, run.offs = append(run.times, at(&(*evs)[n])), append(run.offs, r.off)
				}
			}, &again)
			run.evs = *evs
			if len(run.evs) == 0 {
				run = nil
			} else if !slices.IsSorted(run.times) {
				run.sort()
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

	var runs runHeap[E]
	for next := 0; next < len(blocks) || len(runs) > 0; {
		if next < len(blocks) && (len(runs) == 0 || blocks[next].first <= runs[0].times[runs[0].next]) {
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
		each(&r.evs[r.next])
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
	return dm.warning(tf.name), nil
}
