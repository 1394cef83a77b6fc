package analysis

import (
	"er/internal/keytable"
	"er/internal/sat"
	"fmt"
	"math"
	"sort"

	"er/internal/experiment"
)

// SizeBuckets are the upper bounds (exclusive) of the size ranges of the heap and I/O statistics'
// histograms; a size at or above the last bound is in the last range.
var SizeBuckets = []int64{1 << 10, 8 << 10, 32 << 10, 128 << 10, 256 << 10, 512 << 10, 1000 << 10,
	10 << 20, 100 << 20, 1 << 30, 10 << 30, 100 << 30, 1 << 40, 10 << 40}

// SizeBucketLabels name the size ranges: SizeBucketLabels[i] is the range below SizeBuckets[i];
// the last one is the range from the last bound up.
var SizeBucketLabels = []string{"0KB - 1KB", "1KB - 8KB", "8KB - 32KB", "32KB - 128KB", "128KB - 256KB",
	"256KB - 512KB", "512KB - 1000KB", "1000KB - 10MB", "10MB - 100MB", "100MB - 1GB", "1GB - 10GB",
	"10GB - 100GB", "100GB - 1TB", "1TB - 10TB", ">= 10TB"}

// SizeBucket returns the index of the size range holding n bytes.
func SizeBucket(n int64) int {
	return sort.Search(len(SizeBuckets), func(i int) bool { return n < SizeBuckets[i] })
}

// SizeStats summarizes sizes: how many, their sum, the smallest and largest, and a histogram over
// the ranges of SizeBuckets. Time and Longest sum and bound durations (I/O statistics).
type SizeStats struct {
	Count, Bytes  int64
	Min, Max      int64 // 0 when Count is 0
	Hist          [15]int64
	Time, Longest int64 // ns
}

// Add counts one size n that took dur nanoseconds.
func (s *SizeStats) Add(n, dur int64) {
	if s.Count == 0 || n < s.Min {
		s.Min = n
	}
	s.Max = max(s.Max, n)
	s.Count++
	s.Bytes = sat.Add(s.Bytes, n)
	s.Hist[SizeBucket(n)]++
	s.Time = sat.Add(s.Time, dur)
	s.Longest = max(s.Longest, dur)
}

// Merge adds the sizes of o.
func (s *SizeStats) Merge(o *SizeStats) {
	if o.Count == 0 {
		return
	}
	if s.Count == 0 || o.Min < s.Min {
		s.Min = o.Min
	}
	s.Max = max(s.Max, o.Max)
	s.Count = sat.Add(s.Count, o.Count)
	s.Bytes = sat.Add(s.Bytes, o.Bytes)
	for i := range s.Hist {
		s.Hist[i] = sat.Add(s.Hist[i], o.Hist[i])
	}
	s.Time = sat.Add(s.Time, o.Time)
	s.Longest = max(s.Longest, o.Longest)
}

// HeapPeak is the largest heap of one process: the bytes of its live blocks at their highest.
type HeapPeak struct {
	Exp   int    // experiment index (0-based) in the list given to Analyze
	Pid   uint32 // process
	Bytes int64  // bytes allocated and not yet freed at the peak
	Time  int64  // ns since the experiment's start when the peak was first reached
}

// HeapStats is what replaying the heap events of experiments found.
type HeapStats struct {
	Events       int64     // heap events replayed
	Allocs       SizeStats // successful allocations, by size requested
	Leaks        SizeStats // allocations never freed
	Peak         HeapPeak  // the process with the highest peak
	Peaks        []HeapPeak
	DoubleFrees  int64 // frees (and reallocs) of blocks already freed: ignored
	UnknownFrees int64 // frees of blocks never allocated while tracing: ignored
	FailedAllocs int64 // allocations that returned no block
}

// merge adds the statistics of another experiment.
func (h *HeapStats) merge(o *HeapStats) {
	h.Events = sat.Add(h.Events, o.Events)
	h.Allocs.Merge(&o.Allocs)
	h.Leaks.Merge(&o.Leaks)
	h.Peaks = append(h.Peaks, o.Peaks...)
	if o.Peak.Bytes > h.Peak.Bytes || len(h.Peaks) == len(o.Peaks) {
		h.Peak = o.Peak
	}
	h.DoubleFrees = sat.Add(h.DoubleFrees, o.DoubleFrees)
	h.UnknownFrees = sat.Add(h.UnknownFrees, o.UnknownFrees)
	h.FailedAllocs = sat.Add(h.FailedAllocs, o.FailedAllocs)
}

