package experiment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"er/internal/events"
	"er/internal/regfile"
)

// Trace files: written inside the target by the collector library (preload/), one per data
// type, each shared by the process's threads; see docs/trace-format.md. Their names, record
// kinds and layouts are generated from internal/tracedef (tracelayout.go).

// TraceFiles lists the trace files in the order a reader reads them: data before stacks, so
// that every stack an event of a live experiment refers to has been written.
var TraceFiles = []string{HeapTraceFile, SyncTraceFile, IOTraceFile, ClockTraceFile, OMPTraceFile, JavaTraceFile, DynTextFile, TraceStacksFile}

const (
	traceHeaderLen = fileHeaderStopErrno // bytes of the header that a file has at least
	// traceHeaderStopLen: the header's fields of what was not recorded (stop errno, stop time, lost
	// records) end here; they are zero in files of collectors that did not write them.
	traceHeaderStopLen = sizeofFileHeader
	// The block sizes the reader accepts (the library's is ER_BLOCK_SIZE), a multiple of 8.
	minBlockSize = 4096
	maxBlockSize = 1 << 26
)

// traceFileKinds are the header kinds of the trace files.
var traceFileKinds = map[string]uint32{HeapTraceFile: fileHeap, SyncTraceFile: fileSync, IOTraceFile: fileIO,
	ClockTraceFile: fileClock, OMPTraceFile: fileOMP, JavaTraceFile: fileJava, DynTextFile: fileDyn, TraceStacksFile: fileStacks}

// eventKinds are the kinds of the records in each kind of trace file that holds events.
var eventKinds = map[uint32]uint8{fileHeap: recHeap, fileSync: recSync, fileIO: recIO, fileClock: recClock}

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
	body      []byte // after the 16-byte prefix; valid only while the record is being handled
	off       int64  // file offset of the record
}

// u32 and u64 read the field of the record at off, an offset from the start of the record (the
// offsets above).
func (r *traceRec) u32(off int) uint32 { return le.Uint32(r.body[off-sizeofRec:]) }
func (r *traceRec) u64(off int) uint64 { return le.Uint64(r.body[off-sizeofRec:]) }
func (r *traceRec) u16(off int) uint16 { return le.Uint16(r.body[off-sizeofRec:]) }

// tail returns the bytes of the record from off on (a name or path after its struct).
func (r *traceRec) tail(off int) []byte { return r.body[off-sizeofRec:] }

// Ranges of trace record fields that er print sums (docs/trace-format.md, "Ranges").
const (
	maxUserBytes    = 1 << 57 // bytes a process can allocate or move in one call: its address space
	minClockIval    = 100_000 // ns: the clock intervals er collect -p allows
	maxClockIval    = 1_000_000_000
	maxSamplePeriod = 60_000_000_000 // ns a clock sample may stand for, its count times the interval
)

const traceHint = "the trace file is damaged; record the experiment again"

// parseTraceHeader checks the header of a trace file of size bytes, of which b holds the first
// (at most traceHeaderSize).
func parseTraceHeader(file string, b []byte) (h traceHeader, err error) {
	if len(b) < traceHeaderLen {
		return h, formatErrorf(file, 0, traceHint, "%d bytes: too short for a trace file header (%d bytes)", len(b), traceHeaderLen)
	}
	if string(b[fileHeaderMagic:fileHeaderMagic+len(traceMagic)]) != traceMagic {
		return h, formatErrorf(file, fileHeaderMagic, "", "not a trace file: magic %q, want %q", b[:8], traceMagic)
	}
	if v := le.Uint32(b[fileHeaderVersion:]); v != traceVersion {
		return h, formatErrorf(file, fileHeaderVersion, "this er reads trace version "+strconv.Itoa(traceVersion)+"; use the er that recorded it",
			"trace format version %d", v)
	}
	h = traceHeader{kind: le.Uint32(b[fileHeaderKind:]), blockSize: le.Uint32(b[fileHeaderBlockSize:]),
		pid: le.Uint32(b[fileHeaderPid:]), param: le.Uint64(b[fileHeaderParam:]), startNS: le.Uint64(b[fileHeaderStartNS:])}
	if len(b) >= traceHeaderStopLen {
		h.stopErrno, h.stopNS, h.lost = le.Uint32(b[fileHeaderStopErrno:]), le.Uint64(b[fileHeaderStopNS:]), le.Uint64(b[fileHeaderLost:])
	}
	if want := traceFileKinds[filepath.Base(file)]; want != 0 && h.kind != want {
		return h, formatErrorf(file, fileHeaderKind, traceHint, "file kind %d, want %d for this name", h.kind, want)
	}
	if h.blockSize < minBlockSize || h.blockSize%8 != 0 || h.blockSize > maxBlockSize {
		return h, formatErrorf(file, fileHeaderBlockSize, traceHint, "block size %d: want a multiple of 8 between 4096 and 64 MiB", h.blockSize)
	}
	if h.kind == traceFileKinds[ClockTraceFile] && (h.param < minClockIval || h.param > maxClockIval) {
		return h, formatErrorf(file, fileHeaderParam, traceHint, "clock interval %d ns: want %d to %d ns", h.param, minClockIval, maxClockIval)
	}
	if h.startNS > 1<<62 {
		return h, formatErrorf(file, fileHeaderStartNS, traceHint, "start time %d ns: want 0 to 2^62 ns", h.startNS)
	}
	return h, nil
}

