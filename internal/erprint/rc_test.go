package erprint

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
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

// capped is a writer that ends the goroutine writing to it (runtime.Goexit) once it holds more than
// max bytes: er print reading an endless rc file then stops, and the test says so.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		runtime.Goexit()
	}
	return c.buf.Write(p)
}

// runRC runs er print with args and the rc files files in a goroutine, and returns its stdout and
// stderr. While it runs, it opens each FIFO of fifos for writing whenever it can: that succeeds only
// once er print has the FIFO open to read it (it waited there, for ever, for a writer), and the test
// fails; closing it again lets er print go on. An endless stderr (more than 1 MB) ends it too.
func runRC(t *testing.T, args []string, files, fifos []string) (stdout, stderr string) {
	t.Helper()
	e := testEnv()
	e.rcFiles = func() []string { return files }
	var out bytes.Buffer
	errb := &capped{max: 1 << 20}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(args, strings.NewReader(""), &out, errb, e)
	}()
	opened := map[string]bool{}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			for _, f := range fifos {
				if w, err := os.OpenFile(f, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					if !opened[f] {
						t.Errorf("er print opened the FIFO %s to read it: it waits there until a writer comes", f)
					}
					opened[f] = true
					w.Close()
				}
			}
			runtime.Gosched()
		}
	}
	if errb.over {
		t.Errorf("er print wrote more than 1 MB on stderr reading the rc files, and goes on:\n%.2000s", errb.buf.String())
	}
	return out.String(), errb.buf.String()
}

// TestRCFileChecks: an rc file is read only if it is a regular file of at most 1 MiB, owned by the
// user running er print (or root) and not writable by every user; others are said and skipped
// (a FIFO ./.er.rc hung er print and er export; /dev/urandom as .er.rc ran for ever; another
// user's ./.er.rc changed what root's er print showed).
func TestRCFileChecks(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	const hostile = "dsort e.user\n" // would sort the function list by user CPU time
	write := func(name, text string, mode os.FileMode) {
		if err := os.WriteFile(path(name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path(name), mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(path("fifo.rc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/urandom", path("urandom.rc")); err != nil {
		t.Fatal(err)
	}
	write("world.rc", hostile, 0o666)
	write("big.rc", hostile+strings.Repeat("# padding\n", 110_000), 0o644)
	files := []string{path("fifo.rc"), path("urandom.rc"), path("world.rc"), path("big.rc")}
	want := []string{
		path("fifo.rc") + ": not a regular file but a named pipe (FIFO); not read",
		path("urandom.rc") + ": not a regular file but a character device; not read",
		path("world.rc") + ": writable by every user; not read: anyone may have written it (chmod o-w it)",
		path("big.rc") + ": 1100013 bytes, more than an rc file of settings commands holds (1048576); not read",
	}
	if os.Geteuid() == 0 {
		write("nobody.rc", hostile, 0o644)
		if err := os.Chown(path("nobody.rc"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		files = append(files, path("nobody.rc"))
		want = append(want, path("nobody.rc")+": owned by "+userName(65534)+", not by root, who runs er print; not read")
	} else {
		t.Log("not root: no rc file of another user can be made")
	}
	stdout, stderr := runRC(t, []string{"-functions", "demo.1.er"}, files, []string{path("fifo.rc")})
	for _, w := range want {
		if !strings.Contains(stderr, "er print: warning: "+w) {
			t.Errorf("no warning %q in:\n%.3000s", w, stderr)
		}
	}
	if strings.Contains(stderr, "er print: read ") || !strings.Contains(stdout, "Functions sorted by metric: Exclusive Total CPU Time") {
		t.Errorf("an rc file was read:\n%.3000s\n%s", stderr, stdout)
	}
}

// TestRCFilesSaid: er print says on stderr, once, each rc file it read and what it set (a ./.er.rc
// changed its output unseen); files that do not exist say nothing; stdout is what the commands print.
func TestRCFilesSaid(t *testing.T) {
	dir := t.TempDir()
	home, cwd := filepath.Join(dir, "home.rc"), filepath.Join(dir, "cwd.rc")
	if err := os.WriteFile(home, []byte("# mine\ndsort e.user\nname short\n\nlimit 3\nsthresh 80\ndthresh 80\nviewmode user\ncompare off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cwd, []byte("# nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := runRC(t, []string{"-functions", "-callers-callees", "-printmode", "csv", "-functions", "demo.1.er"},
		[]string{filepath.Join(dir, "none.rc"), home, cwd}, nil)
	want := "er print: read " + home + ": dsort e.user; name short; limit 3; sthresh 80; dthresh 80; viewmode user; and 1 more\n" +
		"er print: read " + cwd + ": no settings\n"
	if !strings.HasPrefix(stderr, want) || strings.Count(stderr, "er print: read ") != 2 {
		t.Errorf("stderr:\n%s\nwant it to start with, and say only\n%s", stderr, want)
	}
	if strings.Contains(stdout, ".rc") || !strings.Contains(stdout, "Functions sorted by metric: Exclusive User CPU Time") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

// TestScriptFile: a script may be a pipe: a FIFO with no writer is an empty script, where er print
// waited for a writer for ever; /dev/urandom stops at its first line, which is no command.
func TestScriptFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "script.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got, code := runCase([]string{"-script", fifo, "-limit", "1", "demo.1.er"}, "")
	if code != 0 || !strings.Contains(got, "Print limit set to 1") {
		t.Errorf("a FIFO with no writer as the script: exit %d:\n%s", code, got)
	}
	got, code = runCase([]string{"-script", "/dev/urandom", "demo.1.er"}, "")
	if want := "er print: /dev/urandom:1: "; code == 0 || !strings.Contains(got, want) {
		t.Errorf("/dev/urandom as the script: exit %d:\n%.2000s\nwant %q", code, got, want)
	}
}

// TestTrustedOwner: rc files of the user running er print and of root are read; for root under sudo,
// those of the user who ran sudo too, and no other user's.
func TestTrustedOwner(t *testing.T) {
	me := uint32(os.Geteuid())
	if !trustedOwner(me) || !trustedOwner(0) {
		t.Errorf("trustedOwner: not the user's (%d) or root's", me)
	}
	if me != 0 {
		t.Skip("not root: sudo's user cannot be tried")
	}
	t.Setenv("SUDO_UID", "1000")
	if !trustedOwner(1000) || trustedOwner(1001) || trustedOwner(65534) {
		t.Errorf("under sudo by uid 1000: trusted 1000 %v, 1001 %v, 65534 %v", trustedOwner(1000), trustedOwner(1001), trustedOwner(65534))
	}
	t.Setenv("SUDO_UID", "")
	if trustedOwner(1000) {
		t.Error("uid 1000 trusted without sudo")
	}
}
