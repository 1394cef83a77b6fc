package experiment

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Trace files: written inside the target by the collector library (preload/), one per data
// type, each shared by the process's threads; see docs/trace-format.md.
const (
	HeapTraceFile   = "heaptrace"
	SyncTraceFile   = "synctrace"
	IOTraceFile     = "iotrace"
	ClockTraceFile  = "clocktrace"  // clock profiling by SIGPROF, where perf events are denied
	TraceStacksFile = "tracestacks" // the stacks the other trace files refer to, mappings and notes
)

// TraceFiles lists the trace files in the order a reader reads them: data before stacks, so
// that every stack an event of a live experiment refers to has been written.
var TraceFiles = []string{HeapTraceFile, SyncTraceFile, IOTraceFile, ClockTraceFile, TraceStacksFile}

const (
	traceMagic      = "ERTRACE1"
	traceVersion    = 1
	traceHeaderSize = 4096
	traceHeaderLen  = 40 // bytes of the header that a file has at least
	// traceHeaderStopLen: the header's fields of what was not recorded (stop errno, stop time, lost
	// records) end here; they are zero in files of collectors that did not write them.
	traceHeaderStopLen = 64

	recStack = 1
	recHeap  = 2
	recSync  = 3
	recIO    = 4
	recClock = 5
	recMap   = 6
	recNote  = 7
)

// traceFileKinds are the header kinds of the trace files.
var traceFileKinds = map[string]uint32{HeapTraceFile: 1, SyncTraceFile: 2, IOTraceFile: 3, ClockTraceFile: 4, TraceStacksFile: 5}

// traceHeader is the header of a trace file.
type traceHeader struct {
	kind      uint32
	blockSize uint32
	pid       uint32
	param     uint64
	startNS   uint64
	stopErrno uint32 // the library stopped recording for good (ENOSPC: a full disk); 0: it did not
	stopNS    uint64 // when, CLOCK_MONOTONIC
	lost      uint64 // records that could not be written
}

// traceRec is one record as found in a block.
type traceRec struct {
	kind, aux uint8
	tid       uint32
	time      uint64
	body      []byte // after the 16-byte prefix
	off       int64  // file offset of the record
}

// readTraceFile reads a trace file's header and every complete record in its blocks. A zero
// record header ends a block's records (the rest was not written); a record that does not fit
// its block ends the block with a warning.
func readTraceFile(file string, b []byte) (h traceHeader, recs []traceRec, warning string, err error) {
	const hint = "the trace file is damaged; record the experiment again"
	if len(b) < traceHeaderLen {
		return h, nil, "", formatErrorf(file, 0, hint, "%d bytes: too short for a trace file header (%d bytes)", len(b), traceHeaderLen)
	}
	if string(b[:8]) != traceMagic {
		return h, nil, "", formatErrorf(file, 0, "", "not a trace file: magic %q, want %q", b[:8], traceMagic)
	}
	if v := le.Uint32(b[8:]); v != traceVersion {
		return h, nil, "", formatErrorf(file, 8, "this er reads trace version "+strconv.Itoa(traceVersion)+"; use the er that recorded it",
			"trace format version %d", v)
	}
	h = traceHeader{kind: le.Uint32(b[12:]), blockSize: le.Uint32(b[16:]), pid: le.Uint32(b[20:]),
		param: le.Uint64(b[24:]), startNS: le.Uint64(b[32:])}
	if len(b) >= traceHeaderStopLen {
		h.stopErrno, h.stopNS, h.lost = le.Uint32(b[40:]), le.Uint64(b[48:]), le.Uint64(b[56:])
	}
	if want := traceFileKinds[filepath.Base(file)]; want != 0 && h.kind != want {
		return h, nil, "", formatErrorf(file, 12, hint, "file kind %d, want %d for this name", h.kind, want)
	}
	if h.blockSize < 4096 || h.blockSize%8 != 0 || h.blockSize > 1<<26 {
		return h, nil, "", formatErrorf(file, 16, hint, "block size %d: want a multiple of 8 between 4096 and 64 MiB", h.blockSize)
	}
	if len(b) < traceHeaderSize {
		return h, nil, "", nil
	}
	bad := 0
	firstBad := int64(-1)
	whyBad := ""
	for start := int64(traceHeaderSize); start < int64(len(b)); start += int64(h.blockSize) {
		end := min(start+int64(h.blockSize), int64(len(b)))
		for off := start; off+16 <= end; {
			w := le.Uint64(b[off:])
			if w == 0 {
				break
			}
			size := int64(w&0xffff) * 8
			if size < 16 || off+size > end {
				bad++
				if firstBad < 0 {
					firstBad, whyBad = off, fmt.Sprintf("record of %d bytes does not fit its block", size)
				}
				break
			}
			recs = append(recs, traceRec{kind: uint8(w >> 16), aux: uint8(w >> 24), tid: uint32(w >> 32),
				time: le.Uint64(b[off+8:]), body: b[off+16 : off+size], off: off})
			off += size
		}
	}
	if bad > 0 {
		warning = fmt.Sprintf("%s: %d blocks end in a damaged record (first at offset %d: %s); their other records are read",
			filepath.Base(file), bad, firstBad, whyBad)
	}
	return h, recs, warning, nil
}

