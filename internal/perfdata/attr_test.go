package perfdata

import (
	"encoding/binary"
	"strings"
	"testing"

	"er/internal/perfabi"
)

// attrBytes encodes a perf_event_attr of size bytes with the fields the tests set.
func attrBytes(size int, typ uint32, config, period, sampleType, flags uint64, regs uint64, stack uint32) []byte {
	b := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint32(b, typ)
	le.PutUint32(b[4:], uint32(size))
	le.PutUint64(b[8:], config)
	le.PutUint64(b[16:], period)
	le.PutUint64(b[24:], sampleType)
	le.PutUint64(b[40:], flags)
	if size >= 96 {
		le.PutUint64(b[80:], regs)
		le.PutUint32(b[88:], stack)
	}
	return b
}

// TestParseAttr: the fields of a perf_event_attr as perf record --call-graph dwarf writes it (version
// 8, 136 bytes), of a first-version one (64 bytes: the later fields zero), and the errors.
func TestParseAttr(t *testing.T) {
	st := perfabi.SampleIP | perfabi.SampleTID | perfabi.SampleTime | perfabi.SampleCPU | perfabi.SamplePeriod | perfabi.SampleRegsUser | perfabi.SampleStackUser | perfabi.SampleIdentifier
	a, err := parseAttr(attrBytes(136, TypeSoftware, SWCPUClock, 4000, st, FlagFreq|FlagSampleIDAll, 0xff0fff, 8192))
	if err != nil {
		t.Fatal(err)
	}
	if !a.Clock() || !a.Freq() || !a.SampleIDAll() || a.SamplePeriod != 4000 || a.SampleRegsUser != 0xff0fff || a.SampleStackUser != 8192 {
		t.Errorf("attr %+v", a)
	}
	if a.defaultName() != "cpu-clock" {
		t.Errorf("name %q", a.defaultName())
	}
	// PERF_SAMPLE_IDENTIFIER puts the id first in samples and last in the trailer; the trailer holds
	// TID, TIME, CPU and IDENTIFIER: 4 words.
	if a.Format().IDPos() != 0 || a.Format().SampleIDPos() != 1 || a.Format().SampleIDSize() != 32 {
		t.Errorf("idPos %d, isPos %d, sampleIDSize %d", a.Format().IDPos(), a.Format().SampleIDPos(), a.Format().SampleIDSize())
	}
	old, err := parseAttr(attrBytes(64, TypeHardware, 1, 100000, perfabi.SampleIP|perfabi.SampleTID|perfabi.SampleID|perfabi.SampleCPU|perfabi.SampleStreamID, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	// Without IDENTIFIER: the id after IP and TID in a sample; in the trailer before STREAM_ID and CPU.
	if old.Clock() || old.defaultName() != "instructions" || old.SampleRegsUser != 0 || old.Format().IDPos() != 2 || old.Format().SampleIDPos() != 3 || old.Format().SampleIDSize() != 0 {
		t.Errorf("first-version attr %+v: idPos %d isPos %d", old, old.Format().IDPos(), old.Format().SampleIDPos())
	}
	if n := (&Attr{Type: 9, Config: 0x1f}).defaultName(); n != "type9/config=0x1f/" {
		t.Errorf("unknown event named %q", n)
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{make([]byte, 40), "shorter than the first version's 64"},
		{attrBytes(64, 1, 0, 0, 0, 0, 0, 0)[:64], ""},
		{func() []byte {
			b := attrBytes(64, 1, 0, 0, 0, 0, 0, 0)
			binary.LittleEndian.PutUint32(b[4:], 32)
			return b
		}(), "fewer than the first version's"},
		{attrBytes(64, 1, 0, 0, 1<<40, 0, 0, 0), "sample type bits 0x10000000000"},
	} {
		_, err := parseAttr(c.b)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("parseAttr of %d bytes: %v, want %q", len(c.b), err, c.want)
		}
	}
}
