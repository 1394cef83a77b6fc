package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childOf returns the pid of the child of process ppid whose argv[0] is prog, waiting for it.
func childOf(t *testing.T, ppid int, prog string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range processesWith(prog) {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil || !bytes.HasPrefix(argv, []byte(prog+"\x00")) {
				continue
			}
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no child %s of process %d", prog, ppid)
	return 0
}

// waitPending waits until signal sig is pending for process pid (its ShdPnd in /proc/PID/status).
func waitPending(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "ShdPnd:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && m&(1<<(sig-1)) != 0 {
					return
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("signal %v never became pending for process %d", sig, pid)
}

// TestProgramSampleHandler: a program with a handler of its own for the -l signal keeps it: the
// handler runs for every delivery but those er collect passes on (a signal sent to er), each of
// which takes a sample point, with the handler's sa_mask; er collect says so on stderr and in the
// experiment (before: the handler never ran, and nothing said so).
func TestProgramSampleHandler(t *testing.T) {
	needCollect(t)
	prog := cbuild(t, "sigown", "-O1", "-g")
	exp := filepath.Join(t.TempDir(), "test.1.er")
	cmd := exec.Command(erBin, "collect", "-o", exp, "-l", "USR1", "-S", "off", prog, strconv.Itoa(int(syscall.SIGUSR1)), "3")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the target's output ended, want %q\n%s", want, stderr.String())
		}
		if got := lines.Text(); got != want {
			t.Fatalf("the target printed %q, want %q", got, want)
		}
	}
	expect("ready") // it raised SIGUSR1 three times: its handler ran each time
	target := childOf(t, cmd.Process.Pid, prog)
	// From elsewhere (this test): the handler runs.
	if err := syscall.Kill(target, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitPending(t, target, syscall.SIGUSR1)
	fmt.Fprintln(stdin, "deliver")
	expect("handled 4")
	// Sent to er collect, which passes it on: a sample point, not the program's.
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitPending(t, target, syscall.SIGUSR1)
	fmt.Fprintln(stdin, "deliver")
	expect("handled 4")
	stdin.Close()
	expect("handled 4")
	expect("mask ok")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("er collect: %v\n%s", err, stderr.String())
	}
	if points := signalPoints(t, exp); points != 5 {
		t.Errorf("%d signal sample points, want 5 (3 raised, 1 sent to the target, 1 sent to er)", points)
	}
	const warn = "has a handler of its own for SIGUSR1, which -l takes for sample points"
	if n := strings.Count(stderr.String(), warn); n != 1 {
		t.Errorf("er collect's stderr says %d times %q, want once:\n%s", n, warn, stderr.String())
	}
	if h := er(t, "", nil, "print", "-header", exp); !strings.Contains(h.stdout, warn) || !strings.Contains(h.stdout, fmt.Sprintf("process %d (sigown", target)) {
		t.Errorf("er print -header does not say that process %d %s:\n%s", target, warn, h.stdout)
	}
}

// TestProgramPauseHandler: the same for the -y signal: the program's own signals pause and resume
// recording and run its handler.
func TestProgramPauseHandler(t *testing.T) {
	needCollect(t)
	prog := cbuild(t, "sigown", "-O1", "-g")
	exp, r := collectExp(t, nil, "-y", "USR2,r", prog, strconv.Itoa(int(syscall.SIGUSR2)), "2")
	if r.code != 0 || r.stdout != "ready\nhandled 2\nmask ok\n" {
		t.Fatalf("er collect -y USR2,r: exit %d, the target printed %q, want its handler run twice\n%s", r.code, r.stdout, r.stderr)
	}
	d := openExp(t, exp)
	if !hasEvent(d, "pause", "") || !hasEvent(d, "resume", "") {
		t.Errorf("no pause and resume events: %+v", d.Log.Events)
	}
	if !strings.Contains(r.stderr, "has a handler of its own for SIGUSR2, which -y takes to pause and resume recording") {
		t.Errorf("er collect does not warn of the program's SIGUSR2 handler:\n%s", r.stderr)
	}
}
