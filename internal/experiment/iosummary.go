package experiment

import (
	"strconv"

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

// IOSummary is the I/O calls of an experiment, summed per site.
type IOSummary struct {
	Sites []IOSite // in the order of their first events (time, then order in the trace)
	Last  int64    // the time of the last event
}

// IOSite is the I/O calls of one thread with one stack, of one operation on one file (as IOFiler
// finds it), that failed or not, summed.
type IOSite struct {
	Time            int64 // of its first event
	Pid, Tid, Stack uint32
	Op              IOOp
	Failed          bool
	File            string // IOFiler's name and descriptor of the calls' file
	FD              int32
	Events          int64
	Dur, Bytes      int64                // sums
	Sizes           heapreplay.SizeStats // of the calls' bytes and durations
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

// nameFiles names the I/O events evs (in time order) as ioNamer does.
func nameFiles(evs []IOEvent) {
	var n ioNamer
	for i := range evs {
		n.name(&evs[i])
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

// ioKey is what an I/O site sums the calls of.
type ioKey struct {
	pid, tid, stack uint32
	op              IOOp
	failed          bool
	file            string
	fd              int32
}

func (s *IOSite) key() ioKey {
	return ioKey{s.Pid, s.Tid, s.Stack, s.Op, s.Failed, s.File, s.FD}
}

// add sums the calls of o into s.
func (s *IOSite) add(o *IOSite) {
	s.Events = sat.Add(s.Events, o.Events)
	s.Dur, s.Bytes = sat.Add(s.Dur, o.Dur), sat.Add(s.Bytes, o.Bytes)
	s.Sizes.Merge(&o.Sizes)
}

// ioSummer sums I/O events into an IOSummary as they come, in time order; namer, unless nil, names
// them first (the reader names the events it keeps after its sort).
type ioSummer struct {
	is    *IOSummary
	namer *ioNamer
	filer IOFiler
	sites map[ioKey]int32
}

func newIOSummer(is *IOSummary, namer *ioNamer) *ioSummer {
	return &ioSummer{is: is, namer: namer, sites: map[ioKey]int32{}}
}

func (s *ioSummer) add(e *IOEvent) {
	if s.namer != nil {
		s.namer.name(e)
	}
	name, fd := s.filer.File(e)
	k := ioKey{e.Pid, e.Tid, e.Stack, e.Op, e.Err != 0, name, fd}
	i, ok := s.sites[k]
	if !ok {
		i = int32(len(s.is.Sites))
		s.sites[k] = i
		s.is.Sites = append(s.is.Sites, IOSite{Time: e.Time, Pid: e.Pid, Tid: e.Tid, Stack: e.Stack, Op: e.Op, Failed: e.Err != 0, File: name, FD: fd})
	}
	site := &s.is.Sites[i]
	site.Events++
	site.Dur, site.Bytes = sat.Add(site.Dur, e.Dur), sat.Add(site.Bytes, e.Bytes)
	site.Sizes.Add(e.Bytes, e.Dur)
	s.is.Last = max(s.is.Last, e.Time)
}

// sumIO sums the I/O trace tf into tr.d.IOSummary. Records it skips are counted in sk, as
// readEvents counts them.
func (tr *traceReader) sumIO(tf *traceScan, sk *skipped) (warning string, err error) {
	sum := newIOSummer(tr.d.IOSummary, &ioNamer{})
	return mergeTrace(tr, tf, sk, func(d *Data) *[]IOEvent { return &d.IO }, func(e *IOEvent) int64 { return e.Time }, sum.add)
}

// SummarizeIO replaces the I/O events of d (in time order and named, as the reader leaves them) with
// their sums, as reading with Options.Summed gives them.
func (d *Data) SummarizeIO() {
	if d.IOSummary == nil {
		d.IOSummary = &IOSummary{}
	}
	sum := newIOSummer(d.IOSummary, nil)
	for i := range d.IO {
		sum.add(&d.IO[i])
	}
	d.IO = nil
}

// Events returns the number of calls the sites stand for.
func (is *IOSummary) Events() int64 {
	var n int64
	for i := range is.Sites {
		n = sat.Add(n, is.Sites[i].Events)
	}
	return n
}
