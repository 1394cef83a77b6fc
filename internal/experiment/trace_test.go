package experiment

import (
	"bytes"
	"encoding/binary"
	"er/internal/events"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// traceFile builds a trace file as the collector library writes it: a header, then blocks of
// records; each inner slice of blocks is one block's records.
func traceFile(kind, pid uint32, param, start uint64, blockSize int, blocks ...[][]byte) []byte {
	b := make([]byte, traceHeaderSize)
	copy(b, traceMagic)
	le.PutUint32(b[8:], traceVersion)
	le.PutUint32(b[12:], kind)
	le.PutUint32(b[16:], uint32(blockSize))
	le.PutUint32(b[20:], pid)
	le.PutUint64(b[24:], param)
	le.PutUint64(b[32:], start)
	for _, recs := range blocks {
		blk := make([]byte, blockSize)
		off := 0
		for _, r := range recs {
			off += copy(blk[off:], r)
		}
		b = append(b, blk...)
	}
	return b
}

// rec builds one record: the 16-byte prefix and body, padded to 8 bytes.
func rec(kind, aux uint8, tid uint32, time uint64, body ...any) []byte {
	var p []byte
	for _, v := range body {
		switch v := v.(type) {
		case uint32:
			p = binary.LittleEndian.AppendUint32(p, v)
		case int32:
			p = binary.LittleEndian.AppendUint32(p, uint32(v))
		case uint64:
			p = binary.LittleEndian.AppendUint64(p, v)
		case int64:
			p = binary.LittleEndian.AppendUint64(p, uint64(v))
		case string:
			p = append(p, v...)
		}
	}
	for len(p)%8 != 0 {
		p = append(p, 0)
	}
	size := 16 + len(p)
	out := binary.LittleEndian.AppendUint64(nil, uint64(size/8)|uint64(kind)<<16|uint64(aux)<<24|uint64(tid)<<32)
	out = binary.LittleEndian.AppendUint64(out, time)
	return append(out, p...)
}

func stackRec(id uint32, pcs ...uint64) []byte {
	body := []any{id, uint32(len(pcs))}
	for _, pc := range pcs {
		body = append(body, pc)
	}
	return rec(recStack, 0, 7, 0, body...)
}

func ioRec(op IOOp, tid uint32, t uint64, stack uint32, dur uint64, fd, fd2 int32, ret, bytes int64, errno int32, name string) []byte {
	return rec(recIO, uint8(op), tid, t, stack, uint32(len(name)), dur, fd, fd2, ret, bytes, errno, uint32(0), name)
}

const base = 1_000_000_000

// traceDir writes files (name: contents) into a new directory t.er and returns its path.
func traceDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t.er")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeTraceExperiment(t *testing.T) string {
	t.Helper()
	const pid = 42
	files := map[string][]byte{
		TraceStacksFile: traceFile(5, pid, 0, base, 4096,
			[][]byte{
				rec(recMap, 2, 7, base+1, uint64(0x400000), uint64(0x401000), uint64(0), uint32(len("/bin/prog")), uint32(0), "/bin/prog"),
				rec(recMap, 0, 7, base+5000, uint64(0x7f0000), uint64(0x7f2000), uint64(0x1000), uint32(len("/lib/x.so")), uint32(0), "/lib/x.so"),
				stackRec(1, 0x7f0010, 0x400100, 0x400200),
				rec(recNote, 0, 7, base+2, "sync_threshold_ns=1234"),
			},
			[][]byte{
				stackRec(2, 0x7f0020, 0x400300),
				rec(recMap, 1, 7, base+9000, uint64(0x7f0000), uint64(0), uint64(0), uint32(0), uint32(0)),
			}),
		HeapTraceFile: traceFile(1, pid, 0, base, 4096,
			[][]byte{
				rec(recHeap, uint8(HeapMalloc), 7, base+100, uint32(1), uint32(0), uint64(0x1000), uint64(64), uint64(0)),
				rec(recHeap, uint8(HeapFree), 8, base+300, uint64(0x1000)),                          // short form
				rec(recHeap, uint8(HeapCalloc), 9, base+350, uint32(1), uint32(48), uint64(0x3000)), // short form
			},
			[][]byte{
				rec(recHeap, uint8(HeapRealloc), 8, base+200, uint32(2), uint32(0), uint64(0x2000), uint64(128), uint64(0x1000)),
			}),
		SyncTraceFile: traceFile(2, pid, 1234, base, 4096, [][]byte{
			rec(recSync, uint8(SyncMutexLock), 7, base+400, uint32(2), uint32(0), uint64(400), uint64(0xabc)),
		}),
		IOTraceFile: traceFile(3, pid, 0, base, 4096, [][]byte{
			ioRec(IOInherited, 7, base+1, 0, 0, 1, -1, 0, 0, 0, "/dev/pts/0"),
			ioRec(IOOpen, 7, base+10, 1, 10, 3, -1, 3, 0, 0, "/tmp/f"),
			ioRec(IOWriteOp, 7, base+20, 2, 20, 3, -1, 50, 50, 0, ""),
			ioRec(IODup2, 7, base+25, 2, 10, 3, 9, 9, 0, 0, ""),
			ioRec(IOReadOp, 7, base+30, 2, 30, 9, -1, 20, 20, 0, ""),
			ioRec(IOClose, 7, base+40, 2, 10, 3, -1, 0, 0, 0, ""),
			ioRec(IOWriteOp, 7, base+50, 2, 10, 1, -1, 6, 6, 0, ""),
			ioRec(IOReadOp, 7, base+60, 2, 10, 3, -1, -1, 0, 9, ""),
		}),
		ClockTraceFile: traceFile(4, pid, 10_000_000, base, 4096, [][]byte{
			rec(recClock, 0, 7, base+500, uint32(1), uint32(3), uint32(1), uint32(0)),
		}),
	}
	return traceDir(t, files)
}

