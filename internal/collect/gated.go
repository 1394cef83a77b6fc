package collect

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"er/internal/experiment"
	"er/internal/perfevent"
)

// startTarget starts cmd so that nothing of the program runs before its events are open: stopped
// at its exec by ptrace (perfevent.StartStopped), or, where the kernel refuses ptrace, waiting
// before its exec at a gate (perfevent.StartGated), with events that start counting at the exec.
// It returns the command that started: cmd, or the gate's.
func (s *Session) startTarget(cmd *exec.Cmd) (*exec.Cmd, error) {
	err := perfevent.StartStopped(cmd)
	if err == nil || !errors.Is(err, syscall.EPERM) {
		return cmd, err
	}
	// PTRACE_TRACEME failed in the child (or its exec did, which the gate's exec then says).
	why := ptraceRefusal(os.Getpid())
	gated := exec.Command(cmd.Path)
	gated.Args, gated.Env, gated.Dir = cmd.Args, cmd.Env, cmd.Dir
	gated.Stdin, gated.Stdout, gated.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	g, gerr := perfevent.StartGated(gated)
	if gerr != nil {
		return nil, fmt.Errorf("%v: ptrace was refused (%s), and starting the target without it failed too: %v", err, why, gerr)
	}
	s.gate, s.gateWhy = g, why
	return gated, nil
}

// release lets the target that startTarget started run.
func (s *Session) release() error {
	if s.gate != nil {
		err := s.gate.Release()
		s.awaitExec = err == nil
		return err
	}
	return perfevent.Detach(s.pid)
}

// abandonTarget kills the target that startTarget started, before release, and reaps it.
func (s *Session) abandonTarget() {
	if s.gate != nil {
		s.gate.Abort()
		return
	}
	_ = s.cmd.Process.Kill()
	_ = perfevent.Detach(s.pid)
	_ = s.cmd.Wait()
}

// noteGated says in the founder's log that the target started without ptrace, and why.
func (s *Session) noteGated() {
	if s.gate != nil {
		s.w.Event(experiment.Event{Kind: "comment", Pid: uint32(s.pid), Text: "the target was started without ptrace, which the kernel refused (" +
			s.gateWhy + "): it waited before its exec, and its events started at the exec"})
	}
}

// gatedOptions sets o to start counting at the target's exec when it waits at the gate. Attached
// (-P), the events open disabled, and openEvents enables them together once every thread has its
// own: the experiment's time starts then.
func (s *Session) gatedOptions(o *perfevent.Options) {
	switch {
	case s.gate != nil:
		o.Disabled, o.EnableOnExec = true, true
	case s.cmd == nil:
		o.Disabled = true
	}
}

// ptraceRefusal says why the kernel refuses PTRACE_TRACEME to a child of process pid (er): which
// process traces it (a tracer that follows its children has the child already), or what forbids
// ptrace here.
func ptraceRefusal(pid int) string {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if tp, _ := strconv.Atoi(statusField(string(status), "TracerPid")); tp > 0 {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", tp))
		return fmt.Sprintf("er (process %d) is traced by process %d (%s), whose tracing follows er's children: TracerPid in /proc/%d/status; "+
			"trace er without following its children (strace without -f), or attach the tracer to the target once it runs",
			pid, tp, strings.TrimSpace(string(comm)), pid)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		return "kernel.yama.ptrace_scope is 3: ptrace is disabled on this machine"
	}
	if m := statusField(string(status), "Seccomp"); m != "" && m != "0" {
		return fmt.Sprintf("er runs under a seccomp filter (Seccomp: %s in /proc/%d/status), which may deny ptrace", m, pid)
	}
	return "a security module may deny ptrace here"
}

// statusField returns the value of field name in the text of a /proc/PID/status file, or "".
func statusField(status, name string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
