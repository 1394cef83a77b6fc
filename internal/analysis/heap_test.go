package analysis

import (
	"slices"
	"strings"
	"testing"

	"er/internal/events"
	"er/internal/experiment"
)

const libcBase = 0x7f0000000000

// heapFake is a program whose functions main, leaky, grow and good call libc's memory functions.
func heapFake() *fake {
	fk := newFake("main", "leaky", "grow", "good")
	fk.addObject("/lib/libc.so.6", libcBase, 0x1000, "malloc", "calloc", "realloc", "free", "mmap", "munmap",
		"read", "write", "open", "close", "pthread_mutex_lock", "pthread_join")
	return fk
}

// heap adds a heap event at time t of process progPid; funcs (root first) is its stack, none for no stack.
func (fk *fake) heap(t int64, op experiment.HeapOp, addr, size, old uint64, funcs ...string) {
	var st uint32
	if len(funcs) > 0 {
		st = fk.stack(funcs...)
	}
	addHeapRow(fk.d, experiment.HeapEvent{Time: t, Pid: progPid, Tid: progPid, Stack: st, Op: op, Addr: addr, Size: size, Old: old})
}

// addHeapRow appends e to d's heap table as its last row, in no time order (AddHeap sorts).
func addHeapRow(d *experiment.Data, e experiment.HeapEvent) {
	t := d.HeapTable()
	if t == nil {
		t = events.New(experiment.HeapSchema)
		if d.Tables == nil {
			d.Tables = map[string]*events.Table{}
		}
		d.Tables[experiment.HeapSchema.Name] = t
	}
	t.Add(events.Row{Time: e.Time, Count: 1, Pid: e.Pid, Tid: e.Tid, CPU: -1, Stack: e.Stack,
		Cols: []int64{int64(e.Op), int64(e.Size), int64(e.Addr), int64(e.Old)}})
}

// heapMetric returns metric name's value of the named function, exclusive and inclusive.
func heapMetric(t *testing.T, p *Profile, fname, metric string) [2]int64 {
	t.Helper()
	m := MetricIndex(p.Metrics, metric)
	if m < 0 {
		t.Fatalf("no metric %s in %v", metric, p.Metrics)
	}
	f := fn(t, p, fname)
	return [2]int64{p.Exclusive(f)[m], p.Inclusive(f)[m]}
}

func total(t *testing.T, p *Profile, metric string) int64 {
	t.Helper()
	m := MetricIndex(p.Metrics, metric)
	if m < 0 {
		t.Fatalf("no metric %s", metric)
	}
	return p.Total[m]
}

// totals returns the totals of the four heap metrics: allocations, bytes, leaks, bytes leaked.
func totals(t *testing.T, p *Profile) [4]int64 {
	return [4]int64{total(t, p, "heapalloccnt"), total(t, p, "heapallocbytes"), total(t, p, "heapleakcnt"), total(t, p, "heapleakbytes")}
}

func TestHeapMetricsOnly(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 10, 0, "main", "leaky", "malloc")
	p := analyze(t, fk.d)
	var names []string
	for _, m := range p.Metrics {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, " "); got != "heapallocbytes heapalloccnt heapleakbytes heapleakcnt" {
		t.Errorf("metrics %s", got)
	}
	if p.Heap == nil || p.IO != nil || !slices.Equal(p.DataEvents, []int64{0, 1, 0, 0, 0}) {
		t.Errorf("heap %v io %v events %v", p.Heap, p.IO, p.DataEvents)
	}
}