func TestReadTraces(t *testing.T) {
	dir := writeTraceExperiment(t)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	stack := func(id uint32) Stack { return d.Stacks[id] }
	for _, w := range d.Warnings {
		if !strings.Contains(w, "missing") {
			t.Errorf("warning %q", w)
		}
	}
	// Heap events: in time order, the short free read as a free, stacks resolved.
	wantHeap := []HeapEvent{
		{Time: 100, Pid: 42, Tid: 7, Op: HeapMalloc, Addr: 0x1000, Size: 64},
		{Time: 200, Pid: 42, Tid: 8, Op: HeapRealloc, Addr: 0x2000, Size: 128, Old: 0x1000},
		{Time: 300, Pid: 42, Tid: 8, Op: HeapFree, Old: 0x1000},
		{Time: 350, Pid: 42, Tid: 9, Op: HeapCalloc, Addr: 0x3000, Size: 48},
	}
	heap := d.HeapEvents()
	if len(heap) != 4 {
		t.Fatalf("heap %+v", heap)
	}
	if !reflect.DeepEqual(stack(heap[0].Stack), Stack{0x7f0010, 0x400100, 0x400200}) ||
		!reflect.DeepEqual(stack(heap[1].Stack), Stack{0x7f0020, 0x400300}) || heap[2].Stack != 0 ||
		!reflect.DeepEqual(stack(heap[3].Stack), Stack{0x7f0010, 0x400100, 0x400200}) {
		t.Errorf("heap stacks %v %v %v", stack(heap[0].Stack), stack(heap[1].Stack), heap[2].Stack)
	}
	for i := range heap {
		heap[i].Stack = 0
	}
	if !reflect.DeepEqual(heap, wantHeap) {
		t.Errorf("heap\n got %+v\nwant %+v", heap, wantHeap)
	}
	if sy := syncEvents(d.SyncTable()); len(sy) != 1 || sy[0].Wait != 400 || sy[0].Object != 0xabc || sy[0].Op != SyncMutexLock ||
		!reflect.DeepEqual(stack(sy[0].Stack), Stack{0x7f0020, 0x400300}) || d.SyncTable().CountAt(0) != 1 || d.SyncTable().CPUAt(0) != -1 {
		t.Errorf("sync %+v", d.SyncTable())
	}
	// I/O: names follow the descriptors through open, dup2 and close.
	var files []string
	ios := d.IOEvents()
	for _, e := range ios {
		files = append(files, e.Op.String()+":"+e.File)
	}
	want := []string{"<inherited>:/dev/pts/0", "open:/tmp/f", "write:/tmp/f", "dup2:/tmp/f", "read:/tmp/f",
		"close:/tmp/f", "write:/dev/pts/0", "read:<fd 3>"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("I/O files\n got %q\nwant %q", files, want)
	}
	if e := ios[7]; e.Err != 9 || e.Ret != -1 || e.Dur != 10 {
		t.Errorf("failed read %+v", e)
	}
	if e := ios[2]; e.Bytes != 50 || e.Dur != 20 || e.FD != 3 || e.FD2 != -1 {
		t.Errorf("write %+v", e)
	}
	// The SIGPROF clock sample: the interval times the count.
	if d.ClockTable().Len() != 1 || ClockAt(d.ClockTable(), 0).Period != 30_000_000 || ClockAt(d.ClockTable(), 0).CPU != 1 || ClockAt(d.ClockTable(), 0).Time != 500 {
		t.Errorf("clock %+v", d.ClockSamples())
	}
	// Mappings: the program from the start, the library until it was unmapped.
	wantMaps := []Mapping{
		{Pid: 42, Start: 0x400000, End: 0x401000, Path: "/bin/prog", UnloadTime: -1},
		{Pid: 42, Start: 0x7f0000, End: 0x7f2000, Offset: 0x1000, Path: "/lib/x.so", LoadTime: 5000, UnloadTime: 9000},
	}
	if !reflect.DeepEqual(d.Mappings, wantMaps) {
		t.Errorf("mappings\n got %+v\nwant %+v", d.Mappings, wantMaps)
	}
	settings := map[string]string{}
	for _, s := range d.Log.Settings {
		settings[string(s.Name)] = s.Value
	}
	if settings["collector.sync_threshold_ns"] != "1234" || settings["sync_threshold_ns"] != "1234" ||
		settings["sigprof_interval_ns"] != "10000000" {
		t.Errorf("settings %v", settings)
	}
	maps, err := TraceMappings(dir)
	if err != nil || len(maps) != 2 {
		t.Errorf("TraceMappings = %v, %v", maps, err)
	}
}

