package gprofng

import (
	"archive/tar"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
	"er/internal/heapreplay"
)

// fixture extracts testdata/NAME.er.tar.gz (testdata/README.md says how it was recorded) and
// returns the experiment's directory.
func fixture(t testing.TB, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".er.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("%s: outside the fixture", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return filepath.Join(dir, name+".er")
}

func open(t *testing.T, name string) *experiment.Data {
	t.Helper()
	d, err := Open(fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// programFrames names the frames of a stack that are in the program (not
// gprofng's tracer, libc or the dynamic linker), leaf first, from the experiment's archives.
func programFrames(d *experiment.Data, stack uint32, prog string) []string {
	n := newNamer(d)
	var out []string
	for _, pc := range d.Stacks[stack] {
		for _, m := range d.Mappings {
			if pc >= m.Start && pc < m.End && filepath.Base(m.Path) == prog {
				out = append(out, n.name(pc))
			}
		}
	}
	return out
}

func TestIs(t *testing.T) {
	dir := fixture(t, "clock")
	if !Is(dir) {
		t.Errorf("Is(%s) = false, want true", dir)
	}
	er := t.TempDir()
	os.WriteFile(filepath.Join(er, logFile), []byte("<?xml version=\"1.0\"?>\n<experiment version=\"1.1\">"), 0o644)
	if Is(er) {
		t.Errorf("Is(er experiment) = true")
	}
	if Is(t.TempDir()) {
		t.Errorf("Is(empty dir) = true")
	}
}

func TestOpenHeap(t *testing.T) {
	d := open(t, "heap")
	if d.Log.Pid != 12875 || d.Log.CollectorVersion != "gprofng 2.40.00" || !slices.Equal(d.Log.Command, []string{"./heap"}) {
		t.Errorf("log: pid %d, collector %q, command %q", d.Log.Pid, d.Log.CollectorVersion, d.Log.Command)
	}
	if v, _ := d.Log.Setting(experiment.SettingHeapTracing); v != "on" {
		t.Errorf("heap_tracing = %q", v)
	}
	// gprofng display text -allocs: 221 allocations of 35266 bytes; -leaks: 18 leaks, 12400 bytes.
	st := heapreplay.Stats{}
	heap := d.HeapEvents()
	p := heapreplay.NewProcess(func(id int32) int64 { return heap[id].Replay().Bytes() }, nil, &st)
	ops := map[experiment.HeapOp]int{}
	for i := range heap {
		e := &heap[i]
		ops[e.Op]++
		p.Event(e.Replay(), int32(i))
	}
	if st.Allocs.Count != 221 || st.Allocs.Bytes != 35266 {
		t.Errorf("allocations %d of %d bytes, want gprofng's 221 of 35266", st.Allocs.Count, st.Allocs.Bytes)
	}
	var leaks, leaked int64
	p.EachLive(func(id int32) { leaks++; leaked += heap[id].Replay().Bytes() })
	if leaks != 18 || leaked != 12400 {
		t.Errorf("leaks %d of %d bytes, want gprofng's 18 of 12400", leaks, leaked)
	}
	// The functions, from the names of gprofng's interposers: heap.c calls calloc once, valloc
	// once, reallocarray once (recorded as realloc: it is not interposed), mmap twice.
	if ops[experiment.HeapCalloc] != 3 || ops[experiment.HeapValloc] != 1 || ops[experiment.HeapMmap] != 2 ||
		ops[experiment.HeapMunmap] != 1 || ops[experiment.HeapRealloc] != 7 {
		t.Errorf("operations %v", ops)
	}
	// leak_direct's three blocks of 1000 bytes, called from main.
	n := 0
	for _, e := range d.HeapEvents() {
		if e.Size == 1000 {
			n++
			if f := programFrames(d, e.Stack, "heap"); !slices.Equal(f, []string{"leak_direct", "main"}) {
				t.Errorf("stack of malloc(1000): the program's frames are %q", f)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d malloc(1000), want 3", n)
	}
	if !slices.ContainsFunc(d.Warnings, func(w string) bool { return strings.Contains(w, "7 realloc calls recorded without the block") }) {
		t.Errorf("no warning about realloc's old blocks: %q", d.Warnings)
	}
}

func TestOpenClock(t *testing.T) {
	d := open(t, "clock")
	if d.ClockTable().Len() != 3 {
		t.Fatalf("%d clock samples, want gprofng's 3", d.ClockTable().Len())
	}
	var leaves []string
	for _, c := range d.ClockSamples() {
		if c.Period != 10_007_000 || c.Mode != experiment.ModeUnknown || c.Tid != d.Log.Pid {
			t.Errorf("sample %+v: want a period of 10.007 ms of Total CPU time in the main thread", c)
		}
		leaves = append(leaves, programFrames(d, c.Stack, "seed002")[0])
	}
	slices.Sort(leaves)
	if !slices.Equal(leaves, []string{"B", "C", "E"}) {
		t.Errorf("leaf functions %q, want gprofng's B, C, E", leaves)
	}
	if v, _ := d.Log.Setting(experiment.SettingClockInterval); v != "10007000" {
		t.Errorf("clock interval %q", v)
	}
	if d.Log.EndTime != 442400757 || !d.Log.Exited {
		t.Errorf("end %d, exited %v; want 442400757 (the last sample point, after the exit), true", d.Log.EndTime, d.Log.Exited)
	}
}

func TestOpenSync(t *testing.T) {
	d := open(t, "sync")
	var wait int64
	ops := map[experiment.SyncOp]int{}
	st := d.SyncTable()
	for i := range st.Len() {
		wait += st.DurAt(i)
		ops[experiment.SyncOp(st.Cols[experiment.SyncColOp].At(i))]++
	}
	// gprofng display text -functions: 7 waits, 1.052 s; pthread_mutex_lock 6 of them.
	if st.Len() != 7 || st.Events() != 7 || wait < 1.0515e9 || wait >= 1.0525e9 {
		t.Errorf("%d waits of %d ns, want gprofng's 7 of 1.052 s", st.Len(), wait)
	}
	if ops[experiment.SyncMutexLock] != 6 {
		t.Errorf("operations %v, want 6 pthread_mutex_lock", ops)
	}
}

func TestOpenIO(t *testing.T) {
	d := open(t, "io")
	var rb, rn, wb, wn, other, errs int64
	files := map[string]bool{}
	for _, e := range d.IOEvents() {
		switch {
		case e.Err != 0:
			errs++
		case e.Op.Class() == experiment.IORead:
			rb += e.Bytes
			rn++
		case e.Op.Class() == experiment.IOWrite:
			wb += e.Bytes
			wn++
		default:
			other++
		}
		if e.File != "" {
			files[e.File] = true
		}
	}
	// gprofng display text -metrics i+ioreadbytes:i+ioreadcnt:i+iowritebytes:i+iowritecnt:i+ioothercnt:i+ioerrorcnt.
	if rb != 56695 || rn != 22 || wb != 61522 || wn != 36 || other != 10 || errs != 1 {
		t.Errorf("read %d bytes in %d, wrote %d in %d, other %d, errors %d; want gprofng's 56695 22 61522 36 10 1", rb, rn, wb, wn, other, errs)
	}
	for _, f := range []string{"iod/posix.dat", "iod/stdio.txt", "iod/missing/none"} {
		if !files[f] {
			t.Errorf("no event names %s: %v", f, files)
		}
	}
	// gprofng's other I/O calls are its <Other IO activity>, on the descriptor they were made on.
	var others []string
	for _, e := range d.IOEvents() {
		if e.File == OtherIOName {
			others = append(others, fmt.Sprintf("%v fd %d", e.Op, e.FD))
		}
	}
	if got := strings.Join(others, ", "); got != "fsync fd 3, lseek fd 3, fflush fd 3, fseek fd 3" {
		t.Errorf("other I/O: %s", got)
	}
}

// TestUnsupported: data that er cannot read is an error that names log.xml and the data.
func TestUnsupported(t *testing.T) {
	dir := fixture(t, "clock")
	b, err := os.ReadFile(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	java := strings.Replace(string(b), `<profile name="profile"`, `<profile name="jprofile" jversion="17"></profile><profile name="profile"`, 1)
	if err := os.WriteFile(filepath.Join(dir, logFile), []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if err == nil || !strings.Contains(err.Error(), "log.xml") || !strings.Contains(err.Error(), "Java") {
		t.Errorf("Open of a Java experiment: %v, want an error naming log.xml and Java", err)
	}
}

// TestTruncatedData: a data file cut in the middle of a packet is read up to it, with a warning.
func TestTruncatedData(t *testing.T) {
	dir := fixture(t, "sync")
	if err := os.Truncate(filepath.Join(dir, "synctrace"), 3*64+10); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.SyncTable().Len(); n != 3 {
		t.Errorf("%d waits, want the 3 whole packets", n)
	}
	if !slices.ContainsFunc(d.Warnings, func(w string) bool { return strings.Contains(w, "synctrace: last packet at offset 192 is incomplete") }) {
		t.Errorf("warnings %q", d.Warnings)
	}
}

// TestDamagedStacks: a frame packet whose part overruns it is an error naming the file and offset.
func TestDamagedStacks(t *testing.T) {
	dir := fixture(t, "heap")
	file := filepath.Join(dir, framesFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[16] = 0xf0 // the first packet's stack part: 240 bytes in a 64-byte packet
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if err == nil || !strings.Contains(err.Error(), "data.frameinfo: offset 16: frame packet part of size 240") {
		t.Errorf("Open: %v", err)
	}
}

// craftChain replaces the stacks and the clock data of the clock fixture in dir with chainTable(n)
// and n clock packets, packet k of frame info k.
func craftChain(t testing.TB, dir string, n int) {
	t.Helper()
	var prof []byte
	const start = 85135752071010 // the fixture's run, in ns
	for k := 1; k <= n; k++ {
		p := make([]byte, 52) // kind 8 as the fixture's log.xml lays it out
		binary.LittleEndian.PutUint16(p, 52)
		binary.LittleEndian.PutUint16(p[2:], 8)
		binary.LittleEndian.PutUint64(p[8:], 1)                     // LWPID
		binary.LittleEndian.PutUint64(p[28:], uint64(start+1000*k)) // TSTAMP
		binary.LittleEndian.PutUint64(p[36:], uint64(k))            // FRINFO
		binary.LittleEndian.PutUint32(p[44:], lmsLinuxCPU)          // MSTATE
		binary.LittleEndian.PutUint32(p[48:], 1)                    // NTICK
		prof = append(prof, p...)
	}
	if err := os.WriteFile(filepath.Join(dir, framesFile), chainTable(n), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profile"), prof, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpenCraftedChain: a crafted experiment whose events' stacks are a chain of linked uids is
// read with every event and a bounded number of frames, and a warning that says which stacks
// were cut (er print ran out of memory on a 6 MB one).
func TestOpenCraftedChain(t *testing.T) {
	defer func(m int) { maxResolved = m }(maxResolved)
	maxResolved = 100_000
	dir := fixture(t, "clock")
	const n = 3000
	craftChain(t, dir, n)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != n {
		t.Errorf("%d clock samples, want %d", d.ClockTable().Len(), n)
	}
	frames := 0
	for _, s := range d.Stacks {
		frames += len(s)
	}
	// The first 447 stacks whole (100,128 frames), the other 2,553 cut to 64 frames and the
	// pseudo-frame <Truncated-stack>.
	if want := 447*448/2 + (n-447)*(cutFrames+1); len(d.Stacks) != n+1 || frames != want {
		t.Errorf("%d stacks of %d frames, want %d of %d", len(d.Stacks), frames, n+1, want)
	}
	want := "data.frameinfo: its stacks, which share their callers' frames by links, name more than 100000 frames of distinct stacks (a damaged or crafted file): 2553 stacks after those are cut to their first 64 frames"
	if !slices.ContainsFunc(d.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("warnings %q, want one starting %q", d.Warnings, want)
	}
}

// TestMappingsListedLate: the collector's first listing is mapped from the start even when a
// segment listed after it was mapped earlier. On a busy machine gprofng recorded data.frameinfo
// 0.93 ms before the listing (0.009398759 s, 0.010327612 s); er took that as the start, the program
// and libc as mapped at 10.3 ms, and every heap event before then had no function (Distinct Leaks = 4
// of 18 instances, gprofng 12).
func TestMappingsListedLate(t *testing.T) {
	m, _, err := ParseMap("map.xml", []byte(`<event kind="map" object="segment" tstamp="0.010327612" vaddr="0x1000" size="4096" foffset="+0x1000" modes="0x005" name="/tmp/heapg"/>
<event kind="map" object="segment" tstamp="0.010327612" vaddr="0x7000" size="8192" foffset="+0x26000" modes="0x005" name="/lib/libc.so.6"/>
<event kind="map" object="function" tstamp="0.010624894" vaddr="0x9000" size="3324" name="[vdso]"/>
<event kind="map" object="segment" tstamp="0.009398759" vaddr="0x20000" size="65536" foffset="+0x0" modes="0x00B" name="/tmp/g.er/data.frameinfo"/>
<event kind="map" object="segment" tstamp="0.5" vaddr="0x40000" size="4096" foffset="+0x0" modes="0x005" name="/lib/late.so"/>`))
	if err != nil {
		t.Fatal(err)
	}
	load := map[string]int64{}
	for _, mp := range mappings(m, 7) {
		load[mp.Path] = mp.LoadTime
	}
	want := map[string]int64{"/tmp/heapg": 0, "/lib/libc.so.6": 0, "[vdso]": 10624894, "/lib/late.so": 5e8}
	if !maps.Equal(load, want) {
		t.Errorf("load times %v, want %v", load, want)
	}
}
