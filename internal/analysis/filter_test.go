package analysis

import (
	"slices"
	"testing"

	"er/internal/experiment"
)

// threadedFake is a program of two threads sampled at times 10, 20, ..., 100 ns with sample points
// at 0 (start), 35 (periodic) and 70 (end): thread progPid runs work1 on CPU 0, thread 7 runs work2
// on CPU 1, alternately; the last two samples come after the end point.
func threadedFake() *fake {
	fk := newFake("main", "work1", "work2")
	for i := range 10 {
		tid, cpu, f := uint32(progPid), uint32(0), "work1"
		if i%2 == 1 {
			tid, cpu, f = 7, 1, "work2"
		}
		fk.d.AppendClock(experiment.ClockSample{Time: int64(10 * (i + 1)), Pid: progPid, Tid: tid, CPU: cpu,
			Mode: experiment.ModeUser, Period: int64(i + 1), Stack: fk.stack("main", f)})
	}
	fk.d.Overview = []experiment.OverviewSample{
		{Time: 0, Pid: progPid, Sample: 1, Label: "start"},
		{Time: 35, Pid: progPid, Sample: 2, Label: "periodic"},
		{Time: 70, Pid: progPid, Sample: 3, Label: "end"},
	}
	return fk
}

func TestExpIndexSamples(t *testing.T) {
	x := NewExpIndex(0, threadedFake().d)
	want := []SamplePeriod{
		{Number: 1, Start: 0, End: 35, StartPoint: 1, EndPoint: 2, StartLabel: "start", EndLabel: "periodic"},
		{Number: 2, Start: 35, End: 70, StartPoint: 2, EndPoint: 3, StartLabel: "periodic", EndLabel: "end"},
		{Number: 3, Start: 70, End: 100, StartPoint: 3, StartLabel: "end", Open: true},
	}
	if got := x.Samples(); !slices.Equal(got, want) {
		t.Errorf("samples\n got %+v\nwant %+v", got, want)
	}
	cases := []struct {
		t    int64
		want int
	}{{-5, 1}, {0, 1}, {1, 1}, {35, 1}, {36, 2}, {70, 2}, {71, 3}, {1000, 3}}
	for _, c := range cases {
		if got := x.SampleAt(c.t); got != c.want {
			t.Errorf("SampleAt(%d) = %d, want %d", c.t, got, c.want)
		}
	}
	// SampleAt remembers the last sample found: every time after every other.
	for _, a := range cases {
		for _, c := range cases {
			x.SampleAt(a.t)
			if got := x.SampleAt(c.t); got != c.want {
				t.Errorf("SampleAt(%d) after SampleAt(%d) = %d, want %d", c.t, a.t, got, c.want)
			}
		}
	}
	// A first point late (gprofng's, 5 ms in beside two CPU hogs): sample 1 starts at it, as gprofng
	// shows it, and the events before it are still in sample 1.
	fk := threadedFake()
	fk.d.Overview[0].Time = 15
	x = NewExpIndex(0, fk.d)
	if got := x.Samples(); got[0].Start != 15 || got[0].End != 35 || x.SampleAt(10) != 1 {
		t.Errorf("a first point at 15: sample 1 %+v, SampleAt(10) = %d", got[0], x.SampleAt(10))
	}
	// No sample points: one open sample.
	fk = threadedFake()
	fk.d.Overview = nil
	x = NewExpIndex(0, fk.d)
	if got := x.Samples(); len(got) != 1 || got[0] != (SamplePeriod{Number: 1, End: 100, Open: true}) || x.SampleAt(55) != 1 {
		t.Errorf("no points: %+v", got)
	}
	// One point (a recording still being written): the open sample 1 holds everything.
	fk.d.Overview = []experiment.OverviewSample{{Time: 0, Pid: progPid, Sample: 1, Label: "start"}}
	x = NewExpIndex(0, fk.d)
	if got := x.Samples(); len(got) != 1 || !got[0].Open || got[0].Number != 1 || got[0].StartLabel != "start" || x.SampleAt(99) != 1 {
		t.Errorf("one point: %+v", got)
	}
}

