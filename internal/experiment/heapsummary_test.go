package experiment

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// heapSummaryTrace writes a heap trace whose blocks are runs of three threads, out of time order in
// the file, one of them not in time order inside, with events of the same time in different blocks,
// records skipped and a damaged block; and a stacks file.
func heapSummaryTrace(t *testing.T) string {
	t.Helper()
	malloc := func(tid uint32, at uint64, stack uint32, addr, size uint64) []byte {
		return rec(recHeap, uint8(HeapMalloc), tid, base+at, stack, uint32(0), addr, size, uint64(0))
	}
	free := func(tid uint32, at, addr uint64) []byte { return rec(recHeap, uint8(HeapFree), tid, base+at, addr) }
	realloc := func(tid uint32, at uint64, stack uint32, addr, size, old uint64) []byte {
		return rec(recHeap, uint8(HeapRealloc), tid, base+at, stack, uint32(0), addr, size, old)
	}
	heap := traceFile(1, 42, 0, base, 4096,
		[][]byte{ // thread 8, late
			malloc(8, 500, 2, 0x8000, 80),
			free(8, 510, 0x1000),                   // thread 7's block, freed after its realloc below: unknown
			realloc(8, 520, 3, 0x8100, 90, 0x8000), // frees 0x8000
			free(8, 600, 0x7000),
		},
		[][]byte{ // thread 7, early
			malloc(7, 100, 1, 0x1000, 10),
			malloc(7, 200, 1, 0x2000, 20),
			realloc(7, 300, 3, 0x3000, 30, 0x1000), // frees 0x1000
			rec(recHeap, uint8(HeapMalloc), 7, base-5, uint32(1), uint32(0), uint64(0x9999), uint64(1), uint64(0)), // before the start: skipped
			malloc(7, 400, 1, 0x7000, 70),
			free(7, 410, 0x2000),
		},
		[][]byte{ // thread 9, not in time order inside, and at the times of thread 7's events
			malloc(9, 300, 2, 0x9000, 9),
			malloc(9, 100, 2, 0xa000, 11),
			rec(recSync, 1, 9, base+150, uint32(1), uint32(0), uint64(1), uint64(1)), // of another kind: malformed
			free(9, 200, 0xa000),
			free(9, 700, 0xa000), // a double free
		},
		[][]byte{ // thread 7 again, then a record that does not fit its block
			malloc(7, 800, 1, 0xb000, 1000),
			rec(recHeap, uint8(HeapMunmap), 7, base+810, uint32(0), uint32(0), uint64(0), uint64(4096), uint64(0xc000)),
			append([]byte{0xff, 0x7f, recHeap, 1, 0, 0, 0, 0}, make([]byte, 8)...),
		})
	stacks := traceFile(5, 42, 0, base, 4096, [][]byte{stackRec(1, 0x400100), stackRec(2, 0x400200), stackRec(3, 0x400300)})
	return traceDir(t, map[string][]byte{HeapTraceFile: heap, TraceStacksFile: stacks})
}

// Reading with Summed gives what reading the events and summing them gives: the same sites in
// the same order, statistics and warnings; and the figures the trace holds.
func TestHeapSummary(t *testing.T) {
	dir := heapSummaryTrace(t)
	full, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if full.HeapTable().Len() != 15 {
		t.Fatalf("%d events read, want 15", full.HeapTable().Len())
	}
	full.SummarizeHeap()
	got, err := OpenWith(dir, Options{Summed: true})
	if err != nil {
		t.Fatal(err)
	}
	gt, ft := got.HeapTable(), full.HeapTable()
	hs := HeapSums(gt)
	if hs == nil || gt.Events() != 15 {
		t.Fatalf("read summed: rows of %d events, sums %v", gt.Events(), hs)
	}
	if !reflect.DeepEqual(gt, ft) {
		t.Errorf("summed as read:\n%+v\nsummed after reading:\n%+v", gt, ft)
	}
	if !reflect.DeepEqual(got.Warnings, full.Warnings) || len(got.Warnings) != 5 {
		t.Errorf("warnings %q, want %q (5: the heap trace's three, and no log or map)", got.Warnings, full.Warnings)
	}
	st := hs.Stats
	// Live at the end: 0x3000 (30), 0x8100 (90), 0x9000 (9), 0xb000 (1000).
	if st.Events != 15 || st.Allocs.Count != 9 || st.Leaks.Count != 4 || st.Leaks.Bytes != 1129 ||
		st.DoubleFrees != 2 || st.UnknownFrees != 0 || gt.LastTime() != 810 {
		t.Errorf("statistics %+v, last %d", st, gt.LastTime())
	}
	if len(hs.Sites) != gt.Len() {
		t.Fatalf("%d sums for %d rows", len(hs.Sites), gt.Len())
	}
	// The first row is thread 7's stack 1, whose first event (time 100) comes before thread 9's of the
	// same time: it is earlier in the file.
	if s := hs.Sites[0]; gt.Tid[0] != 7 || gt.Time[0] != 100 || gt.CountAt(0) != 4 || s.Allocs != 4 || s.Leaks != 1 || s.Leaked != 1000 {
		t.Errorf("first row %+v, %+v", gt.Row(0), s)
	}
	if gt.Tid[1] != 9 || gt.Time[1] != 100 {
		t.Errorf("second row %+v", gt.Row(1))
	}
}

