package main

// Messages and conventions (issue 12): what er says when something is wrong, checked on real runs.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCollectMissingDir: -o into a directory that does not exist, or -d naming one, is an error
// naming the directory, and er creates nothing (it used to create the directory for -o).
func TestCollectMissingDir(t *testing.T) {
	needCollect(t)
	missing := filepath.Join(t.TempDir(), "nonexistent")
	for _, args := range [][]string{{"-o", filepath.Join(missing, "x.er")}, {"-d", missing}} {
		r := er(t, "", nil, append(append([]string{"collect"}, args...), "/bin/true")...)
		want := "er collect: experiment directory " + missing + " does not exist: create it first (mkdir -p " + missing + ") or choose another -d or -o\n"
		if r.code != 1 || r.stderr != want {
			t.Errorf("er collect %s: code %d, stderr %q; want 1, %q", strings.Join(args, " "), r.code, r.stderr, want)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("er collect %s created %s", strings.Join(args, " "), missing)
		}
	}
}

// TestHelpConventions: er --help, er help COMMAND and COMMAND --help print help on stdout, exit 0.
func TestHelpConventions(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Usage: er <command>"},
		{[]string{"-h"}, "Usage: er <command>"},
		{[]string{"help"}, "Usage: er <command>"},
		{[]string{"help", "collect"}, "Usage: er collect"},
		{[]string{"help", "print"}, "Usage: er print"},
		{[]string{"collect", "--help"}, "Usage: er collect"},
		{[]string{"collect", "-h"}, "Aliased HW counters available for profiling:"},
		{[]string{"collect"}, "Software events available for profiling:"},
		{[]string{"print", "--help"}, "Usage: er print"},
		{[]string{"archive", "--help"}, "Usage: er archive"},
		{[]string{"rm", "--help"}, "Usage: er rm"},
		{[]string{"cp", "--help"}, "Usage: er cp"},
		{[]string{"mv", "--help"}, "Usage: er mv"},
		{[]string{"export", "--help"}, "Usage: er export"},
		{[]string{"import", "--help"}, "Usage: er import"},
		{[]string{"help", "import"}, "Usage: er import"},
		{[]string{"analyzer", "--help"}, "usage: er analyzer"},
	} {
		r := er(t, "", nil, c.args...)
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("er %s: code %d, want 0 and %q in:\n%s%s", strings.Join(c.args, " "), r.code, c.want, r.stdout, r.stderr)
		}
	}
	if r := er(t, "", nil, "collect", "-Z", "/bin/true"); r.code != 2 || r.stderr != "er collect: unknown option \"-Z\" (run `er collect --help` for the list)\n" {
		t.Errorf("er collect -Z: code %d, stderr %q", r.code, r.stderr)
	}
}

// targetLine returns the "Target ..." line of er print -header for one experiment (not its descendants).
func targetLine(t *testing.T, exp string) string {
	t.Helper()
	r := er(t, "", nil, "print", "-header", exp)
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "Target ") && !strings.HasPrefix(l, "Target command") {
			return l
		}
	}
	t.Fatalf("er print -header %s: no Target line (code %d)\n%s%s", exp, r.code, r.stdout, r.stderr)
	return ""
}

