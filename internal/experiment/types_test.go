package experiment

import (
	"fmt"
	"testing"
)

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{ModeUser: "user", ModeKernel: "kernel", ModeUnknown: "unknown", ModeWaitCPU: "wait-cpu",
		ModeSleep: "sleep", ModeTextFault: "text-fault", ModeDataFault: "data-fault", 7: "unknown"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d) = %q, want %q", m, got, want)
		}
	}
}

func TestFormatVersion(t *testing.T) {
	if want := fmt.Sprintf("%d.%d", formatMajor, formatMinor); FormatVersion != want {
		t.Errorf("FormatVersion %q, binary headers say %s", FormatVersion, want)
	}
}

// TestLastTime checks that the last event is found among every kind of data and sample point.
func TestLastTime(t *testing.T) {
	d := &Data{}
	if got := d.LastTime(); got != 0 {
		t.Errorf("no events: %d", got)
	}
	d.SetClock([]ClockSample{{Time: 5}, {Time: 3}})
	d.AddHeap([]HeapEvent{{Time: 7}})
	d.AddSync([]SyncEvent{{Time: 6}})
	d.AddIO([]IOEvent{{Time: 4}})
	d.Overview = []OverviewSample{{Time: 2}}
	if got := d.LastTime(); got != 7 {
		t.Errorf("last time %d, want 7 (the heap event)", got)
	}
	d.Overview = append(d.Overview, OverviewSample{Time: 9})
	if got := d.LastTime(); got != 9 {
		t.Errorf("last time %d, want 9 (the sample point)", got)
	}
}
