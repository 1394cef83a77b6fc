package erprint

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"er/internal/experiment"
	"er/internal/kindtest"
)

// TestToyKind: a data kind added in a test (its descriptor, a fake reader, one metric) appears in
// metric_list, functions, callers-callees, calltree, describe, filters and statistics, with no
// change outside the descriptor (issue 13, acceptance 2). demo.1.er has 133 clock samples, 109 of
// them of thread 1.
func TestToyKind(t *testing.T) {
	kindtest.Register(t)
	e := toyEnv()
	got, code := runCaseEnv([]string{"-metric_list", "-metrics", "e.toycnt:i.toycnt:e.totalcpu", "-functions",
		"-csingle", "compute", "-calltree", "-describe", "-filters", "THRID == 1", "-functions", "-filters", "TOYSEQ < 10",
		"-functions", "-statistics", "demo.1.er"}, "", e)
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
		"   30     30  0.      <Total>", // TOYSEQ < 10: the first 10 toy events of 3, and no clock sample
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// toyEnv is the test environment with demo.1.er's toy events recorded (kindtest.Add).
func toyEnv() env {
	e := testEnv()
	open := e.open
	e.open = func(dir string) (*experiment.Data, error) {
		d, err := open(dir)
		if err == nil && dir == "demo.1.er" {
			kindtest.Add(d)
		}
		return d, err
	}
	return e
}

// TestToyKindExport: er export carries the toy kind's metric: a pprof sample type of its own, and
// its folded stacks, each the 133 events' 399 units in all.
func TestToyKindExport(t *testing.T) {
	kindtest.Register(t)
	dir := t.TempDir()
	pp, folded := filepath.Join(dir, "p.pb.gz"), filepath.Join(dir, "toy.folded")
	out, code := runCaseEnv([]string{"demo.1.er"}, "export_pprof "+pp+"\nexport_folded "+folded+" toycnt\n", toyEnv())
	if code != 0 {
		t.Fatal(out)
	}
	f, err := os.Open(pp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prof, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, st := range prof.SampleType {
		if st.Type == "toycnt" {
			col = i
		}
	}
	var sum int64
	for _, s := range prof.Sample {
		if col >= 0 {
			sum += s.Value[col]
		}
	}
	if col < 0 || sum != 133*kindtest.Units {
		t.Errorf("pprof sample types %v: toycnt sums to %d, want %d", prof.SampleType, sum, 133*kindtest.Units)
	}
	b, err := os.ReadFile(folded)
	if err != nil {
		t.Fatal(err)
	}
	sum = 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		sum += n
	}
	if sum != 133*kindtest.Units {
		t.Errorf("folded toycnt stacks sum to %d, want %d:\n%s", sum, 133*kindtest.Units, b)
	}
}