func TestReallocChainFreed(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 10, 0, "main", "grow", "malloc")
	fk.heap(2, experiment.HeapRealloc, 0x2000, 20, 0x1000, "main", "grow", "realloc")
	fk.heap(3, experiment.HeapRealloc, 0x2000, 40, 0x2000, "main", "grow", "realloc") // grown in place
	fk.heap(4, experiment.HeapFree, 0, 0, 0x2000)
	p := analyze(t, fk.d)
	if got := totals(t, p); got != [4]int64{3, 70, 0, 0} {
		t.Errorf("totals %v, want 3 allocations of 70 bytes, no leak", got)
	}
	if got := heapMetric(t, p, "realloc", "heapalloccnt"); got != [2]int64{2, 2} {
		t.Errorf("realloc allocations %v", got)
	}
	if got := heapMetric(t, p, "grow", "heapallocbytes"); got != [2]int64{0, 70} {
		t.Errorf("grow bytes %v", got)
	}
	if p.Heap.DoubleFrees != 0 || p.Heap.UnknownFrees != 0 || len(p.Warnings) != 0 {
		t.Errorf("frees ignored: %+v %q", p.Heap, p.Warnings)
	}
	if p.Heap.Peak.Bytes != 40 || p.Heap.Peak.Time != 3 {
		t.Errorf("peak %+v", p.Heap.Peak)
	}
	// The free, without a stack, adds nothing, and no <Unknown> function appears.
	if len(p.FindFunctions(UnknownName)) != 0 || p.Events != 3 {
		t.Errorf("events %d; <Unknown> %v", p.Events, p.FindFunctions(UnknownName))
	}
	checkIdentities(t, p)
}

func TestReallocLeak(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 10, 0, "main", "grow", "malloc")
	fk.heap(2, experiment.HeapRealloc, 0x3000, 100, 0x1000, "main", "grow", "realloc")
	p := analyze(t, fk.d)
	if got := totals(t, p); got != [4]int64{2, 110, 1, 100} {
		t.Errorf("totals %v, want 2 allocations of 110 bytes, 1 leak of 100", got)
	}
	if got := heapMetric(t, p, "realloc", "heapleakbytes"); got != [2]int64{100, 100} {
		t.Errorf("realloc leak %v", got)
	}
	if got := heapMetric(t, p, "malloc", "heapleakcnt"); got != [2]int64{0, 0} {
		t.Errorf("malloc leaks %v: the realloc freed its block", got)
	}
	if got := heapMetric(t, p, "main", "heapleakcnt"); got != [2]int64{0, 1} {
		t.Errorf("main leaks %v", got)
	}
	if p.Heap.Leaks.Count != 1 || p.Heap.Leaks.Bytes != 100 || p.Heap.Allocs.Min != 10 || p.Heap.Allocs.Max != 100 {
		t.Errorf("stats %+v", p.Heap)
	}
}

func TestReallocFailedAndZero(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 10, 0, "main", "malloc")
	fk.heap(2, experiment.HeapRealloc, 0, 1<<40, 0x1000, "main", "realloc") // fails: 0x1000 stays
	fk.heap(3, experiment.HeapMalloc, 0x5000, 30, 0, "main", "malloc")
	fk.heap(4, experiment.HeapRealloc, 0, 0, 0x5000, "main", "realloc") // realloc(p, 0) frees p
	fk.heap(5, experiment.HeapRealloc, 0x6000, 7, 0, "main", "realloc") // realloc(NULL, 7) is malloc(7)
	p := analyze(t, fk.d)
	if got := totals(t, p); got != [4]int64{3, 47, 2, 17} {
		t.Errorf("totals %v, want 3 allocations of 47 bytes, 2 leaks of 17", got)
	}
	if p.Heap.FailedAllocs != 1 || p.Heap.UnknownFrees != 0 {
		t.Errorf("stats %+v", p.Heap)
	}
}

func TestMunmap(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMmap, 0x10000, 0x2000, 0, "main", "mmap")
	fk.heap(2, experiment.HeapMmap, 0x12000, 0x1000, 0, "main", "mmap")
	fk.heap(3, experiment.HeapMmap, 0x20000, 0x1000, 0, "main", "mmap")
	fk.heap(4, experiment.HeapMalloc, 0x11000, 16, 0, "main", "malloc") // not an mmap block: munmap leaves it
	fk.heap(5, experiment.HeapMunmap, 0, 0x3000, 0x10000, "main", "munmap")
	fk.heap(6, experiment.HeapMmap, ^uint64(0), 0x1000, 0, "main", "mmap") // MAP_FAILED
	p := analyze(t, fk.d)
	if got := totals(t, p); got != [4]int64{4, 0x4010, 2, 0x1010} {
		t.Errorf("totals %v", got)
	}
	if got := heapMetric(t, p, "mmap", "heapleakbytes"); got != [2]int64{0x1000, 0x1000} {
		t.Errorf("mmap leaks %v", got)
	}
	if p.Heap.Peak.Bytes != 0x4010 || p.Heap.Peak.Time != 4 || p.Heap.FailedAllocs != 1 {
		t.Errorf("stats %+v", p.Heap)
	}
	// The page-by-page search: many live blocks, a small munmap.
	fk = heapFake()
	for i := range uint64(100) {
		fk.heap(int64(i), experiment.HeapMmap, 0x100000+i*0x1000, 0x1000, 0, "main", "mmap")
	}
	fk.heap(200, experiment.HeapMunmap, 0, 0x2000, 0x100000+10*0x1000, "main", "munmap")
	p = analyze(t, fk.d)
	if got := totals(t, p); got != [4]int64{100, 100 * 0x1000, 98, 98 * 0x1000} {
		t.Errorf("totals %v", got)
	}
}

