package perfabi

import "testing"

func TestRecordName(t *testing.T) {
	for typ, want := range map[uint32]string{RecordMmap: "MMAP", RecordSample: "SAMPLE", RecordMmap2: "MMAP2",
		RecordLostSamples: "LOST_SAMPLES", RecordSwitchCPUWide: "SWITCH_CPU_WIDE", RecordAuxOutputHWID: "AUX_OUTPUT_HW_ID",
		0: "type-0", 22: "type-22", RecordUserTypeStart: "type-64", 1 << 31: "type-2147483648"} {
		if got := RecordName(typ); got != want {
			t.Errorf("RecordName(%d) = %q, want %q", typ, got, want)
		}
	}
}

// TestTime: the time perf orders a record by is its sample_id's where it has one, else its own.
func TestTime(t *testing.T) {
	for _, tc := range []struct {
		r    Record
		want uint64
	}{
		{&Sample{Time: 1}, 1},
		{&Mmap{Time: 2}, 2},
		{&Comm{Time: 3}, 3},
		{&Fork{Time: 4}, 4},
		{&Fork{Time: 4, SampleIDTime: 5}, 5},
		{&Exit{Time: 6}, 6},
		{&Exit{Time: 6, SampleIDTime: 7}, 7},
		{&Read{Time: 8}, 8},
		{&Lost{Time: 9}, 9},
		{&LostSamples{Time: 10}, 10},
		{&Throttle{Time: 11}, 11},
		{&Throttle{Time: 11, SampleIDTime: 12}, 12},
		{&Switch{Time: 13}, 13},
		{&Unknown{Time: 14}, 14},
		{&Header{Type: 68}, 0}, // a record of perf's own
	} {
		if got := Time(tc.r); got != tc.want {
			t.Errorf("Time(%T %+v) = %d, want %d", tc.r, tc.r, got, tc.want)
		}
	}
}

func TestCPUMode(t *testing.T) {
	s := &Sample{Header: Header{Misc: CPUModeKernel | MiscExactIP}}
	if s.CPUMode() != CPUModeKernel || !s.Kernel() {
		t.Errorf("misc %#x: CPU mode %d, kernel %v", s.Misc, s.CPUMode(), s.Kernel())
	}
	s.Misc = CPUModeGuestKernel
	if s.CPUMode() != CPUModeGuestKernel || s.Kernel() {
		t.Errorf("misc %#x: CPU mode %d, kernel %v", s.Misc, s.CPUMode(), s.Kernel())
	}
}