// traceScan is one trace file being read: its blocks are read one at a time, so that memory does
// not grow with the file (a trace can be larger than the memory).
type traceScan struct {
	name string // the file's path, for messages
	r    io.ReaderAt
	size int64 // bytes when opened; later bytes are not read
	fd   int   // the descriptor, to skip holes; -1 when r is not a file
	h    traceHeader
	buf  []byte
}

// openTrace reads and checks the header of the trace file r of size bytes.
func openTrace(name string, r io.ReaderAt, size int64, fd int) (*traceScan, error) {
	hb := make([]byte, min(size, traceHeaderSize))
	if _, err := r.ReadAt(hb, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	h, err := parseTraceHeader(name, hb)
	if err != nil {
		return nil, err
	}
	return &traceScan{name: name, r: r, size: size, fd: fd, h: h}, nil
}

// scan calls fn with every complete record of the file's blocks, in file order. A zero record
// header ends a block's records (the rest was not written); a record that does not fit its block
// ends the block, and the warning says how many blocks did so.
func (tf *traceScan) scan(fn func(r *traceRec)) (warning string, err error) {
	if tf.buf == nil && tf.size > traceHeaderSize {
		tf.buf = make([]byte, min(int64(tf.h.blockSize), tf.size-traceHeaderSize)) // no larger than the file's blocks
	}
	var d damage
	if err := tf.scanRange(tf.buf, traceHeaderSize, tf.size, fn, &d); err != nil {
		return "", err
	}
	return d.warning(tf.name), nil
}

// parts splits the file's blocks into at most n ranges [lo, hi) of about equal size, each at
// least minPart bytes, in file order.
func (tf *traceScan) parts(n int, minPart int64) [][2]int64 {
	bs := int64(tf.h.blockSize)
	blocks := (tf.size - traceHeaderSize + bs - 1) / bs
	n = int(max(min(int64(n), (tf.size-traceHeaderSize)/max(minPart, 1)), 1))
	ps := make([][2]int64, 0, n)
	for i := range int64(n) {
		lo, hi := traceHeaderSize+blocks*i/int64(n)*bs, traceHeaderSize+blocks*(i+1)/int64(n)*bs
		if hi > lo {
			ps = append(ps, [2]int64{lo, min(hi, tf.size)})
		}
	}
	return ps
}

// damage counts the blocks of a scan that end in a record that does not fit them.
type damage struct {
	bad      int
	firstBad int64
	whyBad   string
}

func (d *damage) add(o damage) {
	if o.bad > 0 && d.bad == 0 {
		d.firstBad, d.whyBad = o.firstBad, o.whyBad
	}
	d.bad += o.bad
}

func (d *damage) warning(file string) string {
	if d.bad == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d blocks end in a damaged record (first at offset %d: %s); their other records are read",
		filepath.Base(file), d.bad, d.firstBad, d.whyBad)
}

