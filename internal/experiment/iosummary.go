package experiment

import (
	"strconv"

	"er/internal/events"
	"er/internal/heapreplay"
	"er/internal/sat"
)

// I/O traces summed as they are read (Options.Summed): the events come from mergeTrace in the order
// a full read gives them, each is named as the full read names it (ioNamer) and its file found as the
// views find it (IOFiler), and the sum keeps one site per thread, stack, operation, outcome and file.

// Names of I/O files that no event names.
const (
	UnknownFileName = "<unknown file>" // a descriptor whose opening was not traced
	PipeName        = "<pipe>"         // a descriptor made by pipe or pipe2
)

// IOSchema is the table of the I/O calls (IOTable): the header's dur is the call's, its cpu -1
// (the library records none). A row is one call, or, read summed (Options.Summed), the calls of one
// thread with one stack, of one operation on one file (as IOFiler finds it), that failed or not:
// its count is theirs, its dur and nbyte their sums, its time the first's, its fd and file
// IOFiler's, its other columns the first's (its err is not 0 where they failed). A summed table's
// Side is a heapreplay.SizeStats a row, of the calls' bytes and durations (IOSizes).
var IOSchema = &events.Schema{Name: "io", File: IOTraceFile, Columns: []events.Column{
	{Name: "ioop", Title: "the I/O function", Type: events.U8},
	{Name: "iofd", Title: "file descriptor operated on (a stream's descriptor); -1 for none", Type: events.I32},
	{Name: "iofd2", Title: "the second descriptor: pipe's write end, dup2's target; -1 for none", Type: events.I32},
	{Name: "ioret", Title: "the call's result: bytes moved, the new descriptor, the offset", Type: events.I64},
	{Name: "ionbyte", Title: "bytes read or written; 0 for other calls and for errors", Unit: "bytes", Type: events.I64},
	{Name: "ioerr", Title: "errno when the call failed, else 0", Type: events.I32},
	{Name: "iofile", Title: "the file's name", Type: events.Str},
}}

// The columns of IOSchema.
const (
	IOColOp = iota
	IOColFD
	IOColFD2
	IOColRet
	IOColBytes
	IOColErr
	IOColFile
)

// IOTable returns d's I/O calls (nil when it has none).
func (d *Data) IOTable() *events.Table { return d.Tables[IOSchema.Name] }

// ioTable returns d's I/O table, made empty where it has none.
func (d *Data) ioTable() *events.Table { return d.table(IOSchema) }

// IOSizes returns the size histograms of the rows of t, an I/O table read summed; nil where it was
// read in full.
func IOSizes(t *events.Table) []heapreplay.SizeStats {
	if t == nil {
		return nil
	}
	s, _ := t.Side.([]heapreplay.SizeStats)
	return s
}

// IOAt returns row i of t, an I/O table, as an event (of the row's count of calls, summed).
func IOAt(t *events.Table, i int) IOEvent {
	c := t.Cols
	return IOEvent{Time: t.Time[i], Pid: t.Pid[i], Tid: t.Tid[i], Stack: t.Stack[i], Op: IOOp(c[IOColOp].At(i)),
		Dur: t.DurAt(i), FD: int32(c[IOColFD].At(i)), FD2: int32(c[IOColFD2].At(i)), Ret: c[IOColRet].At(i),
		Bytes: c[IOColBytes].At(i), Err: int32(c[IOColErr].At(i)), File: t.Str(IOColFile, i)}
}

// IOEvents returns the rows of d's I/O table as events, in table order: for tools and tests that
// look at each call.
func (d *Data) IOEvents() []IOEvent {
	t := d.IOTable()
	out := make([]IOEvent, t.Len())
	for i := range out {
		out[i] = IOAt(t, i)
	}
	return out
}

// AddIO adds calls to d's I/O table, made at the first, and puts it in time order (stably): what a
// reader of another format (gprofng's) gives. Their files are as given.
func (d *Data) AddIO(evs []IOEvent) {
	if len(evs) == 0 {
		return
	}
	t := d.ioTable()
	for i := range evs {
		addIO(t, &evs[i], t.Intern(evs[i].File))
	}
	t.SortByTime()
}

// addIO adds e to t, a table of IOSchema, as one call; file is its name's value in t.
func addIO(t *events.Table, e *IOEvent, file int64) {
	t.AddHeader(e.Time, e.Dur, 1, e.Pid, e.Tid, -1, e.Stack)
	c := t.Cols
	c[IOColOp].Append(int64(e.Op))
	c[IOColFD].Append(int64(e.FD))
	c[IOColFD2].Append(int64(e.FD2))
	c[IOColRet].Append(e.Ret)
	c[IOColBytes].Append(e.Bytes)
	c[IOColErr].Append(int64(e.Err))
	c[IOColFile].Append(file)
}

