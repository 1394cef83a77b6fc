package experiment

import (
	"bytes"
	"er/internal/events"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// blockFile builds a binary file of kind k from records, count records per block.
func blockFile(k recordKind, records [][]byte, perBlock int) []byte {
	b := appendFileHeader(nil, k)
	for i := 0; i < len(records); i += perBlock {
		start := len(b)
		b = append(b, make([]byte, blockHeaderSize)...)
		n := 0
		for _, r := range records[i:min(i+perBlock, len(records))] {
			b = append(b, r...)
			n++
		}
		sealBlock(b[start:], uint32(n))
	}
	return b
}

func testClockSamples(n int) []ClockSample {
	s := make([]ClockSample, n)
	for i := range s {
		s[i] = ClockSample{
			Time: int64(i) * 1000003, Pid: 100 + uint32(i%3), Tid: 200 + uint32(i%7), CPU: uint32(i % 2),
			Mode: Mode(i % 3), Period: 10_000_000 - int64(i), Stack: uint32(i % 5),
		}
	}
	return s
}

func clockFileBytes(samples []ClockSample, perBlock int) []byte {
	var recs [][]byte
	for _, s := range samples {
		recs = append(recs, appendClock(nil, s))
	}
	return blockFile(kindClock, recs, perBlock)
}

func TestClockRoundTrip(t *testing.T) {
	want := testClockSamples(10)
	want[3].Time = -5 // out of order and negative: allowed
	want[4].Stack = ^uint32(0)
	want[5].Period = maxPeriodNS // the longest a sample may stand for
	b := clockFileBytes(want, 4)
	if got := len(b); got != fileHeaderSize+3*blockHeaderSize+10*clockRecordSize {
		t.Fatalf("file size %d", got)
	}
	got, blocks, recSize, warn, err := readClockSamples("c", bytes.NewReader(b), int64(len(b)))
	if err != nil || warn != "" {
		t.Fatalf("readClock: %v, warning %q", err, warn)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if recSize != clockRecordSize {
		t.Errorf("record size %d", recSize)
	}
	wantBlocks := []clockBlock{{24, 0}, {24 + 24 + 160, 4}, {24 + 2*(24+160), 8}}
	if !reflect.DeepEqual(blocks, wantBlocks) {
		t.Errorf("blocks %v, want %v", blocks, wantBlocks)
	}
}

// A later minor version may make clock records longer; this reader skips the new bytes.
func TestClockLongerRecords(t *testing.T) {
	want := testClockSamples(3)
	var recs [][]byte
	for _, s := range want {
		recs = append(recs, append(appendClock(nil, s), 1, 2, 3, 4, 5, 6, 7, 8))
	}
	b := blockFile(kindClock, recs, 2)
	le.PutUint32(b[16:], clockRecordSize+8)
	le.PutUint16(b[10:], 3)
	le.PutUint32(b[20:], checksum(b[:20]))
	got, _, _, _, err := readClockSamples("c", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestStacksRoundTrip(t *testing.T) {
	want := []Stack{nil, {1}, {KernelBase + 5, 0x401000, 0x401234}, {}, {^uint64(0)}}
	var recs [][]byte
	for _, s := range want[1:] {
		recs = append(recs, appendStack(nil, s))
	}
	b := blockFile(kindStacks, recs, 3)
	got, warn, err := readStacks("s", bytes.NewReader(b), int64(len(b)))
	if err != nil || warn != "" {
		t.Fatalf("readStacks: %v, warning %q", err, warn)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d stacks, want %d", len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) || (len(want[i]) > 0 && !reflect.DeepEqual(got[i], want[i])) {
			t.Errorf("stack %d = %x, want %x", i, got[i], want[i])
		}
	}
	// Stacks share a backing array; appending to one must not change the next.
	_ = append(got[1], 99)
	if got[2][0] != KernelBase+5 {
		t.Errorf("append to stack 1 changed stack 2: %x", got[2])
	}
}

func testOverview() []OverviewSample {
	return []OverviewSample{
		{Time: 1, Pid: 2, Sample: 1, UserNS: 3, SystemNS: 4, MinFlt: 5, MajFlt: 6, VolCtxSw: 7, InvolCtxSw: 8, RSSBytes: 9, NumThreads: 10, Label: "start"},
		{Time: 1e9, Pid: 2, Sample: 2, UserNS: 1 << 40, NumThreads: 3, Label: ""},
		{Time: 2e9, Pid: 2, Sample: 3, Label: strings.Repeat("é", 100)},
	}
}

func TestOverviewRoundTrip(t *testing.T) {
	want := testOverview()
	var recs [][]byte
	for _, o := range want {
		recs = append(recs, appendOverview(nil, o))
	}
	if got := len(recs[0]); got != overviewFixedSize+5 {
		t.Errorf("record of label \"start\" is %d bytes", got)
	}
	b := blockFile(kindOverview, recs, 2)
	got, warn, err := readOverview("o", bytes.NewReader(b), int64(len(b)))
	if err != nil || warn != "" {
		t.Fatalf("readOverview: %v, warning %q", err, warn)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// The descriptors written into log.xml must describe the real record layouts.
func TestDescriptorsMatchLayout(t *testing.T) {
	read := func(b []byte, typ string) uint64 {
		switch typ {
		case "u8":
			return uint64(b[0])
		case "u16":
			return uint64(le.Uint16(b))
		case "u32":
			return uint64(le.Uint32(b))
		case "i32":
			return uint64(int64(int32(le.Uint32(b))))
		case "u64", "i64":
			return le.Uint64(b)
		}
		t.Fatalf("unknown type %q", typ)
		return 0
	}
	s := ClockSample{Time: 11, Period: 12, Pid: 13, Tid: 14, CPU: 15, Stack: 16, Mode: 2}
	o := OverviewSample{Time: 21, Pid: 22, Sample: 23, UserNS: 24, SystemNS: 25, MinFlt: 26, MajFlt: 27,
		VolCtxSw: 28, InvolCtxSw: 29, RSSBytes: 30, NumThreads: -31, Label: "periodic"}
	off := ClockSample{Time: 51, Period: 52, Pid: 53, Tid: 54, CPU: 55, Stack: 56, Mode: ModeSleep}
	hwc := CounterSample{Time: 61, Value: 62, Addr: 63, Pid: 64, Tid: 65, CPU: 66, Stack: 67, Counter: 68, Mode: ModeKernel}
	records := map[string][]byte{
		CountersFile: appendHWC(nil, hwc),
		ClockFile:    appendClock(nil, s),
		OffCPUFile:   appendClock(nil, off),
		StacksFile:   appendStack(nil, Stack{41, 42}),
		OverviewFile: appendOverview(nil, o),
	}
	want := map[string]map[string]uint64{
		ClockFile:    {"time": 11, "period": 12, "pid": 13, "tid": 14, "cpu": 15, "stack": 16, "mode": 2},
		OffCPUFile:   {"time": 51, "period": 52, "pid": 53, "tid": 54, "cpu": 55, "stack": 56, "mode": 4},
		StacksFile:   {"nframes": 2, "frames": 41},
		CountersFile: {"time": 61, "value": 62, "addr": 63, "pid": 64, "tid": 65, "cpu": 66, "stack": 67, "counter": 68, "mode": 2},
		OverviewFile: {"time": 21, "pid": 22, "sample": 23, "userNS": 24, "systemNS": 25, "minflt": 26,
			"majflt": 27, "volCtxSw": 28, "involCtxSw": 29, "rssBytes": 30, "numThreads": uint64(1<<64 - 31), "labelLen": 8},
	}
	for _, d := range descriptors {
		rec := records[d.File]
		if d.RecordSize != 0 && int(d.RecordSize) != len(rec) {
			t.Errorf("%s: descriptor record size %d, record is %d bytes", d.File, d.RecordSize, len(rec))
		}
		seen := 0
		for _, f := range d.Fields {
			typ, _, isArray := strings.Cut(f.Type, "[")
			if isArray && typ == "u8" {
				continue // reserved bytes and the label, checked below
			}
			v, ok := want[d.File][f.Name]
			if !ok {
				t.Errorf("%s: field %s not checked", d.File, f.Name)
				continue
			}
			seen++
			if got := read(rec[f.Offset:], typ); got != v {
				t.Errorf("%s: field %s at offset %d = %d, want %d", d.File, f.Name, f.Offset, got, v)
			}
		}
		if seen != len(want[d.File]) {
			t.Errorf("%s: %d fields described, %d expected", d.File, seen, len(want[d.File]))
		}
	}
	if got := string(records[OverviewFile][78:]); got != "periodic" {
		t.Errorf("overview label at 78 = %q", got)
	}
}

func asFormatError(t *testing.T, err error) *FormatError {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FormatError", err, err)
	}
	return fe
}

func TestBlockErrors(t *testing.T) {
	good := clockFileBytes(testClockSamples(6), 2) // blocks at 24, 128, 232
	blk := func(i int) int { return fileHeaderSize + i*(blockHeaderSize+2*clockRecordSize) }
	tests := []struct {
		name   string
		change func(b []byte) []byte
		off    int64
		msg    string
	}{
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, 0, "bad magic"},
		{"header crc", func(b []byte) []byte { b[13]++; return b }, 0, "file header checksum mismatch"},
		{"truncated header", func(b []byte) []byte { return b[:10] }, 0, "file header truncated (10 of 24 bytes)"},
		{"payload byte", func(b []byte) []byte { b[blk(1)+blockHeaderSize+7] ^= 1; return b }, int64(blk(1)), "block payload checksum mismatch"},
		{"block magic", func(b []byte) []byte { b[blk(2)+1] = 'x'; return b }, int64(blk(2)), "bad block magic"},
		{"block header crc", func(b []byte) []byte { b[blk(1)+8]++; return b }, int64(blk(1)), "block header checksum mismatch"},
		{"garbage tail", func(b []byte) []byte { return append(b, "junk"...) }, int64(len(good)), "bad block magic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.change(bytes.Clone(good))
			_, _, _, _, err := readClockSamples("dir/profile.clock", bytes.NewReader(b), int64(len(b)))
			fe := asFormatError(t, err)
			if fe.File != "dir/profile.clock" || fe.Offset != tt.off || !strings.Contains(fe.Msg, tt.msg) {
				t.Errorf("got %+v, want offset %d and %q", fe, tt.off, tt.msg)
			}
		})
	}
}

func TestHeaderChecks(t *testing.T) {
	withHeader := func(k recordKind, f func(h []byte)) []byte {
		b := appendFileHeader(nil, k)
		f(b)
		le.PutUint32(b[20:], checksum(b[:20]))
		return b
	}
	tests := []struct {
		name string
		b    []byte
		off  int64
		msg  string
	}{
		{"major", withHeader(kindClock, func(h []byte) { le.PutUint16(h[8:], 2) }), 8, fmt.Sprintf("format version 2.%d; this reader reads 1.x", formatMinor)},
		{"kind", appendFileHeader(nil, kindStacks), 12, "holds stacks records, want clock records"},
		{"short records", withHeader(kindClock, func(h []byte) { le.PutUint32(h[16:], 39) }), 16, "record size 39, want 40"},
	}
	for _, tt := range tests {
		_, _, _, _, err := readClockSamples("c", bytes.NewReader(tt.b), int64(len(tt.b)))
		fe := asFormatError(t, err)
		if fe.Offset != tt.off || fe.Msg != tt.msg {
			t.Errorf("%s: got %+v, want offset %d and %q", tt.name, fe, tt.off, tt.msg)
		}
	}
	_, _, err := readStacks("s", bytes.NewReader(withHeader(kindStacks, func(h []byte) { le.PutUint32(h[16:], 8) })), fileHeaderSize)
	if fe := asFormatError(t, err); fe.Msg != "record size 8, want 0" {
		t.Errorf("variable records with a size: %v", fe)
	}
}

func TestIncompleteLastBlock(t *testing.T) {
	samples := testClockSamples(6)
	good := clockFileBytes(samples, 2)
	last := len(good) - (blockHeaderSize + 2*clockRecordSize)
	for _, cut := range []int{1, 10, 30, 90} {
		b := good[:last+cut]
		got, _, _, warn, err := readClockSamples("profile.clock", bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if !reflect.DeepEqual(got, samples[:4]) {
			t.Errorf("cut %d: got %d samples, want the first 4", cut, len(got))
		}
		want := "profile.clock: last block at offset 232 is incomplete ("
		if cut < blockHeaderSize {
			want += strconv.Itoa(cut) + " of at least 24 bytes); ignored"
		} else {
			want += strconv.Itoa(cut) + " of 104 bytes); ignored"
		}
		if warn != want {
			t.Errorf("cut %d: warning %q, want %q", cut, warn, want)
		}
	}
	got, _, _, warn, err := readClockSamples("profile.clock", bytes.NewReader(nil), 0)
	if err != nil || len(got) != 0 || warn != "profile.clock: empty file (no header); no records" {
		t.Errorf("empty file: %v, %d samples, %q", err, len(got), warn)
	}
}

func TestBlockCountMismatch(t *testing.T) {
	b := clockFileBytes(testClockSamples(2), 2)
	le.PutUint32(b[fileHeaderSize+4:], 3)
	le.PutUint32(b[fileHeaderSize+20:], checksum(b[fileHeaderSize:fileHeaderSize+20]))
	_, _, _, _, err := readClockSamples("c", bytes.NewReader(b), int64(len(b)))
	if fe := asFormatError(t, err); fe.Offset != fileHeaderSize || fe.Msg != "block of 3 records of 40 bytes has a 80-byte payload" {
		t.Errorf("got %+v", fe)
	}
}

func TestStacksErrors(t *testing.T) {
	tests := []struct {
		name string
		recs [][]byte
		off  int64
		msg  string
	}{
		{"too many frames", [][]byte{le.AppendUint32(nil, 3), le.AppendUint64(nil, 1)}, 48, "stack record: 3 frames do not fit in the 8 bytes left in the block"},
		{"trailing bytes", [][]byte{append(appendStack(nil, Stack{1}), 1, 2)}, 60, "stack record: 2 bytes after the block's 1 records"},
		{"short count", [][]byte{{1, 2}}, 48, "stack record: 2 bytes left in the block, need 4 for the frame count"},
	}
	for _, tt := range tests {
		b := blockFile(kindStacks, tt.recs, 2)
		_, _, err := readStacks("s", bytes.NewReader(b), int64(len(b)))
		fe := asFormatError(t, err)
		if fe.Offset != tt.off || fe.Msg != tt.msg {
			t.Errorf("%s: got %+v, want offset %d and %q", tt.name, fe, tt.off, tt.msg)
		}
	}
}

func TestOverviewErrors(t *testing.T) {
	rec := appendOverview(nil, OverviewSample{Label: "start"})
	b := blockFile(kindOverview, [][]byte{rec[:60]}, 1)
	_, _, err := readOverview("o", bytes.NewReader(b), int64(len(b)))
	if fe := asFormatError(t, err); fe.Offset != 48 || fe.Msg != "overview record: 60 bytes left in the block, need 78" {
		t.Errorf("short record: %+v", fe)
	}
	b = blockFile(kindOverview, [][]byte{rec[:80]}, 1)
	_, _, err = readOverview("o", bytes.NewReader(b), int64(len(b)))
	if fe := asFormatError(t, err); fe.Offset != 48 || fe.Msg != "overview record: a 5-byte label does not fit in the 2 bytes left in the block" {
		t.Errorf("short label: %+v", fe)
	}
}

func TestCheckStackIDs(t *testing.T) {
	samples := testClockSamples(6) // stacks 0..4
	b := clockFileBytes(samples, 4)
	got, blocks, recSize, _, err := readClockSamples("c", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkStackIDs("c", clockTableOf(got), 0, blocks, recSize, 5); err != nil {
		t.Errorf("all in range: %v", err)
	}
	err = checkStackIDs("c", clockTableOf(got), 0, blocks, recSize, 4) // sample 4 has stack 4
	fe := asFormatError(t, err)
	wantOff := int64(fileHeaderSize + 2*blockHeaderSize + 4*clockRecordSize)
	if fe.Offset != wantOff || fe.Msg != "sample 4 refers to stack 4, but the stack table has only stacks 0 to 3" {
		t.Errorf("got %+v, want offset %d", fe, wantOff)
	}
}

func TestRecordKindString(t *testing.T) {
	for k, want := range map[recordKind]string{kindClock: "clock", kindStacks: "stacks", kindOverview: "overview", kindArchive: "archive", 9: "kind 9"} {
		if got := k.String(); got != want {
			t.Errorf("%d: %q, want %q", k, got, want)
		}
	}
}

// fuzzSeeds adds valid files and damaged versions of them.
func fuzzSeeds(f *testing.F, files ...[]byte) {
	for _, b := range files {
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(b[:len(b)/2])
		c := bytes.Clone(b)
		c[len(c)-1] ^= 0xff
		f.Add(c)
	}
	f.Add([]byte{})
	f.Add([]byte(fileMagic))
}

func FuzzReadClock(f *testing.F) {
	bad := testClockSamples(3)
	bad[1].Period = -1
	bad[2].Period = 1 << 62
	fuzzSeeds(f, clockFileBytes(testClockSamples(5), 2), appendFileHeader(nil, kindClock), clockFileBytes(bad, 3),
		claimBlock(kindClock, 0xffffff00), claimBlock(kindClock, 65600))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, blocks, recSize, _, err := readClockSamples("c", bytes.NewReader(b), int64(len(b)))
		if err != nil {
			asFormatError(t, err)
			return
		}
		_ = checkStackIDs("c", clockTableOf(got), 0, blocks, recSize, 3)
		// What was read, written again, reads back the same.
		again := clockFileBytes(got, 7)
		if len(got) == 0 {
			again = appendFileHeader(nil, kindClock)
		}
		got2, _, _, warn, err := readClockSamples("c", bytes.NewReader(again), int64(len(again)))
		if err != nil || warn != "" || len(got2) != len(got) || (len(got) > 0 && !reflect.DeepEqual(got, got2)) {
			t.Fatalf("round trip: %v %q", err, warn)
		}
	})
}

func FuzzReadStacks(f *testing.F) {
	var recs [][]byte
	for _, s := range []Stack{{1, 2, 3}, {KernelBase}, {}} {
		recs = append(recs, appendStack(nil, s))
	}
	fuzzSeeds(f, blockFile(kindStacks, recs, 2), claimBlock(kindStacks, 0xffffff00),
		blockFile(kindStacks, [][]byte{le.AppendUint32(nil, 0xffffffff)}, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := readStacks("s", bytes.NewReader(b), int64(len(b)))
		if err != nil {
			asFormatError(t, err)
			return
		}
		if len(got) == 0 || len(got[0]) != 0 {
			t.Fatalf("stack 0 missing or not empty: %v", got)
		}
	})
}

func FuzzReadOverview(f *testing.F) {
	var recs [][]byte
	for _, o := range testOverview() {
		recs = append(recs, appendOverview(nil, o))
	}
	neg := testOverview()[0]
	neg.RSSBytes, neg.NumThreads = -1, -1
	fuzzSeeds(f, blockFile(kindOverview, recs, 2), blockFile(kindOverview, [][]byte{appendOverview(nil, neg)}, 1),
		claimBlock(kindOverview, 0xffffff00))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := readOverview("o", bytes.NewReader(b), int64(len(b)))
		if err != nil {
			asFormatError(t, err)
			return
		}
		var recs [][]byte
		for _, o := range got {
			recs = append(recs, appendOverview(nil, o))
		}
		again := blockFile(kindOverview, recs, 3)
		got2, _, err := readOverview("o", bytes.NewReader(again), int64(len(again)))
		if err != nil || !reflect.DeepEqual(got, got2) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// claimBlock is the header of a file of records of kind k and of a block that claims a payload of
// plen bytes, with no payload.
func claimBlock(k recordKind, plen uint32) []byte {
	b := appendFileHeader(nil, k)
	blk := make([]byte, blockHeaderSize)
	copy(blk, blockMagic)
	le.PutUint32(blk[4:], 1)
	le.PutUint32(blk[8:], plen)
	le.PutUint32(blk[20:], checksum(blk[:20]))
	return append(b, blk...)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A data file made sparse, whose sizes claim gigabytes that are not there, is an error before
// anything is allocated from those sizes: before, a block claiming 4 GB made the reader allocate
// 4 GB before the checksum error, and a 4 GB clock file (one block, then a hole) 4.8 GB of samples.
func TestSparseFileClaims(t *testing.T) {
	const huge = 0xffffff00
	claim := func(k recordKind) []byte { return claimBlock(k, huge) }
	tests := []struct {
		name, file string
		b          []byte
		size       int64 // the file is extended to this size with a hole
		off        int64
		msg        string
	}{
		{"stacks block", StacksFile, claim(kindStacks), fileHeaderSize + blockHeaderSize + huge, fileHeaderSize,
			"block payload of 4294967040 bytes: a block of stacks records holds at most 8454147 bytes"},
		{"overview block", OverviewFile, claim(kindOverview), fileHeaderSize + blockHeaderSize + huge, fileHeaderSize,
			"block payload of 4294967040 bytes: a block of overview records holds at most 131148 bytes"},
		{"clock file", ClockFile, clockFileBytes(testClockSamples(2), 2), 4 << 30, fileHeaderSize + blockHeaderSize + 2*clockRecordSize,
			`bad block magic "\x00\x00\x00\x00", want "ERBK"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := writeExperiment(t)
			file := filepath.Join(dir, tt.file)
			if err := os.WriteFile(file, tt.b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(file, tt.size); err != nil {
				t.Skipf("cannot make a sparse file of %d bytes here: %v", tt.size, err)
			}
			var err error
			n := allocated(func() { _, err = Open(dir) })
			fe := asFormatError(t, err)
			if fe.File != file || fe.Offset != tt.off || !strings.Contains(fe.Msg, tt.msg) {
				t.Errorf("got %q, want %s, offset %d, %q", err, file, tt.off, tt.msg)
			}
			if n > 16<<20 {
				t.Errorf("Open allocated %d bytes for a file of %d bytes of data; want at most 16 MiB", n, len(tt.b))
			}
		})
	}
}

// A clock sample stands for 0 to 60 s of CPU time, and overview counters are not negative: other
// values are damage, reported at the record (before, they were read, and er print's sums of
// periods of 2^62 ns wrapped around).
func TestRecordRanges(t *testing.T) {
	samples := testClockSamples(4)
	for _, p := range []int64{-1, 60_000_000_001, 1 << 62} {
		samples[2].Period = p
		b := clockFileBytes(samples, 3)
		_, _, _, _, err := readClockSamples("c", bytes.NewReader(b), int64(len(b)))
		if err == nil {
			t.Errorf("period %d: no error", p)
			continue
		}
		fe := asFormatError(t, err)
		want := fmt.Sprintf("sample 3 has a period of %d ns: a clock sample stands for 0 to 60000000000 ns", p)
		if fe.Offset != fileHeaderSize+blockHeaderSize+2*clockRecordSize || fe.Msg != want {
			t.Errorf("period %d: got %+v, want offset %d and %q", p, fe, fileHeaderSize+blockHeaderSize+2*clockRecordSize, want)
		}
	}
	samples[2].Period = 60_000_000_000
	b := clockFileBytes(samples, 3)
	if got, _, _, _, err := readClockSamples("c", bytes.NewReader(b), int64(len(b))); err != nil || len(got) != 4 {
		t.Errorf("a period of 60 s: %v, %d samples", err, len(got))
	}

	ov := testOverview()
	ov[1].MajFlt = -3
	var recs [][]byte
	for _, o := range ov {
		recs = append(recs, appendOverview(nil, o))
	}
	b = blockFile(kindOverview, recs, 5)
	_, _, err := readOverview("o", bytes.NewReader(b), int64(len(b)))
	if err == nil {
		t.Fatal("overview with -3 major faults: no error")
	}
	fe := asFormatError(t, err)
	at := int64(fileHeaderSize + blockHeaderSize + len(recs[0]))
	if want := "overview record 2: majflt -3: want 0 to 4611686018427387904"; fe.Offset != at || fe.Msg != want {
		t.Errorf("got %+v, want offset %d and %q", fe, at, want)
	}
}

func FuzzReadHWC(f *testing.F) {
	rec := func(ss ...CounterSample) [][]byte {
		var out [][]byte
		for _, s := range ss {
			out = append(out, appendHWC(nil, s))
		}
		return out
	}
	good := rec(CounterSample{Time: 1, Value: 5, Stack: 1}, CounterSample{Time: 2, Value: 7, Counter: 1, Addr: 0x1000, Stack: 2},
		CounterSample{Time: 3, Value: 1, Counter: 1})
	bad := rec(CounterSample{Value: -1}, CounterSample{Counter: 9}, CounterSample{Stack: 99})
	fuzzSeeds(f, blockFile(kindHWC, good, 2), appendFileHeader(nil, kindHWC), blockFile(kindHWC, bad, 1),
		claimBlock(kindHWC, 0xffffff00))
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, _, err := readHWC("h", bytes.NewReader(b), int64(len(b)), 2, 3)
		if err != nil {
			asFormatError(t, err)
			return
		}
		got := counterSamples(tb)
		for _, s := range got {
			if s.Counter >= 2 || s.Stack >= 3 || s.Value < 0 {
				t.Fatalf("read a sample out of range: %+v", s)
			}
		}
		// What was read, written again, reads back the same.
		again := blockFile(kindHWC, rec(got...), 3)
		tb2, warn, err := readHWC("h", bytes.NewReader(again), int64(len(again)), 2, 3)
		got2 := counterSamples(tb2)
		if err != nil || warn != "" || len(got2) != len(got) || (len(got) > 0 && !reflect.DeepEqual(got, got2)) {
			t.Fatalf("round trip: %v %q", err, warn)
		}
	})
}

// counterSamples are the rows of a table of CounterSchema as samples.
func counterSamples(t *events.Table) []CounterSample {
	d := &Data{Tables: map[string]*events.Table{CounterSchema.Name: t}}
	var out []CounterSample
	for i := range t.Len() {
		out = append(out, d.CounterAt(i))
	}
	return out
}

// clockTableOf is a clock table of samples.
func clockTableOf(samples []ClockSample) *events.Table {
	d := &Data{}
	d.AppendClock(samples...)
	return d.clockTable()
}

// readClockSamples is readClock into a table of its own, its rows as samples.
func readClockSamples(name string, r io.ReaderAt, size int64) ([]ClockSample, []clockBlock, uint32, string, error) {
	t := events.New(ClockSchema)
	blocks, recSize, warn, err := readClock(name, r, size, t)
	if err != nil {
		return nil, nil, 0, "", err
	}
	d := &Data{Tables: map[string]*events.Table{ClockSchema.Name: t}}
	var samples []ClockSample
	if t.Len() > 0 {
		samples = d.ClockSamples()
	}
	return samples, blocks, recSize, warn, nil
}
