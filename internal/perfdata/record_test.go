package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"er/internal/perfabi"
)

// all reads every record of rd.
func all(t *testing.T, rd *Reader) []perfabi.Record {
	t.Helper()
	var out []perfabi.Record
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
}

// count reads the records of rd up to the first error (io.EOF at the end) and returns how many.
func count(rd *Reader) (int, error) {
	for n := 0; ; n++ {
		if _, err := rd.Next(); err != nil {
			return n, err
		}
	}
}

func countTypes(recs []perfabi.Record) map[uint32]int {
	m := map[uint32]int{}
	for _, r := range recs {
		m[r.Head().Type]++
	}
	return m
}

func TestRecordsFP(t *testing.T) {
	f := open(t, "fp.data")
	recs := all(t, f.Records())
	// As perf report -D counts them.
	want := map[uint32]int{perfabi.RecordComm: 2, RecordCPUMap: 1, RecordEventUpdate: 2, perfabi.RecordExit: 1, RecordFinishedInit: 1,
		RecordFinishedRound: 1, RecordIDIndex: 1, perfabi.RecordMmap: 1, perfabi.RecordMmap2: 4, perfabi.RecordSample: 20, RecordThreadMap: 1}
	got := countTypes(recs)
	for typ, n := range want {
		if got[typ] != n {
			t.Errorf("%d %s records, want %d", got[typ], RecordName(typ), n)
		}
	}
	byEvent := map[string]int{}
	var first *perfabi.Sample
	for _, r := range recs {
		if s, ok := r.(*perfabi.Sample); ok {
			byEvent[f.AttrOf(s).Name]++
			if first == nil {
				first = s
			}
		}
	}
	if byEvent["cpu-clock"] != 15 || byEvent["page-faults"] != 5 {
		t.Errorf("samples by event %v, want cpu-clock 15 and page-faults 5", byEvent)
	}
	// 85340190519436 0x408 [0x88]: PERF_RECORD_SAMPLE(IP, 0x1): 21398/21398: 0xffffffff817554ea period: 1
	wantCC := []uint64{0xffffffffffffff80, 0xffffffff817554ea, 0xffffffff81755b8a, 0xffffffff816c599f, 0xffffffff816c7016,
		0xffffffff816c8064, 0xffffffff821ef691, 0xffffffff81000130, 0xfffffffffffffe00, 0x7fe2cc4f2ad7}
	if first.Offset != 0x408 || first.Time != 85340190519436 || first.Pid != 21398 || first.Tid != 21398 ||
		first.IP != 0xffffffff817554ea || first.Period != 1 || first.CPUMode() != perfabi.CPUModeKernel || f.AttrOf(first).Name != "page-faults" ||
		first.ID != 1218927 || !slices.Equal(first.Callchain, wantCC) {
		t.Errorf("first sample %+v, callchain %x", first, first.Callchain)
	}
	var comms []string
	var mmaps []string
	for _, r := range recs {
		switch r := r.(type) {
		case *perfabi.Comm:
			comms = append(comms, r.Comm+":"+strconv.FormatBool(r.Exec)+":"+strconv.Itoa(int(r.Pid)))
		case *perfabi.Mmap:
			if r.Executable {
				mmaps = append(mmaps, r.Filename)
			}
		case *perfabi.Exit:
			if r.Pid != 21398 || r.Tid != 21398 || r.Time == 0 {
				t.Errorf("exit %+v", r)
			}
		case *ThreadMap:
			if len(r.Threads) != 1 || r.Threads[0].Pid != 21398 {
				t.Errorf("thread map %+v", r.Threads)
			}
		}
	}
	if got := strings.Join(comms, " "); got != "perf-exec:false:21398 busy:true:21398" {
		t.Errorf("comms %s", got)
	}
	if got := strings.Join(mmaps, " "); got != "[kernel.kallsyms]_text /tmp/pt/busy /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 [vdso] /usr/lib/x86_64-linux-gnu/libc.so.6" {
		t.Errorf("executable mappings %s", got)
	}
}

