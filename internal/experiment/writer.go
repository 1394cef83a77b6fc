package experiment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/events"
	"er/internal/ranges"
	"er/internal/safedir"
)

// ErrClosed is returned by a Writer's methods after Close.
var ErrClosed = errors.New("experiment: writer is closed")

// Writer writes one experiment directory. Its methods may be called from
// several goroutines. Binary records are buffered and written in blocks, so a
// reader sees every record up to the last Flush (or full block) even if the
// writer is killed.
type Writer struct {
	mu       sync.Mutex
	dir      string
	log      Log
	logDirty bool
	logStale bool      // events that can wait were added: log.xml is rewritten once logEvery has passed
	logAt    time.Time // when log.xml was last written
	maps     []Mapping
	mapDirty bool
	// mapped holds, for each process, the indexes in maps of its mappings still mapped (UnloadTime
	// -1), by address: a new mapping finds those it overlaps in O(log n) (a scan of maps made a
	// target's 50,000 mmaps cost O(n²)); mappedEmpty those of no bytes, which only the process's
	// exit ends.
	mapped      map[uint32]*ranges.Whole[int]
	mappedEmpty map[uint32][]int
	mapAt       time.Time     // when map.xml was last written
	mapCost     time.Duration // and how long that took

	stackIDs map[string]uint32 // frames as little-endian bytes -> id
	nstacks  uint32            // ids 1..nstacks are in use
	scratch  []byte

	clock, stacks, overview *dataFile
	offcpu                  *dataFile                     // made at the first off-CPU interval (OffCPU)
	hwc                     *dataFile                     // made at the first counter sample (Counter)
	tables                  map[*events.Schema]*tableFile // made at each table's first row (Row)
	tableOrder              []*tableFile

	logSize   int64 // bytes of log.xml as last written
	mapSize   int64 // bytes of map.xml as last written
	notesSize int64
	err       error // the first write error; every later write returns it
	closed    bool
	mapNow    bool   // map.xml is written now, however soon after the last write (Flush, Close)
	reserve   string // a file of disk space kept for the final log.xml and map.xml; "" when none
}

// ReserveFile holds disk space that a founder experiment's Writer keeps so that it can write its
// final log.xml and map.xml when the disk fills up during a run (ReleaseReserve, Close). Readers
// ignore it; a collector that was killed leaves it behind.
const ReserveFile = ".reserve"

// reserveBytes is the size of the reserve: log.xml, map.xml and notes of a large run fit in it.
const reserveBytes = 256 << 10

// dataFile is one binary file being written.
type dataFile struct {
	f       *os.File
	buf     []byte // block header space, then the pending records
	count   uint32 // pending records
	written int64  // bytes written to the file
}

func newDataFile(dir, name string, k recordKind) (*dataFile, error) {
	return newDataFileOf(dir, name, k, k.recordSize())
}

// newDataFileOf is newDataFile for records of recSize bytes.
func newDataFileOf(dir, name string, k recordKind, recSize uint32) (*dataFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	h := appendFileHeaderOf(nil, k, recSize)
	if _, err := f.Write(h); err != nil {
		f.Close()
		return nil, err
	}
	buf := make([]byte, blockHeaderSize, blockHeaderSize+blockTarget+clockRecordSize)
	return &dataFile{f: f, buf: buf, written: int64(len(h))}, nil
}

// full reports whether the pending records fill a block.
func (d *dataFile) full() bool { return len(d.buf)-blockHeaderSize >= blockTarget }

// pending is the number of bytes the pending records will take in the file.
func (d *dataFile) pending() int64 {
	if d.count == 0 {
		return 0
	}
	return int64(len(d.buf))
}

// flush writes the pending records as one block, in one write. A block that could not be written
// whole (a full disk) is cut off again, so that the file ends with its last whole block.
func (d *dataFile) flush() error {
	if d.count == 0 {
		return nil
	}
	sealBlock(d.buf, d.count)
	n, err := d.f.Write(d.buf)
	if err != nil && n > 0 {
		if terr := d.f.Truncate(d.written); terr == nil {
			_, _ = d.f.Seek(d.written, io.SeekStart)
			n = 0
		}
	}
	d.written += int64(n)
	d.buf = d.buf[:blockHeaderSize]
	d.count = 0
	return err
}

