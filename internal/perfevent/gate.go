package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// A process that StartGated starts runs this program's own binary first, under the argv[0]
// gateArg0, and waits there, before the exec of the program it is to become, until Release.
// Without ptrace: where the kernel refuses it (er is itself traced by a tracer that follows its
// children, such as strace -f; kernel.yama.ptrace_scope=3; a seccomp filter or security module
// that denies ptrace), events opened on the waiting process with Options.EnableOnExec start
// counting at its exec, as perf record starts its workload.
const gateArg0 = "[er exec gate]"

// gatePreload renames LD_PRELOAD in the waiting process's environment: the library meant for the
// program must not be loaded into this binary (a cgo binary, dynamically linked). The gate
// renames it back for the exec.
const gatePreload = "ER_GATE_LD_PRELOAD"

// The gate's descriptors in the waiting process: it reads a byte (or end of file) from gateFD
// before the exec; statusFD is closed by the exec, or carries its errno when the exec fails.
const (
	gateFD   = 3
	statusFD = 4
)

// gateExitFailed is the waiting process's exit status when the exec fails (as a shell's).
const gateExitFailed = 127

func init() {
	// Package initialization runs on the main thread (the runtime locks the main goroutine to it
	// until main.main): the exec is the thread group leader's, and the process keeps its pid and
	// the events opened on it.
	if len(os.Args) >= 2 && os.Args[0] == gateArg0 {
		runGate(os.Args[1], os.Args[2:])
	}
}

// runGate waits at the gate, then execs path with args and the environment as it was meant.
// It never returns.
func runGate(path string, args []string) {
	var b [1]byte
	for {
		// One byte: go on. End of file: er is gone; the program runs anyway, as a process that a
		// tracer stopped at exec runs on when the tracer dies.
		if _, err := syscall.Read(gateFD, b[:]); err != syscall.EINTR {
			break
		}
	}
	_ = syscall.Close(gateFD)
	syscall.CloseOnExec(statusFD)
	err := syscall.Exec(path, args, gateEnv(os.Environ(), false))
	var e syscall.Errno
	if !errors.As(err, &e) {
		e = syscall.EINVAL
	}
	var msg [4]byte
	binary.LittleEndian.PutUint32(msg[:], uint32(e))
	_, _ = syscall.Write(statusFD, msg[:])
	os.Exit(gateExitFailed)
}

// gateEnv renames each LD_PRELOAD to gatePreload (in), or back, keeping the order of the variables.
func gateEnv(env []string, in bool) []string {
	from, to := "LD_PRELOAD=", gatePreload+"="
	if !in {
		from, to = to, from
	}
	out := make([]string, len(env))
	for i, e := range env {
		if rest, ok := strings.CutPrefix(e, from); ok {
			e = to + rest
		}
		out[i] = e
	}
	return out
}

// Gate is a process started by StartGated, waiting before its exec.
type Gate struct {
	cmd    *exec.Cmd
	w      *os.File // the gate's write end
	status *os.File // the status pipe's read end
}

// StartGated starts cmd without ptrace: the process runs this binary, which must import this
// package, and waits before it execs cmd.Path; cmd.Process is that process, which the program
// becomes. Open its events with Options.Disabled and EnableOnExec, then Release it. cmd must not
// have ExtraFiles; its SysProcAttr.Ptrace is cleared.
func StartGated(cmd *exec.Cmd) (*Gate, error) {
	if len(cmd.ExtraFiles) > 0 {
		return nil, errors.New("perfevent: StartGated: the command has ExtraFiles")
	}
	if cmd.SysProcAttr != nil {
		cmd.SysProcAttr.Ptrace = false
	}
	gr, gw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("perfevent: the exec gate's pipe: %w", err)
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		gr.Close()
		gw.Close()
		return nil, fmt.Errorf("perfevent: the exec gate's pipe: %w", err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	path := cmd.Path
	cmd.Path = "/proc/self/exe"
	cmd.Args = append([]string{gateArg0, path}, cmd.Args...)
	cmd.Env = gateEnv(env, true)
	cmd.ExtraFiles = []*os.File{gr, sw}
	err = cmd.Start()
	gr.Close()
	sw.Close()
	if err != nil {
		gw.Close()
		sr.Close()
		return nil, err
	}
	return &Gate{cmd: cmd, w: gw, status: sr}, nil
}

// Release lets the waiting process exec, and returns once it has: the exec's error if it failed
// (the process then exits with status 127; Wait for it).
func (g *Gate) Release() error {
	_, werr := g.w.Write([]byte{1})
	g.w.Close()
	defer g.status.Close()
	var msg [4]byte
	n, err := io.ReadFull(g.status, msg[:])
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		if werr != nil {
			// The gate was closed without the byte: the process was gone already.
			return fmt.Errorf("perfevent: the process %d waiting to exec is gone: %w", g.cmd.Process.Pid, werr)
		}
		return nil
	case n == 4:
		return &os.PathError{Op: "exec", Path: g.cmd.Args[1], Err: syscall.Errno(binary.LittleEndian.Uint32(msg[:]))}
	}
	return fmt.Errorf("perfevent: reading whether process %d could exec: %v", g.cmd.Process.Pid, err)
}

// Abort kills the waiting process and reaps it.
func (g *Gate) Abort() {
	_ = g.cmd.Process.Kill()
	g.w.Close()
	g.status.Close()
	_ = g.cmd.Wait()
}
