package erprint

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestIndxobj: the index objects of the demo experiment: its two threads add up to <Total>, each as
// thread_select would show it; an unknown type is refused with the list; indxobj_list lists them.
func TestIndxobj(t *testing.T) {
	got, code := runCase([]string{"-metrics", "e.totalcpu", "-indxobj", "threads", "demo.1.er"}, "")
	if code != 0 || !strings.Contains(got, "Objects of type Threads sorted by metric: Exclusive Total CPU Time") {
		t.Fatalf("indxobj threads:\n%s", got)
	}
	var total, sum float64
	for _, line := range strings.Split(got, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		if f[1] == "<Total>" {
			total = v
		} else if f[1] == "Thread" {
			sum += v
		}
	}
	if total == 0 || math.Abs(sum-total) > 0.0015 {
		t.Errorf("threads add up to %.3f s, <Total> %.3f s:\n%s", sum, total, got)
	}
	got, code = runCase([]string{"-indxobj", "Weeks", "demo.1.er"}, "")
	if code == 0 || !strings.Contains(got, `indxobj "Weeks": unknown index object type; the types: Threads, CPUs, Samples, Seconds, Processes, Experiment_IDs`) {
		t.Errorf("indxobj Weeks:\n%s", got)
	}
	got, _ = runCase([]string{"-indxobj_list"}, "")
	if !strings.Contains(got, "Experiment_IDs") {
		t.Errorf("indxobj_list:\n%s", got)
	}
}
