package collect

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStatusField(t *testing.T) {
	status := "Name:\tcat\nTracerPid:\t4242\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	for name, want := range map[string]string{"TracerPid": "4242", "Seccomp": "2", "Seccomp_filters": "1", "Missing": ""} {
		if got := statusField(status, name); got != want {
			t.Errorf("statusField(%s) = %q, want %q", name, got, want)
		}
	}
}

// TestPtraceRefusal: of a process traced by strace, ptraceRefusal names the tracer; of this one
// (not traced), what else may forbid ptrace.
func TestPtraceRefusal(t *testing.T) {
	if why := ptraceRefusal(os.Getpid()); strings.Contains(why, "is traced by") {
		t.Fatalf("ptraceRefusal of this untraced process: %s", why)
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (.ci/run installs it)")
	}
	cmd := exec.Command(strace, "-qq", "-o", os.DevNull, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The traced child of strace: sleep, once strace has attached.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		if f := strings.Fields(string(kids)); len(f) == 1 {
			pid, _ := strconv.Atoi(f[0])
			why := ptraceRefusal(pid)
			if strings.Contains(why, "is traced by process "+strconv.Itoa(cmd.Process.Pid)+" (strace)") {
				return
			}
			if !strings.Contains(why, "is traced by") {
				time.Sleep(5 * time.Millisecond) // not attached yet
				continue
			}
			t.Fatalf("ptraceRefusal(%d): %s", pid, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("strace's child never showed up traced")
}