func TestExpIndexThreads(t *testing.T) {
	fk := threadedFake()
	// A second process (a child in the same experiment) with threads 300 and 301, and a heap event
	// of a thread that has no clock sample.
	fk.d.AppendClock(experiment.ClockSample{Time: 5, Pid: 301, Tid: 301}, experiment.ClockSample{Time: 6, Pid: 301, Tid: 300})
	fk.d.AddHeap([]experiment.HeapEvent{{Time: 7, Pid: progPid, Tid: 5}})
	x := NewExpIndex(2, fk.d)
	want := []Thread{{1, progPid, progPid, "", false}, {2, progPid, 5, "", false}, {3, progPid, 7, "", false}, {4, 301, 301, "", false}, {5, 301, 300, "", false}}
	if got := x.Threads(); !slices.Equal(got, want) {
		t.Errorf("threads %v, want %v", got, want)
	}
	if x.ThreadNumber(301, 300) != 5 || x.ThreadNumber(progPid, 7) != 3 || x.ThreadNumber(1, 1) != 0 {
		t.Error("ThreadNumber")
	}
	var ev EventInfo
	x.Event(DataClock, 1, &ev)
	if ev != (EventInfo{Exp: 2, Kind: DataClock, Pid: progPid, Tid: 7, Thread: 3, CPU: 1, Time: 20, Sample: 1, Stack: -1, Raw: -1, Data: fk.d, Index: 1}) {
		t.Errorf("clock event %+v", ev)
	}
	x.Event(DataHeap, 0, &ev)
	if ev != (EventInfo{Exp: 2, Kind: DataHeap, Pid: progPid, Tid: 5, Thread: 2, CPU: -1, Time: 7, Sample: 1, Stack: -1, Raw: -1, Data: fk.d, Index: 0}) {
		t.Errorf("heap event %+v", ev)
	}
}