func TestRecordsDwarf(t *testing.T) {
	f := open(t, "dwarf.data")
	recs := all(t, f.Records())
	var samples []*perfabi.Sample
	exec := 0
	for _, r := range recs {
		switch r := r.(type) {
		case *perfabi.Sample:
			samples = append(samples, r)
		case *perfabi.Mmap:
			if r.Executable {
				exec++
			}
		}
	}
	// 23 MMAP2 records (mmap_data is on with dwarf), 4 of them code, and the kernel's MMAP.
	if len(samples) != 5 || countTypes(recs)[perfabi.RecordMmap2] != 23 || exec != 5 {
		t.Fatalf("%d samples, %d MMAP2, %d executable mappings; want 5, 23, 5", len(samples), countTypes(recs)[perfabi.RecordMmap2], exec)
	}
	s := samples[0]
	if s.IP != 0x558ac5f5714a || s.Period != 2000000 || s.Pid != 21450 || s.RegsABI != 2 || len(s.Regs) != 20 ||
		len(s.Stack) != 512 || s.StackDynSize != 512 || len(s.Callchain) != 0 || s.CPUMode() != perfabi.CPUModeUser {
		t.Errorf("first sample %+v: ip %#x period %d abi %d regs %d stack %d/%d callchain %x", s.Header, s.IP, s.Period,
			s.RegsABI, len(s.Regs), len(s.Stack), s.StackDynSize, s.Callchain)
	}
	// perf's x86 register 8 is the IP; the mask 0xff0fff holds registers 0 to 11 and 16 to 23.
	if s.Regs[8] != s.IP {
		t.Errorf("user register IP %#x, sample IP %#x", s.Regs[8], s.IP)
	}
}

func TestPipeMode(t *testing.T) {
	for _, how := range []string{"Open", "NewPipe"} {
		var f *File
		var rd *Reader
		if how == "Open" {
			f = open(t, "pipe.data")
			rd = f.Records()
		} else {
			fh, err := os.Open("testdata/pipe.data")
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			if f, rd, err = NewPipe(fh, "pipe.data"); err != nil {
				t.Fatal(err)
			}
		}
		if !f.Pipe || len(f.Attrs) != 0 {
			t.Fatalf("%s: pipe %v with %d events before the records", how, f.Pipe, len(f.Attrs))
		}
		recs := all(t, rd)
		c := countTypes(recs)
		if c[RecordHeaderAttr] != 1 || c[RecordHeaderFeature] != 19 || c[perfabi.RecordSample] != 5 || c[perfabi.RecordMmap2] != 4 {
			t.Errorf("%s: records %v", how, c)
		}
		if len(f.Attrs) != 1 || f.Attrs[0].Name != "cpu-clock" || f.Hostname != "vm" || f.NrCPUsOnline != 2 {
			t.Errorf("%s: events %d (%v), host %q, cpus %d", how, len(f.Attrs), f.Attrs, f.Hostname, f.NrCPUsOnline)
		}
		for _, r := range recs {
			if s, ok := r.(*perfabi.Sample); ok {
				want := []uint64{0xfffffffffffffe00, 0x55c52eec814a, 0x55c52eec817e, 0x7f988c25424a}
				if !slices.Equal(s.Callchain, want) || s.Period != 2000000 {
					t.Errorf("%s: first sample's callchain %x period %d", how, s.Callchain, s.Period)
				}
				break
			}
		}
	}
}

// stream builds a pipe-mode stream: its header, then the records.
type stream struct{ b []byte }

func newStream() *stream {
	s := &stream{}
	s.b = binary.LittleEndian.AppendUint64(s.b, magic)
	s.b = binary.LittleEndian.AppendUint64(s.b, pipeHeaderSize)
	return s
}

