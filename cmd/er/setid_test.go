package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/experiment"
)

// setIDCopy copies testdata/whoami into dir, owned by uid:gid with mode.
func setIDCopy(t *testing.T, dir, name string, uid, gid int, mode os.FileMode) string {
	t.Helper()
	return setIDCopyOf(t, cbuild(t, "whoami", "-O1", "-g"), dir, name, uid, gid, mode)
}

// setIDCopyOf copies the program prog into dir, owned by uid:gid with mode.
func setIDCopyOf(t *testing.T, prog, dir, name string, uid, gid int, mode os.FileMode) string {
	t.Helper()
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // after chown, which clears the set-ID bits
		t.Fatal(err)
	}
	return p
}

// TestSetIDTarget: a set-user-ID target that er (root here) runs keeps its privilege, but the
// dynamic loader ignores LD_PRELOAD for it, so the collector library records nothing: er says so
// on stderr before the target runs, and in the experiment's log.
func TestSetIDTarget(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("making a set-user-ID program of another user needs root")
	}
	dir := t.TempDir()
	prog := setIDCopy(t, dir, "whoami-suid", 65534, 0, 0o755|os.ModeSetuid)
	exp := filepath.Join(dir, "s.er")
	r := er(t, "", nil, "collect", "-o", exp, "-H", "on", prog)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "euid=65534 egid=0 secure=1 preload=no") {
		t.Errorf("the target's own view: %q, want it run as user 65534, securely, without LD_PRELOAD", r.stdout)
	}
	want := "whoami-suid is set-user-ID (user "
	if !strings.Contains(r.stderr, want+"nobody, 65534): it runs with that privilege") || !strings.Contains(r.stderr, "ignores LD_PRELOAD") ||
		!strings.Contains(r.stderr, "heap tracing (-H) records nothing") {
		t.Errorf("stderr: %q\nwant a warning with %q, that the loader ignores LD_PRELOAD and what records nothing", r.stderr, want)
	}
	if i, j := strings.Index(r.stderr, want), strings.Index(r.stderr, "experiment "); i < 0 || j < i {
		t.Errorf("the warning does not come before the end of the collection:\n%s", r.stderr)
	}
	d, err := experiment.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(d, "warning", want) {
		t.Errorf("no warning in the experiment's log: %+v", d.Log.Events)
	}

	// A plain copy: no warning.
	plain := setIDCopy(t, dir, "whoami-plain", 0, 0, 0o755)
	r = er(t, "", nil, "collect", "-o", filepath.Join(dir, "p.er"), "-H", "on", plain)
	if r.code != 0 || strings.Contains(r.stderr, "set-") || !strings.Contains(r.stdout, "secure=0 preload=yes") {
		t.Errorf("plain program: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestSetIDTargetUnprivileged: er run by an ordinary user starts a set-user-ID root program without
// its privilege (the kernel does not grant it to a program started under ptrace by a tracer without
// CAP_SYS_PTRACE): er says so.
func TestSetIDTargetUnprivileged(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("becoming another user needs root")
	}
	setpriv := lookSetpriv(t)
	dir := sharedTempDir(t, "er-setid-")
	bin, err := os.ReadFile(erBin)
	if err != nil {
		t.Fatal(err)
	}
	erCopy := filepath.Join(dir, "er")
	if err := os.WriteFile(erCopy, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := setIDCopy(t, dir, "whoami-root", 0, 0, 0o755|os.ModeSetuid)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		erCopy, "collect", "-d", dir, "-o", "u.er", "-a", "off", prog)
	cmd.Dir = dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "euid=65534 egid=65534 secure=1") {
		t.Errorf("the target's own view: %q, want it run as 65534 (without its privilege)", out.String())
	}
	want := "whoami-root is set-user-ID (user root, 0): under er collect it runs without that privilege"
	if !strings.Contains(errb.String(), want) {
		t.Errorf("stderr: %q\nwant %q", errb.String(), want)
	}
}

