package experiment

import (
	"er/internal/events"
	"er/internal/sat"
)

// Synchronization waits as an event table. A row is one wait, or, where the trace was summed as it
// was read (Options.Summed), the waits of one thread with one stack: its count is theirs, its
// duration their waits' sum, its time the first's; its op and object are the first's.

// SyncSchema is the table of the synchronization waits (SyncTable): the header's dur is the wait,
// its cpu -1 (the library records none); the columns are the function and its object.
var SyncSchema = &events.Schema{Name: "sync", File: SyncTraceFile, Columns: []events.Column{
	{Name: "stype", Title: "the synchronization function", Type: events.U8},
	{Name: "sobj", Title: "address of the mutex, condition variable, lock, semaphore or barrier; the thread id joined", Type: events.U64},
}}

// The columns of SyncSchema.
const (
	SyncColOp = iota
	SyncColObject
)

// SyncTable returns d's synchronization waits (nil when it has none).
func (d *Data) SyncTable() *events.Table { return d.Tables[SyncSchema.Name] }

// AddSync adds waits to d's synchronization table, made at the first, and puts it in time order
// (stably): what a reader of another format (gprofng's) gives.
func (d *Data) AddSync(evs []SyncEvent) {
	if len(evs) == 0 {
		return
	}
	t := d.syncTable()
	for i := range evs {
		addSync(t, &evs[i])
	}
	sortTable(t)
}

// addSyncEvent adds wait e to d: to its table, or, where a merge of the trace reads it
// (Options.Summed, mergeTrace), to the events the merge takes.
func (d *Data) addSyncEvent(e SyncEvent) {
	if d.mergeSync {
		d.syncEvs = append(d.syncEvs, e)
		return
	}
	addSync(d.syncTable(), &e)
}

// addSync adds e to t, a table of SyncSchema, as one wait.
func addSync(t *events.Table, e *SyncEvent) {
	t.AddHeader(e.Time, e.Wait, 1, e.Pid, e.Tid, -1, e.Stack)
	t.Cols[SyncColOp].Append(int64(e.Op))
	t.Cols[SyncColObject].Append(int64(e.Object))
}

// syncTable returns d's synchronization table, made empty where it has none.
func (d *Data) syncTable() *events.Table { return d.table(SyncSchema) }

// sumSync sums the synchronization trace tf into d's table, a row per thread and stack. Records
// it skips are counted in sk, as readEvents counts them.
func (tr *traceReader) sumSync(tf *traceScan, sk *skipped) (warning string, err error) {
	sum := newSyncSummer(tr.d.syncTable())
	return mergeTrace(tr, tf, sk, syncMergeEvents, func(e *SyncEvent) int64 { return e.Time }, sum.add)
}

// syncMergeEvents is where a merge of the synchronization trace finds d's waits (mergeTrace).
func syncMergeEvents(d *Data) *[]SyncEvent {
	d.mergeSync = true
	return &d.syncEvs
}

// SummarizeSync replaces the synchronization waits of d (in time order, as the reader leaves them)
// with their sums, as reading with Options.Summed gives them.
func (d *Data) SummarizeSync() {
	t := d.SyncTable()
	if t == nil {
		return
	}
	sum := newSyncSummer(events.New(SyncSchema))
	for i := range t.Len() {
		sum.addRow(t, i)
	}
	d.Tables[SyncSchema.Name] = sum.t
}

// syncSummer sums synchronization waits into the rows of a table as they come, one per process,
// thread and stack.
type syncSummer struct {
	t     *events.Table
	sites map[[3]uint32]int32 // pid, tid, stack -> row
}

func newSyncSummer(t *events.Table) *syncSummer {
	s := &syncSummer{t: t, sites: map[[3]uint32]int32{}}
	for i := range t.Len() { // a table summed already (another instance's): its rows go on
		s.sites[[3]uint32{t.Pid[i], t.Tid[i], t.Stack[i]}] = int32(i)
	}
	return s
}

func (s *syncSummer) add(e *SyncEvent) {
	s.addOne(e.Pid, e.Tid, e.Stack, e.Time, 1, e.Wait, func() {
		addSync(s.t, e)
		s.t.Counts()[s.t.Len()-1], s.t.Durs()[s.t.Len()-1] = 0, 0
	})
}

// addRow adds row i of t, which stands for Count[i] waits of Dur[i] ns.
func (s *syncSummer) addRow(t *events.Table, i int) {
	s.addOne(t.Pid[i], t.Tid[i], t.Stack[i], t.Time[i], t.CountAt(i), t.DurAt(i), func() {
		r := t.Row(i)
		r.Count, r.Dur = 0, 0
		s.t.Add(r)
	})
	s.t.Last = max(s.t.Last, t.Last)
}

// addOne adds n waits of wait ns to the row of process pid, thread tid and stack, made by add (with
// a count and duration of 0) where there is none.
func (s *syncSummer) addOne(pid, tid, stack uint32, time, n, wait int64, add func()) {
	key := [3]uint32{pid, tid, stack}
	i, ok := s.sites[key]
	if !ok {
		i = int32(s.t.Len())
		s.sites[key] = i
		add()
	}
	counts, durs := s.t.Counts(), s.t.Durs()
	counts[i] = sat.Add(counts[i], n)
	durs[i] = sat.Add(durs[i], wait)
	s.t.Last = max(s.t.Last, time)
}

// mergeSyncRows merges the rows from row first on that have the same process, thread and stack
// (two stack ids of a trace can be one stack once resolved) into the first of them, keeping the
// order.
func mergeSyncRows(t *events.Table, first int) {
	seen := map[[3]uint32]int{}
	for i := range first {
		seen[[3]uint32{t.Pid[i], t.Tid[i], t.Stack[i]}] = i
	}
	out := first
	for i := first; i < t.Len(); i++ {
		key := [3]uint32{t.Pid[i], t.Tid[i], t.Stack[i]}
		if j, ok := seen[key]; ok {
			counts, durs := t.Counts(), t.Durs()
			counts[j] = sat.Add(counts[j], counts[i])
			durs[j] = sat.Add(durs[j], durs[i])
			continue
		}
		seen[key] = out
		t.CopyRow(out, i)
		out++
	}
	t.Truncate(out)
}

// sortTable puts t's rows in time order, stably.
func sortTable(t *events.Table) { t.SortByTime() }