// traceReader turns the records of an experiment's trace files into events of d.
type traceReader struct {
	d        *Data
	stackIdx map[uint64]uint32 // (pid<<32 | trace stack id) → index in d.Stacks
	pending  []pendingStack    // events whose stacks are resolved at the end
	missing  int
	base     int64 // CLOCK_MONOTONIC of time 0
	stops    map[uint32]*traceStop
}

type pendingStack struct {
	ref *uint32
	key uint64
}

// readTraces reads the trace files of dir into d, after the perf-event files.
func readTraces(d *Data, dir string, warn func(string)) error {
	tr := &traceReader{d: d, stackIdx: map[uint64]uint32{}, base: d.Log.StartPerfNS}
	var mapsByPid map[uint32][]Mapping
	havePerfMaps := map[uint32]bool{}
	for _, m := range d.Mappings {
		havePerfMaps[m.Pid] = true
	}
	for _, name := range TraceFiles {
		file := filepath.Join(dir, name)
		b, err := readIfExists(file)
		if err != nil {
			return err
		}
		if b == nil {
			continue
		}
		h, recs, w, err := readTraceFile(file, b)
		if err != nil {
			return err
		}
		warn(w)
		if tr.base == 0 {
			tr.base = int64(h.startNS)
		}
		pid := h.pid
		warn(tr.lostData(name, h))
		switch name {
		case TraceStacksFile:
			maps, werr := tr.stacks(file, pid, recs)
			warn(werr)
			if !havePerfMaps[pid] {
				if mapsByPid == nil {
					mapsByPid = map[uint32][]Mapping{}
				}
				mapsByPid[pid] = append(mapsByPid[pid], maps...)
			}
		case ClockTraceFile:
			d.Log.Settings = append(d.Log.Settings, Setting{Name: "sigprof_interval_ns", Value: strconv.FormatUint(h.param, 10)})
			warn(tr.events(file, pid, recs, h.param))
		default:
			if name == SyncTraceFile {
				d.Log.Settings = append(d.Log.Settings, Setting{Name: "sync_threshold_ns", Value: strconv.FormatUint(h.param, 10)})
			}
			warn(tr.events(file, pid, recs, h.param))
		}
	}
	for _, p := range tr.pending {
		if idx, ok := tr.stackIdx[p.key]; ok {
			*p.ref = idx
		} else {
			*p.ref = 0
			tr.missing++
		}
	}
	tr.stopWarnings(warn)
	if tr.missing > 0 {
		warn(fmt.Sprintf("%s: %d trace events refer to stacks that were never written; they have no stack", TraceStacksFile, tr.missing))
	}
	for _, ms := range mapsByPid {
		d.Mappings = append(d.Mappings, ms...)
	}
	byTime := func(a, b int64) int { return cmp.Compare(a, b) }
	slices.SortStableFunc(d.Heap, func(a, b HeapEvent) int { return byTime(a.Time, b.Time) })
	slices.SortStableFunc(d.Sync, func(a, b SyncEvent) int { return byTime(a.Time, b.Time) })
	slices.SortStableFunc(d.IO, func(a, b IOEvent) int { return byTime(a.Time, b.Time) })
	nameFiles(d.IO)
	return nil
}