// TestSetIDChild: a descendant that execs a set-user-ID program is not recorded at all (the kernel
// removes perf events from a process that exec makes not dumpable, and reports it as exited there),
// and under -H on the collector library does not run in it either: er says so, on stderr and in the
// logs, naming the process and the program. Before, its CPU time (0.5 s of 1 s here) was missing from
// every view without a word; and a child that cleared LD_PRELOAD, or a static one, lost its heap trace
// silently.
func TestSetIDChild(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("making a set-user-ID program of another user needs root")
	}
	dir := t.TempDir()
	spin := setIDCopyOf(t, cprog(t, "cpubound"), dir, "spin-suid", 65534, 0, 0o755|os.ModeSetuid)
	plain := cprog(t, "cpubound")
	exp := filepath.Join(dir, "c.er")
	r := er(t, "", nil, "collect", "-o", exp, "sh", "-c", spin+" 1 0.5; "+plain+" 1 0.5")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := "the kernel stopped recording it at its exec, and nothing of it was recorded"
	if n := strings.Count(r.stderr, want); n != 1 || !strings.Contains(r.stderr, spin+", _f1_x1.er)") {
		t.Errorf("er collect said %d times %q, naming %s in _f1_x1.er:\n%s", n, want, spin, r.stderr)
	}
	if strings.Contains(r.stderr, "was lost to the samples") {
		t.Errorf("er collect says samples were lost:\n%s", r.stderr)
	}
	sub, err := experiment.Open(filepath.Join(exp, "_f1_x1.er"))
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(sub, "warning", want) {
		t.Errorf("no warning in _f1_x1.er's log: %+v", sub.Log.Events)
	}
	if p := er(t, "", nil, "print", "-functions", exp); !strings.Contains(p.stderr, want) {
		t.Errorf("er print -functions does not say that a process was not recorded:\n%s", p.stderr)
	}

	// Under -H on: a child that cleared LD_PRELOAD and a static one ran without the collector library.
	static := filepath.Join(dir, "whoami-static")
	if out, err := exec.Command("gcc", "-static", "-O1", "-o", static, filepath.Join("..", "..", "testdata", "whoami.c")).CombinedOutput(); err != nil {
		t.Logf("no static program (%v: %s)", err, out)
		static = ""
	}
	who := cbuild(t, "whoami", "-O1", "-g")
	script := who + "; env -u LD_PRELOAD " + who
	if static != "" {
		script += "; " + static
	}
	r = er(t, "", nil, "collect", "-H", "on", "-o", filepath.Join(dir, "h.er"), "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("-H on: exit %d\n%s", r.code, r.stderr)
	}
	missing := "the collector library did not run in process "
	if n := strings.Count(r.stderr, missing); n != 1+min(1, len(static)) {
		t.Errorf("-H on: er collect said %d times %q; want it of the child that cleared LD_PRELOAD and of the static one:\n%s", n, missing, r.stderr)
	}
	if !strings.Contains(r.stderr, "its environment did not preload the collector library") {
		t.Errorf("-H on: no reason for the child that cleared LD_PRELOAD:\n%s", r.stderr)
	}
	if static != "" && !strings.Contains(r.stderr, static+" is statically linked") {
		t.Errorf("-H on: no reason for the static child:\n%s", r.stderr)
	}
}

// TestSetIDNoNewPrivs: er collect run with no_new_privs (setpriv --no-new-privs, systemd's
// NoNewPrivileges=yes), which its target inherits: exec grants no set-user-ID privilege and the
// loader runs the program as any other, so a set-user-ID target runs as the user who ran er, and the
// collector library records in it as without the bit; er says nothing of the bit. Before: "it runs
// with that privilege, but the dynamic loader ignores LD_PRELOAD ... heap tracing (-H) records
// nothing in it", while the target ran as root with LD_PRELOAD and its heap was recorded.
func TestSetIDNoNewPrivs(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("making a set-user-ID program of another user needs root")
	}
	setpriv := lookSetpriv(t)
	dir := t.TempDir()
	prog := setIDCopy(t, dir, "whoami-suid", 65534, 0, 0o755|os.ModeSetuid)
	exp := filepath.Join(dir, "n.er")
	cmd := exec.Command(setpriv, "--no-new-privs", erBin, "collect", "-o", exp, "-H", "on", prog)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "euid=0 egid=0 secure=0 preload=yes") {
		t.Errorf("the target's own view: %q, want it run as root, not securely, with LD_PRELOAD", out.String())
	}
	if strings.Contains(errb.String(), "set-user-ID") {
		t.Errorf("er collect warns of the set-user-ID bit, which exec ignores under no_new_privs:\n%s", errb.String())
	}
	noWarnings(t, exp)
	if heap := heapOf(t, exp)["<Total>"]; heap == nil || heap[0] == 0 {
		t.Errorf("no allocation recorded (%v): the library did not run in the target", heap)
	}
}

// lookSetpriv returns util-linux's setpriv, or skips the test.
func lookSetpriv(t *testing.T) string {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	return setpriv
}

// sharedTempDir returns a new directory, removed at the test's end, that any user may use (under the
// system's temporary directory, which other users can search, where t.TempDir's parent is not).
func sharedTempDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
