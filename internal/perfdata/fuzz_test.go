package perfdata

import (
	"bytes"
	"os"
	"testing"
)

// FuzzRead: no input makes the reader panic or allocate without bound (compressed data included: the
// zstd window and what one COMPRESSED record decompresses to are bounded); every error is a
// *FormatError (the input is in memory, so no other error can happen).
func FuzzRead(f *testing.F) {
	for _, name := range []string{"fp.data", "pipe.data", "dwarf.data", "zstd.data", "zstdpipe.data"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	s := newStream()
	s.attr(TypeHardware, 0, SampleIdentifier|SampleRead|SampleBranchStack|SampleRegsUser|SampleStackUser|SampleAux,
		FormatGroup|FormatID|FormatLost, FlagSampleIDAll, branchHWIndex|branchCounters, 0xff, 0, 1)
	s.record(RecordSample, 0, 1, 1, 0, 5, 0, 0)
	f.Add(s.b)
	// A stream whose samples a COMPRESSED and a COMPRESSED2 record hold, one split between them.
	zs, z := compressedStream(f)
	z.sample(0x1, 10)
	z.sample(0x2, 20)
	zs.compressed(z.flush(f, 40), false)
	zs.record(RecordFinishedRound, 0)
	zs.compressed(z.flush(f, -1), true)
	f.Add(zs.b)
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
