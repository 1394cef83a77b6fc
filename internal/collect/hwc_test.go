package collect

import "testing"

// TestHarmonicMHz: the clock rate cycles are converted to time with is the CPUs' harmonic mean (the
// mean duration of a cycle), as the manual says.
func TestHarmonicMHz(t *testing.T) {
	info := "processor\t: 0\ncpu MHz\t\t: 1000.000\nprocessor\t: 1\ncpu MHz\t\t: 3000.000\nflags\t: fpu\n"
	if got := harmonicMHz(info); got != 1500 {
		t.Errorf("harmonic mean of 1000 and 3000 MHz: %d, want 1500", got)
	}
	if got := harmonicMHz("processor : 0\n"); got != 0 {
		t.Errorf("no clock: %d, want 0", got)
	}
}