func (tr *traceReader) t(ns uint64) int64 { return int64(ns) - tr.base }

// TraceClockNS returns the CPU time the clock samples of the trace file file (a clocktrace) stand
// for, in ns; 0 when there is no such file.
func TraceClockNS(file string) (int64, error) {
	b, err := readIfExists(file)
	if err != nil || b == nil {
		return 0, err
	}
	h, recs, _, err := readTraceFile(file, b)
	if err != nil {
		return 0, err
	}
	var ns int64
	for _, r := range recs {
		if r.kind == recClock && len(r.body) >= 16 {
			ns += int64(le.Uint32(r.body[4:])) * int64(h.param)
		}
	}
	return ns, nil
}

// lostData notes what the header of the trace file name says was not recorded; stopWarnings says it.
func (tr *traceReader) lostData(name string, h traceHeader) string {
	what := map[string]string{HeapTraceFile: "heap events", SyncTraceFile: "synchronization waits", IOTraceFile: "I/O calls",
		ClockTraceFile: "clock samples", TraceStacksFile: "call stacks"}[name]
	if h.stopErrno != 0 {
		if tr.stops == nil {
			tr.stops = map[uint32]*traceStop{}
		}
		st := tr.stops[h.pid]
		if st == nil {
			st = &traceStop{errno: h.stopErrno, ns: h.stopNS}
			tr.stops[h.pid] = st
		}
		st.what = append(st.what, what)
		st.heap = st.heap || name == HeapTraceFile
	}
	if h.lost != 0 {
		return fmt.Sprintf("%s: %d records of process %d could not be written (no memory or descriptor for a new block): some %s are missing",
			name, h.lost, h.pid, what)
	}
	return ""
}

// traceStop is a process whose collector library stopped recording for good.
type traceStop struct {
	errno uint32
	ns    uint64
	what  []string
	heap  bool
}

// stopWarnings says, for each process whose library stopped recording, when and why, and what is missing.
func (tr *traceReader) stopWarnings(warn func(string)) {
	pids := slices.Sorted(maps.Keys(tr.stops))
	for _, pid := range pids {
		st := tr.stops[pid]
		s := fmt.Sprintf("the collector library stopped recording in process %d at %.3f s: %v; the %s after that are missing",
			pid, float64(tr.t(st.ns))/1e9, syscall.Errno(st.errno), strings.Join(st.what, ", "))
		if st.heap {
			s += " (blocks freed after that are shown as leaks)"
		}
		warn(s)
	}
}