// scanRange is scan over the blocks from offset lo (a block's start) to hi, reading each into buf
// (a block long, or the file's size when smaller); it adds the blocks that end in a damaged record
// to dm.
func (tf *traceScan) scanRange(buf []byte, lo, hi int64, fn func(r *traceRec), dm *damage) error {
	bs := int64(tf.h.blockSize)
	var r traceRec
	for start := lo; start < hi; start += bs {
		if next, ok := tf.nextData(start); !ok {
			break
		} else if next >= start+bs {
			start += (next - start) / bs * bs // a hole of whole blocks: nothing was written there
			if start >= hi {
				break
			}
		}
		b := buf[:min(bs, tf.size-start)]
		if n, err := tf.r.ReadAt(b, start); n < len(b) {
			if err == nil || errors.Is(err, io.EOF) { // cut short while reading: what is there
				b = b[:n]
			} else {
				return fmt.Errorf("%s: %w", tf.name, err)
			}
		}
		for off := 0; off+sizeofRec <= len(b); {
			w := le.Uint64(b[off:]) // size8, kind, aux and tid
			if w == 0 {
				break
			}
			size := int(uint16(w>>(8*recSize8))) * 8
			if size < sizeofRec || off+size > len(b) {
				if dm.bad == 0 {
					dm.firstBad, dm.whyBad = start+int64(off), fmt.Sprintf("record of %d bytes does not fit its block", size)
				}
				dm.bad++
				break
			}
			r = traceRec{kind: uint8(w >> (8 * recKind)), aux: uint8(w >> (8 * recAux)), tid: uint32(w >> (8 * recTid)),
				time: le.Uint64(b[off+recTime:]), body: b[off+sizeofRec : off+size], off: start + int64(off)}
			fn(&r)
			off += size
		}
	}
	return nil
}

// nextData returns the offset of the first byte at or after off that the file system holds data
// for (SEEK_DATA), so that the holes of a sparse file are not read; ok is false when there is no
// data from off on. Without the descriptor or SEEK_DATA it returns off.
func (tf *traceScan) nextData(off int64) (next int64, ok bool) {
	if tf.fd < 0 {
		return off, true
	}
	next, err := unix.Seek(tf.fd, off, unix.SEEK_DATA)
	switch {
	case err == unix.ENXIO:
		return off, false
	case err != nil || next < off:
		return off, true
	}
	return next, true
}

// skipped counts the records of one file that were skipped, and why.
type skipped struct {
	malformed int // too short for their kind, or of an unknown kind
	outside   int // a value outside the format's range
	first     int64
	why       string
}

// add counts the records that o skipped with those of s.
func (s *skipped) add(o skipped) {
	s.malformed += o.malformed
	if o.outside > 0 && (s.outside == 0 || o.first < s.first) {
		s.first, s.why = o.first, o.why
	}
	s.outside += o.outside
}

// out counts a record at offset off skipped for the reason format gives; the warning shows the first
// in the file (a heap trace replayed as it is read is read out of file order).
func (s *skipped) out(off int64, format string, args ...any) {
	if s.outside == 0 || off < s.first {
		s.first, s.why = off, fmt.Sprintf(format, args...)
	}
	s.outside++
}

func (s *skipped) warnings(file string, warn func(string)) {
	if s.malformed > 0 {
		warn(fmt.Sprintf("%s: %d malformed or unknown records skipped", filepath.Base(file), s.malformed))
	}
	if s.outside > 0 {
		warn(fmt.Sprintf("%s: %d records out of range skipped (first at offset %d: %s)", filepath.Base(file), s.outside, s.first, s.why))
	}
}

// traceSource is the trace files of one collector-library instance: each file is in dir, or in
// alt when dir has none of that name (the experiment's own files, then those left in .proc/).
type traceSource struct {
	dir, alt string
	note     func(files []string) string // the warning to give when files are read from alt
}

// path returns the file name of the source, and whether it is in alt.
func (src traceSource) path(name string) (string, bool) {
	if src.dir != "" {
		p := filepath.Join(src.dir, name)
		if _, err := os.Lstat(p); err == nil || src.alt == "" {
			return p, false
		}
	}
	if src.alt == "" {
		return "", false
	}
	return filepath.Join(src.alt, name), true
}

// traceReader turns the records of an experiment's trace files into events of d.
type traceReader struct {
	d       *Data
	warn    func(string)
	missing int
	base    int64 // CLOCK_MONOTONIC of time 0
	stops   map[uint32]*traceStop
	perf    map[uint32]bool // processes whose mappings perf recorded (map.xml)
	maps    map[uint32][]Mapping

	parts   int   // how many parts to read a large file in; 0: one per CPU
	minPart int64 // the least part; 0: minTracePart

	// Reading the stacks files alone (Options.TraceStacksOnly): the instance's stacks, and whether
	// one of them has no time.
	stacks  []TraceStack
	untimed bool

	// the instance being read: its stacks by id, and where its rows start in d's tables (and its
	// clock samples in d's clock table)
	stackIdx               map[uint32]uint32
	heap0, sync0, io0, ck0 int
	reg0, task0            int  // the instance's first OpenMP region and task
	summed                 bool // Options.Summed: the traces are summed as they are read
}