func TestReadTracesDamaged(t *testing.T) {
	dir := writeTraceExperiment(t)
	// A record that claims more than its block holds ends that block; a stack never written
	// leaves its events without a stack.
	heap := traceFile(1, 42, 0, base, 4096, [][]byte{
		rec(recHeap, uint8(HeapMalloc), 7, base+100, uint32(99), uint32(0), uint64(0x1000), uint64(64), uint64(0)),
		append([]byte{0xff, 0x7f, recHeap, 1, 0, 0, 0, 0}, make([]byte, 8)...),
	})
	if err := os.WriteFile(filepath.Join(dir, HeapTraceFile), heap, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.HeapTable().Len() != 1 || d.HeapTable().Stack[0] != 0 {
		t.Errorf("heap %+v", d.HeapEvents())
	}
	all := strings.Join(d.Warnings, "\n")
	for _, w := range []string{"heaptrace: 1 blocks end in a damaged record (first at offset 4144", "1 trace events refer to stacks that were never written"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings %q lack %q", all, w)
		}
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{[]byte("ERTRACE1"), "too short for a trace file header"},
		{append([]byte("NOTTRACE"), make([]byte, 40)...), "not a trace file"},
		{traceFile(2, 42, 0, base, 4096), "file kind 2, want 1"},
		{traceFile(1, 42, 0, base, 100), "block size 100"},
	} {
		if err := os.WriteFile(filepath.Join(dir, HeapTraceFile), c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		fe := asFormatError(t, err)
		if !strings.Contains(fe.Error(), c.want) || !strings.Contains(fe.Error(), HeapTraceFile) {
			t.Errorf("error %q, want %q", fe, c.want)
		}
	}
}

func FuzzReadTraceFile(f *testing.F) {
	f.Add(traceFile(5, 1, 0, base, 4096, [][]byte{stackRec(1, 1, 2), rec(recNote, 0, 1, 1, "a=b"),
		rec(recMap, 0, 7, base+1, uint64(0x400000), uint64(0x401000), uint64(0), uint32(3), uint32(0), "/ab")}))
	f.Add(traceFile(3, 1, 0, base, 4096, [][]byte{ioRec(IOOpen, 1, base, 1, 0, 3, -1, 3, 0, 0, "/x"),
		rec(recHeap, 4, 1, base+1, uint64(5)), rec(recClock, 0, 1, base+1, uint32(1), uint32(1), uint32(0), uint32(0)),
		rec(recSync, 1, 1, base+9, uint32(1), uint32(0), uint64(1), uint64(1))}))
	f.Add(traceFile(4, 1, 1_000_000, base, 4096, [][]byte{rec(recClock, 0, 1, base+1, uint32(1), uint32(0xffffffff), uint32(0), uint32(0)),
		rec(recHeap, uint8(HeapMalloc), 1, base+2, uint32(1), uint32(0), uint64(1), uint64(1)<<62, uint64(0)),
		rec(recSync, 1, 1, base+3, uint32(1), uint32(0), uint64(1)<<63, uint64(1)),
		rec(recHeap, uint8(HeapFree), 1, base-1, uint64(5)),
		append([]byte{0xff, 0x7f, recHeap, 1, 0, 0, 0, 0}, make([]byte, 8)...)}))
	f.Add(traceFile(4, 1, 1, base, 4096))
	f.Add(traceFile(1, 1, 0, base, 4096, // blocks enough for several parts
		[][]byte{rec(recHeap, uint8(HeapMalloc), 1, base+2, uint32(1), uint32(8), uint64(0x1000)), rec(recHeap, uint8(HeapFree), 1, base+3, uint64(0x1000))},
		[][]byte{rec(recHeap, uint8(HeapMalloc), 2, base+1, uint32(1), uint32(8), uint64(0x2000)), rec(recHeap, uint8(HeapFree), 2, base-1, uint64(0x2000))},
		[][]byte{rec(recSync, 1, 1, base+9, uint32(1), uint32(0), uint64(1), uint64(1)), append([]byte{0xff, 0x7f, recHeap, 1, 0, 0, 0, 0}, make([]byte, 8)...)},
		[][]byte{rec(recHeap, uint8(HeapCalloc), 3, base+4, uint32(2), uint32(48), uint64(0x3000))}))
	f.Add(traceFile(2, 1, 1000, base, 4096, // two threads' blocks, out of time order, one not in order inside
		[][]byte{rec(recSync, 1, 2, base+50, uint32(1), uint32(0), uint64(5), uint64(1)), rec(recSync, 1, 2, base+60, uint32(2), uint32(0), uint64(6), uint64(1))},
		[][]byte{rec(recSync, 2, 1, base+40, uint32(1), uint32(0), uint64(7), uint64(1)), rec(recSync, 1, 1, base+10, uint32(1), uint32(0), uint64(8), uint64(2)),
			rec(recSync, 1, 1, base+60, uint32(3), uint32(0), uint64(9), uint64(2))}))
	f.Add(traceFile(3, 1, 0, base, 4096, // two threads' blocks out of time order: an open, a dup2 and writes
		[][]byte{ioRec(IOWriteOp, 2, base+50, 1, 5, 9, -1, 3, 3, 0, ""), ioRec(IOClose, 2, base+60, 1, 1, 3, -1, 0, 0, 0, "")},
		[][]byte{ioRec(IOOpen, 1, base+10, 1, 4, 3, -1, 3, 0, 0, "/a"), ioRec(IODup2, 1, base+20, 2, 1, 3, 9, 9, 0, 0, ""),
			ioRec(IOWriteOp, 1, base+70, 1, 2, 9, -1, 4, 4, 0, ""), ioRec(IOReadOp, 1, base+80, 1, 2, 3, -1, -1, 0, 9, "")}))
	f.Add(traceFile(fileOMP, 1, 0, base, 4096, // OpenMP states and a region, one of each malformed
		[][]byte{ompStateRec(OMPWork, 2, base+10, base+90, 1), ompRegionRec(1, base+5, base+99, 1, 2, 1, 0, 0x400000),
			ompStateRec(OMPIdle, 2, base+95, base+91, 0), rec(recOMPRegion, 0, 1, base+1, uint32(1))}))
	f.Add(dynTestStacks()) // generated functions (collector_func_load), some malformed
	f.Add(javaTestTrace()) // Java methods, code, PC records and threads in two blocks, some malformed
	f.Fuzz(func(t *testing.T, b []byte) {
		// Read whole, and in parts of a block or more side by side: the same events and warnings.
		// Read with the heap trace summed as it is read (summed): what summing the events gives.
		read := func(parts int, summed bool) (*Data, []string) {
			d := &Data{Stacks: []Stack{nil}}
			var warns []string
			tr := newTraceReader(d, func(w string) { warns = append(warns, w) })
			if summed {
				newHeapSummer(d.heapTable())
				d.syncTable()
				newIOSummer(d.ioTable(), nil)
				tr.summed = true
			}
			tr.parts, tr.minPart = parts, minBlockSize
			tr.begin()
			for _, name := range TraceFiles {
				if err := tr.readFile(name, name, bytes.NewReader(b), int64(len(b)), -1); err != nil {
					asFormatError(t, err)
				}
			}
			tr.end()
			tr.finish()
			return d, warns
		}
		d, warns := read(1, false)
		if d3, warns3 := read(3, false); !reflect.DeepEqual(d3, d) || !reflect.DeepEqual(warns3, warns) {
			t.Fatalf("read in 3 parts: %d heap, %d sync, %d I/O, %d clock events, warnings %q; whole: %d, %d, %d, %d, %q",
				d3.HeapTable().Len(), d3.SyncTable().Len(), d3.IOTable().Len(), d3.ClockTable().Len(), warns3, d.HeapTable().Len(), d.SyncTable().Len(), d.IOTable().Len(), d.ClockTable().Len(), warns)
		}
		sum := &Data{}
		sum.AddHeap(d.HeapEvents())
		sum.AddSync(syncEvents(d.SyncTable()))
		sum.AddIO(d.IOEvents()) // named as read
		sum.SummarizeHeap()
		sum.SummarizeSync()
		sum.SummarizeIO()
		for _, parts := range []int{1, 3} {
			ds, warnsS := read(parts, true)
			if !sameHeap(ds.HeapTable(), sum.HeapTable()) || !sameSync(ds.SyncTable(), sum.SyncTable()) ||
				!sameIO(ds.IOTable(), sum.IOTable()) || !reflect.DeepEqual(warnsS, warns) {
				t.Fatalf("read summed in %d parts: %+v, %+v, %+v, warnings %q; the events read and summed: %+v, %+v, %+v, %q",
					parts, ds.HeapTable(), ds.SyncTable(), ds.IOTable(), warnsS, sum.HeapTable(), sum.SyncTable(), sum.IOTable(), warns)
			}
		}
		for _, e := range d.HeapEvents() {
			if int(e.Stack) >= len(d.Stacks) {
				t.Fatalf("stack %d of %d", e.Stack, len(d.Stacks))
			}
			if isAllocation(e) && e.Size > maxUserBytes {
				t.Fatalf("allocation of %d bytes read", e.Size)
			}
		}
		for _, e := range syncEvents(d.SyncTable()) {
			if e.Wait < 0 || int(e.Stack) >= len(d.Stacks) {
				t.Fatalf("sync event %+v", e)
			}
		}
		for _, e := range d.IOEvents() {
			if e.Dur < 0 || e.Bytes < 0 || e.Bytes > maxUserBytes {
				t.Fatalf("I/O event %+v", e)
			}
		}
		for _, e := range d.ClockSamples() {
			if e.Period <= 0 || e.Period > maxSamplePeriod {
				t.Fatalf("clock sample %+v", e)
			}
		}
	})
}

// isAllocation reports whether e allocated a block (as the analysis counts it).
func isAllocation(e HeapEvent) bool { return e.Addr != 0 && e.Op != HeapFree && e.Op != HeapMunmap }

// Numbers of trace records that er print sums must lie in the ranges that the format gives; a
// record outside them is skipped with a warning that counts them and shows the first (before, they
// were read: a wait of 2^63 ns became negative, a 2^60-byte allocation was summed).
func TestTraceRecordRanges(t *testing.T) {
	const start = base
	tests := []struct {
		name, file string
		b          []byte
		warn       string
	}{
		{"allocation larger than the address space", HeapTraceFile, traceFile(1, 42, 0, start, 4096, [][]byte{
			rec(recHeap, uint8(HeapMalloc), 7, start+100, uint32(0), uint32(0), uint64(0x1000), uint64(1)<<60, uint64(0)),
			rec(recHeap, uint8(HeapMalloc), 7, start+200, uint32(0), uint32(0), uint64(0x2000), uint64(64), uint64(0)),
		}), "heaptrace: 1 records out of range skipped (first at offset 4096: an allocation of 1152921504606846976 bytes, more than a process's address space, 2^57 bytes)"},
		{"record before the library started", HeapTraceFile, traceFile(1, 42, 0, start, 4096, [][]byte{
			rec(recHeap, uint8(HeapFree), 7, start-1, uint64(0x1000)),
			rec(recHeap, uint8(HeapMalloc), 7, start+200, uint32(0), uint32(0), uint64(0x2000), uint64(64), uint64(0)),
		}), "heaptrace: 1 records out of range skipped (first at offset 4096: time 999999999 ns, before the collector library started at 1000000000 ns)"},
		{"wait longer than the process ran", SyncTraceFile, traceFile(2, 42, 1000, start, 4096, [][]byte{
			rec(recSync, uint8(SyncMutexLock), 7, start+400, uint32(0), uint32(0), uint64(1)<<63, uint64(0xabc)),
			rec(recSync, uint8(SyncMutexLock), 7, start+400, uint32(0), uint32(0), uint64(401), uint64(0xabc)),
			rec(recSync, uint8(SyncMutexLock), 7, start+500, uint32(0), uint32(0), uint64(500), uint64(0xabc)),
		}), "synctrace: 2 records out of range skipped (first at offset 4096: a wait of 9223372036854775808 ns, longer than the 400 ns since the collector library started)"},
		{"negative bytes", IOTraceFile, traceFile(3, 42, 0, start, 4096, [][]byte{
			ioRec(IOReadOp, 7, start+20, 0, 10, 3, -1, -5, -5, 0, ""),
			ioRec(IOReadOp, 7, start+30, 0, 10, 3, -1, 5, 5, 0, ""),
		}), "iotrace: 1 records out of range skipped (first at offset 4096: -5 bytes moved: want 0 to 2^57)"},
		{"I/O longer than the process ran", IOTraceFile, traceFile(3, 42, 0, start, 4096, [][]byte{
			ioRec(IOReadOp, 7, start+20, 0, 21, 3, -1, 5, 5, 0, ""),
			ioRec(IOReadOp, 7, start+30, 0, 10, 3, -1, 5, 5, 0, ""),
		}), "iotrace: 1 records out of range skipped (first at offset 4096: a call of 21 ns, longer than the 20 ns since the collector library started)"},
		{"clock count", ClockTraceFile, traceFile(4, 42, 10_000_000, start, 4096, [][]byte{
			rec(recClock, 0, 7, start+500, uint32(0), uint32(7000), uint32(1), uint32(0)),
			rec(recClock, 0, 7, start+500, uint32(0), uint32(0), uint32(1), uint32(0)),
			rec(recClock, 0, 7, start+600, uint32(0), uint32(2), uint32(1), uint32(0)),
		}), "clocktrace: 2 records out of range skipped (first at offset 4096: a sample of 7000 intervals of 10000000 ns: want 1 to 6000, at most 60 s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTraceExperiment(t)
			if err := os.WriteFile(filepath.Join(dir, tt.file), tt.b, 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if all := strings.Join(d.Warnings, "\n"); !strings.Contains(all, tt.warn) {
				t.Errorf("warnings\n%s\nlack %q", all, tt.warn)
			}
			var n int
			switch tt.file {
			case HeapTraceFile:
				n = d.HeapTable().Len()
			case SyncTraceFile:
				n = d.SyncTable().Len()
			case IOTraceFile:
				n = d.IOTable().Len()
			case ClockTraceFile:
				n = d.ClockTable().Len()
			}
			if n != 1 {
				t.Errorf("%d events read, want the 1 in range", n)
			}
		})
	}
	// A clock trace whose interval is outside er collect's range is damage.
	for _, iv := range []uint64{99_999, 1_000_000_001} {
		dir := writeTraceExperiment(t)
		if err := os.WriteFile(filepath.Join(dir, ClockTraceFile), traceFile(4, 42, iv, start, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		if err == nil {
			t.Errorf("interval %d: no error", iv)
			continue
		}
		fe := asFormatError(t, err)
		if want := fmt.Sprintf("clock interval %d ns: want 100000 to 1000000000 ns", iv); fe.Offset != 24 || fe.Msg != want {
			t.Errorf("interval %d: got %+v, want offset 24 and %q", iv, fe, want)
		}
	}
}

// bigHeapTrace writes a heap trace of n allocations, 9 in 10 of them freed, as the library writes
// them (the short forms, 64 KiB blocks), and a stacks file; it returns the heap trace's size.
func bigHeapTrace(t testing.TB, dir string, n int) int64 {
	t.Helper()
	var blocks [][][]byte
	var blk [][]byte
	used := 0
	add := func(r []byte) {
		if used+len(r) > 65536 {
			blocks, blk, used = append(blocks, blk), nil, 0
		}
		blk, used = append(blk, r), used+len(r)
	}
	for i := range uint64(n) {
		addr := 0x10000 + (i%4096)*0x100 + (i/4096)<<24
		add(rec(recHeap, uint8(HeapMalloc), 7, base+2*i, uint32(1+i%100), uint32(16+i%1000), addr))
		if i%10 != 0 {
			add(rec(recHeap, uint8(HeapFree), 7, base+2*i+1, addr))
		}
	}
	blocks = append(blocks, blk)
	heap := traceFile(1, 42, 0, base, 65536, blocks...)
	var stacks [][]byte
	for id := range uint32(100) {
		stacks = append(stacks, stackRec(id+1, 0x400000+uint64(id), 0x500000))
	}
	for name, b := range map[string][]byte{HeapTraceFile: heap, TraceStacksFile: traceFile(5, 42, 0, base, 65536, stacks)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return int64(len(heap))
}

// Reading a heap trace takes little more memory than its events: before, the whole file, a
// record list and a list of stack references came on top (314 MB of trace took 2.3 GB to read).
func TestTraceMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t.er")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	size := bigHeapTrace(t, dir, n)
	var d *Data
	var err error
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, err = Open(dir)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if d.HeapTable().Len() != n+n*9/10 {
		t.Fatalf("%d heap events, want %d", d.HeapTable().Len(), n+n*9/10)
	}
	events := int64(d.HeapTable().Len()) * int64(unsafe.Sizeof(HeapEvent{}))
	alloc := int64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("trace %d bytes, events %d bytes, allocated %d bytes (%.2f times the trace)", size, events, alloc, float64(alloc)/float64(size))
	if alloc > events+events/4 {
		t.Errorf("reading %d bytes of heap trace allocated %d bytes; its %d events take %d: want at most 1.25 times that", size, alloc, d.HeapTable().Len(), events)
	}
}

// A large trace file is read in parts side by side; the events, their order and the warnings are
// those of reading it whole, with skipped records and damaged blocks in several parts.
func TestReadEventsInParts(t *testing.T) {
	var blocks [][][]byte
	for b := range uint64(40) {
		var blk [][]byte
		for i := range uint64(60) {
			t0 := base + b*1000 + i
			switch {
			case i == 7 && b%9 == 2: // before the library started: skipped
				blk = append(blk, rec(recHeap, uint8(HeapMalloc), 7, base-1, uint32(1), uint32(16), uint64(0x1000+i)))
			case i == 9 && b%7 == 3: // of another kind: malformed
				blk = append(blk, rec(recSync, 1, 7, t0, uint32(1), uint32(0), uint64(1), uint64(1)))
			case i%2 == 0:
				blk = append(blk, rec(recHeap, uint8(HeapMalloc), uint32(7+b%3), t0, uint32(1), uint32(16+i), uint64(0x1000+b<<12+i)))
			default:
				blk = append(blk, rec(recHeap, uint8(HeapFree), uint32(7+b%3), t0, uint64(0x1000+b<<12+i-1)))
			}
		}
		if b == 5 || b == 30 { // a record that claims more than its block holds
			blk = append(blk, append([]byte{0xff, 0x7f, recHeap, 1, 0, 0, 0, 0}, make([]byte, 8)...))
		}
		blocks = append(blocks, blk)
	}
	file := traceFile(1, 42, 0, base, 4096, blocks...)
	read := func(parts int) (*Data, []string) {
		d := &Data{Stacks: []Stack{nil}}
		var warns []string
		tr := newTraceReader(d, func(w string) {
			if w != "" {
				warns = append(warns, w)
			}
		})
		tr.parts, tr.minPart = parts, 4096
		tr.begin()
		if err := tr.readFile(HeapTraceFile, HeapTraceFile, bytes.NewReader(file), int64(len(file)), -1); err != nil {
			t.Fatal(err)
		}
		return d, warns
	}
	whole, wantWarns := read(1)
	if n := whole.HeapTable().Len(); n != 40*60-5-6 {
		t.Fatalf("read whole: %d events, want %d", n, 40*60-5-6)
	}
	want := []string{"heaptrace: 2 blocks end in a damaged record (first at offset 26256: record of 262136 bytes does not fit its block)",
		"heaptrace: 6 malformed or unknown records skipped",
		"heaptrace: 5 records out of range skipped (first at offset 12488: time 999999999 ns, before"}
	all := strings.Join(wantWarns, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("warnings %q lack %q", all, w)
		}
	}
	for _, parts := range []int{2, 3, 7, 40, 64} {
		d, warns := read(parts)
		if !reflect.DeepEqual(d.HeapEvents(), whole.HeapEvents()) {
			t.Errorf("%d parts: %d events, differing from the %d of one part", parts, d.HeapTable().Len(), whole.HeapTable().Len())
		}
		if !reflect.DeepEqual(warns, wantWarns) {
			t.Errorf("%d parts: warnings %q, want %q", parts, warns, wantWarns)
		}
	}
}

// TraceStacksOnly reads the stacks files and not the events, where the stacks say when they were
// written; where they do not (experiments of er before that), the events are read as by Open.
func TestTraceStacksOnly(t *testing.T) {
	dir := writeTraceExperiment(t)
	d, err := OpenWith(dir, Options{TraceStacksOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.HeapTable().Len() != 4 || d.SyncTable().Len() != 1 || len(d.TraceStacks) != 0 {
		t.Errorf("untimed stacks: %d heap and %d sync events, %d trace stacks; want 4, 1 and none", d.HeapTable().Len(), d.SyncTable().Len(), len(d.TraceStacks))
	}
	timed := func(id, tid uint32, ns uint64, pcs ...uint64) []byte {
		body := []any{id, uint32(len(pcs))}
		for _, pc := range pcs {
			body = append(body, pc)
		}
		return rec(recStack, 0, tid, ns, body...)
	}
	stacks := traceFile(5, 42, 0, base, 4096, [][]byte{
		rec(recMap, 2, 7, base+1, uint64(0x400000), uint64(0x401000), uint64(0), uint32(len("/bin/prog")), uint32(0), "/bin/prog"),
		rec(recMap, 0, 7, base+5000, uint64(0x7f0000), uint64(0x7f2000), uint64(0x1000), uint32(len("/lib/x.so")), uint32(0), "/lib/x.so"),
		timed(1, 7, base+90, 0x7f0010, 0x400100, 0x400200),
		timed(2, 8, base+150, 0x7f0020, 0x400300),
	})
	if err := os.WriteFile(filepath.Join(dir, TraceStacksFile), stacks, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = OpenWith(dir, Options{TraceStacksOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := d.HeapTable().Len() + d.SyncTable().Len() + d.IOTable().Len() + d.ClockTable().Len(); n != 0 {
		t.Errorf("timed stacks: %d events read, want none", n)
	}
	want := []TraceStack{{Pid: 42, Tid: 7, Time: 90, Stack: 1}, {Pid: 42, Tid: 8, Time: 150, Stack: 2}}
	if !reflect.DeepEqual(d.TraceStacks, want) {
		t.Errorf("trace stacks %+v, want %+v", d.TraceStacks, want)
	}
	if len(d.Stacks) != 3 || !reflect.DeepEqual(d.Stacks[2], Stack{0x7f0020, 0x400300}) || len(d.Mappings) != 2 {
		t.Errorf("stacks %v, mappings %+v", d.Stacks, d.Mappings)
	}
	if d, err = Open(dir); err != nil || d.HeapTable().Len() != 4 || len(d.TraceStacks) != 0 {
		t.Errorf("Open: %d heap events, %d trace stacks, %v; want 4, none", d.HeapTable().Len(), len(d.TraceStacks), err)
	}
}

// sameSync says whether two tables of summed waits hold the same rows (an empty table and none
// are the same).
// sameHeap says whether the summed heap tables a and b have the same rows, sums and last time.
func sameHeap(a, b *events.Table) bool {
	if a.Len() != b.Len() || a.LastTime() != b.LastTime() {
		return false
	}
	if a.Len() == 0 {
		return true
	}
	if !reflect.DeepEqual(HeapSums(a).Stats, HeapSums(b).Stats) {
		return false
	}
	da, db := &Data{Tables: map[string]*events.Table{HeapSchema.Name: a}}, &Data{Tables: map[string]*events.Table{HeapSchema.Name: b}}
	return reflect.DeepEqual(da.HeapEvents(), db.HeapEvents()) && slices.Equal(a.Counts(), b.Counts()) && reflect.DeepEqual(HeapSums(a).Sites, HeapSums(b).Sites)
}

// sameIO says whether the summed I/O tables a and b have the same rows, sizes and last time.
func sameIO(a, b *events.Table) bool {
	if a.Len() != b.Len() || a.LastTime() != b.LastTime() {
		return false
	}
	if a.Len() == 0 {
		return true
	}
	da, db := &Data{Tables: map[string]*events.Table{IOSchema.Name: a}}, &Data{Tables: map[string]*events.Table{IOSchema.Name: b}}
	return reflect.DeepEqual(da.IOEvents(), db.IOEvents()) && slices.Equal(a.Counts(), b.Counts()) && reflect.DeepEqual(IOSizes(a), IOSizes(b))
}

func sameSync(a, b *events.Table) bool {
	if a.Len() == 0 || b.Len() == 0 {
		return a.Len() == b.Len() && a.LastTime() == b.LastTime()
	}
	return reflect.DeepEqual(a, b)
}
