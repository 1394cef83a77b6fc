package perfevent

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// encode builds a raw perf record: an 8-byte header, then each field in
// order (uint32, uint64 little-endian; []byte as is; a string NUL-padded to 8 bytes).
func encode(typ uint32, misc uint16, fields ...any) []byte {
	b := make([]byte, 8, 64)
	for _, f := range fields {
		switch v := f.(type) {
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		case int:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		case []byte:
			b = append(b, v...)
		case string:
			b = append(b, v...)
			b = append(b, 0)
			for len(b)%8 != 0 {
				b = append(b, 0)
			}
		default:
			panic(fmt.Sprintf("encode: %T", f))
		}
	}
	binary.LittleEndian.PutUint32(b, typ)
	binary.LittleEndian.PutUint16(b[4:], misc)
	binary.LittleEndian.PutUint16(b[6:], uint16(len(b)))
	return b
}

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
	return encode(unix.PERF_RECORD_SAMPLE, unix.PERF_RECORD_MISC_USER,
		uint64(77),             // identifier
		uint64(0x401000),       // ip
		uint32(10), uint32(11), // pid, tid
		uint64(123456789),    // time
		uint32(1), uint32(0), // cpu
		uint64(1000000),                                            // period
		uint64(3), ContextUser, uint64(0x401000), uint64(0x401234), // callchain
		uint64(unix.PERF_SAMPLE_REGS_ABI_64), uint64(0x7ff0), uint64(0x7fe0), uint64(0x401000), // regs bp sp ip
		uint64(len(stack)), stack, uint64(12), // stack
	)
}