func newTraceReader(d *Data, warn func(string)) *traceReader {
	tr := &traceReader{d: d, warn: warn, base: d.Log.StartPerfNS, perf: map[uint32]bool{}}
	for _, m := range d.Mappings {
		if !m.IsDynamic() && !IsSymbolic(m.Start) { // (a runtime's functions are no perf mappings)
			tr.perf[m.Pid] = true
		}
	}
	return tr
}

// readTraces reads the trace files of the sources into d, after the perf-event files, as opt says:
// the stacks files alone where their stacks say when they were written (TraceStacksOnly), the heap
// trace replayed and the other traces summed as they are read (Summed: rows that stand for several).
func readTraces(d *Data, sources []traceSource, opt Options, warn func(string)) error {
	stacksOnly := opt.TraceStacksOnly
	tr := newTraceReader(d, warn)
	if opt.Summed && !stacksOnly {
		newHeapSummer(d.heapTable()) // summed tables, if empty
		d.syncTable()
		newIOSummer(d.ioTable(), nil) // a summed table, if empty
		tr.summed = true
	}
	for _, src := range sources {
		tr.begin()
		var fromProc []string
		read := func(name string) error {
			file, fromAlt := src.path(name)
			if file == "" {
				return nil
			}
			f, fi, err := regfile.Open(file)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if fromAlt {
				fromProc = append(fromProc, name)
			}
			err = tr.readFile(name, file, f, fi.Size(), int(f.Fd()))
			f.Close()
			return err
		}
		names := TraceFiles
		if stacksOnly {
			tr.stacks, tr.untimed = []TraceStack{}, false
			if err := read(TraceStacksFile); err != nil {
				return err
			}
			names = nil
			if tr.untimed { // the events say when their stacks were used
				tr.stacks = nil
				names = slices.DeleteFunc(slices.Clone(TraceFiles), func(n string) bool { return n == TraceStacksFile })
			}
			d.TraceStacks = append(d.TraceStacks, tr.stacks...)
		}
		for _, name := range names {
			if err := read(name); err != nil {
				return err
			}
		}
		if len(fromProc) > 0 && src.note != nil {
			warn(src.note(fromProc))
		}
		tr.end()
	}
	tr.finish()
	return nil
}

// begin starts reading the files of one instance.
func (tr *traceReader) begin() {
	tr.stackIdx = map[uint32]uint32{}
	tr.heap0, tr.sync0, tr.io0, tr.ck0 = tr.d.HeapTable().Len(), tr.d.SyncTable().Len(), tr.d.IOTable().Len(), tr.d.ClockTable().Len()
	tr.reg0, tr.task0 = tr.d.OMPRegions().Len(), tr.d.OMPTasks().Len()
}

// end resolves the stack ids of the instance's events (read before its stacks) to stacks of d.
func (tr *traceReader) end() {
	resolveN := func(p *uint32, events int) {
		if *p == 0 {
			return
		}
		if idx, ok := tr.stackIdx[*p]; ok {
			*p = idx
		} else {
			*p = 0
			tr.missing += events
		}
	}
	resolve := func(p *uint32) { resolveN(p, 1) }
	d := tr.d
	if ht := d.HeapTable(); !tr.summed {
		for i := tr.heap0; i < ht.Len(); i++ {
			resolve(&ht.Stack[i])
		}
	}
	if st := d.SyncTable(); !tr.summed {
		for i := tr.sync0; i < st.Len(); i++ {
			resolve(&st.Stack[i])
		}
	}
	if it := d.IOTable(); !tr.summed {
		for i := tr.io0; i < it.Len(); i++ {
			resolve(&it.Stack[i])
		}
	}
	if ct := d.ClockTable(); ct != nil {
		for i := tr.ck0; i < ct.Len(); i++ {
			resolve(&ct.Stack[i])
		}
	}
	if rt := d.OMPRegions(); rt != nil {
		for i := tr.reg0; i < rt.Len(); i++ {
			resolve(&rt.Stack[i])
		}
	}
	if kt := d.OMPTasks(); kt != nil {
		for i := tr.task0; i < kt.Len(); i++ {
			resolve(&kt.Stack[i])
		}
	}
	if ht := d.HeapTable(); tr.summed && ht.Len() > tr.heap0 {
		for i := tr.heap0; i < ht.Len(); i++ {
			resolveN(&ht.Stack[i], int(ht.CountAt(i)))
		}
		mergeHeapRows(ht, tr.heap0)
	}
	if st := d.SyncTable(); tr.summed && st.Len() > tr.sync0 {
		for i := tr.sync0; i < st.Len(); i++ {
			resolveN(&st.Stack[i], int(st.CountAt(i)))
		}
		mergeSyncRows(st, tr.sync0)
	}
	if it := d.IOTable(); tr.summed && it.Len() > tr.io0 {
		for i := tr.io0; i < it.Len(); i++ {
			resolveN(&it.Stack[i], int(it.CountAt(i)))
		}
		mergeIORows(it, tr.io0)
	}
}