// Create makes the experiment directory dir, which must not exist, with its
// archives directory, and writes log.xml, an empty map.xml and the headers of
// the binary files at once. A descendant's subexperiment (log.Lineage set) has no
// archives directory: its load objects are archived in the founder's.
func Create(dir string, log Log) (*Writer, error) {
	return create(dir, log, true)
}

// CreatePending is Create without writing log.xml and map.xml: the first Flush writes them. Each file
// made costs (0.06 to 0.4 ms on this machine's disk, most of the fixed cost of a short collection);
// the caller flushes before anything can look for them (er collect, before it lets the target run).
func CreatePending(dir string, log Log) (*Writer, error) {
	return create(dir, log, false)
}

func create(dir string, log Log, writeNow bool) (_ *Writer, err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	var w *Writer
	defer func() {
		if err != nil { // what was made of an experiment that cannot be written (a full disk) goes
			if w != nil {
				w.closeFiles()
			}
			os.RemoveAll(dir)
		}
	}()
	if log.Lineage == "" {
		if err := os.Mkdir(filepath.Join(dir, ArchivesDir), 0o755); err != nil {
			return nil, err
		}
	}
	log.FormatVersion = FormatVersion
	w = &Writer{dir: dir, log: log, logDirty: true, mapDirty: true, stackIDs: map[string]uint32{}}
	if log.Lineage == "" {
		w.reserve = makeReserve(dir)
	}
	if w.clock, err = newDataFile(dir, ClockFile, kindClock); err != nil {
		return nil, err
	}
	if w.stacks, err = newDataFile(dir, StacksFile, kindStacks); err != nil {
		return nil, err
	}
	if w.overview, err = newDataFile(dir, OverviewFile, kindOverview); err != nil {
		return nil, err
	}
	if !writeNow {
		return w, nil
	}
	if err := w.writeXML(); err != nil {
		return nil, err
	}
	return w, nil
}

// Dir is the experiment directory.
func (w *Writer) Dir() string { return w.dir }

// makeReserve allocates the reserve file in dir and returns its path; "" when the space is not there.
func makeReserve(dir string) string {
	path := filepath.Join(dir, ReserveFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return ""
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, reserveBytes)
	if errors.Is(err, unix.EOPNOTSUPP) {
		_, err = f.Write(make([]byte, reserveBytes))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return ""
	}
	return path
}

// ReleaseReserve gives the reserved disk space back, for the last writes of a run on a full disk.
func (w *Writer) ReleaseReserve() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.releaseReserve()
}

func (w *Writer) releaseReserve() {
	if w.reserve != "" {
		os.Remove(w.reserve)
		w.reserve = ""
	}
}

// Err returns the first write error, which stopped the writing of records (a full disk); nil if none.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// check returns the error that stops writing, if any. Call with w.mu held.
func (w *Writer) check() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

// fail records the first write error. Call with w.mu held.
func (w *Writer) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("experiment %s: %w", w.dir, err)
	}
	return w.err
}

// Stack interns s and returns its id: the same frames give the same id; the
// empty stack is 0. A new stack is appended to the stacks file.
func (w *Writer) Stack(s Stack) (uint32, error) {
	if len(s) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return 0, err
	}
	w.scratch = w.scratch[:0]
	for _, pc := range s {
		w.scratch = le.AppendUint64(w.scratch, pc)
	}
	if id, ok := w.stackIDs[string(w.scratch)]; ok {
		return id, nil
	}
	if len(s) > maxStackFrames {
		return 0, fmt.Errorf("experiment: stack of %d frames; at most %d are stored", len(s), maxStackFrames)
	}
	if w.nstacks == ^uint32(0) {
		return 0, errors.New("experiment: stack table full")
	}
	w.nstacks++
	w.stackIDs[string(w.scratch)] = w.nstacks
	w.stacks.buf = appendStack(w.stacks.buf, s)
	w.stacks.count++
	if w.stacks.full() {
		if err := w.fail(w.stacks.flush()); err != nil {
			return 0, err
		}
	}
	return w.nstacks, nil
}