func mustDecoder(t testing.TB, st, mask uint64) *Decoder {
	t.Helper()
	d, err := NewDecoder(st, mask, true)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecodeSample(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	r, err := d.Decode(testSample())
	if err != nil {
		t.Fatal(err)
	}
	want := &Sample{IP: 0x401000, Pid: 10, Tid: 11, Time: 123456789, CPU: 1, Period: 1000000, ID: 77,
		Callchain: []uint64{ContextUser, 0x401000, 0x401234}, Misc: unix.PERF_RECORD_MISC_USER,
		Regs: []uint64{0x7ff0, 0x7fe0, 0x401000}, RegsABI: unix.PERF_SAMPLE_REGS_ABI_64,
		Stack: []byte("0123456789abcdef"), StackDynSize: 12}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	s := r.(*Sample)
	if s.Kernel() {
		t.Error("user sample reports Kernel")
	}
	if got := s.Regs[RegIndex(testRegsMask, RegAMD64IP)]; got != s.IP {
		t.Errorf("IP register = %#x, want %#x", got, s.IP)
	}
}

// TestDecodeSampleCount: PERF_SAMPLE_READ (Options.ReadCount) comes between the period and the call chain.
func TestDecodeSampleCount(t *testing.T) {
	d := mustDecoder(t, unix.PERF_SAMPLE_TID|unix.PERF_SAMPLE_PERIOD|unix.PERF_SAMPLE_READ|unix.PERF_SAMPLE_CALLCHAIN, 0)
	r, err := d.Decode(encode(unix.PERF_RECORD_SAMPLE, unix.PERF_RECORD_MISC_USER,
		uint32(10), uint32(11), uint64(1000000), uint64(5123456), uint64(1), uint64(0x401000)))
	if err != nil {
		t.Fatal(err)
	}
	s := r.(*Sample)
	if s.Period != 1000000 || s.Count != 5123456 || len(s.Callchain) != 1 || s.Callchain[0] != 0x401000 {
		t.Errorf("got %+v: want period 1000000, count 5123456, call chain [0x401000]", s)
	}
	if _, err := d.Decode(encode(unix.PERF_RECORD_SAMPLE, 0, uint32(10), uint32(11), uint64(1000000))); err == nil ||
		!strings.Contains(err.Error(), "read value") {
		t.Errorf("a sample without its count: error %v, want one naming the read value", err)
	}
}

func TestDecodeSampleKernelNoRegs(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	rec := encode(unix.PERF_RECORD_SAMPLE, unix.PERF_RECORD_MISC_KERNEL,
		uint64(5), uint64(0xffffffff81000000), uint32(1), uint32(2), uint64(9), uint32(0), uint32(0), uint64(10000),
		uint64(2), ContextKernel, uint64(0xffffffff81000000),
		uint64(0), // regs abi none: no registers follow
		uint64(0), // stack size 0: no data and no dyn_size
	)
	r, err := d.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	s := r.(*Sample)
	if !s.Kernel() || s.Regs != nil || s.RegsABI != 0 || s.Stack != nil || s.StackDynSize != 0 || s.Period != 10000 {
		t.Errorf("got %+v", s)
	}
}

func TestDecodeSideBand(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	id := sampleID(10, 12, 555)
	with := func(fields ...any) []any { return append(fields, id...) }
	buildID := append([]byte{4, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef}, make([]byte, 16)...)
	tests := []struct {
		name string
		rec  []byte
		want Record
	}{
		{"mmap2", encode(unix.PERF_RECORD_MMAP2, unix.PERF_RECORD_MISC_USER, with(uint32(10), uint32(12),
			uint64(0x7f0000), uint64(0x2000), uint64(0x1000), uint32(8), uint32(1), uint64(4242), uint64(3),
			uint32(unix.PROT_READ|unix.PROT_EXEC), uint32(unix.MAP_PRIVATE), "/usr/lib/libc.so.6")...),
			&Mmap2{Pid: 10, Tid: 12, Addr: 0x7f0000, Len: 0x2000, Pgoff: 0x1000, Maj: 8, Min: 1, Ino: 4242, InoGen: 3,
				Prot: unix.PROT_READ | unix.PROT_EXEC, Flags: unix.MAP_PRIVATE, Filename: "/usr/lib/libc.so.6", Time: 555, Executable: true}},
		{"mmap2 build id", encode(unix.PERF_RECORD_MMAP2, unix.PERF_RECORD_MISC_USER|unix.PERF_RECORD_MISC_MMAP_BUILD_ID, with(uint32(10), uint32(12),
			uint64(0x7f0000), uint64(0x2000), uint64(0), buildID, uint32(unix.PROT_READ), uint32(0), "/data")...),
			&Mmap2{Pid: 10, Tid: 12, Addr: 0x7f0000, Len: 0x2000, BuildID: []byte{0xde, 0xad, 0xbe, 0xef},
				Prot: unix.PROT_READ, Filename: "/data", Time: 555}},
		{"comm exec", encode(unix.PERF_RECORD_COMM, unix.PERF_RECORD_MISC_COMM_EXEC, with(uint32(10), uint32(10), "spin")...),
			&Comm{Pid: 10, Tid: 10, Comm: "spin", Exec: true, Time: 555}},
		{"fork", encode(unix.PERF_RECORD_FORK, 0, with(uint32(10), uint32(10), uint32(12), uint32(10), uint64(444))...),
			&Fork{Pid: 10, Ppid: 10, Tid: 12, Ptid: 10, Time: 444}},
		{"exit", encode(unix.PERF_RECORD_EXIT, 0, with(uint32(10), uint32(1), uint32(12), uint32(1), uint64(666))...),
			&Exit{Pid: 10, Ppid: 1, Tid: 12, Ptid: 1, Time: 666}},
		{"lost", encode(unix.PERF_RECORD_LOST, 0, with(uint64(77), uint64(31))...),
			&Lost{ID: 77, Lost: 31, Time: 555}},
		{"throttle", encode(unix.PERF_RECORD_THROTTLE, 0, with(uint64(999), uint64(77), uint64(78))...),
			&Throttle{Time: 999, ID: 77}},
		{"unthrottle", encode(unix.PERF_RECORD_UNTHROTTLE, 0, with(uint64(1999), uint64(77), uint64(78))...),
			&Throttle{Time: 1999, ID: 77, Unthrottle: true}},
		{"lost samples", encode(unix.PERF_RECORD_LOST_SAMPLES, 0, with(uint64(5))...),
			&LostSamples{Lost: 5, Time: 555}},
		{"switch out", encode(unix.PERF_RECORD_SWITCH, unix.PERF_RECORD_MISC_SWITCH_OUT|unix.PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, id...),
			&Switch{Pid: 10, Tid: 12, CPU: 1, Out: true, Preempt: true, Time: 555}},
		{"switch cpu wide", encode(unix.PERF_RECORD_SWITCH_CPU_WIDE, 0, with(uint32(20), uint32(21))...),
			&Switch{Pid: 10, Tid: 12, CPU: 1, NextPrevPid: 20, NextPrevTid: 21, Time: 555}},
		{"unknown", encode(99, 3, uint64(1)),
			&Unknown{Type: 99, Misc: 3, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Decode(tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestDecodeShort checks that every truncation of every kind of record is an
// error (with the header's size fixed up to match) and never a panic.
func TestDecodeShort(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	recs := [][]byte{
		testSample(),
		encode(unix.PERF_RECORD_MMAP2, 0, append([]any{uint32(1), uint32(1), uint64(1), uint64(1), uint64(1),
			uint32(0), uint32(0), uint64(0), uint64(0), uint32(5), uint32(0), "x"}, sampleID(1, 1, 1)...)...),
		encode(unix.PERF_RECORD_COMM, 0, append([]any{uint32(1), uint32(1), "c"}, sampleID(1, 1, 1)...)...),
		encode(unix.PERF_RECORD_FORK, 0, append([]any{uint32(1), uint32(1), uint32(1), uint32(1), uint64(1)}, sampleID(1, 1, 1)...)...),
		encode(unix.PERF_RECORD_LOST, 0, append([]any{uint64(1), uint64(1)}, sampleID(1, 1, 1)...)...),
	}
	for _, full := range recs {
		typ := binary.LittleEndian.Uint32(full)
		for n := 0; n < len(full); n++ {
			rec := append([]byte(nil), full[:n]...)
			if n >= 8 {
				binary.LittleEndian.PutUint16(rec[6:], uint16(n))
			}
			if _, err := d.Decode(rec); err == nil {
				// A sample cut just before its trailing fields may still be
				// well formed only if nothing was required; none of ours is.
				t.Errorf("type %d cut to %d of %d bytes: no error", typ, n, len(full))
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	d := mustDecoder(t, testSampleType, testRegsMask)
	huge := encode(unix.PERF_RECORD_SAMPLE, 0, uint64(1), uint64(1), uint32(1), uint32(1), uint64(1),
		uint32(0), uint32(0), uint64(1), uint64(1<<60)) // callchain of 2^60 entries
	badDyn := encode(unix.PERF_RECORD_SAMPLE, 0, uint64(1), uint64(1), uint32(1), uint32(1), uint64(1),
		uint32(0), uint32(0), uint64(1), uint64(0), uint64(0), uint64(8), uint64(0), uint64(9))
	mismatch := testSample()
	binary.LittleEndian.PutUint16(mismatch[6:], 16)
	tests := []struct {
		name, want string
		rec        []byte
	}{
		{"huge callchain", "callchain of 1152921504606846976 words at offset 56", huge},
		{"dyn size", "dyn_size 9 exceeds its size 8", badDyn},
		{"size mismatch", "header says 16 bytes", mismatch},
		{"header", "shorter than its 8-byte header", []byte{1, 2, 3}},
	}
	for _, tt := range tests {
		_, err := d.Decode(tt.rec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	if _, err := NewDecoder(unix.PERF_SAMPLE_BRANCH_STACK, 0, false); err == nil {
		t.Error("NewDecoder accepted PERF_SAMPLE_BRANCH_STACK")
	}
}

func TestDecodeNoSampleIDAll(t *testing.T) {
	d, err := NewDecoder(unix.PERF_SAMPLE_IP|unix.PERF_SAMPLE_TIME, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Decode(encode(unix.PERF_RECORD_COMM, 0, uint32(3), uint32(4), "abcdefghijklmno"))
	if err != nil {
		t.Fatal(err)
	}
	if c := r.(*Comm); c.Comm != "abcdefghijklmno" || c.Pid != 3 || c.Tid != 4 || c.Time != 0 {
		t.Errorf("got %+v", c)
	}
}

func TestSplitCallchain(t *testing.T) {
	const k1, k2, u1, u2 = 0xffffffff81000010, 0xffffffff81000020, 0x401000, 0x402000
	tests := []struct {
		cc           []uint64
		kernel, user []uint64
	}{
		{[]uint64{ContextKernel, k1, k2, ContextUser, u1, u2}, []uint64{k1, k2}, []uint64{u1, u2}},
		{[]uint64{ContextUser, u1, u2}, nil, []uint64{u1, u2}},
		{[]uint64{ContextKernel, k1}, []uint64{k1}, nil},
		{[]uint64{k1, u1}, []uint64{k1}, []uint64{u1}},                                       // no markers: by address
		{[]uint64{ContextUser, u1, 1<<64 - 32, 0x5, ContextUser, u2}, nil, []uint64{u1, u2}}, // hypervisor frames dropped
		{nil, nil, nil},
	}
	for _, tt := range tests {
		k, u := SplitCallchain(tt.cc)
		if !reflect.DeepEqual(k, tt.kernel) || !reflect.DeepEqual(u, tt.user) {
			t.Errorf("SplitCallchain(%#x) = %#x, %#x; want %#x, %#x", tt.cc, k, u, tt.kernel, tt.user)
		}
	}
}

// FuzzDecode feeds arbitrary bytes, as any record type and with several
// sample configurations, to the decoder: it must never panic, and a record it
// accepts must have had its header's size.
func FuzzDecode(f *testing.F) {
	f.Add(testSample(), uint8(0))
	f.Add(encode(unix.PERF_RECORD_MMAP2, unix.PERF_RECORD_MISC_MMAP_BUILD_ID, append([]any{uint32(1), uint32(1), uint64(1), uint64(1), uint64(1),
		make([]byte, 24), uint32(5), uint32(0), "x"}, sampleID(1, 1, 1)...)...), uint8(1))
	f.Add(encode(unix.PERF_RECORD_SWITCH_CPU_WIDE, 0, uint64(1)), uint8(2))
	configs := []struct{ st, mask uint64 }{
		{testSampleType, testRegsMask},
		{testSampleType | unix.PERF_SAMPLE_RAW | unix.PERF_SAMPLE_ADDR | unix.PERF_SAMPLE_ID | unix.PERF_SAMPLE_STREAM_ID, RegsAMD64All},
		{unix.PERF_SAMPLE_IP, 0},
	}
	decs := make([]*Decoder, len(configs))
	for i, c := range configs {
		decs[i] = mustDecoder(f, c.st, c.mask)
	}
	f.Fuzz(func(t *testing.T, rec []byte, which uint8) {
		d := decs[int(which)%len(decs)]
		r, err := d.Decode(rec)
		if err != nil {
			if r != nil {
				t.Errorf("Decode returned both %v and %T", err, r)
			}
			return
		}
		if int(binary.LittleEndian.Uint16(rec[6:])) != len(rec) {
			t.Errorf("accepted a %d-byte record whose header says otherwise", len(rec))
		}
		if s, ok := r.(*Sample); ok && uint64(len(s.Stack)) < s.StackDynSize {
			t.Errorf("stack of %d bytes with dyn_size %d", len(s.Stack), s.StackDynSize)
		}
	})
}

func TestDecodeRead(t *testing.T) {
	d, err := NewDecoder(unix.PERF_SAMPLE_TID|unix.PERF_SAMPLE_TIME, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 8+8+8+16)
	binary.LittleEndian.PutUint32(rec, unix.PERF_RECORD_READ)
	binary.LittleEndian.PutUint16(rec[6:], uint16(len(rec)))
	binary.LittleEndian.PutUint32(rec[8:], 41)         // pid
	binary.LittleEndian.PutUint32(rec[12:], 42)        // tid
	binary.LittleEndian.PutUint64(rec[16:], 123456789) // value
	binary.LittleEndian.PutUint32(rec[24:], 41)        // sample_id: pid, tid
	binary.LittleEndian.PutUint32(rec[28:], 42)
	binary.LittleEndian.PutUint64(rec[32:], 777) // sample_id: time
	r, err := d.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := r.(*Read)
	if !ok || *got != (Read{Pid: 41, Tid: 42, Value: 123456789, Time: 777}) {
		t.Errorf("Decode(READ) = %#v", r)
	}
}

// TestDecodeGroupRead: with Options.ReadGroup, a sample's read is the group's (the number of events,
// then each value and id): Count is the sample's own event's, Siblings every value in group order,
// Leader whether the sample's event leads; a Read record's Value is its event's, by the trailer's id.
func TestDecodeGroupRead(t *testing.T) {
	st := uint64(unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_READ)
	d := mustDecoder(t, st, 0)
	d.readGroup = true
	for _, tc := range []struct {
		id     uint64
		count  uint64
		leader bool
	}{{7, 5000, true}, {8, 4900, false}} {
		r, err := d.Decode(encode(unix.PERF_RECORD_SAMPLE, unix.PERF_RECORD_MISC_USER,
			tc.id, uint32(10), uint32(11), uint64(1000000), uint64(2), uint64(5000), uint64(7), uint64(4900), uint64(8)))
		if err != nil {
			t.Fatal(err)
		}
		s := r.(*Sample)
		if s.Count != tc.count || s.Leader != tc.leader || !slices.Equal(s.Siblings, []uint64{5000, 4900}) {
			t.Errorf("sample of event %d: count %d, leader %v, siblings %v; want %d, %v, [5000 4900]", tc.id, s.Count, s.Leader, s.Siblings, tc.count, tc.leader)
		}
	}
	if _, err := d.Decode(encode(unix.PERF_RECORD_SAMPLE, 0, uint64(7), uint32(10), uint32(11), uint64(1), uint64(1000))); err == nil ||
		!strings.Contains(err.Error(), "group read of 1000 events") {
		t.Errorf("a group read of 1000 events: error %v, want one saying so", err)
	}
	if _, err := d.Decode(encode(unix.PERF_RECORD_SAMPLE, 0, uint64(7), uint32(10), uint32(11), uint64(1), uint64(2), uint64(5000))); err == nil ||
		!strings.Contains(err.Error(), "group read id") {
		t.Errorf("a group read cut short: error %v, want one naming the id", err)
	}

	rd, err := NewDecoder(unix.PERF_SAMPLE_TID|unix.PERF_SAMPLE_IDENTIFIER, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	rd.readGroup = true
	r, err := rd.Decode(encode(unix.PERF_RECORD_READ, 0, uint32(41), uint32(42), uint64(2), uint64(5000), uint64(7),
		uint64(4900), uint64(8), uint32(41), uint32(42), uint64(8)))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.(*Read); got.Value != 4900 || got.ID != 8 {
		t.Errorf("Read of event 8 in a group read: %+v, want value 4900", got)
	}
}
