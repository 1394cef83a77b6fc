package experiment

import (
	"fmt"
	"testing"
)

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{ModeUser: "user", ModeKernel: "kernel", ModeUnknown: "unknown", 7: "unknown"} {
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
