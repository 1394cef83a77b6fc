package experiment

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newWriter(t testing.TB) (*Writer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test.1.er")
	w, err := Create(dir, testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

func fileSize(t testing.TB, file string) int64 {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCreate(t *testing.T) {
	w, dir := newWriter(t)
	for _, name := range []string{LogFile, MapFile, ClockFile, StacksFile, OverviewFile, ArchivesDir} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("after Create: %v", err)
		}
	}
	for _, name := range []string{ClockFile, StacksFile, OverviewFile} {
		if got := fileSize(t, filepath.Join(dir, name)); got != fileHeaderSize {
			t.Errorf("%s: %d bytes, want just the %d-byte header", name, got, fileHeaderSize)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, LogFile))
	l, _, err := decodeLog(LogFile, b)
	if err != nil || l.Pid != 4242 || l.FormatVersion != FormatVersion {
		t.Errorf("initial log.xml: %+v, %v", l, err)
	}
	if w.Dir() != dir {
		t.Errorf("Dir() = %q", w.Dir())
	}
	if _, err := Create(dir, Log{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create on an existing directory: %v", err)
	}
	if _, err := Create(filepath.Join(dir, "no", "such.er"), Log{}); err == nil {
		t.Error("Create under a missing directory succeeded")
	}
}

func TestStackInterning(t *testing.T) {
	w, dir := newWriter(t)
	id := func(s Stack) uint32 {
		t.Helper()
		n, err := w.Stack(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := Stack{0x401000, 0x401100}
	if got := id(nil); got != 0 {
		t.Errorf("empty stack: id %d", got)
	}
	if got := id(Stack{}); got != 0 {
		t.Errorf("zero-length stack: id %d", got)
	}
	if got := id(a); got != 1 {
		t.Errorf("first stack: id %d", got)
	}
	if got := id(Stack{0x401000}); got != 2 {
		t.Errorf("prefix of the first: id %d", got)
	}
	if got := id(Stack{0x401100, 0x401000}); got != 3 {
		t.Errorf("reversed: id %d", got)
	}
	a2 := Stack{0x401000, 0x401100}
	if got := id(a2); got != 1 {
		t.Errorf("same frames again: id %d, want 1", got)
	}
	a[0] = 5 // the writer keeps no reference to the caller's slice
	if got := id(Stack{0x401000, 0x401100}); got != 1 {
		t.Errorf("after changing the caller's slice: id %d, want 1", got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Stack{nil, {0x401000, 0x401100}, {0x401000}, {0x401100, 0x401000}}
	if !reflect.DeepEqual(d.Stacks, want) {
		t.Errorf("stacks %x, want %x", d.Stacks, want)
	}
	if err := w.Clock(ClockSample{Stack: 4}); err == nil {
		t.Error("a sample with an unknown stack id was accepted")
	}
}

// Full blocks are written without Flush, stacks before the samples that use them.
func TestBlocksWrittenWhenFull(t *testing.T) {
	w, dir := newWriter(t)
	const n = 5000 // 200000 bytes of records: 3 full blocks
	for i := range n {
		id, err := w.Stack(Stack{uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Clock(ClockSample{Time: int64(i), Stack: id}); err != nil {
			t.Fatal(err)
		}
	}
	perBlock := (blockTarget + clockRecordSize - 1) / clockRecordSize
	if got, want := fileSize(t, filepath.Join(dir, ClockFile)), int64(fileHeaderSize+3*(blockHeaderSize+perBlock*clockRecordSize)); got != want {
		t.Errorf("clock file before Flush: %d bytes, want %d", got, want)
	}
	d, err := Open(dir) // no Flush: what is on disk must be consistent
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != 3*perBlock {
		t.Errorf("read %d samples before Flush, want %d", d.ClockTable().Len(), 3*perBlock)
	}
	for i, s := range d.ClockSamples() {
		if d.Stacks[s.Stack][0] != uint64(i) {
			t.Fatalf("sample %d has stack %x", i, d.Stacks[s.Stack])
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open(dir); err != nil || d.ClockTable().Len() != n || len(d.Stacks) != n+1 {
		t.Errorf("after Close: %v, %d samples", err, d.ClockTable().Len())
	}
}

func TestAddMapping(t *testing.T) {
	w, dir := newWriter(t)
	w.AddMapping(Mapping{Pid: 1, Start: 0x1000, End: 0x3000, Path: "/a", LoadTime: 0, UnloadTime: -1})
	w.AddMapping(Mapping{Pid: 1, Start: 0x3000, End: 0x4000, Path: "/b", LoadTime: 0, UnloadTime: -1})
	w.AddMapping(Mapping{Pid: 2, Start: 0x1000, End: 0x3000, Path: "/a", LoadTime: 0, UnloadTime: -1})
	w.AddMapping(Mapping{Pid: 1, Start: 0x5000, End: 0x6000, Path: "/gone", LoadTime: 1, UnloadTime: 2})
	// Overlaps /a of pid 1 only, at its last byte; touches /b without overlapping it.
	w.AddMapping(Mapping{Pid: 1, Start: 0x2fff, End: 0x3000, Path: "/c", LoadTime: 50, UnloadTime: -1})
	// Overlaps /b, /c is above; and the unloaded /gone keeps its time.
	w.AddMapping(Mapping{Pid: 1, Start: 0x3800, End: 0x5800, Path: "/d", LoadTime: 60, UnloadTime: -1})
	w.ProcessExit(2, 70)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int64{}
	for _, m := range d.Mappings {
		got[m.Path] = append(got[m.Path], m.UnloadTime)
	}
	want := map[string][]int64{"/a": {50, 70}, "/b": {60}, "/gone": {2}, "/c": {-1}, "/d": {-1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unload times %v, want %v", got, want)
	}
	if d.Mappings[4].Path != "/c" || d.Mappings[4].LoadTime != 50 {
		t.Errorf("mappings not in the order added: %+v", d.Mappings)
	}
	w.ProcessExit(1, 80)
	w.Flush()
	d, _ = Open(dir)
	for _, m := range d.Mappings {
		if m.UnloadTime == -1 {
			t.Errorf("%s still mapped after both processes exited", m.Path)
		}
	}
}

func TestLogUpdates(t *testing.T) {
	w, dir := newWriter(t)
	w.Event(Event{Time: 9, Kind: "comment", Text: "hello"})
	w.UpdateLog(func(l *Log) {
		l.EndTime = 123
		l.ExitStatus = 3
		l.FormatVersion = "9.9"
		l.Settings = append(l.Settings, Setting{"duration_limit_s", "5"})
	})
	// Not written before Flush.
	b, _ := os.ReadFile(filepath.Join(dir, LogFile))
	if l, _, _ := decodeLog(LogFile, b); l.EndTime != 2500000000 {
		t.Errorf("log.xml rewritten before Flush: end %d", l.EndTime)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := d.Log
	if l.EndTime != 123 || l.ExitStatus != 3 || l.FormatVersion != FormatVersion ||
		l.Settings[len(l.Settings)-1] != (Setting{"duration_limit_s", "5"}) ||
		l.Events[len(l.Events)-1] != (Event{Time: 9, Kind: "comment", Text: "hello"}) {
		t.Errorf("log after updates: %+v", l)
	}
	if _, err := os.Stat(filepath.Join(dir, "."+LogFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
}

func TestNotes(t *testing.T) {
	w, dir := newWriter(t)
	if err := w.Notes("first"); err != nil {
		t.Fatal(err)
	}
	if err := w.Notes("second\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, NotesFile))
	if string(b) != "first\nsecond\n" {
		t.Errorf("notes %q", b)
	}
	// No more than a reader reads.
	if err := w.Notes(strings.Repeat("x", maxNotesSize)); err == nil || !strings.Contains(err.Error(), "the notes file holds at most 2097152") {
		t.Errorf("2 MiB more notes: %v", err)
	}
	if err := w.Notes("third"); err != nil {
		t.Errorf("notes after a refused one: %v", err)
	}
}

// A stack longer than the format allows is refused.
func TestStackFrameLimit(t *testing.T) {
	w, _ := newWriter(t)
	if _, err := w.Stack(make(Stack, maxStackFrames+1)); err == nil || !strings.Contains(err.Error(), "at most 1048576 are stored") {
		t.Errorf("a stack of %d frames: %v", maxStackFrames+1, err)
	}
	if id, err := w.Stack(make(Stack, maxStackFrames)); err != nil || id != 1 {
		t.Errorf("a stack of %d frames: %d, %v", maxStackFrames, id, err)
	}
}

func TestOverviewWriter(t *testing.T) {
	w, dir := newWriter(t)
	for _, o := range testOverview() {
		if err := w.Overview(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Overview(OverviewSample{Label: string(make([]byte, 1<<16))}); err == nil {
		t.Error("a 64 KiB label was accepted")
	}
	w.Flush()
	d, err := Open(dir)
	if err != nil || !reflect.DeepEqual(d.Overview, testOverview()) {
		t.Errorf("overview read back: %+v, %v", d.Overview, err)
	}
}

func TestSize(t *testing.T) {
	w, dir := newWriter(t)
	total := func() int64 {
		var n int64
		for _, name := range []string{LogFile, MapFile, ClockFile, StacksFile, OverviewFile, NotesFile} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	if got, want := w.Size(), total(); got != want {
		t.Errorf("after Create: Size %d, files %d", got, want)
	}
	id, _ := w.Stack(Stack{1, 2, 3})
	w.Clock(ClockSample{Stack: id})
	w.Overview(OverviewSample{Label: "start"})
	w.AddMapping(Mapping{Path: "/x", UnloadTime: -1})
	w.Notes("a note")
	pending := w.Size()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Size(), total(); got != want {
		t.Errorf("after Flush: Size %d, files %d", got, want)
	}
	// Before Flush the pending blocks were counted; only map.xml grew since.
	mapBefore := int64(len(encodeMap(nil)))
	mapAfter := fileSize(t, filepath.Join(dir, MapFile))
	if pending != w.Size()-(mapAfter-mapBefore) {
		t.Errorf("Size before Flush %d, after %d (map.xml grew by %d)", pending, w.Size(), mapAfter-mapBefore)
	}
}

func TestClose(t *testing.T) {
	w, dir := newWriter(t)
	id, _ := w.Stack(Stack{7})
	w.Clock(ClockSample{Time: 1, Stack: id})
	w.UpdateLog(func(l *Log) { l.EndTime = 3_000_000_077 })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := w.Stack(Stack{8}); !errors.Is(err, ErrClosed) {
		t.Errorf("Stack after Close: %v", err)
	}
	if err := w.Clock(ClockSample{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Clock after Close: %v", err)
	}
	if err := w.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != 1 || d.Log.EndTime != 3_000_000_077 || len(d.Warnings) != 0 {
		t.Errorf("after Close: %d samples, end %d, warnings %q", d.ClockTable().Len(), d.Log.EndTime, d.Warnings)
	}
}

// UpdateLog after Close rewrites log.xml at once: a process's thread counts are known only at the
// end of a collection, when its experiment may be closed already.
func TestUpdateLogAfterClose(t *testing.T) {
	w, dir := newWriter(t)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.UpdateLog(func(l *Log) {
		l.CountedCPUNS = 612_897_099
		l.ThreadCPU = []ThreadCount{{Tid: 3196, CPUNS: 600_000_000}, {Tid: 3197, CPUNS: 12_897_099, Reported: true}}
	})
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ThreadCount{{Tid: 3196, CPUNS: 600_000_000}, {Tid: 3197, CPUNS: 12_897_099, Reported: true}}; d.Log.CountedCPUNS != 612_897_099 ||
		!slices.Equal(d.Log.ThreadCPU, want) {
		t.Errorf("log after UpdateLog after Close: counted %d, threads %+v", d.Log.CountedCPUNS, d.Log.ThreadCPU)
	}
}

// A write error is kept and returned by every later write.
func TestWriteErrorSticks(t *testing.T) {
	w, _ := newWriter(t)
	w.clock.f.Close()
	w.Clock(ClockSample{})
	err := w.Flush()
	if err == nil {
		t.Fatal("Flush to a closed file succeeded")
	}
	if err2 := w.Clock(ClockSample{}); err2 != err {
		t.Errorf("next write: %v, want %v", err2, err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	w, dir := newWriter(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3000 {
				id, err := w.Stack(Stack{uint64(i % 100), uint64(g)})
				if err == nil {
					err = w.Clock(ClockSample{Tid: uint32(g), Time: int64(i), Stack: id})
				}
				if err != nil {
					t.Error(err)
					return
				}
				if i%1000 == 0 {
					w.Event(Event{Kind: "comment", Pid: uint32(g)})
					w.AddMapping(Mapping{Pid: uint32(g), Start: uint64(i), End: uint64(i + 1), UnloadTime: -1})
					w.Flush()
					w.Size()
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != 12000 || len(d.Stacks) != 401 || len(d.Mappings) != 12 {
		t.Errorf("%d samples, %d stacks, %d mappings", d.ClockTable().Len(), len(d.Stacks), len(d.Mappings))
	}
	for _, s := range d.ClockSamples() {
		if st := d.Stacks[s.Stack]; st[0] != uint64(s.Time%100) || st[1] != uint64(s.Tid) {
			t.Fatalf("sample %+v has stack %x", s, st)
		}
	}
}

// After a write error (a full disk: /dev/full here) the records stay as they were, and Close still
// writes the final log.xml, in the space of the reserve, which is gone afterwards.
func TestCloseAfterWriteError(t *testing.T) {
	w, dir := newWriter(t)
	if w.reserve == "" {
		t.Fatalf("no reserve in %s", dir)
	}
	if got := fileSize(t, filepath.Join(dir, ReserveFile)); got != reserveBytes {
		t.Errorf("reserve of %d bytes, want %d", got, reserveBytes)
	}
	id, _ := w.Stack(Stack{7})
	w.Clock(ClockSample{Time: 1, Stack: id})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	w.clock.f.Close()
	w.clock.f = full
	w.Clock(ClockSample{Time: 2, Stack: id})
	ferr := w.Flush()
	if ferr == nil || w.Err() != ferr {
		t.Fatalf("Flush to /dev/full: %v, Err %v", ferr, w.Err())
	}
	w.Event(Event{Time: 3, Kind: "warning", Text: "the disk is full"})
	w.UpdateLog(func(l *Log) { l.EndTime, l.Exited, l.ExitStatus = 9, true, 7 })
	if err := w.Close(); err != ferr {
		t.Errorf("Close: %v, want the first error %v", err, ferr)
	}
	if _, err := os.Stat(filepath.Join(dir, ReserveFile)); !os.IsNotExist(err) {
		t.Errorf("the reserve is still there: %v", err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != 1 || d.Log.EndTime != 9 || !d.Log.Exited || d.Log.ExitStatus != 7 || len(d.Log.Events) == 0 {
		t.Errorf("after Close: %d samples, end %d, exited %v status %d, events %+v", d.ClockTable().Len(), d.Log.EndTime, d.Log.Exited, d.Log.ExitStatus, d.Log.Events)
	}
}

// When the disk fills up after the records were written (archives took the last of it), Close writes
// the final log.xml and map.xml in the space of the reserve and says nothing was lost: er collect
// exited 1 over a complete experiment before.
func TestCloseDiskFullForLogOnly(t *testing.T) {
	disk := smallDisk(t, 1<<20)
	dir := filepath.Join(disk, "test.1.er")
	w, err := Create(dir, testLog())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Stack(Stack{7, 8})
	for i := range 100 {
		w.Clock(ClockSample{Time: int64(i), Stack: id})
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fill, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err = fill.Write(make([]byte, 4096)); err == nil; _, err = fill.Write(make([]byte, 4096)) {
	}
	fill.Close()
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("filling %s: %v", disk, err)
	}
	for i := range 200 { // a log larger than what the filler left
		w.Event(Event{Time: int64(i), Kind: "comment", Text: strings.Repeat("x", 100)})
	}
	w.UpdateLog(func(l *Log) { l.EndTime, l.Exited, l.ExitStatus = 200, true, 7 })
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v; want nil, the records and the log were all written", err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != 100 || d.Log.EndTime != 200 || d.Log.ExitStatus != 7 || len(d.Log.Events) < 200 {
		t.Errorf("after Close: %d samples, end %d, status %d, %d events", d.ClockTable().Len(), d.Log.EndTime, d.Log.ExitStatus, len(d.Log.Events))
	}
}

// smallDisk mounts a tmpfs of size bytes and returns its directory; the test is skipped where
// mounting is not allowed (not root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): run as root to test a full disk", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// A subexperiment keeps no reserve: the founder's serves the whole run.
func TestNoReserveInSubexperiment(t *testing.T) {
	l := testLog()
	l.Lineage = "_f1"
	dir := filepath.Join(t.TempDir(), "_f1.er")
	w, err := Create(dir, l)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(filepath.Join(dir, ReserveFile)); !os.IsNotExist(err) {
		t.Errorf("a subexperiment has a reserve: %v", err)
	}
}

func TestSampleEventsWait(t *testing.T) {
	w, dir := newWriter(t)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	events := func() []Event {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, LogFile))
		if err != nil {
			t.Fatal(err)
		}
		l, _, err := decodeLog(LogFile, b)
		if err != nil {
			t.Fatal(err)
		}
		return l.Events
	}
	n := len(events())
	// A sample point's event waits: log.xml is not rewritten for it alone.
	sample := Event{Time: 10, Kind: "sample", Pid: 1, Text: "sample point 1: periodic"}
	w.Event(sample)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := len(events()); got != n {
		t.Errorf("log.xml rewritten for a sample event: %d events, want %d", got, n)
	}
	// Once logEvery has passed, it is written.
	w.mu.Lock()
	w.logAt = w.logAt.Add(-logEvery)
	w.mu.Unlock()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := events(); len(got) != n+1 || got[n] != sample {
		t.Errorf("after %v: events %+v, want the sample event last", logEvery, got)
	}
	// Any other event is written at the next Flush, with the sample events before it.
	w.Event(Event{Time: 20, Kind: "sample", Pid: 1, Text: "sample point 2: periodic"})
	w.Event(Event{Time: 30, Kind: "warning", Text: "lost 3 samples"})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := events(); len(got) != n+3 || got[n+2].Kind != "warning" {
		t.Errorf("after a warning: events %+v", got)
	}
	// Close writes the waiting ones.
	w.Event(Event{Time: 40, Kind: "sample", Pid: 1, Text: "sample point 3: end"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := events(); len(got) != n+4 || got[n+3].Text != "sample point 3: end" {
		t.Errorf("after Close: events %+v", got)
	}
}

// TestOffCPU: off-CPU intervals go to a file of their own, made at the first (an experiment without
// them has none, and a reader of format 1.0 skips the file it does not know), and are read back with the
// clock samples, in time order; one whose stack was not interned is refused.
func TestOffCPU(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "off.er")
	w, err := Create(dir, testLog())
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.Stack(Stack{0x401000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, OffCPUFile)); !os.IsNotExist(err) {
		t.Errorf("%s exists before an off-CPU interval: %v", OffCPUFile, err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Clock(ClockSample{Time: 10, Pid: 1, Tid: 1, Mode: ModeUser, Period: 10, Stack: id}))
	must(w.OffCPU(ClockSample{Time: 5, Pid: 1, Tid: 1, Mode: ModeSleep, Period: 4, Stack: id}))
	must(w.OffCPU(ClockSample{Time: 30, Pid: 1, Tid: 2, Mode: ModeWaitCPU, Period: 7, Stack: id}))
	if err := w.OffCPU(ClockSample{Time: 31, Stack: id + 1}); err == nil {
		t.Error("an off-CPU interval with a stack not interned was taken")
	}
	must(w.Close())
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []Mode
	for _, c := range d.ClockSamples() {
		got = append(got, c.Mode)
	}
	if want := []Mode{ModeSleep, ModeUser, ModeWaitCPU}; !slices.Equal(got, want) {
		t.Errorf("clock events' modes %v, want %v (in time order)", got, want)
	}
}

// TestCounters: counter samples go to a file of their own, made at the first, and are read back in
// time order with their counters; a sample of a counter the log does not list, or with a stack not
// interned, is refused.
func TestCounters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hwc.er")
	log := testLog()
	w, err := Create(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.Stack(Stack{0x401000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, CountersFile)); !os.IsNotExist(err) {
		t.Errorf("%s exists before a counter sample: %v", CountersFile, err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a := CounterSample{Time: 20, Value: 9999991, Pid: 1, Tid: 2, CPU: 1, Stack: id, Counter: 0, Mode: ModeUser}
	b := CounterSample{Time: 10, Value: 1000003, Addr: 0x7ffd0000, Pid: 1, Tid: 1, Stack: id, Counter: 1, Mode: ModeKernel}
	must(w.Counter(a))
	must(w.Counter(b))
	if err := w.Counter(CounterSample{Counter: 2, Stack: id}); err == nil {
		t.Error("a sample of a third counter was taken; the log has two")
	}
	if err := w.Counter(CounterSample{Stack: id + 1}); err == nil {
		t.Error("a counter sample with a stack not interned was taken")
	}
	must(w.Close())
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := counterSamples(d.CounterTable()), []CounterSample{b, a}; !reflect.DeepEqual(got, want) {
		t.Errorf("samples %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(d.Log.Counters, log.Counters) {
		t.Errorf("counters %+v, want %+v", d.Log.Counters, log.Counters)
	}
	// A log that lists one counter: the sample of the second is damage, with its offset.
	log.Counters = log.Counters[:1]
	if err := os.WriteFile(filepath.Join(dir, LogFile), encodeLog(log), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if fe := asFormatError(t, err); !strings.Contains(fe.Error(), "sample 2 is of counter 1; log.xml lists 1 counters") ||
		fe.Offset != fileHeaderSize+blockHeaderSize+hwcRecordSize {
		t.Errorf("error %v (offset %d)", err, fe.Offset)
	}
}

// TestFlushPaced: FlushPaced rewrites a changed map.xml only once mapEvery times its last rewrite's
// cost has passed; Flush and Close always do.
func TestFlushPaced(t *testing.T) {
	w, dir := newWriter(t)
	count := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, MapFile))
		return strings.Count(string(b), "<mapping ")
	}
	w.AddMapping(Mapping{Pid: 1, Start: 0x1000, End: 0x2000, Path: "/a", UnloadTime: -1})
	if err := w.Flush(); err != nil || count() != 1 {
		t.Fatalf("Flush: %v, %d mappings in map.xml", err, count())
	}
	w.mapCost = time.Hour // as if the last rewrite had taken an hour
	w.AddMapping(Mapping{Pid: 1, Start: 0x3000, End: 0x4000, Path: "/b", UnloadTime: -1})
	if err := w.FlushPaced(); err != nil || count() != 1 {
		t.Errorf("FlushPaced an hour after a rewrite that took one: %v, %d mappings in map.xml; want it not rewritten", err, count())
	}
	w.mapCost = 0
	if err := w.FlushPaced(); err != nil || count() != 2 {
		t.Errorf("FlushPaced after a cheap rewrite: %v, %d mappings in map.xml; want 2", err, count())
	}
	w.mapCost = time.Hour
	w.AddMapping(Mapping{Pid: 1, Start: 0x5000, End: 0x6000, Path: "/c", UnloadTime: -1})
	if err := w.Close(); err != nil || count() != 3 {
		t.Errorf("Close: %v, %d mappings in map.xml; want 3", err, count())
	}
}

// TestAddMappingWork: 50,000 mappings of one process at falling addresses (as mmap places them),
// then 50,000 more, each over one of those (which it unloads), then the process's exit, take
// O(n log n) steps: at most 16 n log2 n, where a scan of the mappings at each one took n²/2 (5
// billion).
func TestAddMappingWork(t *testing.T) {
	w, _ := newWriter(t)
	const n = 50000
	at := func(i int) uint64 { return uint64(0x7f0000000000) - uint64(i)*0x2000 }
	for i := range n {
		w.AddMapping(Mapping{Pid: 1, Start: at(i), End: at(i) + 0x1000, Path: "/x", LoadTime: 1, UnloadTime: -1})
	}
	for i := range n {
		w.AddMapping(Mapping{Pid: 1, Start: at(i) + 0x800, End: at(i) + 0x1800, Path: "/y", LoadTime: 2, UnloadTime: -1})
	}
	live := w.mapped[1]
	steps := live.Steps()
	if live.Len() != n {
		t.Errorf("%d mappings still mapped, want %d", live.Len(), n)
	}
	w.ProcessExit(1, 3)
	bound := int64(16 * 2 * n * bits.Len(2*n))
	t.Logf("%d steps for %d mappings (bound %d)", steps, 2*n, bound)
	if steps > bound {
		t.Errorf("%d steps for %d mappings, more than %d (16 n log2 n)", steps, 2*n, bound)
	}
	for i, m := range w.maps {
		if want := int64(2 + i/n); m.UnloadTime != want {
			t.Fatalf("mapping %d (%s) unloaded at %d, want %d", i, m.Path, m.UnloadTime, want)
		}
	}
}
