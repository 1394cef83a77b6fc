package perfevent

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// StartStopped starts cmd traced, so that it stops at its first instruction
// (the SIGTRAP that follows exec) before running any of its code: open events
// on cmd.Process.Pid with OpenTask, then call Detach to let it run.
//
// The OS-thread rule: Linux accepts ptrace requests only from the thread that
// became the tracer, the one that started the process. StartStopped therefore
// locks the calling goroutine to its OS thread (runtime.LockOSThread), and
// Detach, which unlocks it, must be called from the same goroutine. If
// StartStopped returns an error, the goroutine is unlocked again and the
// process, if it was started, is killed and reaped.
func StartStopped(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			runtime.UnlockOSThread()
			return fmt.Errorf("perfevent: waiting for %s (pid %d) to stop at exec: %w", cmd.Path, pid, err)
		}
		break
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		if ws.Stopped() {
			cmd.Process.Kill()
		}
		cmd.Wait()
		runtime.UnlockOSThread()
		return fmt.Errorf("perfevent: %s (pid %d) did not stop at exec: %s", cmd.Path, pid, describeWait(ws))
	}
	return nil
}

// describeWait says in words what a wait status reports.
func describeWait(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exited with status %d", ws.ExitStatus())
	case ws.Signaled():
		return fmt.Sprintf("killed by signal %v", ws.Signal())
	case ws.Stopped():
		return fmt.Sprintf("stopped by signal %v", ws.StopSignal())
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// Detach lets a process started by StartStopped run, without delivering the
// exec SIGTRAP, and unlocks the goroutine from its OS thread. Call it from
// the goroutine that called StartStopped.
func Detach(pid int) error {
	defer runtime.UnlockOSThread()
	if err := unix.PtraceDetach(pid); err != nil {
		return fmt.Errorf("perfevent: ptrace detach pid %d: %w (Detach must run on the goroutine that called StartStopped)", pid, err)
	}
	return nil
}
