package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/experiment"
)

// underStrace runs er with args under strace -f, which attaches to every process er starts: the
// target is traced before it can ask for ptrace itself, and the kernel refuses er's PTRACE_TRACEME.
func underStrace(t *testing.T, args ...string) result {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (.ci/run installs it)")
	}
	cmd := exec.Command(strace, append([]string{"-f", "-qq", "-o", os.DevNull, erBin}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("strace -f er %v: %v", args, err)
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// TestUnderTracer: er collect under a tracer that follows its children (strace -f) starts the target
// without ptrace, waiting before its exec, and records it whole, saying so in the experiment (it
// failed with a bare "fork/exec ...: operation not permitted").
func TestUnderTracer(t *testing.T) {
	needCollect(t)
	heap := cprog(t, "heap")
	exp := filepath.Join(t.TempDir(), "test.1.er")
	r := underStrace(t, "collect", "-o", exp, "-p", "on", "-H", "on", heap)
	if r.code != 0 {
		t.Fatalf("strace -f er collect -H on: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	heapExpectations(t, exp, r.stdout)
	h := er(t, "", nil, "print", "-header", exp)
	for _, want := range []string{"started without ptrace", "(strace)", "TracerPid"} {
		if !strings.Contains(h.stdout, want) {
			t.Errorf("er print -header does not say %q:\n%s", want, h.stdout)
		}
	}

}

// runCmd runs name with args and returns its output and exit status.
func runCmd(t *testing.T, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// TestUnderTracerSetID: er collect under strace -f (which makes it start the target at the gate,
// without ptrace) with a set-user-ID target. What the kernel does is decided by the target's tracer,
// strace, not by er: strace as root grants the privilege, whoever runs er (and the set-ID exec then
// removes the perf events that er opened at the gate: nothing of the target is recorded); strace as
// an ordinary user withholds it. er says so, naming the tracer, and the target's own view and the
// experiment agree. Before: as root, "it runs with that privilege, but the dynamic loader ignores
// LD_PRELOAD" and not that nothing was recorded (0 samples); er run as nobody by strace as root was
// told "it runs without that privilege" while the target ran as root; and strace as nobody was not
// named ("started under ptrace by a process without CAP_SYS_PTRACE", where er used no ptrace).
func TestUnderTracerSetID(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("making a set-user-ID program of another user needs root")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (.ci/run installs it)")
	}
	setpriv := lookSetpriv(t)
	// A directory that user 65534 may use, with a copy of er it may run.
	dir := sharedTempDir(t, "er-gated-setid-")
	erCopy := setIDCopyOf(t, erBin, dir, "er", 0, 0, 0o755)
	toNobody := setIDCopy(t, dir, "whoami-nobody", 65534, 0, 0o755|os.ModeSetuid)
	toRoot := setIDCopy(t, dir, "whoami-root", 0, 0, 0o755|os.ModeSetuid)
	traced := []string{"-f", "-qq", "-o", os.DevNull}

	t.Run("strace as root", func(t *testing.T) {
		exp := filepath.Join(dir, "a.er")
		r := runCmd(t, strace, append(traced, erBin, "collect", "-o", exp, "-H", "on", toNobody)...)
		if r.code != 0 || !strings.Contains(r.stdout, "euid=65534 egid=0 secure=1 preload=no") {
			t.Fatalf("exit %d, the target's own view %q: want it run as user 65534\n%s", r.code, r.stdout, r.stderr)
		}
		for _, w := range []string{"whoami-nobody is set-user-ID (user nobody, 65534): it runs with that privilege (its tracer, process ",
			"(strace), has CAP_SYS_PTRACE)", "opened them before its exec", "nothing of it is recorded", "heap tracing (-H) records nothing"} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("er collect does not say %q:\n%s", w, r.stderr)
			}
		}
		readable(t, exp, "the kernel stopped recording it at its exec", "as it waited at the gate")
		d, err := experiment.Open(exp)
		if err != nil {
			t.Fatal(err)
		}
		if n := d.ClockTable().Len(); n != 0 {
			t.Errorf("%d clock samples of a target said to be recorded not at all", n)
		}
	})
	t.Run("strace as root, er as nobody", func(t *testing.T) {
		r := runCmd(t, strace, append(traced, "-u", "nobody", erCopy, "collect", "-d", dir, "-o", "c.er", "-a", "off", toRoot)...)
		if r.code != 0 || !strings.Contains(r.stdout, "euid=0 ") {
			t.Fatalf("exit %d, the target's own view %q: want it run as root\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "whoami-root is set-user-ID (user root, 0): it runs with that privilege (its tracer, process ") ||
			strings.Contains(r.stderr, "without that privilege") || !strings.Contains(r.stderr, "nothing of it is recorded") {
			t.Errorf("er collect does not say that the target runs with its privilege under its privileged tracer, unrecorded:\n%s", r.stderr)
		}
	})
	t.Run("strace as nobody", func(t *testing.T) {
		r := runCmd(t, setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", strace}, append(traced,
			erCopy, "collect", "-d", dir, "-o", "b.er", "-a", "off", toRoot)...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "euid=65534 egid=65534 secure=1") {
			t.Fatalf("exit %d, the target's own view %q: want it run as 65534, without its privilege\n%s", r.code, r.stdout, r.stderr)
		}
		want := "whoami-root is set-user-ID (user root, 0): under er collect it runs without that privilege, as you (it is traced by process "
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "(strace), which traces er and follows its children") {
			t.Errorf("stderr: %q\nwant %q, naming strace", r.stderr, want)
		}
	})
}