// finish gives the warnings of all instances and puts the events in time order.
func (tr *traceReader) finish() {
	d := tr.d
	tr.stopWarnings(tr.warn)
	if tr.missing > 0 {
		tr.warn(fmt.Sprintf("%s: %d trace events refer to stacks that were never written; they have no stack", TraceStacksFile, tr.missing))
	}
	for _, pid := range slices.Sorted(maps.Keys(tr.maps)) {
		d.Mappings = append(d.Mappings, tr.maps[pid]...)
	}
	if d.Java != nil {
		// map.xml's records of the JVM's code (JavaMapRecords) are made again, with their code.
		d.Mappings = slices.DeleteFunc(d.Mappings, func(m Mapping) bool {
			return m.Pid == d.Java.Pid && (m.Path == JavaCodePath || m.Path == JavaStubPath) && !IsSymbolic(m.Start)
		})
		d.Mappings = append(d.Mappings, javaMappings(d.Java)...)
	}
	d.Mappings = append(d.Mappings, dynMappings(d.DynFuncs)...)
	if ht := d.HeapTable(); ht != nil && !tr.summed {
		ht.SortByTime()
	}
	if st := d.SyncTable(); st != nil && !tr.summed {
		st.SortByTime()
	}
	if it := d.IOTable(); it != nil && !tr.summed {
		it.SortByTime()
		nameFiles(it)
	}
	for _, t := range []*events.Table{d.OMPTable(), d.OMPRegions(), d.OMPTasks()} {
		if t != nil {
			t.SortByTime()
		}
	}
}

// readFile reads the trace file name (one of TraceFiles) of the instance being read, at file.
func (tr *traceReader) readFile(name, file string, r io.ReaderAt, size int64, fd int) error {
	tf, err := openTrace(file, r, size, fd)
	if err != nil {
		return err
	}
	h := tf.h
	if tr.base == 0 {
		tr.base = int64(h.startNS)
	}
	tr.warn(tr.lostData(name, h))
	var sk skipped
	var w string
	switch name {
	case TraceStacksFile:
		w, err = tf.scan(func(r *traceRec) { tr.stackRecord(r, h.pid, &sk) })
	case DynTextFile:
		w, err = tf.scan(func(r *traceRec) {
			switch r.kind {
			case recDynFunc, recDynBytes, recDynUnload:
				tr.dynRecord(r, h.pid, &sk)
			default:
				sk.malformed++
			}
		})
	default:
		switch name {
		case ClockTraceFile:
			tr.d.Log.Settings = append(tr.d.Log.Settings, Setting{Name: "sigprof_interval_ns", Value: strconv.FormatUint(h.param, 10)})
		case SyncTraceFile:
			tr.d.Log.Settings = append(tr.d.Log.Settings, Setting{Name: "sync_threshold_ns", Value: strconv.FormatUint(h.param, 10)})
		}
		switch {
		case h.kind == fileHeap && tr.summed:
			w, err = tr.replayHeap(tf, &sk)
		case h.kind == fileSync && tr.summed:
			w, err = tr.sumSync(tf, &sk)
		case h.kind == fileIO && tr.summed:
			w, err = tr.sumIO(tf, &sk)
		case h.kind == fileOMP:
			w, err = tr.readOMP(tf, &sk)
		case h.kind == fileJava:
			w, err = tr.readJava(tf, &sk)
		default:
			w, err = tr.readEvents(tf, &sk)
		}
	}
	if err != nil {
		return err
	}
	tr.warn(w)
	sk.warnings(file, tr.warn)
	return nil
}

