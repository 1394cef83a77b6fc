package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"er/internal/perfabi"
)

// The compressed fixtures were recorded with perf 6.1 on x86-64 (Linux 6.18) from a busy loop
// (leaf called by main, 200 million iterations), with ring buffers of 2 pages so that perf record
// reads them 22 times and writes a COMPRESSED record each time (two where a read wraps around):
//
//	zstd.data:     perf record -z -m 2 -e cpu-clock -g -F 4000 -- ./busy
//	zstdpipe.data: perf record -z -m 2 -o - -e cpu-clock -g -F 4000 -- ./busy > zstdpipe.data
//
// perf record flushes its zstd stream after each read: the file is one zstd frame, each COMPRESSED
// record a run of its blocks, and a record that wraps around the ring buffer begins in one
// COMPRESSED record's data and ends in the next one's (every 8 KiB of data: 10 records in
// zstd.data).

// zstdCounts are the records of zstd.data as perf report -D (and --stats) counts them.
var zstdCounts = map[uint32]int{perfabi.RecordMmap: 1, perfabi.RecordComm: 2, perfabi.RecordExit: 1, perfabi.RecordSample: 1370, perfabi.RecordMmap2: 4,
	RecordFinishedRound: 24, RecordIDIndex: 1, RecordThreadMap: 1, RecordCPUMap: 1, RecordEventUpdate: 2, RecordFinishedInit: 1}

// zstdPipeCounts are those of zstdpipe.data.
var zstdPipeCounts = map[uint32]int{perfabi.RecordMmap: 1, perfabi.RecordComm: 2, perfabi.RecordExit: 1, perfabi.RecordSample: 1399, perfabi.RecordMmap2: 4,
	RecordFinishedRound: 26, RecordIDIndex: 1, RecordThreadMap: 1, RecordCPUMap: 1, RecordEventUpdate: 3, RecordFinishedInit: 1,
	RecordHeaderAttr: 1, RecordHeaderFeature: 20}

func checkCounts(t *testing.T, got, want map[uint32]int) {
	t.Helper()
	for typ := range got {
		if _, ok := want[typ]; !ok {
			want[typ] = 0
		}
	}
	for typ, n := range want {
		if got[typ] != n {
			t.Errorf("%d %s records, want %d", got[typ], RecordName(typ), n)
		}
	}
}

func TestCompressedFile(t *testing.T) {
	f := open(t, "zstd.data")
	if want := (Compression{Type: 1, Level: 1, Ratio: 10, MmapLen: 12288}); f.Compression != want {
		t.Errorf("COMPRESSED feature %+v, want %+v", f.Compression, want)
	}
	recs := all(t, f.Records())
	checkCounts(t, countTypes(recs), zstdCounts)
	// The records decompressed are in the place of the COMPRESSED records: the first is the COMM of
	// the exec, after the 8 records perf wrote before it, then the mappings, then the samples.
	c, ok := recs[8].(*perfabi.Comm)
	if !ok || c.Comm != "busy" || !c.Exec || c.Pid != 6491 || c.Offset != 0x278 {
		t.Fatalf("record 8: %T %+v", recs[8], recs[8])
	}
	// 87021629602646 0x278 [0x48]: PERF_RECORD_SAMPLE(IP, 0x2): 6491/6491: 0x7f50d5ddf62a period: 250000
	var first *perfabi.Sample
	for _, r := range recs {
		if s, ok := r.(*perfabi.Sample); ok {
			first = s
			break
		}
	}
	if first.Time != 87021629602646 || first.Size != 0x48 || first.Offset != 0x278 || first.Tid != 6491 ||
		first.IP != 0x7f50d5ddf62a || first.Period != 250000 || !slices.Equal(first.Callchain, []uint64{0xfffffffffffffe00, 0x7f50d5ddf62a, 0}) {
		t.Errorf("first sample %+v, callchain %x", first, first.Callchain)
	}
	if last := recs[len(recs)-1]; last.Head().Type != RecordFinishedRound {
		t.Errorf("last record %s", RecordName(last.Head().Type))
	}
}