// Clock records a clock-profiling sample. Its stack must come from Stack.
func (w *Writer) Clock(s ClockSample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	if s.Stack > w.nstacks {
		return fmt.Errorf("experiment: clock sample with stack id %d; only %d stacks are interned", s.Stack, w.nstacks)
	}
	w.clock.buf = appendClock(w.clock.buf, s)
	w.clock.count++
	if w.clock.full() {
		// Stacks first: a reader never sees a sample whose stack is not written yet.
		if err := w.fail(w.stacks.flush()); err != nil {
			return err
		}
		return w.fail(w.clock.flush())
	}
	return nil
}

// files returns the binary files being written, the stacks first (a reader never sees a record whose
// stack is not written yet).
func (w *Writer) files() []*dataFile {
	fs := []*dataFile{w.stacks, w.clock, w.overview}
	if w.offcpu != nil {
		fs = append(fs, w.offcpu)
	}
	if w.hwc != nil {
		fs = append(fs, w.hwc)
	}
	for _, t := range w.tableOrder {
		fs = append(fs, t.dataFile)
	}
	return fs
}

// OffCPU records an off-CPU interval (a clock event of an off-CPU mode) in OffCPUFile, made at the
// first. Its stack must come from Stack.
func (w *Writer) OffCPU(s ClockSample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	if s.Stack > w.nstacks {
		return fmt.Errorf("experiment: off-CPU interval with stack id %d; only %d stacks are interned", s.Stack, w.nstacks)
	}
	if w.offcpu == nil {
		f, err := newDataFile(w.dir, OffCPUFile, kindClock)
		if err := w.fail(err); err != nil {
			return err
		}
		w.offcpu = f
	}
	w.offcpu.buf = appendClock(w.offcpu.buf, s)
	w.offcpu.count++
	if w.offcpu.full() {
		if err := w.fail(w.stacks.flush()); err != nil {
			return err
		}
		return w.fail(w.offcpu.flush())
	}
	return nil
}

// Counter records a counter overflow sample in CountersFile, made at the first. Its stack must come
// from Stack, and its counter must be one of the log's Counters.
func (w *Writer) Counter(s CounterSample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	if s.Stack > w.nstacks {
		return fmt.Errorf("experiment: counter sample with stack id %d; only %d stacks are interned", s.Stack, w.nstacks)
	}
	if int(s.Counter) >= len(w.log.Counters) {
		return fmt.Errorf("experiment: a sample of counter %d; the log has %d counters", s.Counter, len(w.log.Counters))
	}
	if w.hwc == nil {
		f, err := newDataFile(w.dir, CountersFile, kindHWC)
		if err := w.fail(err); err != nil {
			return err
		}
		w.hwc = f
	}
	w.hwc.buf = appendHWC(w.hwc.buf, s)
	w.hwc.count++
	if w.hwc.full() {
		if err := w.fail(w.stacks.flush()); err != nil {
			return err
		}
		return w.fail(w.hwc.flush())
	}
	return nil
}

// Overview records a sample point's usage data. The label may be at most 65535 bytes.
func (w *Writer) Overview(o OverviewSample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	if len(o.Label) > maxLabelLen {
		return fmt.Errorf("experiment: overview label of %d bytes; at most %d are stored", len(o.Label), maxLabelLen)
	}
	w.overview.buf = appendOverview(w.overview.buf, o)
	w.overview.count++
	if w.overview.full() {
		return w.fail(w.overview.flush())
	}
	return nil
}

