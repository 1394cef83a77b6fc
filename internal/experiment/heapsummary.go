package experiment

import (
	"maps"
	"slices"

	"er/internal/events"
	"er/internal/heapreplay"
	"er/internal/keytable"
	"er/internal/sat"
)

// Heap traces replayed as they are read (Options.Summed): the events come from mergeTrace in
// the order a full read gives them, and the replay keeps the live blocks of the heap and one site
// per thread and stack.

// HeapSchema is the table of the heap calls (HeapTable): the header's dur is 0, its cpu -1 (the
// library records neither). A row is one call, or, read summed (Options.Summed), the calls of one
// thread with one stack: its count is theirs, its time and columns the first's, and its sums are
// in the table's Side (HeapSums).
var HeapSchema = &events.Schema{Name: "heap", File: HeapTraceFile, Columns: []events.Column{
	{Name: "htype", Title: "the heap function", Type: events.U8},
	{Name: "hsize", Title: "bytes requested (munmap: the length unmapped)", Unit: "bytes", Type: events.U64},
	{Name: "hvaddr", Title: "address of the block returned; 0 for free and for failures", Type: events.U64},
	{Name: "hovaddr", Title: "address of the block freed: free's and realloc's argument, munmap's address", Type: events.U64},
}}

// The columns of HeapSchema.
const (
	HeapColOp = iota
	HeapColSize
	HeapColAddr
	HeapColOld
)

// HeapSummed is the side table of a heap table read summed: what the replay found of each row's
// calls, and of all of them.
type HeapSummed struct {
	Sites []HeapSite       // a row each
	Stats heapreplay.Stats // of all calls; its peaks' Exp is 0
}

// HeapSite is what the heap calls of a summed row allocated, how many blocks and how many bytes,
// and of those how many leaked.
type HeapSite struct {
	Allocs, Bytes int64
	Leaks, Leaked int64 // blocks never freed, and their bytes
}

// HeapTable returns d's heap calls (nil when it has none).
func (d *Data) HeapTable() *events.Table { return d.Tables[HeapSchema.Name] }

// heapTable returns d's heap table, made empty where it has none.
func (d *Data) heapTable() *events.Table { return d.table(HeapSchema) }

// HeapSums returns the side table of t, a heap table read summed; nil where it was read in full.
func HeapSums(t *events.Table) *HeapSummed {
	if t == nil {
		return nil
	}
	s, _ := t.Side.(*HeapSummed)
	return s
}

// HeapAt returns row i of t, a heap table, as an event.
func HeapAt(t *events.Table, i int) HeapEvent {
	c := t.Cols
	return HeapEvent{Time: t.Time[i], Pid: t.Pid[i], Tid: t.Tid[i], Stack: t.Stack[i], Op: HeapOp(c[HeapColOp].At(i)),
		Size: uint64(c[HeapColSize].At(i)), Addr: uint64(c[HeapColAddr].At(i)), Old: uint64(c[HeapColOld].At(i))}
}

// HeapRows are the columns of a heap table that a replay reads, typed: for loops over millions of
// rows (HeapAt reads a row whole).
type HeapRows struct {
	Op              []uint8
	Size, Addr, Old []int64 // u64 bits
}

// HeapRowsOf returns the columns of t, a heap table.
func HeapRowsOf(t *events.Table) HeapRows {
	c := t.Cols
	return HeapRows{Op: c[HeapColOp].U8s(), Size: c[HeapColSize].I64s(), Addr: c[HeapColAddr].I64s(), Old: c[HeapColOld].I64s()}
}

// Replay returns what row i does to the heap, as HeapEvent.Replay.
func (h *HeapRows) Replay(i int) heapreplay.Event {
	return heapReplay(HeapOp(h.Op[i]), uint64(h.Addr[i]), uint64(h.Size[i]), uint64(h.Old[i]))
}

// HeapEvents returns the rows of d's heap table as events, in table order: for tools and tests
// that look at each call.
func (d *Data) HeapEvents() []HeapEvent {
	t := d.HeapTable()
	out := make([]HeapEvent, t.Len())
	for i := range out {
		out[i] = HeapAt(t, i)
	}
	return out
}

// AddHeap adds calls to d's heap table, made at the first, and puts it in time order (stably): what
// a reader of another format (gprofng's) gives.
func (d *Data) AddHeap(evs []HeapEvent) {
	if len(evs) == 0 {
		return
	}
	t := d.heapTable()
	for i := range evs {
		addHeap(t, &evs[i])
	}
	t.SortByTime()
}