// TestExitReports: how a target ended, as er collect says it and as the header shows it. An abort
// is a signal, not "status 134"; a shell's 134 says what it means; a descendant's status, which its
// parent and not er collects, is not shown as 0 (it was "Target exited with status 0" for a child
// that abort killed); -P says the process was detached from, or exited, not "exit not recorded".
func TestExitReports(t *testing.T) {
	needCollect(t)
	behave := cprog(t, "behave")
	exp, r := collectExp(t, nil, behave, "abort")
	if r.code != 134 || !strings.HasSuffix(r.stderr, "written; the target was killed by signal 6 (SIGABRT)\n") {
		t.Errorf("abort: code %d, stderr %q", r.code, r.stderr)
	}
	if got, want := targetLine(t, exp), "Target terminated by signal 6 (SIGABRT)"; got != want {
		t.Errorf("abort: header %q, want %q", got, want)
	}

	exp, r = collectExp(t, nil, "/bin/sh", "-c", behave+" abort; exit $?")
	if want := "written; the target exited with status 134 (128+6: how a shell reports a command that signal 6 (SIGABRT) killed)\n"; r.code != 134 || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("sh -c 'behave abort': code %d, stderr %q, want it to end with %q", r.code, r.stderr, want)
	}
	subs, _ := filepath.Glob(filepath.Join(exp, "_f*.er"))
	if len(subs) == 0 {
		t.Fatalf("sh -c 'behave abort': no subexperiment in %s", exp)
	}
	for _, sub := range subs {
		got := targetLine(t, sub)
		if got != "Target exited; its exit status is not known (a descendant: its parent collects the status)" &&
			got != "Target replaced by exec: the process ran on as another program" {
			t.Errorf("%s: header %q", filepath.Base(sub), got)
		}
	}

	target := exec.Command(behave, "spin", "30")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = target.Process.Kill(); _ = target.Wait() }()
	pid := strconv.Itoa(target.Process.Pid)
	exp, r = collectExp(t, nil, "-P", pid, "-t", "0.3")
	if want := "er collect: detached from process " + pid + ", which runs on\n"; r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("-P -t: code %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if got, want := targetLine(t, exp), "Target detached at the end of recording; the process ran on"; got != want {
		t.Errorf("-P -t: header %q, want %q", got, want)
	}
	go func() { time.Sleep(500 * time.Millisecond); _ = target.Process.Signal(syscall.SIGTERM) }()
	exp, r = collectExp(t, nil, "-P", pid)
	if got, want := targetLine(t, exp), "Target exited; its exit status is not known (er collect -P attached to it: its parent collects the status)"; got != want {
		t.Errorf("-P, the process killed: header %q, want %q (stderr %q)", got, want, r.stderr)
	}
}