func TestFreesIgnored(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 8, 0, "main", "malloc")
	fk.heap(2, experiment.HeapFree, 0, 0, 0x1000)
	fk.heap(3, experiment.HeapFree, 0, 0, 0x1000) // double free
	fk.heap(4, experiment.HeapFree, 0, 0, 0x9000) // never allocated
	fk.heap(5, experiment.HeapFree, 0, 0, 0)      // free(NULL)
	fk.heap(6, experiment.HeapMalloc, 0x1000, 4, 0, "main", "malloc")
	p := analyze(t, fk.d)
	if got := totals(t, p); got != [4]int64{2, 12, 1, 4} {
		t.Errorf("totals %v", got)
	}
	if p.Heap.DoubleFrees != 1 || p.Heap.UnknownFrees != 1 {
		t.Errorf("double %d unknown %d", p.Heap.DoubleFrees, p.Heap.UnknownFrees)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "ignored 1 free(s) of blocks already freed and 1 free(s) of blocks not allocated") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

func TestHeapReplayOrder(t *testing.T) {
	// Two threads' events, each in time order, one after the other in the array: the replay
	// follows the times. Thread 2 frees 0x1000 at time 5, after thread 1 allocated it at time 3;
	// thread 1 allocates 0x1000 again at time 7 and never frees it.
	fk := heapFake()
	fk.heap(3, experiment.HeapMalloc, 0x1000, 10, 0, "main", "leaky", "malloc")
	fk.heap(7, experiment.HeapMalloc, 0x1000, 20, 0, "main", "good", "malloc")
	fk.heap(5, experiment.HeapFree, 0, 0, 0x1000)
	fk.d.HeapTable().Tid[2] = progPid + 1
	// Another process has a block at the same address, freed: processes have their own heaps.
	fk.heap(1, experiment.HeapMalloc, 0x1000, 1, 0, "main", "malloc")
	fk.heap(2, experiment.HeapFree, 0, 0, 0x1000)
	fk.d.HeapTable().Pid[3], fk.d.HeapTable().Pid[4] = 7, 7
	leaked, st := ReplayHeap(fk.d, 0)
	if !slices.Equal(leaked, []bool{false, true, false, false, false}) {
		t.Errorf("leaked %v", leaked)
	}
	if st.UnknownFrees != 0 || len(st.Peaks) != 2 || st.Peak.Pid != progPid || st.Peak.Bytes != 20 || st.Peak.Time != 7 {
		t.Errorf("stats %+v", st)
	}
	// Equal times keep the array order: the free comes after the allocation.
	fk = heapFake()
	fk.heap(4, experiment.HeapMalloc, 0x1000, 10, 0, "main", "malloc")
	fk.heap(4, experiment.HeapFree, 0, 0, 0x1000)
	if leaked, _ := ReplayHeap(fk.d, 0); leaked[0] {
		t.Error("an allocation freed at the same time leaks")
	}
}