// isAlloc reports whether heap event e allocated a block: it returned one, and is not a free or munmap.
// A failed mmap may be recorded with the block MAP_FAILED (all bits set): it allocated nothing.
func isAlloc(e *experiment.HeapEvent) bool {
	return e.Addr != 0 && e.Op != experiment.HeapFree && e.Op != experiment.HeapMunmap &&
		!(e.Op == experiment.HeapMmap && e.Addr == mapFailed)
}

const mapFailed = ^uint64(0)

// isRealloc reports whether e is a realloc or reallocarray.
func isRealloc(op experiment.HeapOp) bool {
	return op == experiment.HeapRealloc || op == experiment.HeapReallocarray
}

// ReplayHeap replays the heap events of one experiment, each process's in time order (events of the
// same time in their order in d.Heap), and returns which events are leaks (indexed like d.Heap)
// and the statistics, with exp as the experiment index of its peaks.
//
// An allocation (a returned block) allocates it; free frees its argument; a realloc that succeeded
// (it returned a block, or was a realloc(p, 0) of a block) frees its old block and allocates the
// new one, so that it is never a leak by itself; a failed realloc frees nothing. munmap frees the
// mmap blocks that start in the range it unmaps. A leak is an allocation whose block is still
// allocated when its process's events end. Frees of blocks that are not allocated are counted and
// ignored: DoubleFrees when the block was freed before, UnknownFrees when it was never seen
// (allocated before tracing began, or by code that is not traced).
func ReplayHeap(d *experiment.Data, exp int) (leaked []bool, st *HeapStats) {
	return replayHeap(d, exp, nil)
}

// replayHeap is ReplayHeap with statistics of the events that keep selects (all when nil): the
// heap is replayed with every event, so that leaked says whether a block is ever freed, but the
// statistics count only the selected events: their allocations, their leaks, their failed
// allocations and ignored frees, and each process's peak among the heap sizes right after them.
func replayHeap(d *experiment.Data, exp int, keep []bool) (leaked []bool, st *HeapStats) {
	kept := func(i int32) bool { return keep == nil || keep[i] }
	st = &HeapStats{}
	leaked = make([]bool, len(d.Heap))
	// The events in time order: d.Heap itself when it is (the reader sorts it), else an index
	// sorted by time. The processes are replayed side by side, each with a heap of its own, so
	// that no list of each process's events is needed (a heap trace can have many millions).
	var order []int32
	if !sort.SliceIsSorted(d.Heap, func(a, b int) bool { return d.Heap[a].Time < d.Heap[b].Time }) {
		order = make([]int32, len(d.Heap))
		for i := range order {
			order[i] = int32(i)
		}
		sort.SliceStable(order, func(a, b int) bool { return d.Heap[order[a]].Time < d.Heap[order[b]].Time })
	}
	type process struct {
		r        replayer
		skipped  HeapStats // what the events that are not selected count
		peak     HeapPeak
		selected bool
	}
	procs := map[uint32]*process{}
	for k := range d.Heap {
		i := int32(k)
		if order != nil {
			i = order[k]
		}
		pid := d.Heap[i].Pid
		p := procs[pid]
		if p == nil {
			p = &process{r: replayer{d: d, mmaps: map[uint64]int32{}},
				peak: HeapPeak{Exp: exp, Pid: pid}}
			procs[pid] = p
		}
		if p.r.st = st; !kept(i) {
			p.r.st = &p.skipped
		}
		p.r.event(i)
		if kept(i) {
			st.Events++
			p.selected = true
			if p.r.bytes > p.peak.Bytes {
				p.peak.Bytes, p.peak.Time = p.r.bytes, d.Heap[i].Time
			}
		}
	}
	pids := make([]uint32, 0, len(procs))
	for pid := range procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(a, b int) bool { return pids[a] < pids[b] })
	for _, pid := range pids {
		p := procs[pid]
		leak := func(_ uint64, i int32) {
			leaked[i] = true
			if kept(i) {
				st.Leaks.Add(sizeSat(d.Heap[i].Size), 0)
			}
		}
		p.r.live.Each(leak)
		for a, i := range p.r.mmaps {
			leak(a, i)
		}
		if !p.selected {
			continue
		}
		st.Peaks = append(st.Peaks, p.peak)
		if p.peak.Bytes > st.Peak.Bytes || len(st.Peaks) == 1 {
			st.Peak = p.peak
		}
	}
	return leaked, st
}

