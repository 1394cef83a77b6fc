package perfabi

import "testing"

// TestFormatLayout: where the id is in samples and sample_ids, and how long a sample_id is.
func TestFormatLayout(t *testing.T) {
	for _, tc := range []struct {
		name                string
		f                   Format
		idPos, sidPos, size int
	}{
		// PERF_SAMPLE_IDENTIFIER puts the id first in samples and last in the sample_id, which holds
		// TID, TIME, CPU and IDENTIFIER: 4 words.
		{"identifier", Format{SampleType: SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleRegsUser | SampleIdentifier,
			SampleIDAll: true}, 0, 1, 32},
		// Without IDENTIFIER: the id after IP and TID in a sample; in the sample_id before STREAM_ID and CPU.
		{"id", Format{SampleType: SampleIP | SampleTID | SampleID | SampleCPU | SampleStreamID, SampleIDAll: true}, 2, 3, 32},
		{"id without sample_id_all", Format{SampleType: SampleIP | SampleTID | SampleID | SampleCPU | SampleStreamID}, 2, 3, 0},
		{"no id", Format{SampleType: SampleIP | SampleTime | SampleAddr, SampleIDAll: true}, -1, -1, 8},
		{"id after addr", Format{SampleType: SampleIP | SampleTID | SampleTime | SampleAddr | SampleID | SampleRead}, 4, 1, 0},
	} {
		if got := tc.f.IDPos(); got != tc.idPos {
			t.Errorf("%s: IDPos %d, want %d", tc.name, got, tc.idPos)
		}
		if got := tc.f.SampleIDPos(); got != tc.sidPos {
			t.Errorf("%s: SampleIDPos %d, want %d", tc.name, got, tc.sidPos)
		}
		if got := tc.f.SampleIDSize(); got != tc.size {
			t.Errorf("%s: SampleIDSize %d, want %d", tc.name, got, tc.size)
		}
		if err := tc.f.check(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if err := (Format{SampleType: SampleKnown + 1}).check(); err == nil {
		t.Error("a sample type bit beyond SampleKnown passed")
	}
	if err := (Format{SampleType: SampleKnown, ReadFormat: FormatKnown}).check(); err != nil {
		t.Errorf("every known bit: %v", err)
	}
}
