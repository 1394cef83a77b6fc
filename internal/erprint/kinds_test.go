package erprint

import (
	"strings"
	"testing"

	"er/internal/kindtest"
)

// TestToyKind: a data kind added in a test (its descriptor, a fake reader, one metric) appears in
// metric_list, functions, callers-callees, calltree, describe, filters and statistics, with no
// change outside the descriptor (issue 13, acceptance 2). demo.1.er has 133 clock samples, 109 of
// them of thread 1.
func TestToyKind(t *testing.T) {
	kindtest.Register(t)
	got, code := runCase([]string{"-metric_list", "-metrics", "e.toycnt:i.toycnt:e.totalcpu", "-functions",
		"-csingle", "compute", "-calltree", "-describe", "-filters", "THRID == 1", "-functions", "-statistics", "demo.1.er"}, "")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, got)
	}
	checkGolden(t, "toy_kind", got)
	for _, want := range []string{
		"Exclusive Toy Units: e+%toycnt",
		"  399    399  1.331   <Total>", // the functions list: 133 events of 3
		"  180    342  0.600   compute",
		"  270  0.901   main", // compute's callers
		"  327  1.091     | +-__libc_start_main",
		"Toy tracing: 133 events",
		"  327    327  1.091   <Total>", // thread 1 alone: 109 events of 3
		"Toy tracing events: 133",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
