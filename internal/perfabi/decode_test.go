package perfabi

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"er/internal/perfabi/perfabitest"
)

// head is the header of a decoded record of type typ, misc bits misc and n bytes.
func head(typ uint32, misc uint16, n int) Header {
	return Header{Type: typ, Misc: misc, Size: uint16(n)}
}

// testSampleType is what perfevent.OpenTask asks for with every option on.
const testSampleType = SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod |
	SampleCallchain | SampleRegsUser | SampleStackUser

// testRegsMask is x86-64's BP, SP and IP (perf_regs.h: 6, 7, 8).
const testRegsMask = 1<<6 | 1<<7 | 1<<8

// regsABI64 is PERF_SAMPLE_REGS_ABI_64.
const regsABI64 = 2

// trailer is the sample_id trailer for testSampleType: pid/tid, time, cpu, identifier.
func trailer(pid, tid uint32, time uint64) []any {
	return []any{pid, tid, time, uint32(1), uint32(0), uint64(77)}
}

func testSample() []byte {
	stack := []byte("0123456789abcdef")
	return perfabitest.Encode(RecordSample, CPUModeUser,
		uint64(77),             // identifier
		uint64(0x401000),       // ip
		uint32(10), uint32(11), // pid, tid
		uint64(123456789),    // time
		uint32(1), uint32(0), // cpu
		uint64(1000000),                                            // period
		uint64(3), ContextUser, uint64(0x401000), uint64(0x401234), // callchain
		uint64(regsABI64), uint64(0x7ff0), uint64(0x7fe0), uint64(0x401000), // regs bp sp ip
		uint64(len(stack)), stack, uint64(12), // stack
	)
}