// record appends a record of type typ with the words as its body.
func (s *stream) record(typ uint32, misc uint16, words ...uint64) {
	s.b = binary.LittleEndian.AppendUint32(s.b, typ)
	s.b = binary.LittleEndian.AppendUint16(s.b, misc)
	s.b = binary.LittleEndian.AppendUint16(s.b, uint16(8+8*len(words)))
	for _, w := range words {
		s.b = binary.LittleEndian.AppendUint64(s.b, w)
	}
}

// attr appends a HEADER_ATTR of a 128-byte attr with the given fields and ids.
func (s *stream) attr(typ uint32, config, sampleType, readFormat, flags, branchType, regsUser, regsIntr uint64, ids ...uint64) {
	a := make([]uint64, 16)
	a[0] = uint64(typ) | 128<<32
	a[1], a[3], a[4], a[5] = config, sampleType, readFormat, flags
	a[2] = 1000
	a[9], a[10], a[12] = branchType, regsUser, regsIntr
	a[11] = 64 // sample_stack_user
	s.record(RecordHeaderAttr, 0, append(a, ids...)...)
}

func (s *stream) reader(t *testing.T) (*File, *Reader) {
	t.Helper()
	f, rd, err := NewPipe(bytes.NewReader(s.b), "synthetic.data")
	if err != nil {
		t.Fatal(err)
	}
	return f, rd
}

// TestSampleLayout decodes a sample with every field perf can put in one, in the order of perf_event.h.
func TestSampleLayout(t *testing.T) {
	st := perfabi.SampleIdentifier | perfabi.SampleIP | perfabi.SampleTID | perfabi.SampleTime | perfabi.SampleAddr | perfabi.SampleID | perfabi.SampleStreamID | perfabi.SampleCPU |
		perfabi.SamplePeriod | perfabi.SampleRead | perfabi.SampleCallchain | perfabi.SampleRaw | perfabi.SampleBranchStack | perfabi.SampleRegsUser | perfabi.SampleStackUser |
		perfabi.SampleWeight | perfabi.SampleDataSrc | perfabi.SampleTransaction | perfabi.SampleRegsIntr | perfabi.SamplePhysAddr | perfabi.SampleCgroup |
		perfabi.SampleDataPageSize | perfabi.SampleCodePageSize | perfabi.SampleAux
	s := newStream()
	s.attr(TypeHardware, 0, st, perfabi.FormatGroup|perfabi.FormatID|perfabi.FormatTotalTimeEnabled, FlagSampleIDAll, perfabi.BranchHWIndex, 0x3, 0x1, 77)
	raw := uint64(4) | 0xaabbccdd<<32 // u32 size 4, then 4 bytes of data
	s.record(perfabi.RecordSample, perfabi.CPUModeUser,
		77, 0x401000, 5|6<<32, 1000, 0xdead, 77, 9, 1, 250000, // identifier ... period
		2, 111, 10, 77, 20, 78, // read: nr 2, time enabled, (value, id) x 2
		3, 0xfffffffffffffe00, 0x401000, 0x401100, // callchain
		raw,
		1, 42, 0x401000, 0x402000, 0x3, // branches: nr 1, hw index, from, to, flags
		2, 0x1111, 0x2222, // user regs: abi, 2 registers
		16, 0xa, 0xb, 16, // stack: size 16, 16 bytes, dyn size
		7, 0x55, 0x66, // weight, data source, transaction
		2, 0x3333, // intr regs: abi, 1 register
		0x9000, 12, 4096, 2097152, // phys addr, cgroup, page sizes
		8, 0x77, // aux: size 8, data
	)
	_, rd := s.reader(t)
	recs := all(t, rd)
	x, ok := recs[1].(*perfabi.Sample)
	if !ok || x.More == nil {
		t.Fatalf("record 1 is %T %+v", recs[1], recs[1])
	}
	if x.ID != 77 || x.IP != 0x401000 || x.Pid != 5 || x.Tid != 6 || x.Time != 1000 || x.Addr != 0xdead || x.More.StreamID != 9 ||
		x.CPU != 1 || x.Period != 250000 {
		t.Errorf("fixed fields %+v ip %#x addr %#x stream %d period %d", x, x.IP, x.Addr, x.More.StreamID, x.Period)
	}
	if len(x.More.Read) != 2 || x.More.Read[0] != (perfabi.ReadValue{Value: 10, ID: 77, TimeEnabled: 111}) || x.More.Read[1].Value != 20 || x.More.Read[1].ID != 78 {
		t.Errorf("read %+v", x.More.Read)
	}
	if !slices.Equal(x.Callchain, []uint64{0xfffffffffffffe00, 0x401000, 0x401100}) || !bytes.Equal(x.More.Raw, []byte{0xdd, 0xcc, 0xbb, 0xaa}) {
		t.Errorf("callchain %x raw %x", x.Callchain, x.More.Raw)
	}
	if x.More.BranchHWIndex != 42 || len(x.More.Branches) != 1 || x.More.Branches[0] != (perfabi.Branch{From: 0x401000, To: 0x402000, Flags: 3}) {
		t.Errorf("branches %+v hw index %d", x.More.Branches, x.More.BranchHWIndex)
	}
	if x.RegsABI != 2 || !slices.Equal(x.Regs, []uint64{0x1111, 0x2222}) || len(x.Stack) != 16 || x.Stack[0] != 0xa || x.StackDynSize != 16 {
		t.Errorf("user regs %d %x stack %x/%d", x.RegsABI, x.Regs, x.Stack, x.StackDynSize)
	}
	if x.More.Weight != 7 || x.More.DataSrc != 0x55 || x.More.Transaction != 0x66 || x.More.IntrRegsABI != 2 || !slices.Equal(x.More.IntrRegs, []uint64{0x3333}) ||
		x.More.PhysAddr != 0x9000 || x.More.Cgroup != 12 || x.More.DataPageSize != 4096 || x.More.CodePageSize != 2097152 || len(x.More.Aux) != 8 || x.More.Aux[0] != 0x77 {
		t.Errorf("tail fields: weight %d src %#x tx %#x intr %d %x phys %#x cgroup %d pages %d %d aux %x",
			x.More.Weight, x.More.DataSrc, x.More.Transaction, x.More.IntrRegsABI, x.More.IntrRegs, x.More.PhysAddr, x.More.Cgroup, x.More.DataPageSize, x.More.CodePageSize, x.More.Aux)
	}
}