// Summing a heap trace as it is read takes memory for the blocks live at once, the sites, the
// addresses freed (which an allocator reuses) and the blocks of the trace being merged, not for the
// events: four times the calls take about the same memory. The traces have n allocations over 100
// stacks, addresses reused as malloc's free lists do, all freed five calls later but 1000.
func TestHeapSummaryMemory(t *testing.T) {
	alloc := func(n int) (events, allocated int64) {
		var blocks [][][]byte
		var blk [][]byte
		used := 0
		add := func(r []byte) {
			if used+len(r) > 65536 {
				blocks, blk, used = append(blocks, blk), nil, 0
			}
			blk, used = append(blk, r), used+len(r)
		}
		var free, pending []uint64 // addresses free to reuse; blocks to free
		next := uint64(0x10000)
		at := uint64(base)
		leaks := n / 1000
		for i := range n {
			var addr uint64
			if k := len(free); k > 0 {
				addr, free = free[k-1], free[:k-1]
			} else {
				addr, next = next, next+0x100
			}
			at++
			add(rec(recHeap, uint8(HeapMalloc), 7, at, uint32(1+i%100), uint32(16+i%200), addr))
			if i%leaks != 0 {
				pending = append(pending, addr)
			}
			if len(pending) > 5 {
				at++
				add(rec(recHeap, uint8(HeapFree), 7, at, pending[0]))
				free, pending = append(free, pending[0]), pending[1:]
			}
		}
		blocks = append(blocks, blk)
		var stacks [][]byte
		for id := range uint32(100) {
			stacks = append(stacks, stackRec(id+1, 0x400000+uint64(id), 0x500000))
		}
		dir := traceDir(t, map[string][]byte{HeapTraceFile: traceFile(1, 42, 0, base, 65536, blocks...),
			TraceStacksFile: traceFile(5, 42, 0, base, 65536, stacks)})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d, err := OpenWith(dir, Options{Summed: true})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		hs := HeapSums(d.HeapTable())
		frees := int64(n - 1000 - 5)
		if hs.Stats.Events != int64(n)+frees || hs.Stats.Leaks.Count != 1000+5 || len(hs.Sites) != 101 || d.HeapTable().Len() != 101 {
			t.Fatalf("%d events, %d leaks, %d sites; want %d, %d, 101 (100 stacks of allocations, and the frees without a stack)",
				hs.Stats.Events, hs.Stats.Leaks.Count, len(hs.Sites), int64(n)+frees, 1000+5)
		}
		return hs.Stats.Events * int64(unsafe.Sizeof(HeapEvent{})), int64(after.TotalAlloc - before.TotalAlloc)
	}
	ev1, a1 := alloc(100_000)
	ev4, a4 := alloc(400_000)
	t.Logf("events %d and %d bytes, allocated %d and %d bytes", ev1, ev4, a1, a4)
	if a4 > 2*a1 || a4 > ev4/8 {
		t.Errorf("summing heap events of %d bytes allocated %d, of %d bytes %d: want less than twice as much, and an eighth of the events at most",
			ev1, a1, ev4, a4)
	}
}