// AddMapping records a new mapping. Earlier mappings of the same process that
// are still mapped and overlap [m.Start, m.End) are unmapped at m.LoadTime.
// map.xml is rewritten at the next Flush.
// (A mapping of no bytes overlaps nothing.)
func (w *Writer) AddMapping(m Mapping) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mapped == nil {
		w.mapped, w.mappedEmpty = map[uint32]*ranges.Whole[int]{}, map[uint32][]int{}
	}
	live := w.mapped[m.Pid]
	if live == nil {
		live = &ranges.Whole[int]{}
		w.mapped[m.Pid] = live
	}
	i := len(w.maps)
	w.maps = append(w.maps, m)
	w.mapDirty = true
	unload := func(_, _ uint64, j int) { w.maps[j].UnloadTime = m.LoadTime }
	switch {
	case m.UnloadTime != -1:
		live.Remove(m.Start, m.End, unload)
	case m.End <= m.Start:
		w.mappedEmpty[m.Pid] = append(w.mappedEmpty[m.Pid], i)
	default:
		live.Add(m.Start, m.End, i, unload)
	}
}

// AddDynamicFunctions records dynamic functions (experiment.DynamicPath): code that a runtime
// generated inside the process's mappings, which it does not unmap. map.xml is rewritten at the
// next Flush.
func (w *Writer) AddDynamicFunctions(ms []Mapping) {
	if len(ms) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.maps = append(w.maps, ms...)
	w.mapDirty = true
}

// ProcessExit unmaps, at time t, every still-mapped mapping of process pid.
func (w *Writer) ProcessExit(pid uint32, t int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	unload := func(_, _ uint64, j int) {
		w.maps[j].UnloadTime = t
		w.mapDirty = true
	}
	if live := w.mapped[pid]; live != nil {
		live.Remove(0, ^uint64(0), unload)
		delete(w.mapped, pid)
	}
	for _, j := range w.mappedEmpty[pid] {
		unload(0, 0, j)
	}
	delete(w.mappedEmpty, pid)
}

// Event appends an event to the log; log.xml is rewritten at the next Flush, or, for a sample point's
// event (whose record is in the overview too), at the first Flush logEvery after the last rewrite.
func (w *Writer) Event(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log.Events = append(w.log.Events, e)
	if e.Kind == "sample" {
		w.logStale = true
	} else {
		w.logDirty = true
	}
}

// logEvery is how long a sample point's event can wait before log.xml is rewritten for it. Rewriting
// the whole log at each periodic sample point (every second) took a quarter of er's CPU on a 2 s
// run, and grows with the log on long runs; an er that is killed loses at most this much of the
// log's sample events, whose records the overview holds.
const logEvery = 10 * time.Second

// UpdateLog lets f change the log (exit status, end time, settings, ...);
// log.xml is rewritten at the next Flush, or at once after Close (what is known of a process only
// at the end of a collection, such as its threads' counts, goes into an experiment closed before).
// The format version cannot be changed.
func (w *Writer) UpdateLog(f func(*Log)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.log)
	w.log.FormatVersion = FormatVersion
	w.logDirty = true
	if w.closed && w.err == nil {
		w.fail(w.writeXML())
	}
}

