package perfevent

import (
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"er/internal/perfabi"
	"er/internal/perfabi/perfabitest"
)

// testSampleType is what OpenTask asks for with every option on.
const testSampleType = unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID |
	unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_CALLCHAIN |
	unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER

const testRegsMask = 1<<RegAMD64BP | 1<<RegAMD64SP | 1<<RegAMD64IP

// sampleID is the sample_id trailer for testSampleType: pid/tid, time, cpu, identifier.
func sampleID(pid, tid uint32, time uint64) []any {
	return []any{pid, tid, time, uint32(1), uint32(0), uint64(77)}
}

func testSample() []byte {
	stack := []byte("0123456789abcdef")
	return perfabitest.Encode(unix.PERF_RECORD_SAMPLE, unix.PERF_RECORD_MISC_USER,
		uint64(77),             // identifier
		uint64(0x401000),       // ip
		uint32(10), uint32(11), // pid, tid
		uint64(123456789),    // time
		uint32(1), uint32(0), // cpu
		uint64(1000000),                                                    // period
		uint64(3), perfabi.ContextUser, uint64(0x401000), uint64(0x401234), // callchain
		uint64(unix.PERF_SAMPLE_REGS_ABI_64), uint64(0x7ff0), uint64(0x7fe0), uint64(0x401000), // regs bp sp ip
		uint64(len(stack)), stack, uint64(12), // stack
	)
}

