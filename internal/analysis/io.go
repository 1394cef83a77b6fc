package analysis

import (
	"er/internal/sat"
	"fmt"
	"slices"
	"sort"

	"er/internal/experiment"
)

// Names of I/O files that no event names (experiment.IOFiler).
const (
	UnknownFileName = experiment.UnknownFileName // a descriptor whose opening was not traced
	PipeName        = experiment.PipeName        // a descriptor made by pipe or pipe2
)

// IOGroup is the I/O of one file (Profile.IOFiles) or of one descriptor of a file (Profile.IODescriptors).
type IOGroup struct {
	Name   string  // the file's name, or UnknownFileName, PipeName, "<stdin>", "<stdout>", "<stderr>"
	FD     int32   // the descriptor (-1 when the call had none, as a failed open); -1 in IOFiles
	Values []int64 // metric values, in the order of Profile.Metrics
}

// IOStats are the statistics of I/O tracing: sizes and times of the reads and writes that
// succeeded, and the calls and time of the other operations and of the calls that failed.
type IOStats struct {
	Events       int64 // I/O events, IOInherited records included
	Read, Write  SizeStats
	Other, Error SizeStats // only Count, Time and Longest are used
	// The calls by interface: those of the system-call wrappers (read, write, open, ...), each one
	// system call, and those of stdio (fread, fwrite, printf, ...), which buffer: the system calls
	// they make are made inside libc (Kernel).
	Syscall, Stdio IOCalls
	// Kernel is the read- and write-like system calls the kernel counted for the processes while
	// they were traced, whatever made them, the collector's own left out; for the processes of
	// KernelProcs that recorded the count at their exit, of Procs (the filter does not apply).
	Kernel             IOCalls
	KernelProcs, Procs int
}

// IOCalls counts calls by class: reads, writes, other calls; Failed counts the calls of each
// class that failed.
type IOCalls struct {
	Reads, Writes, Other, Failed int64
}

func (c *IOCalls) merge(o *IOCalls) {
	c.Reads = sat.Add(c.Reads, o.Reads)
	c.Writes = sat.Add(c.Writes, o.Writes)
	c.Other = sat.Add(c.Other, o.Other)
	c.Failed = sat.Add(c.Failed, o.Failed)
}

// Total is the number of calls.
func (c *IOCalls) Total() int64 { return sat.Add(sat.Add(c.Reads, c.Writes), c.Other) }

// IsStdio says whether op is a stdio call (fopen, fread, fwrite, fprintf, ...) rather than that of
// a system-call wrapper (open, read, write, ...).
func IsStdio(op experiment.IOOp) bool { return op >= experiment.IOFopen && op < experiment.IOInherited }

func (s *IOStats) merge(o *IOStats) {
	s.Events += o.Events
	s.Read.Merge(&o.Read)
	s.Write.Merge(&o.Write)
	s.Other.Merge(&o.Other)
	s.Error.Merge(&o.Error)
	s.Syscall.merge(&o.Syscall)
	s.Stdio.merge(&o.Stdio)
	s.Kernel.merge(&o.Kernel)
	s.KernelProcs += o.KernelProcs
	s.Procs += o.Procs
}

// add counts the n calls that e, row i of an I/O table, stands for: one call, or, where the table
// was read summed, sizes (the calls' sizes and durations) and e's sums.
func (s *IOStats) add(e *experiment.IOEvent, n int64, sizes *SizeStats) {
	s.Events = sat.Add(s.Events, n)
	class := e.Op.Class()
	if class != 0 {
		api := &s.Syscall
		if IsStdio(e.Op) {
			api = &s.Stdio
		}
		switch class {
		case experiment.IORead:
			api.Reads = sat.Add(api.Reads, n)
		case experiment.IOWrite:
			api.Writes = sat.Add(api.Writes, n)
		default:
			api.Other = sat.Add(api.Other, n)
		}
		if e.Err != 0 {
			api.Failed = sat.Add(api.Failed, n)
		}
	}
	calls := func(c *SizeStats) { // the count, time and longest of the calls alone
		longest := e.Dur
		if sizes != nil {
			longest = sizes.Longest
		}
		c.Count = sat.Add(c.Count, n)
		c.Time = sat.Add(c.Time, e.Dur)
		c.Longest = max(c.Longest, longest)
	}
	switch {
	case class == 0:
	case e.Err != 0:
		calls(&s.Error)
	case class != experiment.IORead && class != experiment.IOWrite:
		calls(&s.Other)
	case sizes != nil && class == experiment.IORead:
		s.Read.Merge(sizes)
	case sizes != nil:
		s.Write.Merge(sizes)
	case class == experiment.IORead:
		s.Read.Add(e.Bytes, e.Dur)
	default:
		s.Write.Add(e.Bytes, e.Dur)
	}
}

// kernelCalls adds the system calls that the collector counted for experiment d's process at its
// exit (the note io_syscalls=READS WRITES).
func (s *IOStats) kernelCalls(d *experiment.Data) {
	s.Procs++
	for _, st := range d.Log.Settings {
		if st.Name != "collector.io_syscalls" {
			continue
		}
		var r, w int64
		if n, err := fmt.Sscanf(st.Value, "%d %d", &r, &w); n == 2 && err == nil && r >= 0 && w >= 0 {
			s.Kernel.Reads = sat.Add(s.Kernel.Reads, r)
			s.Kernel.Writes = sat.Add(s.Kernel.Writes, w)
			s.KernelProcs++
		}
		return
	}
}

// ioFile is the file of one I/O event: its name and descriptor.
type ioFile struct {
	name string
	fd   int32
}

// IOEventFiles names the file of each I/O event of d (indexed like the rows of its table) as
// experiment.IOFiler does.
func IOEventFiles(d *experiment.Data) (names []string, fds []int32) {
	files := ioEventFiles(d)
	names = make([]string, len(files))
	fds = make([]int32, len(files))
	for i, f := range files {
		names[i], fds[i] = f.name, f.fd
	}
	return names, fds
}

// ioEventFiles finds the file of each I/O event of d, each process's events in time order.
func ioEventFiles(d *experiment.Data) []ioFile {
	t := d.IOTable()
	out := make([]ioFile, t.Len())
	order := make([]int32, t.Len())
	for i := range order {
		order[i] = int32(i)
	}
	if !slices.IsSorted(t.Time) { // the reader leaves them in time order
		sort.SliceStable(order, func(a, b int) bool { return t.Time[order[a]] < t.Time[order[b]] })
	}
	var f experiment.IOFiler
	for _, i := range order {
		e := experiment.IOAt(t, int(i))
		name, fd := f.File(&e)
		out[i] = ioFile{name: name, fd: fd}
	}
	return out
}

// ioGroups sums I/O metric values by file and by descriptor.
type ioGroups struct {
	nm     int
	files  map[string]int
	fds    map[ioFile]int
	byFile []IOGroup
	byFD   []IOGroup
}

func (g *ioGroups) add(f ioFile, v []int64) {
	i, ok := g.files[f.name]
	if !ok {
		i = len(g.byFile)
		g.files[f.name] = i
		g.byFile = append(g.byFile, IOGroup{Name: f.name, FD: -1, Values: make([]int64, g.nm)})
	}
	j, ok := g.fds[f]
	if !ok {
		j = len(g.byFD)
		g.fds[f] = j
		g.byFD = append(g.byFD, IOGroup{Name: f.name, FD: f.fd, Values: make([]int64, g.nm)})
	}
	sat.AddTo(g.byFile[i].Values, v)
	sat.AddTo(g.byFD[j].Values, v)
}