// addHeap adds e to t, a table of HeapSchema, as one call.
func addHeap(t *events.Table, e *HeapEvent) {
	t.AddHeader(e.Time, 0, 1, e.Pid, e.Tid, -1, e.Stack)
	c := t.Cols
	c[HeapColOp].Append(int64(e.Op))
	c[HeapColSize].Append(int64(e.Size))
	c[HeapColAddr].Append(int64(e.Addr))
	c[HeapColOld].Append(int64(e.Old))
}

// addHeapEvent adds call e to d: to its table, or, where a merge of the trace reads it
// (Options.Summed, mergeTrace), to the events the merge takes.
func (d *Data) addHeapEvent(e HeapEvent) {
	if d.mergeHeap {
		d.heapEvs = append(d.heapEvs, e)
		return
	}
	addHeap(d.heapTable(), &e)
}

// replayHeap replays the heap trace tf into tr.d's table (see above). Records it skips are
// counted in sk, as readEvents counts them.
func (tr *traceReader) replayHeap(tf *traceScan, sk *skipped) (warning string, err error) {
	sum := newHeapSummer(tr.d.heapTable())
	w, err := mergeTrace(tr, tf, sk, heapMergeEvents, func(e *HeapEvent) int64 { return e.Time }, sum.add)
	if err != nil {
		return "", err
	}
	sum.finish()
	return w, nil
}

// heapMergeEvents is where a merge of the heap trace finds d's calls (mergeTrace).
func heapMergeEvents(d *Data) *[]HeapEvent {
	d.mergeHeap = true
	return &d.heapEvs
}

// SummarizeHeap replaces the heap calls of d (in time order, as the reader leaves them) with their
// sums, as reading with Options.Summed gives them.
func (d *Data) SummarizeHeap() {
	t := d.HeapTable()
	if t == nil {
		return
	}
	sum := newHeapSummer(events.New(HeapSchema))
	for i := range t.Len() {
		e := HeapAt(t, i)
		sum.add(&e)
	}
	sum.finish()
	d.Tables[HeapSchema.Name] = sum.t
}

// mergeHeapRows merges the rows of t, a summed heap table, from row first on that have the same
// process, thread and stack (two stack ids of a trace can be one stack once resolved) into the
// first of them, keeping the order.
func mergeHeapRows(t *events.Table, first int) {
	hs := HeapSums(t)
	seen := map[[3]uint32]int{}
	for i := range first {
		seen[[3]uint32{t.Pid[i], t.Tid[i], t.Stack[i]}] = i
	}
	out := first
	counts := t.Counts()
	for i := first; i < t.Len(); i++ {
		key := [3]uint32{t.Pid[i], t.Tid[i], t.Stack[i]}
		if j, ok := seen[key]; ok {
			counts[j] = sat.Add(counts[j], counts[i])
			m, s := &hs.Sites[j], &hs.Sites[i]
			m.Allocs, m.Bytes = sat.Add(m.Allocs, s.Allocs), sat.Add(m.Bytes, s.Bytes)
			m.Leaks, m.Leaked = sat.Add(m.Leaks, s.Leaks), sat.Add(m.Leaked, s.Leaked)
			continue
		}
		seen[key] = out
		t.CopyRow(out, i)
		hs.Sites[out] = hs.Sites[i]
		out++
	}
	t.Truncate(out)
	hs.Sites = hs.Sites[:out]
}

// heapSummer sums heap events into the rows of a table as they come, each process's in time order:
// allocations are named by slots that hold their size and row while they live.
type heapSummer struct {
	t     *events.Table
	hs    *HeapSummed
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
	sites keytable.Table // tid<<32 | stack -> row, but for the key 0 (zero)
	zero  int32          // the row of thread 0 and stack 0, -1 before it has one
}

type heapSlot struct {
	bytes int64
	site  int32
}

// newHeapSummer sums into t, whose rows (another instance's, summed) go on: each instance's heap
// is replayed on its own.
func newHeapSummer(t *events.Table) *heapSummer {
	hs := HeapSums(t)
	if hs == nil {
		hs = &HeapSummed{}
		t.Side = hs
	}
	return &heapSummer{t: t, hs: hs, procs: map[uint32]*summedProcess{}}
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
	t := s.t
	if !ok {
		si = int32(t.Len())
		if key == 0 {
			p.zero = si
		} else {
			p.sites.Put(key, si)
		}
		addHeap(t, e)
		t.Counts()[si] = 0
		hs.Sites = append(hs.Sites, HeapSite{})
	}
	site := &hs.Sites[si]
	t.Count[si]++
	s.st.Events++
	t.Last = max(t.Last, e.Time)
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