// TestTwoEvents: with several events, a sample's event is found by its id (PERF_SAMPLE_ID at the
// position the fields before it give), and a non-sample record's by the id in its sample_id trailer.
func TestTwoEvents(t *testing.T) {
	st := perfabi.SampleIP | perfabi.SampleTID | perfabi.SampleTime | perfabi.SampleID | perfabi.SamplePeriod
	s := newStream()
	s.attr(TypeSoftware, SWCPUClock, st, 0, FlagSampleIDAll, 0, 0, 0, 1, 2)
	s.attr(TypeSoftware, 2, st, 0, FlagSampleIDAll, 0, 0, 0, 3)
	s.record(perfabi.RecordSample, perfabi.CPUModeUser, 0x10, 7|7<<32, 500, 3, 1)
	s.record(perfabi.RecordSample, perfabi.CPUModeKernel, 0x20, 7|8<<32, 600, 2, 250000)
	// FORK of 9 by 7, with a sample_id (tid, time, id) of event 2.
	s.record(perfabi.RecordFork, 0, 9|7<<32, 9|7<<32, 700, 9|9<<32, 700, 3)
	s.record(perfabi.RecordSample, 0, 0x30, 7|7<<32, 800, 99, 1) // an id no event has
	f, rd := s.reader(t)
	var got []string
	for {
		r, err := rd.Next()
		if err != nil {
			if err == io.EOF || !strings.Contains(err.Error(), "offset 0x1d0: SAMPLE record of 48 bytes: event id 99 is not among the ids of the file's 2 events") {
				t.Errorf("error %v", err)
			}
			break
		}
		switch r := r.(type) {
		case *perfabi.Sample:
			got = append(got, f.AttrOf(r).defaultName()+"@"+strconv.FormatUint(r.Time, 10)+"/"+strconv.FormatUint(r.Period, 10))
		case *perfabi.Fork:
			got = append(got, "fork "+strconv.Itoa(int(r.Pid))+" of "+strconv.Itoa(int(r.Ppid))+" by "+f.AttrOf(r).defaultName()+"@"+strconv.FormatUint(perfabi.Time(r), 10))
		}
	}
	if w := "page-faults@500/1 cpu-clock@600/250000 fork 9 of 7 by page-faults@700"; strings.Join(got, " ") != w {
		t.Errorf("got %q, want %q", strings.Join(got, " "), w)
	}
	if _, err := rd.Next(); err == nil || err == io.EOF {
		t.Errorf("Next after an error: %v", err)
	}
}