// TestErrorsNameRealThings: when no experiment is made, er's message names none (it said
// "er collect: test.1.er: cannot start ./prog: fork/exec ./prog: exec format error" and
// "er collect: test.1.er: prog is statically linked ..." of an experiment never created).
func TestErrorsNameRealThings(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "noshebang")
	if err := os.WriteFile(script, []byte("echo hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "x.er")
	r := er(t, "", nil, "collect", "-o", exp, script)
	want := "er collect: cannot run \"" + script + "\": " + script + " is not a program this machine can run (exec format error; a script needs a #! line)\n"
	if r.code != 127 || r.stderr != want {
		t.Errorf("a script without #!: code %d, stderr %q; want 127, %q", r.code, r.stderr, want)
	}
	static := cbuild(t, "behave", "-static", "-O1")
	r = er(t, "", nil, "collect", "-o", exp, "-H", "on", static, "exit", "0")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "er collect: "+static+" is statically linked") || strings.Contains(r.stderr, ".er") {
		t.Errorf("-H on a static program: code %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(exp); err == nil {
		t.Errorf("%s was left behind", exp)
	}
}

// TestNotAnExperiment: er print on a directory that is not an experiment, a file, or nothing says
// so, naming it once (it said "cannot read experiment /tmp: /tmp: not an experiment: ...").
func TestNotAnExperiment(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	missing := filepath.Join(dir, "none.er")
	for _, c := range []struct{ arg, want string }{
		{dir, "er print: " + dir + ": not an experiment: it has no log.xml and no data files (an experiment is a directory that er collect writes, such as test.1.er)\n"},
		{file, "er print: " + file + ": not an experiment directory\n"},
		{missing, "er print: " + missing + ": not an experiment: it does not exist\n"},
	} {
		if r := er(t, "", nil, "print", "-functions", c.arg); r.code != 1 || r.stderr != c.want {
			t.Errorf("er print %s: code %d, stderr %q; want 1, %q", c.arg, r.code, r.stderr, c.want)
		}
	}
}

// TestSigprofMessage: the SIGPROF clock asked for by $ER_CLOCK_SOURCE says so, not "perf events are
// not available", and a static program is told the remedy that fits (not "collect clock profiles
// only", which is what it asked for).
func TestSigprofMessage(t *testing.T) {
	needCollect(t)
	static := cbuild(t, "behave", "-static", "-O1")
	exp := filepath.Join(t.TempDir(), "x.er")
	r := er(t, "", []string{"ER_CLOCK_SOURCE=sigprof"}, "collect", "-o", exp, static, "exit", "0")
	want := "er collect: " + static + " is statically linked: it cannot load the collector library that clock profiling by SIGPROF " +
		"($ER_CLOCK_SOURCE=sigprof) needs; link it dynamically, or let er use perf events (unset $ER_CLOCK_SOURCE; perf_event_paranoid 2 or less)\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("ER_CLOCK_SOURCE=sigprof, a static program: code %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
}

// TestArchiveReadable: the copies under archives/ can be read by whoever may read the experiment
// (they were 0600 while the rest of the experiment was 0644 under umask 022).
func TestArchiveReadable(t *testing.T) {
	needCollect(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	exp, r := collectExp(t, nil, cprog(t, "behave"), "exit", "0")
	if r.code != 0 {
		t.Fatalf("er collect: %d\n%s", r.code, r.stderr)
	}
	n := 0
	filepath.WalkDir(filepath.Join(exp, "archives"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		n++
		if st.Mode().Perm()&0o044 != 0o044 {
			t.Errorf("%s: mode %v, want readable by the group and others, as the experiment is", p, st.Mode().Perm())
		}
		return nil
	})
	if n < 3 {
		t.Errorf("%d files under archives/, want the copies and the index", n)
	}
}

// TestCollectMessagesEscaped: what er collect says of a target's programs and load objects, whose
// names the target's author chose, reaches the terminal with its control characters escaped: a
// program in a directory named with an escape sequence (one that retitles the terminal) and a
// newline, run directly with -H on (it is static: an error naming it), and exec'd by a shell under
// -H on (a warning naming it while er records). The raw sequence is in neither message, nor in what
// er print shows of the experiment.
func TestCollectMessagesEscaped(t *testing.T) {
	needCollect(t)
	static := cbuild(t, "behave", "-static", "-O1")
	dir := filepath.Join(t.TempDir(), "x\x1b]0;pwned\x07\ny")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "beh\x1b[2Jave")
	data, err := os.ReadFile(static)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, data, 0o755); err != nil {
		t.Fatal(err)
	}
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\x07") }
	exp := filepath.Join(t.TempDir(), "x.er")
	r := er(t, "", nil, "collect", "-o", exp, "-H", "on", prog, "exit", "0")
	if r.code != 1 || raw(r.stderr) || !strings.Contains(r.stderr, `x\x1b]0;pwned\x07\ny/beh\x1b[2Jave is statically linked`) {
		t.Errorf("-H on a static program in %q: code %d, stderr %q; want its path escaped", dir, r.code, r.stderr)
	}
	exp2 := filepath.Join(t.TempDir(), "y.er")
	r = er(t, "", nil, "collect", "-o", exp2, "-H", "on", "sh", "-c", `exec "$0" exit 0`, prog)
	if r.code != 0 || raw(r.stderr) || !strings.Contains(r.stderr, `beh\x1b[2Jave is statically linked`) {
		t.Errorf("a shell exec'ing it under -H on: code %d, stderr %q; want a warning with its path escaped", r.code, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != strings.Count(r.stderr, "er collect: ") {
		t.Errorf("a message of er collect broke into lines of its own: %q", r.stderr)
	}
	if p := er(t, "", nil, "print", "-header", exp2); raw(p.stdout+p.stderr) || !strings.Contains(p.stdout+p.stderr, "statically linked") {
		t.Errorf("er print -header: %q%q", p.stdout, p.stderr)
	}
}