func TestHeapIdentities(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 1000, 0, "main", "leaky", "malloc")
	fk.heap(2, experiment.HeapMalloc, 0x2000, 1000, 0, "main", "leaky", "malloc")
	fk.heap(3, experiment.HeapCalloc, 0x3000, 100, 0, "main", "calloc")
	for i := range uint64(10) {
		fk.heap(int64(10+2*i), experiment.HeapMalloc, 0x4000, 100, 0, "main", "good", "malloc")
		fk.heap(int64(11+2*i), experiment.HeapFree, 0, 0, 0x4000)
	}
	fk.sample(5, "main", "good")
	fk.d.Log.Settings = []experiment.Setting{{Name: "clock_interval_ns", Value: "10007000"}}
	p := analyze(t, fk.d)
	if p.Metrics[0].Name != "totalcpu" || len(p.Metrics) != 7 || p.Total[MetricTotalCPU] != 5 {
		t.Fatalf("metrics %v totals %v", p.Metrics, p.Total)
	}
	if got := totals(t, p); got != [4]int64{13, 3100, 3, 2100} {
		t.Errorf("totals %v", got)
	}
	if got := heapMetric(t, p, "malloc", "heapalloccnt"); got != [2]int64{12, 12} {
		t.Errorf("malloc %v", got)
	}
	if got := heapMetric(t, p, "good", "heapallocbytes"); got != [2]int64{0, 1000} {
		t.Errorf("good %v", got)
	}
	cc, _ := p.CallersCallees([]int{fn(t, p, "malloc")})
	m := MetricIndex(p.Metrics, "heapallocbytes")
	var sum int64
	for _, a := range cc.Callers {
		sum += a.Value[m]
	}
	if sum != 3000 || len(cc.Callers) != 2 {
		t.Errorf("callers of malloc: %d bytes over %d callers", sum, len(cc.Callers))
	}
	checkIdentities(t, p)
	// The call tree's root holds the totals.
	if tr := p.CallTree(); tr.Inclusive(0)[m] != 3100 {
		t.Errorf("tree root %v", tr.Inclusive(0))
	}
}

// BenchmarkAnalyzeHeap1M analyses 1,000,000 heap events (allocations over 1000 stacks, each block
// freed later but one in ten, and the frees without a stack).
func BenchmarkAnalyzeHeap1M(b *testing.B) {
	d := bigExperiment(0, 1000, 2000)
	const n = 500_000
	evs := make([]experiment.HeapEvent, 0, 2*n)
	for i := range uint64(n) {
		addr := 0x10000 + (i%4096)*0x100 + (i/4096)<<24
		evs = append(evs, experiment.HeapEvent{Time: int64(2 * i), Pid: 1, Tid: 1, Op: experiment.HeapMalloc,
			Addr: addr, Size: 16 + i%1000, Stack: uint32(1 + i%1000)})
		if i%10 != 0 {
			evs = append(evs, experiment.HeapEvent{Time: int64(2*i + 1), Pid: 1, Tid: 1, Op: experiment.HeapFree, Old: addr})
		}
	}
	d.AddHeap(evs)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := Analyze([]*experiment.Data{d}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if p.Heap.Allocs.Count != n || p.Heap.Leaks.Count != n/10 {
			b.Fatalf("%+v", p.Heap)
		}
	}
}

// TestHeapStatsSaturate: block sizes beyond the largest int64 (a crafted trace) and sums past it give
// the largest int64 in the heap statistics and peaks, never a negative or wrapped value.
func TestHeapStatsSaturate(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 1<<63, 0, "main", "leaky", "malloc")
	fk.heap(2, experiment.HeapMalloc, 0x2000, 1<<62, 0, "main", "leaky", "malloc")
	fk.heap(3, experiment.HeapMalloc, 0x3000, 1<<62, 0, "main", "grow", "malloc")
	fk.heap(4, experiment.HeapFree, 0, 0, 0x3000, "main", "grow", "free")
	p := analyze(t, fk.d)
	const top = int64(^uint64(0) >> 1)
	h := p.Heap
	if h.Allocs.Bytes != top || h.Leaks.Bytes != top || h.Allocs.Max != top || h.Peak.Bytes != top || h.Allocs.Count != 3 ||
		h.Leaks.Count != 2 {
		t.Errorf("allocs %+v leaks %+v peak %+v: want sums and the largest at %d", h.Allocs, h.Leaks, h.Peak, top)
	}
	var s SizeStats
	s.Add(top, top)
	s.Add(top, top)
	o := s
	s.Merge(&o)
	if s.Bytes != top || s.Time != top || s.Count != 4 {
		t.Errorf("SizeStats %+v: want bytes and time at %d", s, top)
	}
}