func TestDamagedRecords(t *testing.T) {
	st := perfabi.SampleIP | perfabi.SampleTID | perfabi.SampleCallchain
	tests := []struct {
		name  string
		build func(s *stream)
		want  string
	}{
		{"sample before attr", func(s *stream) { s.record(perfabi.RecordSample, 0, 1) }, "offset 0x10: SAMPLE record of 16 bytes: no event attributes precede it"},
		{"short size", func(s *stream) { s.b = append(s.b, 9, 0, 0, 0, 0, 0, 4, 0) }, "offset 0x10: record of type 9 says it has 4 bytes"},
		{"callchain too long", func(s *stream) {
			s.attr(TypeSoftware, 0, st, 0, 0, 0, 0, 0)
			s.record(perfabi.RecordSample, 0, 1, 2, 1000, 5)
		}, "offset 0x98: SAMPLE record of 40 bytes: callchain needs 8000 bytes at byte 32 of its 40"},
		{"mmap short", func(s *stream) {
			s.attr(TypeSoftware, 0, st, 0, 0, 0, 0, 0)
			s.record(perfabi.RecordMmap, 0, 1, 2)
		}, "MMAP record of 24 bytes: len needs 8 bytes at byte 24 of its 24"},
		{"compressed", func(s *stream) { s.record(RecordCompressed, 0, 1) }, "offset 0x10: COMPRESSED record: its zstd data is damaged"},
		{"attr too short", func(s *stream) { s.record(RecordHeaderAttr, 0, 1, 2) }, "an attribute needs at least 64 bytes"},
	}
	for _, tc := range tests {
		s := newStream()
		tc.build(s)
		_, rd := s.reader(t)
		var err error
		for err == nil {
			_, err = rd.Next()
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "synthetic.data: offset ") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %T is not a *FormatError", tc.name, err)
		}
	}
}