// Notes appends text to the notes file, ending it with a newline if it has none. The file holds at
// most 2 MiB, what readers read.
func (w *Writer) Notes(text string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	if len(text) == 0 || text[len(text)-1] != '\n' {
		text += "\n"
	}
	if w.notesSize+int64(len(text)) > maxNotesSize {
		return fmt.Errorf("experiment: %d bytes of notes; the notes file holds at most %d", w.notesSize+int64(len(text)), maxNotesSize)
	}
	f, err := os.OpenFile(filepath.Join(w.dir, NotesFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o644) // not through a link planted there
	if err != nil {
		return w.fail(err)
	}
	n, err := f.WriteString(text)
	w.notesSize += int64(n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return w.fail(err)
}

// WriteFile writes the experiment's file name (not a data file er writes otherwise: JAVA_CLASSES),
// atomically.
func (w *Writer) WriteFile(name string, b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	return w.fail(writeFileAtomic(w.dir, name, b))
}

// Flush writes the pending records as blocks (stacks first), and rewrites
// log.xml and map.xml if they changed, each atomically.
func (w *Writer) Flush() error {
	return w.locked(func() error {
		w.mapNow = true
		defer func() { w.mapNow = false }()
		return w.flush()
	})
}

// FlushPaced is Flush for a collector's periodic flushes: map.xml, rewritten whole, is rewritten
// only once mapEvery times as long as its last rewrite took has passed, so that its rewrites take
// at most 1/mapEvery of the time (rewritten at every flush, the 50,000 mappings of a target that
// kept mapping were encoded again every half second).
func (w *Writer) FlushPaced() error { return w.locked(w.flush) }

// FlushData writes the records not yet written to the data files, and not log.xml and map.xml: where
// Close follows, which writes them (each rewrite is a new file).
func (w *Writer) FlushData() error { return w.locked(w.flushData) }

// locked runs f with w.mu held, unless the writer has failed or closed.
func (w *Writer) locked(f func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	return f()
}

func (w *Writer) flush() error {
	if err := w.flushData(); err != nil {
		return err
	}
	return w.fail(w.writeXML())
}

// flushData writes the records not yet written, stacks first. Call with w.mu held.
func (w *Writer) flushData() error {
	for _, d := range w.files() {
		if err := w.fail(d.flush()); err != nil {
			return err
		}
	}
	return nil
}

// writeXML rewrites log.xml and map.xml when they changed. Call with w.mu held.
func (w *Writer) writeXML() error {
	if w.logDirty || w.logStale && time.Since(w.logAt) >= logEvery {
		b := encodeLog(w.log)
		if err := writeFileAtomic(w.dir, LogFile, b); err != nil {
			return err
		}
		w.logDirty, w.logStale, w.logAt = false, false, time.Now()
		w.logSize = int64(len(b))
	}
	if w.mapDirty && (w.mapNow || time.Since(w.mapAt) >= mapEvery*w.mapCost) {
		t0 := time.Now()
		b := encodeMap(w.maps)
		if err := writeFileAtomic(w.dir, MapFile, b); err != nil {
			return err
		}
		w.mapDirty = false
		w.mapSize = int64(len(b))
		w.mapAt, w.mapCost = time.Now(), time.Since(t0)
	}
	return nil
}

// mapEvery paces the rewrites of map.xml at FlushPaced.
const mapEvery = 20

// Size is the number of bytes in the experiment so far, counting records
// not yet flushed; archives are not counted.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.logSize + w.mapSize + w.notesSize
	for _, d := range w.files() {
		n += d.written + d.pending()
	}
	return n
}

// Close flushes everything, writes the final log.xml and closes the files. After a write error
// (a full disk) the records stay as they were, but the final log.xml and map.xml are still written,
// in the space of the reserve: Close returns the first error. When only the final log.xml and
// map.xml found the disk full (the records were all written), they are written in the space of the
// reserve and nothing is lost: Close returns nil. Closing a closed Writer does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.logDirty, w.mapDirty, w.mapNow = true, true, true
	err := w.err
	if err == nil {
		err = w.flushData()
	}
	if err == nil {
		if xerr := w.writeXML(); xerr != nil {
			w.releaseReserve()
			if xerr = w.writeXML(); xerr != nil {
				err = w.fail(xerr)
			}
		}
	} else {
		// Whatever failed, the log and the map of what was recorded are written if they can be.
		w.releaseReserve()
		if xerr := w.writeXML(); xerr != nil && !errors.Is(err, xerr) {
			err = errors.Join(err, fmt.Errorf("experiment %s: %w", w.dir, xerr))
		}
	}
	w.releaseReserve()
	if cerr := w.closeFiles(); err == nil {
		err = w.fail(cerr)
	}
	w.closed = true
	return err
}

// closeFiles closes the binary files that are open.
func (w *Writer) closeFiles() error {
	var errs []error
	for _, d := range []*dataFile{w.clock, w.stacks, w.overview, w.offcpu, w.hwc} {
		if d != nil {
			errs = append(errs, d.f.Close())
		}
	}
	return errors.Join(errs...)
}

// writeFileAtomic replaces dir/name with data: a reader sees the old or the new content. dir is the
// writer's own directory, which is never a link; the temporary file is made new (O_EXCL, not
// through a link), so a link planted under its name cannot redirect the write (safedir).
func writeFileAtomic(dir, name string, data []byte) error {
	d, err := safedir.OpenNoFollow(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(name, data, 0o644)
}
