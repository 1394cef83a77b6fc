package perfevent

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procState returns the state letter of /proc/PID/stat ("R", "S", "t" for traced-stopped...).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		t.Fatalf("bad /proc/%d/stat: %q", pid, s)
	}
	return s[i+2 : i+3]
}

func TestStartStoppedDetach(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", "exit 7")
	if err := StartStopped(cmd); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	time.Sleep(20 * time.Millisecond)
	if st := procState(t, pid); st != "t" {
		t.Errorf("state %q after StartStopped, want t (stopped by the tracer)", st)
	}
	if err := Detach(pid); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("exit: %v, want status 7 (the exec SIGTRAP must not be delivered)", err)
	}
}

func TestStartStoppedErrors(t *testing.T) {
	cmd := exec.Command("/nonexistent/program")
	if err := StartStopped(cmd); err == nil {
		t.Error("StartStopped of a missing program succeeded")
	}
	// Detach of a process we do not trace fails, and says why.
	err := Detach(os.Getpid())
	if err == nil || !strings.Contains(err.Error(), "goroutine that called StartStopped") {
		t.Errorf("Detach(self): %v", err)
	}
}