// minTracePart is the least part of a trace file that readEvents reads beside the others.
const minTracePart = 4 << 20

// readEvents reads the events of the trace file tf into tr.d. A large file is read in parts side
// by side, one per CPU. Each part is counted first, so that the events take exactly the memory
// they need, then read into its own window of the events' slice; the windows are then joined, so
// the events are in file order.
func (tr *traceReader) readEvents(tf *traceScan, sk *skipped) (warning string, err error) {
	h := &tf.h
	kind := eventKinds[h.kind]
	parts := tr.fileParts(tf)
	bufs := make([][]byte, len(parts))
	counts := make([]int, len(parts))
	if err := eachPart(len(parts), func(i int) error {
		bufs[i] = make([]byte, min(int64(h.blockSize), tf.size-traceHeaderSize))
		var dm damage
		return tf.scanRange(bufs[i], parts[i][0], parts[i][1], func(r *traceRec) {
			if r.kind == kind {
				counts[i]++
			}
		}, &dm)
	}); err != nil {
		return "", err
	}
	// Part i appends to its window of the events' slice, which holds as many events as it has records.
	pds := make([]*Data, len(parts))
	readers := make([]*traceReader, len(parts))
	for i := range parts {
		pds[i] = &Data{}
		readers[i] = &traceReader{d: pds[i], base: tr.base}
	}
	d := tr.d
	var join func()
	// Each part reads into its window of the kind's table (its durations too, where it has them).
	windows := func(s *events.Schema, durs bool) func() {
		t := d.table(s)
		if durs {
			t.Durs()
		}
		ps, join := t.Windows(counts)
		for i, p := range ps {
			pds[i].Tables = map[string]*events.Table{s.Name: p}
		}
		return join
	}
	switch kind {
	case recHeap:
		join = windows(HeapSchema, false)
	case recSync:
		join = windows(SyncSchema, true)
	case recIO:
		join = windows(IOSchema, true)
	case recClock:
		join = windows(ClockSchema, false)
	default: // a file of no event kind: its records are all skipped
		join = func() {}
	}
	sks := make([]skipped, len(parts))
	dms := make([]damage, len(parts))
	if err := eachPart(len(parts), func(i int) error {
		return tf.scanRange(bufs[i], parts[i][0], parts[i][1], func(r *traceRec) { readers[i].event(r, h, &sks[i]) }, &dms[i])
	}); err != nil {
		return "", err
	}
	var dm damage
	for i := range parts {
		sk.add(sks[i])
		dm.add(dms[i])
	}
	join()
	return dm.warning(tf.name), nil
}

// fileParts splits the blocks of tf into the parts it is read in side by side: as many as tr.parts
// (0: one per CPU), each at least tr.minPart bytes (0: minTracePart).
func (tr *traceReader) fileParts(tf *traceScan) [][2]int64 {
	n, least := tr.parts, tr.minPart
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	if least <= 0 {
		least = minTracePart
	}
	return tf.parts(n, least)
}

// eachPart runs fn for parts 0 to n-1, side by side when there are several, and joins their errors.
func eachPart(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (tr *traceReader) t(ns uint64) int64 { return int64(ns) - tr.base }

// lostData notes what the header of the trace file name says was not recorded; stopWarnings says it.
func (tr *traceReader) lostData(name string, h traceHeader) string {
	what := map[string]string{HeapTraceFile: "heap events", SyncTraceFile: "synchronization waits", IOTraceFile: "I/O calls",
		ClockTraceFile: "clock samples", OMPTraceFile: "OpenMP regions and states", JavaTraceFile: "Java methods and compiled code", DynTextFile: "dynamic functions", TraceStacksFile: "call stacks"}[name]
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
		why := syscall.Errno(st.errno).Error()
		switch st.errno {
		case stopSeccomp:
			why = "a seccomp filter that the process installed denies the library's system calls"
		case uint32(syscall.EFBIG):
			why = "its trace files reached the process's file size limit (RLIMIT_FSIZE)"
		}
		s := fmt.Sprintf("the collector library stopped recording in process %d at %.3f s: %s; the %s after that are missing",
			pid, float64(tr.t(st.ns))/1e9, why, strings.Join(st.what, ", "))
		if st.heap {
			s += " (blocks freed after that are shown as leaks)"
		}
		warn(s)
	}
}