// TestCutStream: a stream in pipe mode that ends inside a record (perf record -o - | er import -
// stopped while perf wrote it) gives the records before it, then io.EOF; Cut says what was cut
// (issue 27, item 20: the stream was refused whole). In file mode the data section's size says
// where the records end: a file cut inside it is an error (TestBadFiles).
func TestCutStream(t *testing.T) {
	tests := []struct {
		name  string
		build func(s *stream)
		want  Cut
		text  string
	}{
		{"cut header", func(s *stream) { s.b = append(s.b, 9, 0, 0) }, Cut{Offset: 0xb0, Have: 3, Records: 2},
			"the 2 records before it are read; cut short and not read: a record's header, 3 of its 8 bytes, at offset 0xb0"},
		{"cut body", func(s *stream) { s.b = append(s.b, 9, 0, 0, 0, 0, 0, 64, 0, 1, 2) }, Cut{Offset: 0xb0, Type: perfabi.RecordSample, Have: 10, Size: 64, Records: 2},
			"not read: a record of type SAMPLE, 10 of its 64 bytes, at offset 0xb0"},
		{"auxtrace past end", func(s *stream) { s.record(RecordAuxtrace, 0, 4096, 0, 0, 0, 0) }, Cut{Offset: 0xb0, Type: RecordAuxtrace, Have: 48, Size: 48 + 4096, Records: 2},
			"not read: a record of type AUXTRACE, 48 of its 4144 bytes, at offset 0xb0"},
	}
	for _, tc := range tests {
		s := newStream()
		s.attr(TypeSoftware, 0, perfabi.SampleIP|perfabi.SampleTID, 0, 0, 0, 0, 0)
		s.record(perfabi.RecordSample, perfabi.CPUModeUser, 0x401000, 7|7<<32)
		tc.build(s)
		_, rd := s.reader(t)
		n, err := count(rd)
		c := rd.Cut()
		if err != io.EOF || n != 2 || c == nil || *c != tc.want || !strings.Contains(c.String(), tc.text) {
			t.Errorf("%s: %v after %d records, cut %+v (%v); want EOF after 2, cut %+v (%q)", tc.name, err, n, c, c, tc.want, tc.text)
		}
	}
	// Whole records: no cut.
	s := newStream()
	s.attr(TypeSoftware, 0, perfabi.SampleIP|perfabi.SampleTID, 0, 0, 0, 0, 0)
	_, rd := s.reader(t)
	if all(t, rd); rd.Cut() != nil {
		t.Errorf("a whole stream: cut %+v", rd.Cut())
	}
}

// TestRecordedByPerf reads a file perf records now, and counts its samples as perf report -D does.
func TestRecordedByPerf(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed")
	}
	out := filepath.Join(t.TempDir(), "perf.data")
	if b, err := exec.Command("perf", "record", "-q", "-o", out, "-e", "task-clock", "-g", "-F", "2000", "--", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done").CombinedOutput(); err != nil {
		t.Skipf("perf record does not work here: %v\n%s", err, b)
	}
	dump, err := exec.Command("perf", "report", "-D", "-i", out).Output()
	if err != nil {
		t.Fatalf("perf report -D: %v", err)
	}
	want := map[uint32]int{}
	for _, line := range strings.Split(string(dump), "\n") {
		for typ, name := range map[uint32]string{perfabi.RecordSample: "PERF_RECORD_SAMPLE(", perfabi.RecordMmap2: "PERF_RECORD_MMAP2 ",
			perfabi.RecordComm: "PERF_RECORD_COMM", perfabi.RecordExit: "PERF_RECORD_EXIT", perfabi.RecordFork: "PERF_RECORD_FORK"} {
			if strings.Contains(line, name) {
				want[typ]++
			}
		}
	}
	f, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := countTypes(all(t, f.Records()))
	if want[perfabi.RecordSample] == 0 {
		t.Fatalf("perf report -D shows no samples:\n%s", dump)
	}
	for typ, n := range want {
		if got[typ] != n {
			t.Errorf("%d %s records, perf report -D shows %d", got[typ], RecordName(typ), n)
		}
	}
	t.Logf("records by type %v; perf report -D: %v", got, want)
}

// BenchmarkEventDescRecords reads a stream of n HEADER_ATTR records, then n HEADER_FEATURE records
// of an empty EVENT_DESC, and prints the ns per record (each EVENT_DESC record named every event
// again: quadratic).
func BenchmarkEventDescRecords(b *testing.B) {
	for _, n := range []int{5000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := newStream()
			for i := range n {
				s.attr(TypeSoftware, 0, perfabi.SampleIP, 0, 0, 0, 0, 0, uint64(i+1))
			}
			for range n {
				s.record(RecordHeaderFeature, 0, FeatEventDesc, 128<<32)
			}
			for b.Loop() {
				_, rd, err := NewPipe(bytes.NewReader(s.b), "descs.data")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := count(rd); err != io.EOF {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*n), "ns/record")
		})
	}
}
