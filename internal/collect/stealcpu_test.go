package collect

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestCPUSteal: a sample longer than the margin loses what its CPU's steal time grew by between the
// readings around it, at most its excess over the margin; a short sample, or one on a CPU not stolen
// from, loses nothing.
func TestCPUSteal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	write := func(steal0, steal1 int) {
		t.Helper()
		s := "cpu  10 0 10 100 0 0 0 9 0 0\n" +
			"cpu0 5 0 5 50 0 0 0 " + strconv.Itoa(steal0) + " 0 0\n" +
			"cpu1 5 0 5 50 0 0 0 " + strconv.Itoa(steal1) + " 0 0\nintr 1 2 3\n"
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const ms = int64(1e6)
	c := &cpuSteal{path: path, margin: 7 * ms}
	write(2, 0)
	c.read(100 * ms)
	write(8, 0) // 60 ms stolen from CPU 0 between 100 and 200 ms
	c.read(200 * ms)
	for _, tc := range []struct {
		cpu       uint32
		t, period int64
		want      int64
	}{
		{0, 180 * ms, 65 * ms, 7 * ms},   // the excess over the margin, 58 ms, of the 60 stolen
		{0, 180 * ms, 5 * ms, 5 * ms},    // within the margin
		{1, 180 * ms, 65 * ms, 65 * ms},  // CPU 1 not stolen from
		{0, 150 * ms, 100 * ms, 40 * ms}, // from 50 ms: no reading before its start
	} {
		if tc.t-tc.period < 100*ms {
			tc.want = tc.period
		}
		if got := c.free(tc.cpu, tc.t, tc.period, 200*ms); got != tc.want {
			t.Errorf("a sample of %d ms on CPU %d at %d ms: %d ms its own, want %d", tc.period/ms, tc.cpu, tc.t/ms, got/ms, tc.want/ms)
		}
	}
	// A sample newer than the last reading: one is taken then.
	write(20, 0) // 120 ms more on CPU 0
	if got := c.free(0, 250*ms, 130*ms, 260*ms); got != 7*ms || len(c.times) != 3 {
		t.Errorf("a sample after the last reading: %d ms its own, %d readings; want 7 and 3", got/ms, len(c.times))
	}
	if row := parseSteal([]byte("cpu 1 2 3 4 5 6 7 8\ncpu3 0 0 0 0 0 0 0 4\n")); len(row) != 4 || row[3] != 40*ms {
		t.Errorf("parseSteal = %v", row)
	}
	var nilSteal *cpuSteal
	if nilSteal.free(0, 1, 100*ms, 2) != 100*ms {
		t.Error("no readings: a sample lost time")
	}
}
