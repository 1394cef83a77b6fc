package collect

import (
	"errors"
	"strings"
	"testing"

	"er/internal/counters"
	"er/internal/perfevent"
)

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

// TestCheckCounters: a backtracking counter the PMU cannot sample at precise_ip 2 is sampled at the
// highest level it can, or without data addresses, and a warning says which; a counter that cannot be
// counted at all is refused with the reason.
func TestCheckCounters(t *testing.T) {
	spec, err := Parse([]string{"-h", "page-faults,1", "prog"})
	if err != nil {
		t.Fatal(err)
	}
	dcrm := counters.Counter{Name: "dcrm", Title: "L1 D$ Read Misses", Class: counters.Cache, Type: 3, Config: 0x10000,
		Interval: 100003, MemOp: counters.Load, Backtrack: true, Precise: 2}
	for _, c := range []struct {
		maxPrecise uint8
		want       uint8
		warn       string
	}{
		{3, 2, ""},
		{1, 1, "-h +dcrm: the PMU cannot sample dcrm precisely (no): precise_ip 1"},
		{0, 0, "-h +dcrm: the PMU cannot sample dcrm precisely (no): no data addresses"},
	} {
		sp := spec
		sp.Counters = []counters.Counter{dcrm}
		probe := func(sb perfevent.Sibling) error {
			if sb.Precise > c.maxPrecise {
				return errors.New("no")
			}
			return nil
		}
		warnings, err := checkCounters(&sp, probe)
		if err != nil || sp.Counters[0].Precise != c.want || sp.Counters[0].Backtrack != (c.want > 0) {
			t.Errorf("PMU up to %d: %v, counter %+v", c.maxPrecise, err, sp.Counters[0])
		}
		if c.warn == "" && len(warnings) != 0 || c.warn != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0], c.warn)) {
			t.Errorf("PMU up to %d: warnings %q, want %q", c.maxPrecise, warnings, c.warn)
		}
	}
	sp := spec
	_, err = checkCounters(&sp, func(perfevent.Sibling) error { return errors.New("ENOENT") })
	if err == nil || !strings.Contains(err.Error(), "-h page-faults,1: page-faults ('Page Faults') cannot be counted: ENOENT") {
		t.Errorf("a counter refused: %v", err)
	}
}
