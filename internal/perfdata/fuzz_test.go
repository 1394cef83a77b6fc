package perfdata

import (
	"bytes"
	"os"
	"testing"

	"er/internal/perfabi"
)

// FuzzRead: no input makes the reader panic or allocate without bound (compressed data included: the
// zstd window, what one COMPRESSED record and all of them decompress to are bounded); every error
// is a *FormatError (the input is in memory, so no other error can happen).
func FuzzRead(f *testing.F) {
	for _, name := range []string{"fp.data", "pipe.data", "dwarf.data", "zstd.data", "zstdpipe.data"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	s := newStream()
	s.attr(TypeHardware, 0, perfabi.SampleIdentifier|perfabi.SampleRead|perfabi.SampleBranchStack|perfabi.SampleRegsUser|perfabi.SampleStackUser|perfabi.SampleAux,
		perfabi.FormatGroup|perfabi.FormatID|perfabi.FormatLost, FlagSampleIDAll, perfabi.BranchHWIndex|perfabi.BranchCounters, 0xff, 0, 1)
	s.record(perfabi.RecordSample, 0, 1, 1, 0, 5, 0, 0)
	f.Add(s.b)
	// A stream whose samples a COMPRESSED and a COMPRESSED2 record hold, one split between them.
	zs, z := compressedStream(f)
	z.sample(0x1, 10)
	z.sample(0x2, 20)
	zs.compressed(z.flush(f, 40), false)
	zs.record(RecordFinishedRound, 0)
	zs.compressed(z.flush(f, -1), true)
	f.Add(zs.b)
	// What issue 27 fixed: data cut inside a record (a compressed one too), COMPRESSED data past
	// the bounds on bytes and records, EVENT_DESC records with empty names.
	f.Add(zs.b[:len(zs.b)-5])
	f.Add(append(bytes.Clone(s.b), 9, 0, 0, 0, 0, 0, 64, 0, 1, 2))
	f.Add(manyRecords(f, 1, 8, 1<<20, 64).b)
	f.Add(manyRecords(f, 8, 65528, 1<<20, 0).b)
	d := newStream()
	d.attr(TypeSoftware, 0, perfabi.SampleIP, 0, 0, 0, 0, 0, 1)
	d.record(RecordHeaderFeature, 0, FeatEventDesc, 1|128<<32, 0, 0)
	f.Add(d.b)
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := NewFile(bytes.NewReader(b), int64(len(b)), "fuzz.data")
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("%T: %v", err, err)
			}
			return
		}
		rd := file.Records()
		for i := 0; i < 10000; i++ {
			r, err := rd.Next()
			if err != nil {
				return
			}
			_ = r.Head()
		}
	})
}