func TestCompressedPipe(t *testing.T) {
	b, err := os.ReadFile("testdata/zstdpipe.data")
	if err != nil {
		t.Fatal(err)
	}
	f, rd, err := NewPipe(bytes.NewReader(b), "zstdpipe.data")
	if err != nil {
		t.Fatal(err)
	}
	recs := all(t, rd)
	checkCounts(t, countTypes(recs), zstdPipeCounts)
	if f.Compression.Type != 1 || f.Compression.MmapLen != 12288 {
		t.Errorf("COMPRESSED feature %+v", f.Compression)
	}
	var samples, period uint64
	for _, r := range recs {
		if s, ok := r.(*perfabi.Sample); ok && f.AttrOf(s).Name == "cpu-clock" {
			samples++
			period += s.Period
		}
	}
	if samples != 1399 || period != 1399*250000 {
		t.Errorf("%d cpu-clock samples, period %d", samples, period)
	}
}

// perfDump is what perf report -D prints of each record: its time, offset and type, in the order it
// delivers them (FINISHED_ROUND left out: perf prints it where it reads it, not in time order).
func perfDump(t *testing.T, file string, pipe bool) (seq []string, counts map[uint32]int) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed")
	}
	cmd := exec.Command("perf", "report", "-D", "-i", file)
	if pipe {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("perf", "report", "-D", "-i", "-")
		cmd.Stdin = bytes.NewReader(b)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf report -D -i %s: %v", file, err)
	}
	byName := map[string]uint32{}
	for typ := uint32(1); typ < 100; typ++ {
		byName[RecordName(typ)] = typ
	}
	byName["CPU_MAP"], byName["EVENT_UPDATE"], byName["FINISHED_INIT"], byName["THREAD_MAP"] = RecordCPUMap, RecordEventUpdate, RecordFinishedInit, RecordThreadMap
	byName["FEATURE"], byName["ATTR"] = RecordHeaderFeature, RecordHeaderAttr
	// "TIME OFFSET [SIZE]: PERF_RECORD_TYPE ...", "-1 -1 0 [SIZE]: PERF_RECORD_ATTR" for an attribute.
	line := regexp.MustCompile(`^(?:-1 -1 |(\d+) )(0x[0-9a-f]+|0) \[0x[0-9a-f]+\]: PERF_RECORD_([A-Z0-9_]+)`)
	counts = map[uint32]int{}
	for _, l := range strings.Split(string(out), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		typ, ok := byName[m[3]]
		if !ok {
			t.Fatalf("perf report -D: record type %s", m[3])
		}
		counts[typ]++
		if typ != RecordFinishedRound && m[1] != "0" && m[1] != "" {
			off, err := strconv.ParseInt(m[2], 0, 64)
			if err != nil {
				t.Fatal(err)
			}
			if pipe {
				off += pipeHeaderSize // perf counts a stream's offsets from after its header
			}
			seq = append(seq, fmt.Sprintf("%s %#x %s", m[1], off, m[3]))
		}
	}
	return seq, counts
}

