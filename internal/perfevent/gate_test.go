package perfevent

import (
	"bytes"
	"cmp"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"er/internal/perfabi"
)

// gateShell starts sh -c script at the gate, with LD_PRELOAD=libc.so.6 (loaded anyway: harmless).
func gateShell(t *testing.T, script string) (*exec.Cmd, *Gate, *bytes.Buffer) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = append(os.Environ(), "LD_PRELOAD=libc.so.6")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	g, err := StartGated(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, g, &out
}

// TestStartGated: the process waits at the gate, as this binary, with LD_PRELOAD renamed (a
// library meant for the program must not be loaded into the gate); released, it becomes the
// program, with its environment as meant.
func TestStartGated(t *testing.T) {
	cmd, g, out := gateShell(t, `printf '%s' "$LD_PRELOAD"; exit 7`)
	pid := strconv.Itoa(cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for procState(t, cmd.Process.Pid) != "S" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // (its runtime starting)
	}
	argv, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	if !strings.HasPrefix(string(argv), gateArg0+"\x00") {
		t.Errorf("the waiting process's command line is %q, want it to begin with %q", argv, gateArg0)
	}
	env, _ := os.ReadFile("/proc/" + pid + "/environ")
	vars := strings.Split(string(env), "\x00")
	if !contains(vars, gatePreload+"=libc.so.6") || hasPrefix(vars, "LD_PRELOAD=") {
		t.Errorf("the waiting process's environment has LD_PRELOAD: %q", vars)
	}
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Errorf("exit status %d (%v), want 7", code, err)
	}
	if out.String() != "libc.so.6" {
		t.Errorf("the program's LD_PRELOAD is %q, want libc.so.6", out.String())
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func hasPrefix(s []string, p string) bool {
	for _, x := range s {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}

// TestStartGatedExecFails: the exec's error comes back from Release; the process exits 127.
func TestStartGatedExecFails(t *testing.T) {
	cmd := exec.Command("/nonexistent/program")
	g, err := StartGated(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Release(); !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "/nonexistent/program") {
		t.Errorf("Release: %v, want the exec's ENOENT for /nonexistent/program", err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != gateExitFailed {
		t.Errorf("exit status %d, want %d", code, gateExitFailed)
	}
}

// TestStartGatedOrphan: the gate closed without its byte (er killed): the program runs anyway,
// as a process that ptrace stopped at exec runs on when its tracer dies.
func TestStartGatedOrphan(t *testing.T) {
	cmd, g, _ := gateShell(t, "exit 5")
	g.w.Close()
	_ = cmd.Wait()
	g.status.Close()
	if code := cmd.ProcessState.ExitCode(); code != 5 {
		t.Errorf("exit status %d, want 5", code)
	}
}

// TestGatedProfile: events opened at the gate with EnableOnExec record the program from its exec:
// its exec is the first record, no sample comes before it, and nothing of the gate's own binary
// is mapped.
func TestGatedProfile(t *testing.T) {
	requireClock(t)
	spin := spinBinary(t)
	p := runProfiledFrom(t, true, TaskClock(1e6), spin, "1", "50")
	var execs []perfabi.Comm
	for _, c := range p.comms {
		if c.Exec {
			execs = append(execs, c)
		}
	}
	// First in time: the rings are per CPU, and a thread's comm record on one CPU may be read before
	// the exec's on another (seen beside two CPU hogs: spin-0's, 1.3 ms after the exec, read first).
	first := slices.MinFunc(p.comms, func(a, b perfabi.Comm) int { return cmp.Compare(a.Time, b.Time) })
	if len(execs) != 1 || execs[0].Comm != "spin" || execs[0].Pid != uint32(p.pid) || first != execs[0] {
		t.Fatalf("comm records %+v: want the exec of spin by process %d first, and only it", p.comms, p.pid)
	}
	self, _ := os.Executable()
	sawSpin := false
	for _, m := range p.mmaps {
		if m.Filename == self {
			t.Errorf("the gate's binary was recorded: %+v", m)
		}
		sawSpin = sawSpin || m.Filename == spin
		if m.Time < execs[0].Time {
			t.Errorf("mapping %s recorded before the exec", m.Filename)
		}
	}
	if !sawSpin {
		t.Errorf("no mapping of %s", spin)
	}
	if len(p.samples) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range p.samples {
		if s.Time < execs[0].Time {
			t.Fatalf("a sample at %d, before the exec at %d", s.Time, execs[0].Time)
		}
	}
	t.Logf("%d samples, task clock %.1f ms, the process's CPU %.1f ms (with the gate's start)", len(p.samples), float64(p.count)/1e6, float64(p.cpuNS)/1e6)
}
