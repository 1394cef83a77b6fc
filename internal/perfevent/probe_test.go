package perfevent

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	c := Probe()
	par, err := Paranoid()
	if err != nil {
		t.Fatal(err)
	}
	rate, err := readIntFile(maxSampleRatePath)
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if c.Paranoid != par || c.MaxSampleRate != rate || c.NumCPU != len(cpus) {
		t.Errorf("Probe = %+v; want paranoid %d, rate %d, %d CPUs", c, par, rate, len(cpus))
	}
	if want := max(10000, uint64(1e9/rate)); c.MinPeriodNS != want || c.MaxPeriodNS != math.MaxInt64 {
		t.Errorf("periods %d..%d, want %d..%d", c.MinPeriodNS, c.MaxPeriodNS, want, uint64(math.MaxInt64))
	}
	if c.ClockProfiling == (c.ClockError != "") {
		t.Errorf("ClockProfiling %v with error %q", c.ClockProfiling, c.ClockError)
	}
	if err := ClockAvailable(); (err == nil) != c.ClockProfiling {
		t.Errorf("ClockAvailable() = %v, but Probe says clock profiling %v", err, c.ClockProfiling)
	}
	if c.HardwareCounters == (c.HardwareError != "") {
		t.Errorf("HardwareCounters %v with error %q", c.HardwareCounters, c.HardwareError)
	}
	if !c.HardwareCounters && !strings.Contains(c.HardwareError, "cycles") {
		t.Errorf("hardware error does not name the counter: %q", c.HardwareError)
	}
	if os.Geteuid() == 0 && c.ClockProfiling && !c.KernelStacks {
		t.Error("root cannot sample kernel stacks?")
	}
	t.Logf("%+v", c)
}

func TestProbeWithoutProc(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	saved := []*string{&paranoidPath, &maxSampleRatePath, &maxStackPath}
	old := make([]string, len(saved))
	for i, p := range saved {
		old[i], *p = *p, missing
	}
	defer func() {
		for i, p := range saved {
			*p = old[i]
		}
	}()
	c := Probe()
	if c.Paranoid != 99 || c.MaxSampleRate != 0 || c.MinPeriodNS != 10000 {
		t.Errorf("Probe without /proc files: %+v", c)
	}
	if _, err := Paranoid(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Paranoid with a missing file: %v", err)
	}
}
