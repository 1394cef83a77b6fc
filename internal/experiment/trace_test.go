package experiment

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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

func writeTraceExperiment(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t.er")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
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
			rec(recSync, uint8(SyncMutexLock), 7, base+400, uint32(2), uint32(0), uint64(5000), uint64(0xabc)),
		}),
		IOTraceFile: traceFile(3, pid, 0, base, 4096, [][]byte{
			ioRec(IOInherited, 7, base+1, 0, 0, 1, -1, 0, 0, 0, "/dev/pts/0"),
			ioRec(IOOpen, 7, base+10, 1, 100, 3, -1, 3, 0, 0, "/tmp/f"),
			ioRec(IOWriteOp, 7, base+20, 2, 200, 3, -1, 50, 50, 0, ""),
			ioRec(IODup2, 7, base+25, 2, 10, 3, 9, 9, 0, 0, ""),
			ioRec(IOReadOp, 7, base+30, 2, 300, 9, -1, 20, 20, 0, ""),
			ioRec(IOClose, 7, base+40, 2, 10, 3, -1, 0, 0, 0, ""),
			ioRec(IOWriteOp, 7, base+50, 2, 10, 1, -1, 6, 6, 0, ""),
			ioRec(IOReadOp, 7, base+60, 2, 10, 3, -1, -1, 0, 9, ""),
		}),
		ClockTraceFile: traceFile(4, pid, 10_000_000, base, 4096, [][]byte{
			rec(recClock, 0, 7, base+500, uint32(1), uint32(3), uint32(1), uint32(0)),
		}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
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
	if len(d.Heap) != 4 {
		t.Fatalf("heap %+v", d.Heap)
	}
	if !reflect.DeepEqual(stack(d.Heap[0].Stack), Stack{0x7f0010, 0x400100, 0x400200}) ||
		!reflect.DeepEqual(stack(d.Heap[1].Stack), Stack{0x7f0020, 0x400300}) || d.Heap[2].Stack != 0 ||
		!reflect.DeepEqual(stack(d.Heap[3].Stack), Stack{0x7f0010, 0x400100, 0x400200}) {
		t.Errorf("heap stacks %v %v %v", stack(d.Heap[0].Stack), stack(d.Heap[1].Stack), d.Heap[2].Stack)
	}
	for i := range d.Heap {
		d.Heap[i].Stack = 0
	}
	if !reflect.DeepEqual(d.Heap, wantHeap) {
		t.Errorf("heap\n got %+v\nwant %+v", d.Heap, wantHeap)
	}
	if len(d.Sync) != 1 || d.Sync[0].Wait != 5000 || d.Sync[0].Object != 0xabc || d.Sync[0].Op != SyncMutexLock ||
		!reflect.DeepEqual(stack(d.Sync[0].Stack), Stack{0x7f0020, 0x400300}) {
		t.Errorf("sync %+v", d.Sync)
	}
	// I/O: names follow the descriptors through open, dup2 and close.
	var files []string
	for _, e := range d.IO {
		files = append(files, e.Op.String()+":"+e.File)
	}
	want := []string{"<inherited>:/dev/pts/0", "open:/tmp/f", "write:/tmp/f", "dup2:/tmp/f", "read:/tmp/f",
		"close:/tmp/f", "write:/dev/pts/0", "read:<fd 3>"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("I/O files\n got %q\nwant %q", files, want)
	}
	if e := d.IO[7]; e.Err != 9 || e.Ret != -1 || e.Dur != 10 {
		t.Errorf("failed read %+v", e)
	}
	if e := d.IO[2]; e.Bytes != 50 || e.Dur != 200 || e.FD != 3 || e.FD2 != -1 {
		t.Errorf("write %+v", e)
	}
	// The SIGPROF clock sample: the interval times the count.
	if len(d.Clock) != 1 || d.Clock[0].Period != 30_000_000 || d.Clock[0].CPU != 1 || d.Clock[0].Time != 500 {
		t.Errorf("clock %+v", d.Clock)
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
		settings[s.Name] = s.Value
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
	if len(d.Heap) != 1 || d.Heap[0].Stack != 0 {
		t.Errorf("heap %+v", d.Heap)
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
	f.Add(traceFile(3, 1, 0, base, 4096, [][]byte{ioRec(IOOpen, 1, base, 1, 1, 3, -1, 3, 0, 0, "/x"),
		rec(recHeap, 4, 1, 1, uint64(5)), rec(recClock, 0, 1, 1, uint32(1), uint32(1), uint32(0), uint32(0)),
		rec(recSync, 1, 1, 1, uint32(1), uint32(0), uint64(1), uint64(1))}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, recs, _, err := readTraceFile("f", b)
		if err != nil {
			asFormatError(t, err)
			return
		}
		d := &Data{Stacks: []Stack{nil}}
		tr := &traceReader{d: d, stackIdx: map[uint64]uint32{}}
		tr.stacks("f", h.pid, recs)
		tr.events("f", h.pid, recs, h.param)
		for _, p := range tr.pending {
			if idx, ok := tr.stackIdx[p.key]; ok {
				*p.ref = idx
			}
		}
		nameFiles(d.IO)
		for _, e := range d.Heap {
			if int(e.Stack) >= len(d.Stacks) {
				t.Fatalf("stack %d of %d", e.Stack, len(d.Stacks))
			}
		}
	})
}
