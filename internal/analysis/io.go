package analysis

import (
	"er/internal/sat"
	"fmt"
	"sort"

	"er/internal/experiment"
)

// Names of I/O files that no event names.
const (
	UnknownFileName = "<unknown file>" // a descriptor whose opening was not traced
	PipeName        = "<pipe>"         // a descriptor made by pipe or pipe2
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

// add counts event e.
func (s *IOStats) add(e *experiment.IOEvent) {
	class := e.Op.Class()
	if class != 0 {
		api := &s.Syscall
		if IsStdio(e.Op) {
			api = &s.Stdio
		}
		switch class {
		case experiment.IORead:
			api.Reads++
		case experiment.IOWrite:
			api.Writes++
		default:
			api.Other++
		}
		if e.Err != 0 {
			api.Failed++
		}
	}
	switch {
	case class == 0:
	case e.Err != 0:
		s.Error.Count++
		s.Error.Time = sat.Add(s.Error.Time, e.Dur)
		s.Error.Longest = max(s.Error.Longest, e.Dur)
	case class == experiment.IORead:
		s.Read.Add(e.Bytes, e.Dur)
	case class == experiment.IOWrite:
		s.Write.Add(e.Bytes, e.Dur)
	default:
		s.Other.Count++
		s.Other.Time = sat.Add(s.Other.Time, e.Dur)
		s.Other.Longest = max(s.Other.Longest, e.Dur)
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

// IOEventFiles names the file of each I/O event of d (indexed like d.IO), replaying each process's
// events in time order to know what its descriptors are: an event's own File when it has one,
// else the name its descriptor got from the call that opened it (open, fopen, dup, pipe, or an
// IOInherited record), else "<stdin>", "<stdout>" or "<stderr>" for descriptors 0 to 2 and
// UnknownFileName for others. The descriptor is the one the call operated on; for the calls that
// open one, the descriptor they returned.
func IOEventFiles(d *experiment.Data) (names []string, fds []int32) {
	files := ioEventFiles(d)
	names = make([]string, len(files))
	fds = make([]int32, len(files))
	for i, f := range files {
		names[i], fds[i] = f.name, f.fd
	}
	return names, fds
}

func ioEventFiles(d *experiment.Data) []ioFile {
	out := make([]ioFile, len(d.IO))
	byPid := map[uint32][]int32{}
	for i := range d.IO {
		byPid[d.IO[i].Pid] = append(byPid[d.IO[i].Pid], int32(i))
	}
	for _, evs := range byPid {
		sort.SliceStable(evs, func(a, b int) bool { return d.IO[evs[a]].Time < d.IO[evs[b]].Time })
		table := map[int32]string{}
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
		for _, i := range evs {
			e := &d.IO[i]
			fd := e.FD
			ok := e.Err == 0
			switch e.Op {
			case experiment.IOOpen, experiment.IOOpenat, experiment.IOCreat:
				if fd < 0 && ok && e.Ret >= 0 {
					fd = int32(e.Ret)
				}
			}
			name := e.File
			if name == "" {
				switch {
				case (e.Op == experiment.IOPipe || e.Op == experiment.IOPipe2) && ok:
					name = PipeName
				case fd >= 0:
					name = nameOf(fd)
				default:
					name = UnknownFileName
				}
			}
			out[i] = ioFile{name: name, fd: fd}
			switch e.Op {
			case experiment.IOInherited:
				if fd >= 0 && e.File != "" {
					table[fd] = e.File
				}
			case experiment.IOOpen, experiment.IOOpenat, experiment.IOCreat, experiment.IOFopen,
				experiment.IOFdopen, experiment.IOFreopen:
				if ok && fd >= 0 {
					table[fd] = name
				}
			case experiment.IODup:
				if ok && e.Ret >= 0 {
					table[int32(e.Ret)] = name
				}
			case experiment.IODup2, experiment.IODup3:
				if ok && e.FD2 >= 0 {
					table[e.FD2] = name
				}
			case experiment.IOPipe, experiment.IOPipe2:
				if ok {
					if e.FD >= 0 {
						table[e.FD] = name
					}
					if e.FD2 >= 0 {
						table[e.FD2] = name
					}
				}
			case experiment.IOClose, experiment.IOFclose:
				if ok {
					delete(table, fd)
				}
			}
		}
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
