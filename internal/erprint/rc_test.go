package erprint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gprofngRC is an .er.rc of the kind gprofng's documentation shows.
const gprofngRC = `# default metrics and sort
dmetrics e.%user:i.%user:e.%totalcpu:name
dsort i.user
sthresh 75
dthresh 75
name long
viewmode user
en_desc on
functions
`

// gprofngScript is an er_print script of the kind gprofng's documentation shows.
const gprofngScript = `# Define the metrics
metrics e.%totalcpu:i.%totalcpu
# Limit the views to 5 lines
limit 5
# Display the function overview
functions
# Display the callers-callees of main
csingle main
quit
`

// TestRCFiles: the rc files are read before the command line: dmetrics and dsort make the default
// metric list and sort; a command not of rc files is said and skipped; a later file wins; an explicit
// metrics command wins over dmetrics.
func TestRCFiles(t *testing.T) {
	dir := t.TempDir()
	home, cwd := filepath.Join(dir, "home.rc"), filepath.Join(dir, "cwd.rc")
	if err := os.WriteFile(home, []byte(gprofngRC), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cwd, []byte("dsort e.user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := testEnv()
	e.rcFiles = func() []string { return []string{filepath.Join(dir, "none.rc"), home, cwd} }
	got, code := runCaseEnv([]string{"-metric_list", "-functions", "demo.1.er"}, "", e)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	for _, want := range []string{
		"Current metrics: e.%user:i.%user:e.%totalcpu:name",
		"Current Sort Metric: Exclusive User CPU Time ( e.%user )",
		"Functions sorted by metric: Exclusive User CPU Time",
		"home.rc:9: functions is not a command of an .er.rc file (those marked * in help); skipped",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	got, _ = runCaseEnv([]string{"-metrics", "e.totalcpu", "-metric_list", "demo.1.er"}, "", e)
	if !strings.Contains(got, "Current metrics: e.totalcpu:name") {
		t.Errorf("metrics after dmetrics:\n%s", got)
	}
}

// TestGprofngScript: a script of gprofng's documentation runs unchanged.
func TestGprofngScript(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.er")
	if err := os.WriteFile(script, []byte(gprofngScript), 0o644); err != nil {
		t.Fatal(err)
	}
	got, code := runCase([]string{"-script", script, "demo.1.er"}, "")
	if code != 0 || !strings.Contains(got, "Functions sorted by metric: Exclusive Total CPU Time") || !strings.Contains(got, "Callers and callees sorted by metric") {
		t.Errorf("exit %d:\n%s", code, got)
	}
}

// TestSettingsCommands: cmetrics sets the callers-callees metrics; viewmode, experiment_ids, procstats.
func TestSettingsCommands(t *testing.T) {
	got, code := runCase([]string{"-cmetrics", "i.user", "-cmetric_list", "-viewmode", "machine", "-experiment_ids", "-procstats", "demo.1.er"}, "")
	for _, want := range []string{"Current caller-callee metrics: a.user:name", "Viewmode set to machine", "demo.1.er", "Processing statistics:"} {
		if code != 0 || !strings.Contains(got, want) {
			t.Errorf("no %q in (exit %d):\n%s", want, code, got)
		}
	}
	if got, code := runCase([]string{"-viewmode", "fancy", "demo.1.er"}, ""); code == 0 || !strings.Contains(got, `viewmode "fancy": user, expert or machine`) {
		t.Errorf("viewmode fancy: exit %d:\n%s", code, got)
	}
}