// addIOEvent adds call e to d: to its table, or, where a merge of the trace reads it
// (Options.Summed, mergeTrace), to the events the merge takes.
func (d *Data) addIOEvent(e IOEvent, name []byte) {
	if d.mergeIO {
		e.File = string(name)
		d.ioEvs = append(d.ioEvs, e)
		return
	}
	t := d.ioTable()
	addIO(t, &e, t.InternBytes(name))
}

// ioNamer gives each I/O event without a file name the name its descriptor got from the call that
// opened it, following each process's descriptors through open, dup, pipe and close in time order.
type ioNamer struct {
	names map[[2]int64]string // pid, fd
}

func (n *ioNamer) name(e *IOEvent) {
	if n.names == nil {
		n.names = map[[2]int64]string{}
	}
	names := n.names
	k := [2]int64{int64(e.Pid), int64(e.FD)}
	switch e.Op {
	case IOInherited:
		names[k] = e.File
		return
	case IOOpen, IOOpenat, IOCreat, IOFopen, IOFreopen:
		if e.Err == 0 && e.FD >= 0 {
			names[k] = e.File
		}
		return
	case IOPipe, IOPipe2:
		if e.Err == 0 {
			names[k] = PipeName
			names[[2]int64{int64(e.Pid), int64(e.FD2)}] = PipeName
		}
	case IODup:
		if e.Err == 0 {
			names[[2]int64{int64(e.Pid), int64(int32(e.Ret))}] = names[k]
		}
	case IODup2, IODup3:
		if e.Err == 0 {
			names[[2]int64{int64(e.Pid), int64(e.FD2)}] = names[k]
		}
	}
	if e.File == "" {
		switch name, ok := names[k]; {
		case e.FD < 0:
			e.File = "<all streams>"
		case ok && name != "":
			e.File = name
		default:
			e.File = "<fd " + strconv.Itoa(int(e.FD)) + ">"
		}
	}
	if (e.Op == IOClose || e.Op == IOFclose) && e.Err == 0 {
		delete(names, k)
	}
}

// nameFiles names the I/O calls of t (in time order) as ioNamer does.
func nameFiles(t *events.Table) {
	var n ioNamer
	files := &t.Cols[IOColFile]
	for i := range t.Len() {
		e := IOAt(t, i)
		before := e.File
		n.name(&e)
		if e.File != before {
			files.Set(i, t.Intern(e.File))
		}
	}
}

// IOFiler finds the file of each I/O event, given each process's events in time order: the event's
// own File when it has one, else the name its descriptor got from the call that opened it (open,
// fopen, dup, pipe, or an IOInherited record), else "<stdin>", "<stdout>" or "<stderr>" for
// descriptors 0 to 2 and UnknownFileName for others. The descriptor is the one the call operated on;
// for the calls that open one, the descriptor they returned.
type IOFiler struct {
	tables map[uint32]map[int32]string // pid -> fd -> name
}

// File returns the name and descriptor of event e's file.
func (f *IOFiler) File(e *IOEvent) (name string, fd int32) {
	if f.tables == nil {
		f.tables = map[uint32]map[int32]string{}
	}
	table := f.tables[e.Pid]
	if table == nil {
		table = map[int32]string{}
		f.tables[e.Pid] = table
	}
	nameOf := func(fd int32) string {
		if n, ok := table[fd]; ok {
			return n
		}
		switch fd {
		case 0:
			return "<stdin>"
		case 1:
			return "<stdout>"
		case 2:
			return "<stderr>"
		}
		return UnknownFileName
	}
	fd = e.FD
	ok := e.Err == 0
	switch e.Op {
	case IOOpen, IOOpenat, IOCreat:
		if fd < 0 && ok && e.Ret >= 0 {
			fd = int32(e.Ret)
		}
	}
	name = e.File
	if name == "" {
		switch {
		case (e.Op == IOPipe || e.Op == IOPipe2) && ok:
			name = PipeName
		case fd >= 0:
			name = nameOf(fd)
		default:
			name = UnknownFileName
		}
	}
	switch e.Op {
	case IOInherited:
		if fd >= 0 && e.File != "" {
			table[fd] = e.File
		}
	case IOOpen, IOOpenat, IOCreat, IOFopen, IOFdopen, IOFreopen:
		if ok && fd >= 0 {
			table[fd] = name
		}
	case IODup:
		if ok && e.Ret >= 0 {
			table[int32(e.Ret)] = name
		}
	case IODup2, IODup3:
		if ok && e.FD2 >= 0 {
			table[e.FD2] = name
		}
	case IOPipe, IOPipe2:
		if ok {
			if e.FD >= 0 {
				table[e.FD] = name
			}
			if e.FD2 >= 0 {
				table[e.FD2] = name
			}
		}
	case IOClose, IOFclose:
		if ok {
			delete(table, fd)
		}
	}
	return name, fd
}