// stacks reads the stacks, mappings and notes of a stacks file.
func (tr *traceReader) stacks(file string, pid uint32, recs []traceRec) (maps []Mapping, warning string) {
	bad := 0
	open := map[uint64]int{} // start → index in maps of a mapping not yet unmapped
	for _, r := range recs {
		switch r.kind {
		case recStack:
			if len(r.body) < 8 {
				bad++
				continue
			}
			id, n := le.Uint32(r.body), le.Uint32(r.body[4:])
			if uint64(n)*8 > uint64(len(r.body)-8) {
				bad++
				continue
			}
			s := make(Stack, n)
			for i := range s {
				s[i] = le.Uint64(r.body[8+8*i:])
			}
			key := uint64(pid)<<32 | uint64(id)
			if _, dup := tr.stackIdx[key]; dup {
				continue
			}
			tr.stackIdx[key] = uint32(len(tr.d.Stacks))
			tr.d.Stacks = append(tr.d.Stacks, s)
		case recMap:
			if len(r.body) < 32 {
				bad++
				continue
			}
			start, end, off := le.Uint64(r.body), le.Uint64(r.body[8:]), le.Uint64(r.body[16:])
			pl := le.Uint32(r.body[24:])
			if uint64(pl) > uint64(len(r.body)-32) {
				bad++
				continue
			}
			if r.aux == 1 {
				if i, ok := open[start]; ok {
					maps[i].UnloadTime = tr.t(r.time)
					delete(open, start)
				}
				continue
			}
			if end <= start {
				bad++
				continue
			}
			load := max(tr.t(r.time), 0)
			if r.aux == 2 { // mapped before the library started: there from time 0 on, as /proc/PID/maps mappings are
				load = 0
			}
			open[start] = len(maps)
			maps = append(maps, Mapping{Pid: pid, Start: start, End: end, Offset: off, Path: string(r.body[32 : 32+pl]),
				LoadTime: load, UnloadTime: -1})
		case recNote:
			text := string(trimNUL(r.body))
			k, v, ok := cutEq(text)
			if !ok {
				bad++
				continue
			}
			tr.d.Log.Settings = append(tr.d.Log.Settings, Setting{Name: "collector." + k, Value: v})
		default:
			bad++
		}
	}
	if bad > 0 {
		warning = fmt.Sprintf("%s: %d malformed or unknown records skipped", filepath.Base(file), bad)
	}
	return maps, warning
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

func cutEq(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			return s[:i], s[i+1:], i > 0
		}
	}
	return "", "", false
}

// events reads the events of a heap, sync, I/O or clock trace file. param is the header's
// parameter (the clock interval for clock files).
func (tr *traceReader) events(file string, pid uint32, recs []traceRec, param uint64) string {
	d := tr.d
	bad := 0
	ref := func(p *uint32, id uint32) {
		if id == 0 {
			*p = 0
			return
		}
		tr.pending = append(tr.pending, pendingStack{ref: p, key: uint64(pid)<<32 | uint64(id)})
	}
	// Events are appended first and their stack references resolved later, by pointer: the
	// slices must not grow after the pointers are taken, so count first.
	var nh, ns, ni, nc int
	for _, r := range recs {
		switch r.kind {
		case recHeap:
			nh++
		case recSync:
			ns++
		case recIO:
			ni++
		case recClock:
			nc++
		}
	}
	d.Heap = slices.Grow(d.Heap, nh)
	d.Sync = slices.Grow(d.Sync, ns)
	d.IO = slices.Grow(d.IO, ni)
	d.Clock = slices.Grow(d.Clock, nc)
	for _, r := range recs {
		b := r.body
		switch r.kind {
		case recHeap:
			if len(b) == 8 && HeapOp(r.aux) == HeapFree { // the short form of a free
				d.Heap = append(d.Heap, HeapEvent{Time: tr.t(r.time), Pid: pid, Tid: r.tid, Op: HeapFree, Old: le.Uint64(b)})
				continue
			}
			if len(b) == 16 { // the short form of an allocation that frees nothing
				d.Heap = append(d.Heap, HeapEvent{Time: tr.t(r.time), Pid: pid, Tid: r.tid, Op: HeapOp(r.aux),
					Addr: le.Uint64(b[8:]), Size: uint64(le.Uint32(b[4:]))})
				ref(&d.Heap[len(d.Heap)-1].Stack, le.Uint32(b))
				continue
			}
			if len(b) < 32 {
				bad++
				continue
			}
			d.Heap = append(d.Heap, HeapEvent{Time: tr.t(r.time), Pid: pid, Tid: r.tid, Op: HeapOp(r.aux),
				Addr: le.Uint64(b[8:]), Size: le.Uint64(b[16:]), Old: le.Uint64(b[24:])})
			ref(&d.Heap[len(d.Heap)-1].Stack, le.Uint32(b))
		case recSync:
			if len(b) < 24 {
				bad++
				continue
			}
			d.Sync = append(d.Sync, SyncEvent{Time: tr.t(r.time), Pid: pid, Tid: r.tid, Op: SyncOp(r.aux),
				Wait: int64(le.Uint64(b[8:])), Object: le.Uint64(b[16:])})
			ref(&d.Sync[len(d.Sync)-1].Stack, le.Uint32(b))
		case recIO:
			if len(b) < 48 {
				bad++
				continue
			}
			nl := le.Uint32(b[4:])
			if uint64(nl) > uint64(len(b)-48) {
				bad++
				continue
			}
			e := IOEvent{Time: tr.t(r.time), Pid: pid, Tid: r.tid, Op: IOOp(r.aux), Dur: int64(le.Uint64(b[8:])),
				FD: int32(le.Uint32(b[16:])), FD2: int32(le.Uint32(b[20:])), Ret: int64(le.Uint64(b[24:])),
				Bytes: int64(le.Uint64(b[32:])), Err: int32(le.Uint32(b[40:])), File: string(b[48 : 48+nl])}
			d.IO = append(d.IO, e)
			ref(&d.IO[len(d.IO)-1].Stack, le.Uint32(b))
		case recClock:
			if len(b) < 16 {
				bad++
				continue
			}
			count := int64(le.Uint32(b[4:]))
			d.Clock = append(d.Clock, ClockSample{Time: tr.t(r.time), Pid: pid, Tid: r.tid, CPU: le.Uint32(b[8:]),
				Mode: ModeUnknown, Period: count * int64(param)})
			ref(&d.Clock[len(d.Clock)-1].Stack, le.Uint32(b))
		default:
			bad++
		}
	}
	if bad > 0 {
		return fmt.Sprintf("%s: %d malformed or unknown records skipped", filepath.Base(file), bad)
	}
	return ""
}