func TestFilterClock(t *testing.T) {
	d := threadedFake().d
	all := analyze(t, d)
	if all.Total[MetricTotalCPU] != 55 {
		t.Fatalf("total %d", all.Total[MetricTotalCPU])
	}
	run := func(f func(*EventInfo) bool) *Profile {
		p, err := Analyze([]*experiment.Data{d}, Options{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Each thread alone: its own function only, and the two add up to the whole.
	var sum int64
	for th, want := range map[int][2]int64{1: {1 + 3 + 5 + 7 + 9, 0}, 2: {0, 2 + 4 + 6 + 8 + 10}} {
		p := run(func(ev *EventInfo) bool { return ev.Thread == th })
		sum += p.Total[MetricTotalCPU]
		got := [2]int64{}
		for i, name := range []string{"work1", "work2"} {
			if fs := p.FindFunctions(name); len(fs) == 1 {
				got[i] = p.Exclusive(fs[0])[MetricTotalCPU]
			}
		}
		if got != want || p.Total[MetricTotalCPU] != want[0]+want[1] || p.DataEvents[DataClock] != 5 {
			t.Errorf("thread %d: work1, work2 = %v, total %d, events %d; want %v", th, got, p.Total[MetricTotalCPU], p.DataEvents[DataClock], want)
		}
	}
	if sum != all.Total[MetricTotalCPU] {
		t.Errorf("threads add up to %d, want %d", sum, all.Total[MetricTotalCPU])
	}
	// Sample 2 holds the samples at 40, 50, 60, 70 ns: periods 4+5+6+7.
	if p := run(func(ev *EventInfo) bool { return ev.Sample == 2 }); p.Total[MetricTotalCPU] != 22 || p.Events != 4 {
		t.Errorf("sample 2: total %d, events %d", p.Total[MetricTotalCPU], p.Events)
	}
	// CPU 1 and a time window.
	if p := run(func(ev *EventInfo) bool { return ev.CPU == 1 && ev.Time > 20 && ev.Time <= 80 }); p.Total[MetricTotalCPU] != 4+6+8 {
		t.Errorf("cpu 1 window: total %d", p.Total[MetricTotalCPU])
	}
	// Nothing selected: an empty profile, not an error.
	if p := run(func(*EventInfo) bool { return false }); p.Total[MetricTotalCPU] != 0 || p.Events != 0 || len(p.Functions) != 1 {
		t.Errorf("nothing: total %d, events %d, %d functions", p.Total[MetricTotalCPU], p.Events, len(p.Functions))
	}
}

func TestFilterExperiments(t *testing.T) {
	a, b := threadedFake().d, threadedFake().d
	b.Dir = "test.2.er"
	p, err := Analyze([]*experiment.Data{a, b}, Options{Filter: func(ev *EventInfo) bool { return ev.Exp == 1 && ev.Thread == 2 }})
	if err != nil {
		t.Fatal(err)
	}
	if p.Total[MetricTotalCPU] != 30 || p.DataEvents[DataClock] != 5 {
		t.Errorf("experiment 2, thread 2: total %d, events %d", p.Total[MetricTotalCPU], p.DataEvents[DataClock])
	}
}

// TestFilterHeap: leaks are decided with every event, and the statistics count the selected ones.
func TestFilterHeap(t *testing.T) {
	fk := heapFake()
	fk.heap(10, experiment.HeapMalloc, 0x1000, 100, 0, "main", "leaky", "malloc") // freed at 40
	fk.heap(20, experiment.HeapMalloc, 0x2000, 30, 0, "main", "leaky", "malloc")  // never freed
	fk.heap(30, experiment.HeapMalloc, 0x3000, 7, 0, "main", "grow", "malloc")    // never freed
	fk.heap(40, experiment.HeapFree, 0, 0, 0x1000, "main", "good", "free")
	fk.heap(50, experiment.HeapFree, 0, 0, 0x1000, "main", "good", "free") // a double free
	fk.heap(60, experiment.HeapMalloc, 0x4000, 1000, 0, "main", "grow", "malloc")
	fk.heap(70, experiment.HeapFree, 0, 0, 0x4000, "main", "good", "free")
	early := func(ev *EventInfo) bool { return ev.Time <= 30 }
	p, err := Analyze([]*experiment.Data{fk.d}, Options{Filter: early})
	if err != nil {
		t.Fatal(err)
	}
	// The first block is freed after the window: not a leak.
	if got := totals(t, p); got != [4]int64{3, 137, 2, 37} {
		t.Errorf("early: allocations, bytes, leaks, bytes leaked = %v", got)
	}
	h := p.Heap
	if h.Events != 3 || h.Allocs.Count != 3 || h.Leaks.Count != 2 || h.Leaks.Bytes != 37 || h.DoubleFrees != 0 ||
		h.Peak.Bytes != 137 || h.Peak.Time != 30 || len(h.Peaks) != 1 {
		t.Errorf("early statistics %+v", h)
	}
	late := func(ev *EventInfo) bool { return ev.Time >= 40 }
	p, err = Analyze([]*experiment.Data{fk.d}, Options{Filter: late})
	if err != nil {
		t.Fatal(err)
	}
	if got := totals(t, p); got != [4]int64{1, 1000, 0, 0} {
		t.Errorf("late: %v", got)
	}
	// The heap after the free at 40 holds 37 bytes; with the block of 60, 1037.
	h = p.Heap
	if h.Events != 4 || h.DoubleFrees != 1 || h.Peak.Bytes != 1037 || h.Peak.Time != 60 || p.DataEvents[DataHeap] != 4 {
		t.Errorf("late statistics %+v", h)
	}
	// Unfiltered, the replay is unchanged.
	_, st := ReplayHeap(fk.d, 0)
	if st.Events != 7 || st.Allocs.Count != 4 || st.Leaks.Count != 2 || st.DoubleFrees != 1 || st.Peak.Bytes != 1037 {
		t.Errorf("unfiltered %+v", st)
	}
}

func TestFilterIOAndSync(t *testing.T) {
	fk := ioFake()
	fk.d.AddSync([]experiment.SyncEvent{{Time: 3, Pid: progPid, Tid: progPid, Op: experiment.SyncMutexLock, Wait: 100,
		Stack: fk.stack("main", "good", "pthread_mutex_lock")},
		{Time: 9, Pid: progPid, Tid: progPid, Op: experiment.SyncMutexLock, Wait: 50,
			Stack: fk.stack("main", "good", "pthread_mutex_lock")}})
	// The read of 50 bytes at time 7 reads the file that descriptor 7 got from dup2 at time 5:
	// the descriptor table is replayed with all events, so it is /etc/passwd.
	p, err := Analyze([]*experiment.Data{fk.d}, Options{Filter: func(ev *EventInfo) bool { return ev.Time >= 7 && ev.Time <= 9 }})
	if err != nil {
		t.Fatal(err)
	}
	if p.IO.Events != 3 || p.IO.Read.Count != 1 || p.IO.Read.Bytes != 50 || p.IO.Write.Count != 1 || p.IO.Error.Count != 1 {
		t.Errorf("I/O statistics %+v", p.IO)
	}
	if got := groupString(p, p.IOFiles, "ioreadbytes"); got != "/etc/passwd/-1=50 /dev/pts/0/-1=0 <unknown file>/-1=0" {
		t.Errorf("files: %s", got)
	}
	if got := total(t, p, "sync"); got != 50 {
		t.Errorf("sync wait %d", got)
	}
	if p.DataEvents[DataIO] != 3 || p.DataEvents[DataSync] != 1 {
		t.Errorf("data events %v", p.DataEvents)
	}
}

func TestCountKept(t *testing.T) {
	if countKept(nil, 4) != 4 || countKept([]bool{true, false, true}, 3) != 2 {
		t.Error("countKept")
	}
	var s *eventSel
	if !s.keep(DataClock, 0) || s.keepAll(DataClock, 3) != nil {
		t.Error("nil eventSel keeps everything")
	}
}

// BenchmarkAnalyzeFiltered1M is BenchmarkAnalyze1M with a filter that keeps 2 of its 8 threads:
// the cost of filtering (numbering threads and samples, calling the filter) against the smaller
// profile it makes.
func BenchmarkAnalyzeFiltered1M(b *testing.B) {
	d := bigExperiment(1_000_000, 10_000, 20_000)
	d.Overview = []experiment.OverviewSample{{Time: 0, Pid: 1, Sample: 1}, {Time: 500_000_000, Pid: 1, Sample: 2}, {Time: 1e9, Pid: 1, Sample: 3}}
	keep := func(ev *EventInfo) bool { return ev.Thread <= 2 && ev.Sample >= 1 }
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := Analyze([]*experiment.Data{d}, Options{Filter: keep})
		if err != nil {
			b.Fatal(err)
		}
		p.edgeIndex()
		p.CallTree()
		if p.Events != 250_000 {
			b.Fatal(p.Events)
		}
	}
}

// TestFilterSeesStacks: a filter that runs in Refilter sees each event's function stack in the
// unfiltered profile, as EventStacks gives them; one that runs in Analyze sees none. Seed 002's
// example keeps, on the stacks through B, B's inclusive time and nothing of A's.
func TestFilterSeesStacks(t *testing.T) {
	all := analyze(t, seedExample().d)
	b := int32(fn(t, all, "B"))
	stacks := all.EventStacks(0, DataClock)
	if len(stacks) != 10 {
		t.Fatalf("EventStacks: %d events, want 10", len(stacks))
	}
	seen := 0
	throughB := func(ev *EventInfo) bool {
		if ev.Prof != all || ev.Stack != stacks[seen] {
			t.Errorf("event %d: stack %d of %p, want %d of %p", seen, ev.Stack, ev.Prof, stacks[seen], all)
		}
		seen++
		fr, _ := ev.Prof.Stack(int(ev.Stack))
		return slices.Contains(fr, b)
	}
	q, err := all.Refilter(throughB, false)
	if err != nil {
		t.Fatal(err)
	}
	if seen != 10 {
		t.Errorf("the filter saw %d events, want 10", seen)
	}
	a, c := fn(t, all, "A"), fn(t, all, "C")
	if q.Total[MetricTotalCPU] != 20 || q.Inclusive(c)[0] != 15 || q.Inclusive(a)[0] != 0 || q.Used(a) {
		t.Errorf("through B: total %d, C %d, A %d (used %v); want 20, 15, 0 (not used)", q.Total[MetricTotalCPU], q.Inclusive(c)[0], q.Inclusive(a)[0], q.Used(a))
	}
	// Refiltered profiles give the unfiltered profile's stacks too.
	if got := q.EventStacks(0, DataClock); !slices.Equal(got, stacks) {
		t.Errorf("EventStacks of the refiltered profile: %v, want %v", got, stacks)
	}
	if all.EventStacks(1, DataClock) != nil || all.EventStacks(-1, DataClock) != nil {
		t.Error("EventStacks of experiments that are not there")
	}
	// In Analyze, no stack yet.
	_, err = Analyze([]*experiment.Data{seedExample().d}, Options{Filter: func(ev *EventInfo) bool {
		if ev.Stack != -1 || ev.Prof != nil {
			t.Errorf("Analyze's filter saw stack %d of %p", ev.Stack, ev.Prof)
		}
		return true
	}})
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := Analyze([]*experiment.Data{seedExample().d}, Options{Filter: func(*EventInfo) bool { return true }}); f.EventStacks(0, DataClock) != nil {
		t.Error("EventStacks of a profile analysed with a filter")
	}
}

// TestEventStacksOfFrees: an event that adds to no metric (a free) reaches no stack: -1.
func TestEventStacksOfFrees(t *testing.T) {
	fk := heapFake()
	fk.heap(1, experiment.HeapMalloc, 0x1000, 100, 0, "main", "leaky", "malloc")
	fk.heap(2, experiment.HeapFree, 0x1000, 0, 0, "main", "good", "free")
	p := analyze(t, fk.d)
	st := p.EventStacks(0, DataHeap)
	if len(st) != 2 || st[0] < 0 || st[1] != -1 {
		t.Fatalf("heap stacks %v, want [s -1]", st)
	}
	fr, _ := p.Stack(int(st[0]))
	if want := []int32{int32(fn(t, p, "main")), int32(fn(t, p, "leaky")), int32(fn(t, p, "malloc"))}; !slices.Equal(fr, want) {
		t.Errorf("the malloc's stack %v, want main, leaky, malloc %v", fr, want)
	}
}
