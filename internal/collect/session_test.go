package collect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/experiment"
	"er/internal/perfevent"
)

func TestExperimentDir(t *testing.T) {
	dir := t.TempDir()
	got, err := ExperimentDir(Spec{Dir: dir})
	if err != nil || got != filepath.Join(dir, "test.1.er") {
		t.Fatalf("empty dir: %q, %v", got, err)
	}
	for _, n := range []string{"test.1.er", "test.7.er", "test.x.er", "other.9.er"} {
		os.Mkdir(filepath.Join(dir, n), 0o755)
	}
	if got, _ := ExperimentDir(Spec{Dir: dir}); got != filepath.Join(dir, "test.8.er") {
		t.Errorf("next free: %q, want test.8.er", got)
	}
	if got, _ := ExperimentDir(Spec{Dir: dir, Output: "mine.er"}); got != filepath.Join(dir, "mine.er") {
		t.Errorf("-o: %q", got)
	}
	if _, err := ExperimentDir(Spec{Dir: dir, Output: "test.1.er"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing -o: %v", err)
	}
	if _, err := ExperimentDir(Spec{Dir: filepath.Join(dir, "missing")}); err == nil {
		t.Error("missing -d directory: no error")
	}
}

func TestLookTarget(t *testing.T) {
	if p, err := LookTarget("sh"); err != nil || !filepath.IsAbs(p) {
		t.Errorf("sh: %q, %v", p, err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	for name, want := range map[string]string{
		"no-such-program-here": "no such program",
		plain:                  "not executable",
		dir:                    "",
	} {
		_, err := LookTarget(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LookTarget(%q) = %v, want an error containing %q", name, err, want)
		}
	}
}

func TestUsedSymbols(t *testing.T) {
	a := &experiment.Archive{Symbols: []experiment.Symbol{
		{Name: "a", Addr: 0x1000, Size: 0x100}, {Name: "b", Addr: 0x1100, Size: 0x100}, {Name: "c", Addr: 0x1200}, {Name: "d", Addr: 0x1300, Size: 0x10},
	}}
	got := usedSymbols(a, map[uint64]struct{}{0x1010: {}, 0x1250: {}, 0x5000: {}})
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "c" || got[1].Size != 0x51 {
		t.Errorf("usedSymbols = %+v, want a and c (c sized to hold 0x1250)", got)
	}
}

// TestRunExitStatus runs a real target through the whole session: the exit status comes back and the
// experiment is complete.
func TestRunExitStatus(t *testing.T) {
	if _, err := perfevent.Paranoid(); err != nil {
		t.Skipf("perf events not available: %v", err)
	}
	if !perfevent.Probe().ClockProfiling {
		t.Skipf("clock profiling not available: %s", perfevent.Probe().ClockError)
	}
	spec := DefaultSpec()
	spec.Dir = t.TempDir()
	spec.Comments = []string{"first", "second"}
	spec.Target = []string{"sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3"}
	var stderr strings.Builder
	dir, err := Run(spec, &stderr)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("Run = %v, want exit status 3 (stderr %q)", err, stderr.String())
	}
	d, err := experiment.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Log.Exited || d.Log.ExitStatus != 3 || d.Notes != "first\nsecond\n" || len(d.Clock) == 0 || len(d.Overview) < 2 {
		t.Errorf("experiment: exited %v status %d notes %q, %d samples, %d overview records",
			d.Log.Exited, d.Log.ExitStatus, d.Notes, len(d.Clock), len(d.Overview))
	}
	if _, ok := d.Archives["/bin/sh"]; !ok {
		if _, ok := d.Archives["/usr/bin/dash"]; !ok {
			t.Errorf("no archive for the shell; archives: %d", len(d.Archives))
		}
	}
}