// nameFiles gives every I/O event the name of its file, following each process's descriptors
// through open, dup, pipe and close in time order.
func nameFiles(evs []IOEvent) {
	type pfd struct {
		pid uint32
		fd  int32
	}
	names := map[pfd]string{}
	for i := range evs {
		e := &evs[i]
		k := pfd{e.Pid, e.FD}
		switch e.Op {
		case IOInherited:
			names[k] = e.File
			continue
		case IOOpen, IOOpenat, IOCreat, IOFopen, IOFreopen:
			if e.Err == 0 && e.FD >= 0 {
				names[k] = e.File
			}
			continue
		case IOPipe, IOPipe2:
			if e.Err == 0 {
				names[k] = "<pipe>"
				names[pfd{e.Pid, e.FD2}] = "<pipe>"
			}
		case IODup:
			if e.Err == 0 {
				names[pfd{e.Pid, int32(e.Ret)}] = names[k]
			}
		case IODup2, IODup3:
			if e.Err == 0 {
				names[pfd{e.Pid, e.FD2}] = names[k]
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
}

// hasTraceFiles reports whether dir holds any trace file.
func hasTraceFiles(dir string) bool {
	for _, n := range TraceFiles {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// TraceMappings returns the load-object mappings that the collector library recorded in the
// experiment dir (none when it holds no trace files).
func TraceMappings(dir string) ([]Mapping, error) {
	file := filepath.Join(dir, TraceStacksFile)
	b, err := readIfExists(file)
	if err != nil || b == nil {
		return nil, err
	}
	h, recs, _, err := readTraceFile(file, b)
	if err != nil {
		return nil, err
	}
	tr := &traceReader{d: &Data{}, stackIdx: map[uint64]uint32{}, base: int64(h.startNS)}
	maps, _ := tr.stacks(file, h.pid, recs)
	return maps, nil
}