// ioKey is what a summed row of I/O calls stands for the calls of.
type ioKey struct {
	pid, tid, stack uint32
	op              IOOp
	failed          bool
	file            int64 // the value of the name in the table
	fd              int32
}

// ioRowKey is the key of row i of t, a summed I/O table.
func ioRowKey(t *events.Table, i int) ioKey {
	c := t.Cols
	return ioKey{t.Pid[i], t.Tid[i], t.Stack[i], IOOp(c[IOColOp].At(i)), c[IOColErr].At(i) != 0, c[IOColFile].At(i), int32(c[IOColFD].At(i))}
}

// ioSummer sums I/O calls into the rows of a table as they come, in time order; namer, unless nil,
// names them first (the reader names the calls it keeps after its sort).
type ioSummer struct {
	t     *events.Table
	namer *ioNamer
	filer IOFiler
	rows  map[ioKey]int32
}

// newIOSummer sums into t, whose rows (another instance's, summed) go on.
func newIOSummer(t *events.Table, namer *ioNamer) *ioSummer {
	s := &ioSummer{t: t, namer: namer, rows: map[ioKey]int32{}}
	for i := range t.Len() {
		s.rows[ioRowKey(t, i)] = int32(i)
	}
	if IOSizes(t) == nil {
		t.Side = []heapreplay.SizeStats{}
	}
	return s
}

func (s *ioSummer) add(e *IOEvent) {
	if s.namer != nil {
		s.namer.name(e)
	}
	t := s.t
	name, fd := s.filer.File(e)
	file := t.Intern(name)
	k := ioKey{e.Pid, e.Tid, e.Stack, e.Op, e.Err != 0, file, fd}
	sizes := t.Side.([]heapreplay.SizeStats)
	i, ok := s.rows[k]
	if !ok {
		i = int32(t.Len())
		s.rows[k] = i
		first := *e
		first.FD, first.Bytes = fd, 0
		addIO(t, &first, file)
		t.Counts()[i], t.Durs()[i] = 0, 0
		sizes = append(sizes, heapreplay.SizeStats{})
		t.Side = sizes
	}
	counts, durs, bytes := t.Counts(), t.Durs(), &t.Cols[IOColBytes]
	counts[i]++
	durs[i] = sat.Add(durs[i], e.Dur)
	bytes.Set(int(i), sat.Add(bytes.At(int(i)), e.Bytes))
	sizes[i].Add(e.Bytes, e.Dur)
	t.Last = max(t.Last, e.Time)
}

// mergeIORows merges the rows of t, a summed I/O table, from row first on that have the same key
// (two stack ids of a trace can be one stack once resolved) into the first of them, keeping the
// order.
func mergeIORows(t *events.Table, first int) {
	sizes := IOSizes(t)
	seen := map[ioKey]int{}
	for i := range first {
		seen[ioRowKey(t, i)] = i
	}
	out := first
	counts, durs, bytes := t.Counts(), t.Durs(), &t.Cols[IOColBytes]
	for i := first; i < t.Len(); i++ {
		k := ioRowKey(t, i)
		if j, ok := seen[k]; ok {
			counts[j] = sat.Add(counts[j], counts[i])
			durs[j] = sat.Add(durs[j], durs[i])
			bytes.Set(j, sat.Add(bytes.At(j), bytes.At(i)))
			sizes[j].Merge(&sizes[i])
			continue
		}
		seen[k] = out
		t.CopyRow(out, i)
		sizes[out] = sizes[i]
		out++
	}
	t.Truncate(out)
	t.Side = sizes[:out]
}

// sumIO sums the I/O trace tf into tr.d's table, a row per thread, stack, operation, outcome and
// file. Records it skips are counted in sk, as readEvents counts them.
func (tr *traceReader) sumIO(tf *traceScan, sk *skipped) (warning string, err error) {
	sum := newIOSummer(tr.d.ioTable(), &ioNamer{})
	return mergeTrace(tr, tf, sk, ioMergeEvents, func(e *IOEvent) int64 { return e.Time }, sum.add)
}

// ioMergeEvents is where a merge of the I/O trace finds d's calls (mergeTrace).
func ioMergeEvents(d *Data) *[]IOEvent {
	d.mergeIO = true
	return &d.ioEvs
}

// SummarizeIO replaces the I/O calls of d (in time order and named, as the reader leaves them) with
// their sums, as reading with Options.Summed gives them.
func (d *Data) SummarizeIO() {
	t := d.IOTable()
	if t == nil {
		return
	}
	sum := newIOSummer(events.New(IOSchema), nil)
	for i := range t.Len() {
		e := IOAt(t, i)
		sum.add(&e)
	}
	d.Tables[IOSchema.Name] = sum.t
}
