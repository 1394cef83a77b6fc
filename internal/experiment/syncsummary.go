package experiment

import (
	"sort"

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

// syncRow is e as a row of SyncSchema, standing for one wait.
func syncRow(e *SyncEvent) events.Row {
	return events.Row{Time: e.Time, Dur: e.Wait, Count: 1, Pid: e.Pid, Tid: e.Tid, CPU: -1, Stack: e.Stack,
		Cols: []int64{int64(e.Op), int64(e.Object)}}
}

// AddSync adds waits to d's synchronization table, made at the first, and puts it in time order
// (stably): what a reader of another format (gprofng's) gives.
func (d *Data) AddSync(evs []SyncEvent) {
	if len(evs) == 0 {
		return
	}
	t := d.syncTable()
	for i := range evs {
		t.Add(syncRow(&evs[i]))
	}
	sortTable(t)
}

// syncTable returns d's synchronization table, made empty where it has none.
func (d *Data) syncTable() *events.Table {
	t := d.SyncTable()
	if t == nil {
		t = events.New(SyncSchema)
		if d.Tables == nil {
			d.Tables = map[string]*events.Table{}
		}
		d.Tables[SyncSchema.Name] = t
	}
	return t
}

// sumSync sums the synchronization trace tf into d's table, a row per thread and stack. Records
// it skips are counted in sk, as readEvents counts them.
func (tr *traceReader) sumSync(tf *traceScan, sk *skipped) (warning string, err error) {
	sum := newSyncSummer(tr.d.syncTable())
	return mergeTrace(tr, tf, sk, func(d *Data) *[]SyncEvent { return &d.syncEvs }, func(e *SyncEvent) int64 { return e.Time }, sum.add)
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
	r := syncRow(e)
	s.addOne(&r, 1, e.Wait)
}

// addRow adds row i of t, which stands for Count[i] waits of Dur[i] ns.
func (s *syncSummer) addRow(t *events.Table, i int) {
	r := t.Row(i)
	s.addOne(&r, t.CountAt(i), t.DurAt(i))
	s.t.Last = max(s.t.Last, t.Last)
}

func (s *syncSummer) addOne(r *events.Row, n, wait int64) {
	key := [3]uint32{r.Pid, r.Tid, r.Stack}
	i, ok := s.sites[key]
	if !ok {
		i = int32(s.t.Len())
		s.sites[key] = i
		r.Count, r.Dur = 0, 0
		s.t.Add(*r)
	}
	counts, durs := s.t.Counts(), s.t.Durs()
	counts[i] = sat.Add(counts[i], n)
	durs[i] = sat.Add(durs[i], wait)
	s.t.Last = max(s.t.Last, r.Time)
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
func sortTable(t *events.Table) {
	if !sort.IsSorted(t) {
		sort.Stable(t)
	}
}