// mustDecoder returns the decoder of a ring of OpenTask's events of sample type st, with user registers mask.
func mustDecoder(t testing.TB, st, mask uint64) *perfabi.Decoder {
	t.Helper()
	d, err := perfabi.NewDecoder(perfabi.Format{SampleType: st, SampleRegsUser: mask, SampleIDAll: true})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const fakePage = 4096

// fakeRing is a ring over ordinary memory that the test writes as the kernel would.
type fakeRing struct {
	*ring
	head uint64
}

func newFakeRing(t testing.TB, dataSize int) *fakeRing {
	t.Helper()
	words := make([]uint64, (fakePage+dataSize)/8) // 8-byte aligned
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	meta.Data_offset, meta.Data_size = fakePage, uint64(dataSize)
	r, err := newRing(3, mem, fakePage)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeRing{ring: r}
}

// write appends rec at head, wrapping around the end, and publishes the new head.
func (f *fakeRing) write(rec []byte) {
	size := uint64(len(f.data))
	for i, c := range rec {
		f.data[(f.head+uint64(i))&(size-1)] = c
	}
	f.head += uint64(len(rec))
	atomic.StoreUint64(&f.meta.Data_head, f.head)
}

func TestRingWrapAround(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	f := newFakeRing(t, 256)
	rec := testSample() // 152 bytes: the second copy wraps around the 256-byte end
	if len(rec) <= 128 || len(rec) >= 256 {
		t.Fatalf("test sample is %d bytes; want it between 128 and 256", len(rec))
	}
	var pids []uint32
	var stacks []string
	collect := func(r perfabi.Record) {
		s := r.(*perfabi.Sample)
		pids = append(pids, s.Pid)
		stacks = append(stacks, string(s.Stack))
		if len(s.Callchain) != 3 || s.Callchain[2] != 0x401234 {
			t.Errorf("callchain %#x", s.Callchain)
		}
	}
	for round := range 5 {
		f.write(rec)
		if err := f.drain(d, collect); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if tail := atomic.LoadUint64(&f.meta.Data_tail); tail != f.head {
			t.Fatalf("round %d: data_tail %d, want %d", round, tail, f.head)
		}
		if f.pending() != 0 {
			t.Fatalf("round %d: %d bytes pending after drain", round, f.pending())
		}
	}
	if len(pids) != 5 {
		t.Fatalf("decoded %d samples, want 5", len(pids))
	}
	for i := range pids {
		if pids[i] != 10 || stacks[i] != "0123456789abcdef" {
			t.Errorf("sample %d: pid %d stack %q", i, pids[i], stacks[i])
		}
	}
}

func TestRingSeveralRecords(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	f := newFakeRing(t, 1024)
	comm := perfabitest.Encode(unix.PERF_RECORD_COMM, 0, append([]any{uint32(10), uint32(10), "spin"}, sampleID(10, 10, 5)...)...)
	f.write(comm)
	f.write(testSample())
	f.write(comm)
	var kinds []string
	if err := f.drain(d, func(r perfabi.Record) {
		switch v := r.(type) {
		case *perfabi.Comm:
			kinds = append(kinds, "comm:"+v.Comm)
		case *perfabi.Sample:
			kinds = append(kinds, "sample")
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, " "); got != "comm:spin sample comm:spin" {
		t.Errorf("records %q", got)
	}
}

func TestRingBadRecords(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)

	// A malformed record is skipped; the ones after it still arrive.
	f := newFakeRing(t, 1024)
	bad := perfabitest.Encode(unix.PERF_RECORD_FORK, 0, uint64(1)) // far too short for a fork
	f.write(testSample())
	f.write(bad)
	f.write(testSample())
	n := 0
	err := f.drain(d, func(perfabi.Record) { n++ })
	if n != 2 {
		t.Errorf("delivered %d records, want 2", n)
	}
	if err == nil || !strings.Contains(err.Error(), "cpu 3 ring, offset 152 (stream position 152)") ||
		!strings.Contains(err.Error(), "fork record of 16 bytes: 8 bytes after the header, fewer than its 32-byte sample_id") {
		t.Errorf("error %v", err)
	}

	// A header with an impossible size drops the rest and says where.
	f = newFakeRing(t, 1024)
	f.write(testSample())
	zero := make([]byte, 16)
	f.write(zero)
	f.write(testSample())
	n = 0
	err = f.drain(d, func(perfabi.Record) { n++ })
	if n != 1 || err == nil || !strings.Contains(err.Error(), "offset 152") || !strings.Contains(err.Error(), "has size 0") {
		t.Errorf("delivered %d, error %v", n, err)
	}
	if f.pending() != 0 {
		t.Errorf("%d bytes pending after a corrupt header", f.pending())
	}

	// A record longer than what is published is not read.
	f = newFakeRing(t, 1024)
	rec := testSample()
	f.write(rec)
	f.head -= 8
	atomic.StoreUint64(&f.meta.Data_head, f.head)
	err = f.drain(d, func(perfabi.Record) { t.Error("delivered a record beyond data_head") })
	if err == nil || !strings.Contains(err.Error(), "with 144 bytes left") {
		t.Errorf("error %v", err)
	}

	if _, err := newRing(0, make([]byte, 2*fakePage), fakePage); err != nil {
		t.Errorf("zero data_size should mean the rest of the mapping: %v", err)
	}
	words := make([]uint64, 2*fakePage/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	(*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0])).Data_size = 3000
	if _, err := newRing(0, mem, fakePage); err == nil || !strings.Contains(err.Error(), "bad data area") {
		t.Errorf("data_size 3000: error %v", err)
	}
}

// BenchmarkDrain measures decoding throughput over a ring full of samples
// with 16-frame call chains.
func BenchmarkDrain(b *testing.B) {
	d := mustDecoder(b, testSampleType&^(unix.PERF_SAMPLE_REGS_USER|unix.PERF_SAMPLE_STACK_USER), 0)
	cc := []any{uint64(17), perfabi.ContextUser}
	for i := range 16 {
		cc = append(cc, uint64(0x400000+i*16))
	}
	rec := perfabitest.Encode(unix.PERF_RECORD_SAMPLE, unix.PERF_RECORD_MISC_USER, append([]any{uint64(77), uint64(0x401000),
		uint32(10), uint32(11), uint64(123), uint32(1), uint32(0), uint64(1000000)}, cc...)...)
	f := newFakeRing(b, 1<<20)
	per := (1 << 20) / len(rec)
	b.SetBytes(int64(per * len(rec)))
	b.ReportAllocs()
	for range per {
		f.write(rec)
	}
	var sum uint64
	for b.Loop() {
		atomic.StoreUint64(&f.meta.Data_tail, 0) // re-read the same records
		if err := f.drain(d, func(r perfabi.Record) { sum += r.(*perfabi.Sample).Period }); err != nil {
			b.Fatal(err)
		}
	}
	if sum == 0 {
		b.Fatal("no samples")
	}
}

// TestRingReleasesAsItGoes: each record's space is given back to the kernel as soon as the callback
// has it, not after the whole ring was read: a reader that is preempted half-way through a full ring
// (a target's 1,000 runnable threads against er's one) lets the kernel write on.
func TestRingReleasesAsItGoes(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	f := newFakeRing(t, 1024)
	rec := testSample()
	for range 3 {
		f.write(rec)
	}
	var tails []uint64
	if err := f.drain(d, func(perfabi.Record) { tails = append(tails, atomic.LoadUint64(&f.meta.Data_tail)) }); err != nil {
		t.Fatal(err)
	}
	n := uint64(len(rec))
	if want := []uint64{0, n, 2 * n}; len(tails) != 3 || tails[0] != want[0] || tails[1] != want[1] || tails[2] != want[2] {
		t.Errorf("data_tail as each record was read: %v, want %v", tails, want)
	}
	if got := atomic.LoadUint64(&f.meta.Data_tail); got != 3*n {
		t.Errorf("data_tail after the drain: %d, want %d", got, 3*n)
	}
}

// FuzzDecode writes arbitrary bytes into a ring, at an arbitrary position (so that records wrap
// around its end), and drains it with the decoders of several sample configurations: it must never
// panic, every record it delivers must be as long as its header says and lie within what was
// written, and the ring must be empty after.
func FuzzDecode(f *testing.F) {
	f.Add(testSample(), uint8(0), uint16(0))
	f.Add(append(testSample(), testSample()...), uint8(0), uint16(200))
	f.Add(perfabitest.Encode(unix.PERF_RECORD_MMAP2, unix.PERF_RECORD_MISC_MMAP_BUILD_ID, append([]any{uint32(1), uint32(1), uint64(1), uint64(1), uint64(1),
		make([]byte, 24), uint32(5), uint32(0), "x"}, sampleID(1, 1, 1)...)...), uint8(1), uint16(1000))
	f.Add(perfabitest.Encode(unix.PERF_RECORD_SWITCH_CPU_WIDE, 0, uint64(1)), uint8(2), uint16(0))
	f.Add(append(perfabitest.Encode(unix.PERF_RECORD_FORK, 0, uint64(1)), testSample()...), uint8(0), uint16(3))
	configs := []struct{ st, mask uint64 }{
		{testSampleType, testRegsMask},
		{testSampleType | unix.PERF_SAMPLE_RAW | unix.PERF_SAMPLE_ADDR | unix.PERF_SAMPLE_ID | unix.PERF_SAMPLE_STREAM_ID, RegsAMD64All},
		{unix.PERF_SAMPLE_IP, 0},
	}
	decs := make([]*perfabi.Decoder, len(configs))
	for i, c := range configs {
		decs[i] = mustDecoder(f, c.st, c.mask)
	}
	const size = 1024
	f.Fuzz(func(t *testing.T, data []byte, which uint8, at uint16) {
		if len(data) > size {
			data = data[:size]
		}
		r := newFakeRing(t, size)
		start := uint64(at) % size &^ 7
		r.head = start
		atomic.StoreUint64(&r.meta.Data_tail, start)
		r.write(data)
		var total uint64
		err := r.drain(decs[int(which)%len(decs)], func(rec perfabi.Record) {
			h := rec.Head()
			if h.Size < 8 {
				t.Errorf("a record of %d bytes", h.Size)
			}
			total += uint64(h.Size)
		})
		if total > uint64(len(data)) {
			t.Errorf("records of %d bytes from %d bytes written", total, len(data))
		}
		if r.pending() != 0 {
			t.Errorf("%d bytes pending after a drain (error %v)", r.pending(), err)
		}
		if err == nil && total != uint64(len(data)) {
			t.Errorf("records of %d bytes from %d bytes written, and no error", total, len(data))
		}
	})
}