// TestCompressedAsPerf: the records of the fixtures, their counts and, in time order, their times,
// offsets and types, are those perf report -D shows.
func TestCompressedAsPerf(t *testing.T) {
	for _, name := range []string{"zstd.data", "zstdpipe.data"} {
		t.Run(name, func(t *testing.T) {
			pipe := name == "zstdpipe.data"
			seq, counts := perfDump(t, "testdata/"+name, pipe)
			var rd *Reader
			if !pipe {
				rd = open(t, name).Records()
			} else {
				b, err := os.ReadFile("testdata/" + name)
				if err != nil {
					t.Fatal(err)
				}
				if _, rd, err = NewPipe(bytes.NewReader(b), name); err != nil {
					t.Fatal(err)
				}
			}
			got := map[uint32]int{}
			var gotSeq []string
			err := Ordered(rd, func(r perfabi.Record) error {
				h := r.Head()
				got[h.Type]++
				if tm := perfabi.Time(r); h.Type != RecordFinishedRound && tm != 0 {
					gotSeq = append(gotSeq, fmt.Sprintf("%d %#x %s", tm, h.Offset, RecordName(h.Type)))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, got, counts)
			if len(seq) < 1000 || strings.Join(seq, "\n") != strings.Join(gotSeq, "\n") {
				t.Errorf("%d records in time order; perf report -D shows %d, or others", len(gotSeq), len(seq))
				for i := range min(len(seq), len(gotSeq)) {
					if seq[i] != gotSeq[i] {
						t.Fatalf("record %d: %s; perf report -D: %s", i, gotSeq[i], seq[i])
					}
				}
			}
		})
	}
}

// zrecords builds the records of a stream to compress, and compresses them as perf record does: a
// zstd stream flushed at the end of each COMPRESSED record.
type zrecords struct {
	s   *stream
	raw []byte // records not compressed yet
	enc *zstd.Encoder
	out bytes.Buffer
}

func newZ(t testing.TB, s *stream, opts ...zstd.EOption) *zrecords {
	z := &zrecords{s: s}
	enc, err := zstd.NewWriter(&z.out, append([]zstd.EOption{zstd.WithEncoderConcurrency(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	z.enc = enc
	return z
}

// sample adds a sample of the attr of TestCompressedStream: ip, pid/tid, time.
func (z *zrecords) sample(ip, tm uint64) {
	z.raw = binary.LittleEndian.AppendUint32(z.raw, perfabi.RecordSample)
	z.raw = binary.LittleEndian.AppendUint16(z.raw, perfabi.CPUModeUser)
	z.raw = binary.LittleEndian.AppendUint16(z.raw, 32)
	for _, w := range []uint64{ip, 7 | 7<<32, tm} {
		z.raw = binary.LittleEndian.AppendUint64(z.raw, w)
	}
}

// flush compresses the first n bytes of the records added (all of them if n < 0) and returns the
// compressed bytes.
func (z *zrecords) flush(t testing.TB, n int) []byte {
	if n < 0 {
		n = len(z.raw)
	}
	if _, err := z.enc.Write(z.raw[:n]); err != nil {
		t.Fatal(err)
	}
	if err := z.enc.Flush(); err != nil {
		t.Fatal(err)
	}
	z.raw = z.raw[n:]
	b := bytes.Clone(z.out.Bytes())
	z.out.Reset()
	return b
}

// compressed appends a COMPRESSED record, or a COMPRESSED2 one (its data size, then padding).
func (s *stream) compressed(payload []byte, v2 bool) {
	typ, size := RecordCompressed, 8+len(payload)
	if v2 {
		typ, size = RecordCompressed2, (16+len(payload)+7)&^7
	}
	s.b = binary.LittleEndian.AppendUint32(s.b, typ)
	s.b = binary.LittleEndian.AppendUint16(s.b, 0)
	s.b = binary.LittleEndian.AppendUint16(s.b, uint16(size))
	if v2 {
		s.b = binary.LittleEndian.AppendUint64(s.b, uint64(len(payload)))
	}
	s.b = append(s.b, payload...)
	if v2 {
		s.b = append(s.b, make([]byte, size-16-len(payload))...)
	}
}

// feature appends a HEADER_FEATURE record of the COMPRESSED feature.
func (s *stream) compressionFeature(typ, mmapLen uint32) {
	s.record(RecordHeaderFeature, 0, FeatCompressed, uint64(typ)<<32, 1, uint64(mmapLen))
}

func compressedStream(t testing.TB) (*stream, *zrecords) {
	s := newStream()
	s.attr(TypeSoftware, 0, perfabi.SampleIP|perfabi.SampleTID|perfabi.SampleTime, 0, 0, 0, 0, 0)
	return s, newZ(t, s)
}

// describe lists the records of a stream: samples as ip@time, the others by type.
func describe(t *testing.T, s *stream) (string, error) {
	_, rd := s.reader(t)
	var got []string
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return strings.Join(got, " "), nil
		}
		if err != nil {
			return strings.Join(got, " "), err
		}
		switch r := r.(type) {
		case *perfabi.Sample:
			got = append(got, fmt.Sprintf("%#x@%d", r.IP, r.Time))
		default:
			got = append(got, RecordName(r.Head().Type))
		}
	}
}

// TestCompressedStream: the records of COMPRESSED and COMPRESSED2 records come in their place, a
// record may be split between two of them, and one of their zstd blocks too.
func TestCompressedStream(t *testing.T) {
	s, z := compressedStream(t)
	z.sample(0x1, 10)
	z.sample(0x2, 20)
	s.compressed(z.flush(t, 32+10), false) // sample 1 and 10 bytes of sample 2
	s.record(RecordFinishedRound, 0)
	z.sample(0x3, 30)
	second := len(s.b)
	s.compressed(z.flush(t, -1), true) // the rest of sample 2, sample 3
	z.sample(0x4, 40)
	s.record(perfabi.RecordSample, perfabi.CPUModeUser, 0x5, 7|7<<32, 50)
	for i := 0; i < 3000; i++ { // 96000 bytes, a block of 128 KiB, whose compressed data two records hold
		z.sample(0x6, 60+uint64(i))
	}
	b := z.flush(t, -1)
	s.compressed(b[:len(b)/2], false)
	s.compressed(b[len(b)/2:], true)
	got, err := describe(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want := "HEADER_ATTR 0x1@10 FINISHED_ROUND 0x2@20 0x3@30 0x5@50 0x4@40 " + strings.TrimSpace(strings.Repeat("0x6@ ", 3000))
	if got = regexp.MustCompile(`0x6@\d+`).ReplaceAllString(got, "0x6@"); got != want {
		t.Errorf("records\n%.200s\nwant\n%.200s", got, want)
	}
	// Sample 2 ends in the second COMPRESSED record: it has that record's offset.
	_, rd := s.reader(t)
	for {
		r, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if smp, ok := r.(*perfabi.Sample); ok && smp.IP == 2 {
			if want := int64(second); smp.Offset != want {
				t.Errorf("sample 2 at offset %#x, want %#x", smp.Offset, want)
			}
			break
		}
	}
}

// TestCompressedFrames: COMPRESSED records that each hold whole zstd frames, one of them empty (a
// frame ending in an empty block), as other writers than perf record may write them.
func TestCompressedFrames(t *testing.T) {
	s, z := compressedStream(t)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	z.sample(0x1, 10)
	s.compressed(enc.EncodeAll(z.raw, nil), false)
	s.compressed(enc.EncodeAll(nil, nil), false)
	s.record(RecordFinishedRound, 0)
	s.compressed(enc.EncodeAll(nil, nil), false)
	s.compressed(enc.EncodeAll(z.raw, nil), false)
	got, err := describe(t, s)
	if want := "HEADER_ATTR 0x1@10 FINISHED_ROUND 0x1@10"; got != want || err != nil {
		t.Errorf("records %q (%v), want %q", got, err, want)
	}
}

func TestCompressedDamaged(t *testing.T) {
	tests := []struct {
		name  string
		build func(*stream, *zrecords)
		want  string
	}{
		{"corrupt", func(s *stream, z *zrecords) {
			z.sample(0x1, 10)
			z.sample(0x2, 20)
			b := z.flush(t, -1)
			for i := 8; i < len(b); i++ {
				b[i] ^= 0x5a
			}
			s.compressed(b, false)
		}, "offset 0x98: COMPRESSED record: its zstd data is damaged at or before byte"},
		{"not zstd", func(s *stream, z *zrecords) { s.compressed([]byte("hello, world"), false) }, "offset 0x98: COMPRESSED record: its zstd data is damaged"},
		{"short record", func(s *stream, z *zrecords) {
			z.sample(0x1, 10)
			z.raw = append(z.raw, 9, 0, 0, 0, 0, 0, 4, 0)
			s.compressed(z.flush(t, -1), false)
		}, "the record at byte 32 of the data decompressed from the COMPRESSED records (this one last) says it has 4 bytes"},
		{"bad sample", func(s *stream, z *zrecords) {
			z.raw = append(z.raw, 9, 0, 0, 0, 0, 0, 16, 0, 1, 2, 3, 4, 5, 6, 7, 8)
			s.compressed(z.flush(t, -1), false)
		}, "offset 0x98: SAMPLE record of 16 bytes at byte 0 of the data decompressed from the COMPRESSED records (this one last): pid needs 4 bytes at byte 16 of its 16"},
		{"data size", func(s *stream, z *zrecords) { s.record(RecordCompressed2, 0, 100, 0) }, "COMPRESSED record of 24 bytes: its data size 100 is more than the 8 bytes after its header"},
		{"method", func(s *stream, z *zrecords) {
			s.compressionFeature(2, 4096)
			s.compressed(z.flush(t, -1), false)
		}, "the COMPRESSED feature says the data was compressed with method 2, not zstd"},
		{"too much", func(s *stream, z *zrecords) {
			s.compressionFeature(compressZstd, 4096)
			for i := 0; i < 10000; i++ {
				z.sample(0x6, 60)
			}
			s.compressed(z.flush(t, -1), false)
		}, "its data decompresses to more than 139264 bytes"},
		{"window", func(s *stream, z *zrecords) {
			// A frame header that asks for a window of 1 GiB.
			s.compressed([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa0, 1, 0, 0}, false)
		}, "its zstd data is damaged at or before byte 6 of its 9: window size exceeded"},
	}
	for _, tc := range tests {
		s, z := compressedStream(t)
		tc.build(s, z)
		_, err := describe(t, s)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "synthetic.data: offset ") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %T is not a *FormatError", tc.name, err)
		}
	}
}

// TestCompressedCut: a stream in pipe mode cut short inside the data of its COMPRESSED records
// gives the records decompressed before the cut, then io.EOF; Cut says what was lost.
func TestCompressedCut(t *testing.T) {
	tests := []struct {
		name    string
		build   func(*stream, *zrecords)
		records int
		want    Cut
	}{
		// The decompressed data ends 20 bytes into the second sample: the stream was cut after a
		// COMPRESSED record that ends inside a record (perf record writes the rest in the next).
		{"decompressed", func(s *stream, z *zrecords) {
			z.sample(0x1, 10)
			z.sample(0x2, 20)
			s.compressed(z.flush(t, 32+20), false)
		}, 2, Cut{Pending: 20, PendingAt: 32, Records: 2}},
		// A COMPRESSED record cut short, whose data ends a block that the one before begins: the
		// block is lost (its samples), the record before it (the HEADER_ATTR) is read.
		{"compressed", func(s *stream, z *zrecords) {
			z.sample(0x1, 10)
			for i := 0; i < 3000; i++ {
				z.sample(0x6, 60+uint64(i))
			}
			b := z.flush(t, -1)
			s.compressed(b[:len(b)/2], false)
			s.compressed(b[len(b)/2:], false)
			s.b = s.b[:len(s.b)-10]
		}, 1, Cut{Offset: -1, Type: RecordCompressed, Have: -1, Size: -1, Records: 1}},
		{"after a record", func(s *stream, z *zrecords) {
			z.sample(0x1, 10)
			s.compressed(z.flush(t, -1), true)
			s.b = append(s.b, 81, 0, 0, 0, 0, 0, 40, 0)
		}, 2, Cut{Offset: 0xd8, Type: RecordCompressed, Have: 8, Size: 40, Records: 2}},
	}
	for _, tc := range tests {
		s, z := compressedStream(t)
		tc.build(s, z)
		_, rd := s.reader(t)
		n, err := count(rd)
		c := rd.Cut()
		if c != nil && tc.want.Offset < 0 { // offsets and sizes of the record cut: of the last COMPRESSED record
			tc.want.Offset, tc.want.Have, tc.want.Size = c.Offset, int64(len(s.b))-c.Offset, c.Size
		}
		if err != io.EOF || n != tc.records || c == nil || *c != tc.want {
			t.Errorf("%s: %v after %d records, cut %+v; want EOF after %d, cut %+v", tc.name, err, n, c, tc.records, tc.want)
		}
		if c != nil {
			t.Logf("%s: %v", tc.name, c)
		}
	}
}

// TestRecordedCompressed reads a file perf records now with -z, and counts its samples as perf
// report -D does.
func TestRecordedCompressed(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed")
	}
	out := t.TempDir() + "/perf.data"
	if b, err := exec.Command("perf", "record", "-q", "-z", "-m", "2", "-o", out, "-e", "task-clock", "-g", "-F", "4000", "--", "sh", "-c", "i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done").CombinedOutput(); err != nil {
		t.Skipf("perf record -z does not work here: %v\n%s", err, b)
	}
	_, want := perfDump(t, out, false)
	f, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := countTypes(all(t, f.Records()))
	checkCounts(t, got, want)
	t.Logf("records by type %v (%s samples)", got, strconv.Itoa(got[perfabi.RecordSample]))
}

// manyRecords is a stream whose COMPRESSED records decompress to mib MiB of records of size bytes
// each (perf's own type 100, which the reader skips), the data of each COMPRESSED record at most
// perRecord bytes decompressed: the hostile file of issue 27's item 5, which had a block's records
// read one after another by moving the rest of the block to its front. With noise n > 0, every
// n-th record has a random misc field, so that the data compresses less.
func manyRecords(t testing.TB, mib, size, perRecord, noise int) *stream {
	s, z := compressedStream(t)
	rec := make([]byte, size)
	binary.LittleEndian.PutUint32(rec, 100)
	binary.LittleEndian.PutUint16(rec[6:], uint16(size))
	rnd := rand.New(rand.NewPCG(1, 2))
	total := mib << 20
	for n, i := 0, 0; n < total; n += perRecord {
		for range min(perRecord, total-n) / size {
			binary.LittleEndian.PutUint16(rec[4:], 0)
			if i++; noise > 0 && i%noise == 0 {
				binary.LittleEndian.PutUint16(rec[4:], uint16(rnd.Uint32()))
			}
			z.raw = append(z.raw, rec...)
		}
		b := z.flush(t, -1)
		for len(b) > 0 { // a COMPRESSED record holds at most 64 KiB
			k := min(len(b), maxRecord-16)
			s.compressed(b[:k], false)
			b = b[k:]
		}
	}
	return s
}

// BenchmarkCompressedRecords reads 4 MiB of 8-byte records decompressed from COMPRESSED records and
// prints the seconds it takes per MiB of decompressed data (s/MiB). Each record has a random misc
// field, so that the data is within the bound on records per compressed byte.
func BenchmarkCompressedRecords(b *testing.B) {
	const mib = 4
	s := manyRecords(b, mib, 8, 1<<20, 1)
	b.SetBytes(mib << 20)
	b.ResetTimer()
	for b.Loop() {
		_, rd, err := NewPipe(bytes.NewReader(s.b), "many.data")
		if err != nil {
			b.Fatal(err)
		}
		n, err := count(rd)
		if err != io.EOF {
			b.Fatal(err)
		}
		if n != mib<<20/8+1 {
			b.Fatalf("%d records, want %d", n, mib<<20/8+1)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/mib, "s/MiB")
}

// TestCompressedLinear: the records of a decompressed block are read by offset: what is moved in
// memory is at most the part of a record that each block leaves for the next (issue 27, item 5:
// the rest of the block was moved to its front after each record, 64 KiB a record on average for
// 8-byte records, 0.58 s per MiB).
func TestCompressedLinear(t *testing.T) {
	const size = 24 // 131072 bytes a block: 5461 records and 8 bytes of the next
	s := manyRecords(t, 1, size, 1<<20, 0)
	_, rd := s.reader(t)
	n, err := count(rd)
	if err != io.EOF {
		t.Fatal(err)
	}
	z := rd.z
	if want := 1<<20/size + 1; n != want || z.outTotal != 1<<20/size*size {
		t.Fatalf("%d records of %d bytes decompressed, want %d of %d", n, z.outTotal, want, 1<<20/size*size)
	}
	if z.moved > z.blocks*(size-1) {
		t.Errorf("%d bytes moved to read %d bytes of %d-byte records from %d blocks: more than a record's part per block (%d)",
			z.moved, z.outTotal, size, z.blocks, z.blocks*(size-1))
	}
	t.Logf("%d bytes moved, %d blocks", z.moved, z.blocks)
}

// TestCompressedBounds: the data decompressed from a file's COMPRESSED records is bounded in all,
// to maxRatio bytes and maxRecordsPerByte records per compressed byte (and the slacks).
func TestCompressedBounds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mib, size int
		noise     int
		want      string
	}{
		{"records", 1, 8, 64, " records (4 for each of their "},
		{"bytes", 8, 65528, 0, " bytes (4096 for each of their "},
	} {
		s := manyRecords(t, tc.mib, tc.size, 1<<20, tc.noise)
		_, err := describe(t, s)
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "made to exhaust its reader") {
			t.Errorf("%s: %d MiB of %d-byte records in %d bytes: %v, want an error with %q", tc.name, tc.mib, tc.size, len(s.b), err, tc.want)
		}
		t.Logf("%s: %d bytes: %v", tc.name, len(s.b), err)
	}
}