// replayer is the heap of one process during a replay.
type replayer struct {
	d     *experiment.Data
	live  keytable.Table   // allocated block (not mmap) -> its allocating event
	mmaps map[uint64]int32 // mmap block -> its event
	freed keytable.Table   // blocks freed and not allocated again (the values are 0)
	bytes int64            // bytes of the live blocks
	st    *HeapStats
}

func (r *replayer) event(i int32) {
	e := &r.d.Heap[i]
	switch {
	case e.Op == experiment.HeapFree:
		if e.Old != 0 {
			r.free(e.Old)
		}
		return
	case e.Op == experiment.HeapMunmap:
		r.munmap(e.Old, e.Size)
		return
	case isRealloc(e.Op):
		if e.Old != 0 && (e.Addr != 0 || e.Size == 0) {
			r.free(e.Old)
		}
	}
	if !isAlloc(e) {
		if e.Size > 0 || !isRealloc(e.Op) {
			r.st.FailedAllocs++
		}
		return
	}
	r.st.Allocs.Add(sizeSat(e.Size), 0)
	var old int32
	var reused bool
	if e.Op == experiment.HeapMmap {
		old, reused = r.mmaps[e.Addr]
		r.mmaps[e.Addr] = i
	} else {
		old, reused = r.live.Get(e.Addr)
		r.live.Put(e.Addr, i)
	}
	if reused { // a free we did not see: the block was reused
		r.bytes = sat.Sub(r.bytes, sizeSat(r.d.Heap[old].Size))
	}
	r.freed.Del(e.Addr)
	r.bytes = sat.Add(r.bytes, sizeSat(e.Size))
}

// free frees the block at addr, if it is allocated.
func (r *replayer) free(addr uint64) {
	if j, ok := r.live.Del(addr); ok {
		r.bytes = sat.Sub(r.bytes, sizeSat(r.d.Heap[j].Size))
		r.freed.Put(addr, 0)
		return
	}
	if _, ok := r.freed.Get(addr); ok {
		r.st.DoubleFrees++
	} else {
		r.st.UnknownFrees++
	}
}

// munmap frees the mmap blocks that start in [addr, addr+size).
func (r *replayer) munmap(addr, size uint64) {
	end := addr + size
	if end < addr {
		end = ^uint64(0)
	}
	drop := func(a uint64, j int32) {
		delete(r.mmaps, a)
		r.bytes = sat.Sub(r.bytes, sizeSat(r.d.Heap[j].Size))
	}
	const page = 4096
	if addr%page == 0 && size/page < uint64(len(r.mmaps)) {
		// Blocks of mmap start on pages: look at each page of the range.
		for a := addr; a < end && a >= addr; a += page {
			if j, ok := r.mmaps[a]; ok {
				drop(a, j)
			}
		}
		return
	}
	for a, j := range r.mmaps {
		if a >= addr && a < end {
			drop(a, j)
		}
	}
}

// heapWarning describes the frees that a replay ignored, or "" when none.
func heapWarning(dir string, st *HeapStats) string {
	if st.DoubleFrees == 0 && st.UnknownFrees == 0 {
		return ""
	}
	return fmt.Sprintf("%s: heap tracing: ignored %d free(s) of blocks already freed and %d free(s) of blocks not allocated while tracing",
		dir, st.DoubleFrees, st.UnknownFrees)
}

// heapValues sets out (len(HeapMetrics) values, zeroed) to what heap event e adds to each metric;
// leaked says whether the replay found its block never freed.
func heapValues(e *experiment.HeapEvent, leaked bool, out []int64) {
	if !isAlloc(e) {
		return
	}
	out[0], out[1] = sizeSat(e.Size), 1 // heapallocbytes, heapalloccnt
	if leaked {
		out[2], out[3] = sizeSat(e.Size), 1 // heapleakbytes, heapleakcnt
	}
}

// sizeSat is a block size as an int64, the largest one for sizes beyond it (a corrupt or crafted trace).
func sizeSat(n uint64) int64 {
	return int64(min(n, math.MaxInt64))
}
