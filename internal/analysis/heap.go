package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"er/internal/experiment"
	"er/internal/heapreplay"
)

// The heap's statistics and their size histograms (shared with the I/O statistics), from heapreplay.
type (
	SizeStats = heapreplay.SizeStats
	HeapPeak  = heapreplay.Peak
	HeapStats = heapreplay.Stats
)

// SizeBuckets and SizeBucketLabels are the size ranges of the histograms (heapreplay.SizeBuckets).
var (
	SizeBuckets      = heapreplay.SizeBuckets
	SizeBucketLabels = heapreplay.SizeBucketLabels
)

// SizeBucket returns the index of the size range holding n bytes.
func SizeBucket(n int64) int { return heapreplay.SizeBucket(n) }

// ReplayHeap replays the heap events of one experiment, each process's in time order (events of the
// same time in their order in its table), and returns which events are leaks (indexed like the
// table's rows) and the statistics, with exp as the experiment index of its peaks.
// heapreplay.Process says what each call does.
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
	t := d.HeapTable()
	n := t.Len()
	leaked = make([]bool, n)
	if n == 0 {
		return leaked, st
	}
	// The events in time order: the table's when it is (the reader sorts it), else an index
	// sorted by time. The processes are replayed side by side, each with a heap of its own, so
	// that no list of each process's events is needed (a heap trace can have many millions).
	var order []int32
	if !slices.IsSorted(t.Time) {
		order = make([]int32, n)
		for i := range order {
			order[i] = int32(i)
		}
		sort.SliceStable(order, func(a, b int) bool { return t.Time[order[a]] < t.Time[order[b]] })
	}
	type process struct {
		h        *heapreplay.Process
		skipped  HeapStats // what the events that are not selected count
		peak     HeapPeak
		selected bool
	}
	rows := experiment.HeapRowsOf(t)
	size := func(i int32) int64 { return sizeSat(uint64(rows.Size[i])) }
	procs := map[uint32]*process{}
	var last *process
	for k := range n {
		i := int32(k)
		if order != nil {
			i = order[k]
		}
		pid := t.Pid[i]
		p := last
		if p == nil || p.peak.Pid != pid {
			p = procs[pid]
			if p == nil {
				p = &process{h: heapreplay.NewProcess(size, nil, st), peak: HeapPeak{Exp: exp, Pid: pid}}
				procs[pid] = p
			}
			last = p
		}
		if p.h.St = st; !kept(i) {
			p.h.St = &p.skipped
		}
		p.h.Event(rows.Replay(int(i)), i)
		if kept(i) {
			st.Events++
			p.selected = true
			if b := p.h.Bytes(); b > p.peak.Bytes {
				p.peak.Bytes, p.peak.Time = b, t.Time[i]
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
		p.h.EachLive(func(i int32) {
			leaked[i] = true
			if kept(i) {
				st.Leaks.Add(size(i), 0)
			}
		})
		if p.selected {
			st.AddPeak(p.peak)
		}
	}
	return leaked, st
}

// heapStats returns the statistics of the heap events of d, with exp as the experiment index of its
// peaks: replayed, or those of its sums.
func heapStats(d *experiment.Data, exp int) *HeapStats {
	hs := experiment.HeapSums(d.HeapTable())
	if hs == nil {
		_, st := ReplayHeap(d, exp)
		return st
	}
	st := hs.Stats
	st.Peaks = slices.Clone(st.Peaks)
	for i := range st.Peaks {
		st.Peaks[i].Exp = exp
	}
	st.Peak.Exp = exp
	return &st
}

// heapWarning describes the frees that a replay ignored, or "" when none.
func heapWarning(dir string, st *HeapStats) string {
	if st.DoubleFrees == 0 && st.UnknownFrees == 0 {
		return ""
	}
	return fmt.Sprintf("%s: heap tracing: ignored %d free(s) of blocks already freed and %d free(s) of blocks not allocated while tracing",
		dir, st.DoubleFrees, st.UnknownFrees)
}

// heapValues sets out (len(HeapMetrics) values, zeroed) to what a heap event that does e to the
// heap adds to each metric; leaked says whether the replay found its block never freed.
func heapValues(e heapreplay.Event, leaked bool, out []int64) {
	if !e.Allocates() {
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