// stackRecord reads one record of a stacks file of process pid: a stack, a mapping or a note.
func (tr *traceReader) stackRecord(r *traceRec, pid uint32, sk *skipped) {
	switch r.kind {
	case recStack:
		if sizeofRec+len(r.body) < sizeofRecStack {
			sk.malformed++
			return
		}
		id, n := r.u32(recStackID), r.u32(recStackN)
		if uint64(n)*8 > uint64(sizeofRec+len(r.body)-sizeofRecStack) {
			sk.malformed++
			return
		}
		if _, dup := tr.stackIdx[id]; dup || id == 0 {
			return
		}
		s := make(Stack, n)
		for i := range s {
			s[i] = r.u64(sizeofRecStack + 8*i)
		}
		tr.stackIdx[id] = uint32(len(tr.d.Stacks))
		if tr.stacks != nil {
			tr.untimed = tr.untimed || r.time == 0
			tr.stacks = append(tr.stacks, TraceStack{Pid: pid, Tid: r.tid, Time: tr.t(r.time), Stack: uint32(len(tr.d.Stacks))})
		}
		tr.d.Stacks = append(tr.d.Stacks, s)
	case recMap:
		if sizeofRec+len(r.body) < sizeofRecMap {
			sk.malformed++
			return
		}
		start, end, off := r.u64(recMapStart), r.u64(recMapEnd), r.u64(recMapOffset)
		pl := r.u32(recMapPathLen)
		if uint64(pl) > uint64(sizeofRec+len(r.body)-sizeofRecMap) {
			sk.malformed++
			return
		}
		if tr.perf[pid] {
			return // perf recorded this process's mappings: map.xml has them
		}
		if tr.maps == nil {
			tr.maps = map[uint32][]Mapping{}
		}
		ms := tr.maps[pid]
		if r.aux == mapUnmapped {
			for i := len(ms) - 1; i >= 0; i-- {
				if ms[i].Start == start && ms[i].UnloadTime == -1 {
					ms[i].UnloadTime = tr.t(r.time)
					break
				}
			}
			return
		}
		if end <= start {
			sk.malformed++
			return
		}
		load := max(tr.t(r.time), 0)
		if r.aux == mapInitial { // mapped before the library started: there from time 0 on, as /proc/PID/maps mappings are
			load = 0
		}
		tr.maps[pid] = append(ms, Mapping{Pid: pid, Start: start, End: end, Offset: off, Path: string(r.tail(sizeofRecMap)[:pl]),
			LoadTime: load, UnloadTime: -1})
	case recDynFunc, recDynBytes, recDynUnload:
		tr.dynRecord(r, pid, sk)
	case recNote:
		text := string(trimNUL(r.body))
		k, v, ok := cutEq(text)
		if !ok {
			sk.malformed++
			return
		}
		tr.d.Log.Settings = append(tr.d.Log.Settings, Setting{Name: SettingKey("collector." + k), Value: v})
	default:
		sk.malformed++
	}
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

// event reads one record of a heap, sync, I/O or clock trace file with header h. Its stack is the
// trace's stack id until end resolves it.
func (tr *traceReader) event(r *traceRec, h *traceHeader, sk *skipped) {
	d := tr.d
	size := sizeofRec + len(r.body) // the record's size
	pid := h.pid
	if r.kind != eventKinds[h.kind] { // a stack, map or note record, or an event of another file's kind
		sk.malformed++
		return
	}
	if r.time < h.startNS || r.time-h.startNS > 1<<62 {
		sk.out(r.off, "time %d ns, before the collector library started at %d ns", r.time, h.startNS)
		return
	}
	ran := r.time - h.startNS // the longest a call can have taken
	t := tr.t(r.time)
	switch r.kind {
	case recHeap:
		e := HeapEvent{Time: t, Pid: pid, Tid: r.tid, Op: HeapOp(r.aux)}
		switch {
		case size == sizeofRecFree && e.Op == HeapFree: // the short form of a free
			e.Old = r.u64(recFreeOld)
		case size == sizeofRecAlloc: // the short form of an allocation that frees nothing
			e.Stack, e.Size, e.Addr = r.u32(recAllocStack), uint64(r.u32(recAllocSize)), r.u64(recAllocAddr)
		case size >= sizeofRecHeap:
			e.Stack, e.Addr, e.Size, e.Old = r.u32(recHeapStack), r.u64(recHeapAddr), r.u64(recHeapSize), r.u64(recHeapOld)
		default:
			sk.malformed++
			return
		}
		if e.Addr != 0 && e.Op != HeapFree && e.Op != HeapMunmap && e.Size > maxUserBytes {
			sk.out(r.off, "an allocation of %d bytes, more than a process's address space, 2^57 bytes", e.Size)
			return
		}
		d.addHeapEvent(e)
	case recSync:
		if size < sizeofRecSync {
			sk.malformed++
			return
		}
		wait := r.u64(recSyncWaitNS)
		if wait > ran {
			sk.out(r.off, "a wait of %d ns, longer than the %d ns since the collector library started", wait, ran)
			return
		}
		d.addSyncEvent(SyncEvent{Time: t, Pid: pid, Tid: r.tid, Op: SyncOp(r.aux), Stack: r.u32(recSyncStack),
			Wait: int64(wait), Object: r.u64(recSyncObject)})
	case recIO:
		if size < sizeofRecIO {
			sk.malformed++
			return
		}
		nl := r.u32(recIONameLen)
		if uint64(nl) > uint64(size-sizeofRecIO) {
			sk.malformed++
			return
		}
		dur, bytes := r.u64(recIODurNS), int64(r.u64(recIOBytes))
		switch {
		case dur > ran:
			sk.out(r.off, "a call of %d ns, longer than the %d ns since the collector library started", dur, ran)
			return
		case bytes < 0 || bytes > maxUserBytes:
			sk.out(r.off, "%d bytes moved: want 0 to 2^57", bytes)
			return
		}
		d.addIOEvent(IOEvent{Time: t, Pid: pid, Tid: r.tid, Op: IOOp(r.aux), Dur: int64(dur), Stack: r.u32(recIOStack),
			FD: int32(r.u32(recIOFD)), FD2: int32(r.u32(recIOFD2)), Ret: int64(r.u64(recIORet)),
			Bytes: bytes, Err: int32(r.u32(recIOErr))}, r.tail(sizeofRecIO)[:nl])
	case recClock:
		if size < sizeofRecClock {
			sk.malformed++
			return
		}
		count := uint64(r.u32(recClockCount))
		if most := maxSamplePeriod / h.param; count < 1 || count > most {
			sk.out(r.off, "a sample of %d intervals of %d ns: want 1 to %d, at most 60 s", count, h.param, most)
			return
		}
		addClock(d.clockTable(), &ClockSample{Time: t, Pid: pid, Tid: r.tid, CPU: r.u32(recClockCPU),
			Mode: ModeUnknown, Period: int64(count * h.param), Stack: r.u32(recClockStack)})
	}
}

// hasTraceFiles reports whether the sources hold any trace file.
func hasTraceFiles(sources []traceSource) bool {
	for _, src := range sources {
		for _, n := range TraceFiles {
			if p, _ := src.path(n); p != "" {
				if _, err := os.Stat(p); err == nil {
					return true
				}
			}
		}
	}
	return false
}

// TraceMappings returns the load-object mappings that the collector library recorded in the
// experiment dir (none when it holds no trace files).
func TraceMappings(dir string) ([]Mapping, error) {
	var maps []Mapping
	err := readOneTrace(dir, TraceStacksFile, func(tr *traceReader, tf *traceScan) error {
		tr.begin()
		var sk skipped
		_, err := tf.scan(func(r *traceRec) { tr.stackRecord(r, tf.h.pid, &sk) })
		maps = tr.maps[tf.h.pid]
		return err
	})
	return maps, err
}

// readOneTrace opens the trace file name of experiment dir alone and calls read with a reader of
// its own (its times relative to the file's start); nothing where the file is not there.
func readOneTrace(dir, name string, read func(tr *traceReader, tf *traceScan) error) error {
	file := filepath.Join(dir, name)
	f, fi, err := regfile.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	tf, err := openTrace(file, f, fi.Size(), int(f.Fd()))
	if err != nil {
		return err
	}
	tr := newTraceReader(&Data{}, func(string) {})
	tr.base = int64(tf.h.startNS)
	return read(tr, tf)
}
