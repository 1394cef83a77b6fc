package collect

import (
	"path/filepath"
	"strings"
	"testing"

	"er/internal/perfevent"
)

func TestMainUsageAndErrors(t *testing.T) {
	var out, errb strings.Builder
	if code := Main(nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage: er collect") || !strings.Contains(out.String(), "This machine:") {
		t.Errorf("no arguments: code %d, output %q", code, out.String())
	}
	out.Reset()
	if code := Main([]string{"-V"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "er ") {
		t.Errorf("-V: code %d, output %q", code, out.String())
	}
	errb.Reset()
	if code := Main([]string{"-Z", "x"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown option "-Z"`) {
		t.Errorf("bad option: code %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := Main([]string{"/no/such/program"}, &out, &errb); code != 127 || !strings.Contains(errb.String(), "/no/such/program") {
		t.Errorf("missing program: code %d, stderr %q", code, errb.String())
	}
}

func TestDryRun(t *testing.T) {
	var out, errb strings.Builder
	dir := t.TempDir()
	code := Main([]string{"-n", "-p", "hi", "-d", dir, "-t", "3", "-C", "note", "sh", "-c", "true"}, &out, &errb)
	if code != 0 {
		t.Fatalf("dry run: code %d, stderr %q", code, errb.String())
	}
	for _, want := range []string{"Dry run", filepath.Join(dir, "test.1.er"), "1.009 ms", "-p hi", "3s", "note"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("dry run created %v", m)
	}
}

func TestUsageMachine(t *testing.T) {
	var out strings.Builder
	Usage(&out, perfevent.Capabilities{NumCPU: 16, Paranoid: 3, HardwareError: "no PMU"})
	for _, want := range []string{"CPUs: 16", "perf_event_paranoid: 3", "kernel call stacks: not permitted", "hardware counters: not available (no PMU)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q", want)
		}
	}
}

// TestHelpOptions: --help and -help print the usage on stdout and exit 0 (they used to be unknown
// options, exit 2); -h alone prints the counter lists, and er collect alone both, as the manual's
// collect does.
func TestHelpOptions(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-help"}, {"--help", "/bin/true"}, {}} {
		var out, errb strings.Builder
		if code := Main(args, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "Usage: er collect") || errb.Len() != 0 {
			t.Errorf("er collect %s: code %d, stdout %.40q, stderr %q", strings.Join(args, " "), code, out.String(), errb.String())
		}
		if lists := strings.Contains(out.String(), "Software events available for profiling:"); lists != (len(args) == 0) {
			t.Errorf("er collect %s: the counter lists shown: %v", strings.Join(args, " "), lists)
		}
	}
	for _, args := range [][]string{{"-h"}, {"-p", "hi", "-h"}} {
		var out, errb strings.Builder
		if code := Main(args, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "Aliased HW counters available for profiling:") ||
			!strings.Contains(out.String(), "\ncontext-switches,1 ('Context Switches', alias for PERF_COUNT_SW_CONTEXT_SWITCHES; events)\n") {
			t.Errorf("er collect %s: code %d, stdout %q, stderr %q", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
}