func mustDecoder(t testing.TB, f Format) *Decoder {
	t.Helper()
	d, err := NewDecoder(f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testFormat is the format of testSampleType, with sample_id_all.
var testFormat = Format{SampleType: testSampleType, SampleRegsUser: testRegsMask, SampleIDAll: true}

// TestDecodeSample decodes a sample, both ways: Decode's record is the decoder's, DecodeNew's a new one.
func TestDecodeSample(t *testing.T) {
	d := mustDecoder(t, testFormat)
	rec := testSample()
	want := &Sample{Header: head(RecordSample, CPUModeUser, len(rec)), IP: 0x401000, Pid: 10, Tid: 11, Time: 123456789,
		CPU: 1, Period: 1000000, ID: 77, Callchain: []uint64{ContextUser, 0x401000, 0x401234},
		Regs: []uint64{0x7ff0, 0x7fe0, 0x401000}, RegsABI: regsABI64, Stack: []byte("0123456789abcdef"), StackDynSize: 12}
	r, err := d.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	s := r.(*Sample)
	if s.Kernel() || s.CPUMode() != CPUModeUser || Time(s) != 123456789 {
		t.Errorf("user sample: Kernel %v, CPU mode %d, time %d", s.Kernel(), s.CPUMode(), Time(s))
	}
	if s.Regs[2] != s.IP { // IP, register 8, is the third of the mask's
		t.Errorf("IP register = %#x, want %#x", s.Regs[2], s.IP)
	}
	if again, _ := d.Decode(rec); again != r {
		t.Error("Decode made a new record")
	}
	n, err := d.DecodeNew(rec)
	if err != nil || n == r || !reflect.DeepEqual(n, want) {
		t.Errorf("DecodeNew: %+v (%v), the decoder's own %v", n, err, n == r)
	}
	// DecodeNew's slices are the record's own: another record does not change them.
	other := testSample()
	binary.LittleEndian.PutUint64(other[8+7*8:], 0x999999) // the first call chain entry
	if _, err := d.Decode(other); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DecodeNew(other); err != nil {
		t.Fatal(err)
	}
	if got := n.(*Sample).Callchain[0]; got != ContextUser || r.(*Sample).Callchain[0] != 0x999999 {
		t.Errorf("after another record: DecodeNew's call chain starts %#x, Decode's %#x", got, r.(*Sample).Callchain[0])
	}
}

// TestDecodeSampleCount: PERF_SAMPLE_READ comes between the period and the call chain.
func TestDecodeSampleCount(t *testing.T) {
	d := mustDecoder(t, Format{SampleType: SampleTID | SamplePeriod | SampleRead | SampleCallchain, SampleIDAll: true})
	r, err := d.Decode(perfabitest.Encode(RecordSample, CPUModeUser,
		uint32(10), uint32(11), uint64(1000000), uint64(5123456), uint64(1), uint64(0x401000)))
	if err != nil {
		t.Fatal(err)
	}
	s := r.(*Sample)
	if s.Period != 1000000 || s.Count != 5123456 || len(s.Callchain) != 1 || s.Callchain[0] != 0x401000 ||
		s.More == nil || len(s.More.Read) != 1 || s.More.Read[0] != (ReadValue{Value: 5123456}) || s.Siblings != nil || s.Leader {
		t.Errorf("got %+v: want period 1000000, count 5123456, call chain [0x401000]", s)
	}
	if _, err := d.Decode(perfabitest.Encode(RecordSample, 0, uint32(10), uint32(11), uint64(1000000))); err == nil ||
		!strings.Contains(err.Error(), "read value") {
		t.Errorf("a sample without its count: error %v, want one naming the read value", err)
	}
}

func TestDecodeSampleKernelNoRegs(t *testing.T) {
	d := mustDecoder(t, testFormat)
	rec := perfabitest.Encode(RecordSample, CPUModeKernel,
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

// TestSampleLayout decodes a sample with every field perf can put in one, in the order of perf_event.h.
func TestSampleLayout(t *testing.T) {
	st := SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleAddr | SampleID | SampleStreamID | SampleCPU |
		SamplePeriod | SampleRead | SampleCallchain | SampleRaw | SampleBranchStack | SampleRegsUser | SampleStackUser |
		SampleWeight | SampleDataSrc | SampleTransaction | SampleRegsIntr | SamplePhysAddr | SampleCgroup |
		SampleDataPageSize | SampleCodePageSize | SampleAux
	f := Format{SampleType: st, ReadFormat: FormatGroup | FormatID | FormatTotalTimeEnabled, SampleRegsUser: 0x3,
		SampleRegsIntr: 0x1, BranchSampleType: BranchHWIndex | BranchCounters, SampleIDAll: true}
	raw := uint64(4) | 0xaabbccdd<<32                                          // u32 size 4, then 4 bytes of data
	words := []uint64{77, 0x401000, 5 | 6<<32, 1000, 0xdead, 77, 9, 1, 250000, // identifier ... period
		2, 111, 10, 78, 20, 77, // read: nr 2, time enabled, (value, id) x 2: the sample's event second
		3, 0xfffffffffffffe00, 0x401000, 0x401100, // callchain
		raw,
		1, 42, 0x401000, 0x402000, 0x3, 5, // branches: nr 1, hw index, from, to, flags, counters
		2, 0x1111, 0x2222, // user regs: abi, 2 registers
		16, 0xa, 0xb, 16, // stack: size 16, 16 bytes, dyn size
		7, 0x55, 0x66, // weight, data source, transaction
		2, 0x3333, // intr regs: abi, 1 register
		0x9000, 12, 4096, 2097152, // phys addr, cgroup, page sizes
		8, 0x77, // aux: size 8, data
	}
	var fields []any
	for _, w := range words {
		fields = append(fields, w)
	}
	rec := perfabitest.Encode(RecordSample, CPUModeUser, fields...)
	for _, fresh := range []bool{false, true} {
		d := mustDecoder(t, f)
		decode := d.Decode
		if fresh {
			decode = d.DecodeNew
		}
		r, err := decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		x := r.(*Sample)
		if x.ID != 77 || x.IP != 0x401000 || x.Pid != 5 || x.Tid != 6 || x.Time != 1000 || x.Addr != 0xdead || x.CPU != 1 || x.Period != 250000 {
			t.Errorf("fixed fields %+v", x)
		}
		y := x.More
		if y == nil {
			t.Fatalf("sample %+v without More", x)
		}
		if y.StreamID != 9 {
			t.Errorf("stream id %d", y.StreamID)
		}
		if len(y.Read) != 2 || y.Read[0] != (ReadValue{Value: 10, ID: 78, TimeEnabled: 111}) || y.Read[1] != (ReadValue{Value: 20, ID: 77, TimeEnabled: 111}) ||
			x.Count != 20 || x.Leader || !slices.Equal(x.Siblings, []uint64{10, 20}) {
			t.Errorf("read %+v count %d leader %v siblings %v", y.Read, x.Count, x.Leader, x.Siblings)
		}
		if !slices.Equal(x.Callchain, []uint64{0xfffffffffffffe00, 0x401000, 0x401100}) || !bytes.Equal(y.Raw, []byte{0xdd, 0xcc, 0xbb, 0xaa}) {
			t.Errorf("callchain %x raw %x", x.Callchain, y.Raw)
		}
		if y.BranchHWIndex != 42 || len(y.Branches) != 1 || y.Branches[0] != (Branch{From: 0x401000, To: 0x402000, Flags: 3, Counters: 5}) {
			t.Errorf("branches %+v hw index %d", y.Branches, y.BranchHWIndex)
		}
		if x.RegsABI != 2 || !slices.Equal(x.Regs, []uint64{0x1111, 0x2222}) || len(x.Stack) != 16 || x.Stack[0] != 0xa || x.StackDynSize != 16 {
			t.Errorf("user regs %d %x stack %x/%d", x.RegsABI, x.Regs, x.Stack, x.StackDynSize)
		}
		if y.Weight != 7 || y.DataSrc != 0x55 || y.Transaction != 0x66 || y.IntrRegsABI != 2 || !slices.Equal(y.IntrRegs, []uint64{0x3333}) ||
			y.PhysAddr != 0x9000 || y.Cgroup != 12 || y.DataPageSize != 4096 || y.CodePageSize != 2097152 || len(y.Aux) != 8 || y.Aux[0] != 0x77 {
			t.Errorf("tail fields: %+v", y)
		}
		// Every field cut short is an error that names it.
		for n := 8; n < len(rec); n += 8 {
			cut := bytes.Clone(rec[:n])
			binary.LittleEndian.PutUint16(cut[6:], uint16(n))
			if _, err := decode(cut); err == nil || !strings.Contains(err.Error(), fmt.Sprintf(" of its %d", n)) {
				t.Errorf("cut to %d bytes: %v", n, err)
			}
		}
	}
}

func TestDecodeSideBand(t *testing.T) {
	d := mustDecoder(t, testFormat)
	id := trailer(10, 12, 555)
	with := func(fields ...any) []any { return append(fields, id...) }
	buildID := append([]byte{4, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef}, make([]byte, 16)...)
	const protRX, mapPrivate = 0x5, 0x2
	tests := []struct {
		name string
		rec  []byte
		want Record
		time uint64 // Time's
	}{
		{"mmap2", perfabitest.Encode(RecordMmap2, CPUModeUser, with(uint32(10), uint32(12),
			uint64(0x7f0000), uint64(0x2000), uint64(0x1000), uint32(8), uint32(1), uint64(4242), uint64(3),
			uint32(protRX), uint32(mapPrivate), "/usr/lib/libc.so.6")...),
			&Mmap{Pid: 10, Tid: 12, Addr: 0x7f0000, Len: 0x2000, Pgoff: 0x1000, Maj: 8, Min: 1, Ino: 4242, InoGen: 3,
				Prot: protRX, Flags: mapPrivate, Filename: "/usr/lib/libc.so.6", Time: 555, ID: 77, CPU: 1, Executable: true}, 555},
		{"mmap2 build id", perfabitest.Encode(RecordMmap2, CPUModeUser|MiscMmapBuildID, with(uint32(10), uint32(12),
			uint64(0x7f0000), uint64(0x2000), uint64(0), buildID, uint32(1), uint32(0), "/data")...),
			&Mmap{Pid: 10, Tid: 12, Addr: 0x7f0000, Len: 0x2000, BuildID: []byte{0xde, 0xad, 0xbe, 0xef},
				Prot: 1, Filename: "/data", Time: 555, ID: 77, CPU: 1}, 555},
		{"mmap", perfabitest.Encode(RecordMmap, CPUModeKernel, with(uint32(0xffffffff), uint32(0),
			uint64(0xffffffff81000000), uint64(0x1000000), uint64(0xffffffff81000000), "[kernel.kallsyms]_text")...),
			&Mmap{Pid: 0xffffffff, Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000,
				Filename: "[kernel.kallsyms]_text", Time: 555, ID: 77, CPU: 1, Executable: true}, 555},
		{"mmap data", perfabitest.Encode(RecordMmap, CPUModeUser|MiscMmapData, with(uint32(10), uint32(10),
			uint64(0x1000), uint64(0x1000), uint64(0), "/data")...),
			&Mmap{Pid: 10, Tid: 10, Addr: 0x1000, Len: 0x1000, Filename: "/data", Time: 555, ID: 77, CPU: 1}, 555},
		{"comm exec", perfabitest.Encode(RecordComm, MiscCommExec, with(uint32(10), uint32(10), "spin")...),
			&Comm{Pid: 10, Tid: 10, Comm: "spin", Exec: true, Time: 555, ID: 77, CPU: 1}, 555},
		{"fork", perfabitest.Encode(RecordFork, 0, with(uint32(10), uint32(10), uint32(12), uint32(10), uint64(444))...),
			&Fork{Pid: 10, Ppid: 10, Tid: 12, Ptid: 10, Time: 444, SampleIDTime: 555, ID: 77, CPU: 1}, 555},
		{"exit", perfabitest.Encode(RecordExit, 0, with(uint32(10), uint32(1), uint32(12), uint32(1), uint64(666))...),
			&Exit{Pid: 10, Ppid: 1, Tid: 12, Ptid: 1, Time: 666, SampleIDTime: 555, ID: 77, CPU: 1}, 555},
		{"lost", perfabitest.Encode(RecordLost, 0, with(uint64(78), uint64(31))...),
			&Lost{ID: 78, Lost: 31, Pid: 10, Tid: 12, Time: 555, CPU: 1}, 555},
		{"throttle", perfabitest.Encode(RecordThrottle, 0, with(uint64(999), uint64(77), uint64(78))...),
			&Throttle{Time: 999, ID: 77, StreamID: 78, SampleIDTime: 555, Pid: 10, Tid: 12, CPU: 1}, 555},
		{"unthrottle", perfabitest.Encode(RecordUnthrottle, 0, with(uint64(1999), uint64(77), uint64(78))...),
			&Throttle{Time: 1999, ID: 77, StreamID: 78, Unthrottle: true, SampleIDTime: 555, Pid: 10, Tid: 12, CPU: 1}, 555},
		{"lost samples", perfabitest.Encode(RecordLostSamples, 0, with(uint64(5))...),
			&LostSamples{Lost: 5, Pid: 10, Tid: 12, Time: 555, ID: 77, CPU: 1}, 555},
		{"switch out", perfabitest.Encode(RecordSwitch, MiscSwitchOut|MiscSwitchOutPreempt, id...),
			&Switch{Pid: 10, Tid: 12, CPU: 1, Out: true, Preempt: true, Time: 555, ID: 77}, 555},
		{"switch cpu wide", perfabitest.Encode(RecordSwitchCPUWide, 0, with(uint32(20), uint32(21))...),
			&Switch{Pid: 10, Tid: 12, CPU: 1, NextPrevPid: 20, NextPrevTid: 21, Time: 555, ID: 77}, 555},
		{"ksymbol", perfabitest.Encode(RecordKsymbol, 0, with(uint64(0xffffffffc0000000), "bpf_prog")...),
			&Unknown{Data: perfabitest.Encode(0, 0, uint64(0xffffffffc0000000), "bpf_prog")[8:], Pid: 10, Tid: 12, Time: 555, ID: 77, CPU: 1}, 555},
		{"unknown", perfabitest.Encode(99, 3, uint64(1)),
			&Unknown{Data: []byte{1, 0, 0, 0, 0, 0, 0, 0}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*tt.want.Head() = head(binary.LittleEndian.Uint32(tt.rec), binary.LittleEndian.Uint16(tt.rec[4:]), len(tt.rec))
			for _, decode := range []func([]byte) (Record, error){d.Decode, d.DecodeNew} {
				got, err := decode(tt.rec)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got  %+v\nwant %+v", got, tt.want)
				}
				if Time(got) != tt.time {
					t.Errorf("Time %d, want %d", Time(got), tt.time)
				}
			}
		})
	}
}

// TestDecodeShort checks that every truncation of every kind of record is an
// error (with the header's size fixed up to match) and never a panic.
func TestDecodeShort(t *testing.T) {
	d := mustDecoder(t, testFormat)
	recs := [][]byte{
		testSample(),
		perfabitest.Encode(RecordMmap2, 0, append([]any{uint32(1), uint32(1), uint64(1), uint64(1), uint64(1),
			uint32(0), uint32(0), uint64(0), uint64(0), uint32(5), uint32(0), "x"}, trailer(1, 1, 1)...)...),
		perfabitest.Encode(RecordComm, 0, append([]any{uint32(1), uint32(1), "c"}, trailer(1, 1, 1)...)...),
		perfabitest.Encode(RecordFork, 0, append([]any{uint32(1), uint32(1), uint32(1), uint32(1), uint64(1)}, trailer(1, 1, 1)...)...),
		perfabitest.Encode(RecordLost, 0, append([]any{uint64(1), uint64(1)}, trailer(1, 1, 1)...)...),
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
	d := mustDecoder(t, testFormat)
	huge := perfabitest.Encode(RecordSample, 0, uint64(1), uint64(1), uint32(1), uint32(1), uint64(1),
		uint32(0), uint32(0), uint64(1), uint64(1<<60)) // callchain of 2^60 entries
	huger := perfabitest.Encode(RecordSample, 0, uint64(1), uint64(1), uint32(1), uint32(1), uint64(1),
		uint32(0), uint32(0), uint64(1), uint64(1<<62)) // callchain of 2^62 entries: 2^65 bytes
	badDyn := perfabitest.Encode(RecordSample, 0, uint64(1), uint64(1), uint32(1), uint32(1), uint64(1),
		uint32(0), uint32(0), uint64(1), uint64(0), uint64(0), uint64(8), uint64(0), uint64(9))
	mismatch := testSample()
	binary.LittleEndian.PutUint16(mismatch[6:], 16)
	odd := perfabitest.Encode(RecordLost, 0, uint64(1), uint64(2))
	binary.LittleEndian.PutUint16(odd[6:], 20)
	odd = odd[:20]
	tests := []struct {
		name, want string
		rec        []byte
	}{
		{"huge callchain", "callchain needs 9223372036854775808 bytes at byte 64 of its 64", huge},
		{"huger callchain", "callchain of 4611686018427387904 entries of 8 bytes does not fit in the record's 64 bytes (at byte 64)", huger},
		{"dyn size", "user stack dyn_size 9 exceeds its size 8", badDyn},
		{"size mismatch", "header says 16 bytes, have 152", mismatch},
		{"header", "record of 3 bytes is shorter than its 8-byte header", []byte{1, 2, 3}},
		{"odd size", "record size 20 is not a multiple of 8", odd},
		{"no sample_id", "16 bytes after the header, fewer than its 32-byte sample_id", perfabitest.Encode(RecordLost, 0, uint64(1), uint64(2))},
		{"field in sample_id", "time needs 8 bytes at byte 24 of its 56 (its last 32 bytes are its sample_id)",
			perfabitest.Encode(RecordFork, 0, append([]any{uint32(1), uint32(1), uint32(1), uint32(1)}, trailer(1, 1, 1)...)...)},
	}
	for _, tt := range tests {
		_, err := d.Decode(tt.rec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	if _, err := NewDecoder(Format{SampleType: 1 << 30}); err == nil || !strings.Contains(err.Error(), "sample type bits 0x40000000 are not supported") {
		t.Errorf("NewDecoder of sample type bit 30: %v", err)
	}
	if _, err := NewDecoder(Format{ReadFormat: 1 << 5}); err == nil || !strings.Contains(err.Error(), "read format bits 0x20 are not supported") {
		t.Errorf("NewDecoder of read format bit 5: %v", err)
	}
}

func TestDecodeNoSampleIDAll(t *testing.T) {
	d := mustDecoder(t, Format{SampleType: SampleIP | SampleTime})
	r, err := d.Decode(perfabitest.Encode(RecordComm, 0, uint32(3), uint32(4), "abcdefghijklmno"))
	if err != nil {
		t.Fatal(err)
	}
	if c := r.(*Comm); c.Comm != "abcdefghijklmno" || c.Pid != 3 || c.Tid != 4 || c.Time != 0 || Time(c) != 0 {
		t.Errorf("got %+v", c)
	}
	r, err = d.Decode(perfabitest.Encode(RecordFork, 0, uint32(3), uint32(2), uint32(3), uint32(2), uint64(700)))
	if f, ok := r.(*Fork); err != nil || !ok || f.Time != 700 || f.SampleIDTime != 0 || Time(f) != 700 {
		t.Errorf("fork without a sample_id: %+v (%v), time %d", r, err, Time(r))
	}
}

func TestDecodeRead(t *testing.T) {
	d := mustDecoder(t, Format{SampleType: SampleTID | SampleTime, SampleIDAll: true})
	rec := make([]byte, 8+8+8+16)
	binary.LittleEndian.PutUint32(rec, RecordRead)
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
	want := &Read{Header: head(RecordRead, 0, len(rec)), Pid: 41, Tid: 42, Value: 123456789, Values: []ReadValue{{Value: 123456789}}, Time: 777}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Decode(READ) = %#v", r)
	}
}

// TestDecodeGroupRead: with PERF_FORMAT_GROUP|PERF_FORMAT_ID, a sample's read is the group's (the
// number of events, then each value and id): Count is the sample's own event's, Siblings every
// value in group order, Leader whether the sample's event leads; a Read record's Value is its
// event's, by the sample_id's id.
func TestDecodeGroupRead(t *testing.T) {
	st := SampleTID | SamplePeriod | SampleIdentifier | SampleRead
	d := mustDecoder(t, Format{SampleType: st, ReadFormat: FormatGroup | FormatID, SampleIDAll: true})
	for _, tc := range []struct {
		id     uint64
		count  uint64
		leader bool
	}{{7, 5000, true}, {8, 4900, false}, {9, 5000, false}} {
		r, err := d.Decode(perfabitest.Encode(RecordSample, CPUModeUser,
			tc.id, uint32(10), uint32(11), uint64(1000000), uint64(2), uint64(5000), uint64(7), uint64(4900), uint64(8)))
		if err != nil {
			t.Fatal(err)
		}
		s := r.(*Sample)
		if s.Count != tc.count || s.Leader != tc.leader || !slices.Equal(s.Siblings, []uint64{5000, 4900}) {
			t.Errorf("sample of event %d: count %d, leader %v, siblings %v; want %d, %v, [5000 4900]", tc.id, s.Count, s.Leader, s.Siblings, tc.count, tc.leader)
		}
	}
	if _, err := d.Decode(perfabitest.Encode(RecordSample, 0, uint64(7), uint32(10), uint32(11), uint64(1), uint64(1000))); err == nil ||
		!strings.Contains(err.Error(), "group read of 1000 events at byte 32 needs 16000 bytes at byte 40 of its 40") {
		t.Errorf("a group read of 1000 events: error %v, want one saying so", err)
	}
	if _, err := d.Decode(perfabitest.Encode(RecordSample, 0, uint64(7), uint32(10), uint32(11), uint64(1), uint64(2), uint64(5000))); err == nil ||
		!strings.Contains(err.Error(), "group read of 2 events at byte 32 needs 32 bytes at byte 40 of its 48") {
		t.Errorf("a group read cut short: error %v, want one saying so", err)
	}

	rd := mustDecoder(t, Format{SampleType: SampleTID | SampleIdentifier, ReadFormat: FormatGroup | FormatID, SampleIDAll: true})
	r, err := rd.Decode(perfabitest.Encode(RecordRead, 0, uint32(41), uint32(42), uint64(2), uint64(5000), uint64(7),
		uint64(4900), uint64(8), uint32(41), uint32(42), uint64(8)))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.(*Read); got.Value != 4900 || got.ID != 8 || len(got.Values) != 2 || got.Values[1] != (ReadValue{Value: 4900, ID: 8}) {
		t.Errorf("Read of event 8 in a group read: %+v, want value 4900", got)
	}
}

// FuzzDecode feeds arbitrary bytes, as any record type and with several
// formats, to the decoder: it must never panic, and a record it
// accepts must have had its header's size; Decode and DecodeNew agree.
func FuzzDecode(f *testing.F) {
	f.Add(testSample(), uint8(0))
	f.Add(perfabitest.Encode(RecordMmap2, MiscMmapBuildID, append([]any{uint32(1), uint32(1), uint64(1), uint64(1), uint64(1),
		make([]byte, 24), uint32(5), uint32(0), "x"}, trailer(1, 1, 1)...)...), uint8(1))
	f.Add(perfabitest.Encode(RecordSwitchCPUWide, 0, uint64(1)), uint8(2))
	f.Add(perfabitest.Encode(RecordSample, 0, uint64(7), uint64(1), uint32(10), uint32(11), uint64(1), uint32(0), uint32(0), uint64(1),
		uint64(2), uint64(5000), uint64(7), uint64(4900), uint64(8), uint64(0)), uint8(3))
	f.Add(perfabitest.Encode(RecordRead, 0, uint32(41), uint32(42), uint64(2), uint64(5000), uint64(7), uint64(4900), uint64(8), uint64(8)), uint8(3))
	formats := []Format{
		testFormat,
		{SampleType: testSampleType | SampleRaw | SampleAddr | SampleID | SampleStreamID, SampleRegsUser: 0xff0fff, SampleIDAll: true},
		{SampleType: SampleIP},
		{SampleType: SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleRead | SampleCallchain,
			ReadFormat: FormatGroup | FormatID, SampleIDAll: true},
		{SampleType: SampleKnown, ReadFormat: FormatKnown, SampleRegsUser: 0x3, SampleRegsIntr: 0x7,
			BranchSampleType: BranchHWIndex | BranchCounters, SampleIDAll: true},
	}
	decs := make([]*Decoder, len(formats))
	for i, fm := range formats {
		decs[i] = mustDecoder(f, fm)
	}
	f.Fuzz(func(t *testing.T, rec []byte, which uint8) {
		d := decs[int(which)%len(decs)]
		n, nerr := d.DecodeNew(rec)
		r, err := d.Decode(rec)
		if err != nil {
			if r != nil {
				t.Errorf("Decode returned both %v and %T", err, r)
			}
			if nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("Decode: %v; DecodeNew: %v", err, nerr)
			}
			return
		}
		if nerr != nil || !reflect.DeepEqual(r, n) {
			t.Errorf("Decode: %+v; DecodeNew: %+v (%v)", r, n, nerr)
		}
		if int(binary.LittleEndian.Uint16(rec[6:])) != len(rec) || r.Head().Size != uint16(len(rec)) {
			t.Errorf("accepted a %d-byte record whose header says otherwise", len(rec))
		}
		if s, ok := r.(*Sample); ok && uint64(len(s.Stack)) < s.StackDynSize {
			t.Errorf("stack of %d bytes with dyn_size %d", len(s.Stack), s.StackDynSize)
		}
	})
}

// BenchmarkDecode decodes a sample (the ring's records with every option on) and, for the records
// of context switches, forks and exits, the records of a thread's life.
func BenchmarkDecode(b *testing.B) {
	life := [][]byte{
		perfabitest.Encode(RecordSwitch, MiscSwitchOut, trailer(10, 12, 555)...),
		perfabitest.Encode(RecordSwitch, 0, trailer(10, 12, 556)...),
		perfabitest.Encode(RecordFork, 0, append([]any{uint32(10), uint32(10), uint32(12), uint32(10), uint64(444)}, trailer(10, 12, 555)...)...),
		perfabitest.Encode(RecordExit, 0, append([]any{uint32(10), uint32(10), uint32(12), uint32(10), uint64(444)}, trailer(10, 12, 555)...)...),
	}
	for _, bc := range []struct {
		name string
		recs [][]byte
	}{{"sample", [][]byte{testSample()}}, {"life", life}} {
		b.Run(bc.name, func(b *testing.B) {
			d := mustDecoder(b, testFormat)
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range bc.recs {
					if _, err := d.Decode(r); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
