package collect

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// A process of the target that installs a seccomp filter denying one of the collector library's
// system calls stops recording there, before the filter is in force (preload/c/seccomp.c); the
// processes it starts after that inherit the filter, and the library records nothing in them.

// seccompNote is what the library said of a filter that denies it: in which image, when, which of
// its system calls, and what the filter does with it.
type seccompNote struct {
	p   *proc
	pid uint32
	t   int64  // ns since the session start
	nr  uint32 // the system call (x86-64 number)
	ret uint32 // what the filter returns for it: SECCOMP_RET_* with its data
}

// The library's words that are not a system call, seccompAllowed and seccompRefused, and retStrict,
// what it says the filter returns for strict mode (SECCOMP_MODE_STRICT), are generated from
// internal/tracedef (controllayout.go).

// libraryCalls names the system calls the collector library makes (the table calls[] of
// preload/c/seccomp.c; TestSeccompCallNames compares them).
var libraryCalls = map[uint32]string{
	unix.SYS_OPENAT: "openat", unix.SYS_MKDIRAT: "mkdirat", unix.SYS_FCHOWNAT: "fchownat",
	unix.SYS_NEWFSTATAT: "newfstatat", unix.SYS_STAT: "stat", unix.SYS_ACCESS: "access", unix.SYS_CLOSE: "close",
	unix.SYS_FSTAT: "fstat", unix.SYS_FCNTL: "fcntl", unix.SYS_PRLIMIT64: "prlimit64", unix.SYS_FALLOCATE: "fallocate",
	unix.SYS_PWRITE64: "pwrite64", unix.SYS_WRITE: "write", unix.SYS_READ: "read", unix.SYS_READLINK: "readlink",
	unix.SYS_GETCWD: "getcwd", unix.SYS_MMAP: "mmap", unix.SYS_MUNMAP: "munmap", unix.SYS_MADVISE: "madvise",
	unix.SYS_GETPID: "getpid", unix.SYS_GETPPID: "getppid", unix.SYS_GETTID: "gettid", unix.SYS_GETEUID: "geteuid",
	unix.SYS_PIDFD_OPEN: "pidfd_open", unix.SYS_POLL: "poll", unix.SYS_CLOCK_GETTIME: "clock_gettime",
	unix.SYS_RT_SIGACTION: "rt_sigaction", unix.SYS_RT_SIGPROCMASK: "rt_sigprocmask", unix.SYS_RT_SIGPENDING: "rt_sigpending",
	unix.SYS_RT_SIGTIMEDWAIT: "rt_sigtimedwait", unix.SYS_GETDENTS64: "getdents64", unix.SYS_TIMER_CREATE: "timer_create",
	unix.SYS_TIMER_SETTIME: "timer_settime", unix.SYS_TIMER_DELETE: "timer_delete", unix.SYS_GETCPU: "getcpu",
	unix.SYS_TGKILL: "tgkill",
}

func callName(nr uint32) string {
	if n, ok := libraryCalls[nr]; ok {
		return n
	}
	return fmt.Sprintf("number %d", nr)
}

// The actions of a seccomp filter (SECCOMP_RET_*, linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retKillThread  = 0x00000000
	retTrap        = 0x00030000
	retErrno       = 0x00050000
	retUserNotif   = 0x7fc00000
	retTrace       = 0x7ff00000
	retActionFull  = 0xffff0000
	retData        = 0x0000ffff
)

// filterAction says in words what a filter that returns ret does with a system call.
func filterAction(ret uint32) string {
	if ret == retStrict {
		return "strict mode, SECCOMP_MODE_STRICT: only read, write, _exit and sigreturn; any other call kills the process"
	}
	switch ret & retActionFull {
	case retKillProcess:
		return "SECCOMP_RET_KILL_PROCESS: it kills the process"
	case retKillThread:
		return "SECCOMP_RET_KILL_THREAD: it kills the thread"
	case retTrap:
		return "SECCOMP_RET_TRAP: it sends the thread SIGSYS"
	case retErrno:
		return fmt.Sprintf("SECCOMP_RET_ERRNO: it fails with %v", unix.Errno(ret&retData))
	case retUserNotif:
		return "SECCOMP_RET_USER_NOTIF: a supervisor answers it"
	case retTrace:
		return "SECCOMP_RET_TRACE: a tracer answers it"
	}
	return fmt.Sprintf("%#x, which the kernel takes as SECCOMP_RET_KILL_PROCESS", ret)
}

// seccompInstalled acts on the library's word that process m.pid (image p) installs a seccomp filter.
// An image er does not know yet (a fork child that sandboxes itself at once: its message can come
// before er reads its fork) has it acted on at the end (seccompLate).
func (s *Session) seccompInstalled(p *proc, m message, t int64) {
	if p == nil && !s.finishing { // (finishing: every record is read, every image known)
		s.seccompPending = append(s.seccompPending, m)
		return
	}
	prog := "?"
	if p != nil {
		prog = p.prog
	}
	switch m.signo {
	case seccompAllowed:
		if p.open() {
			p.w.Event(experiment.Event{Time: t, Kind: "comment", Pid: m.pid, Text: fmt.Sprintf(
				"process %d (%s) installed a seccomp filter that allows the collector library's system calls: recording goes on", m.pid, prog)})
		}
		return
	case seccompRefused:
		if p.open() {
			p.w.Event(experiment.Event{Time: t, Kind: "comment", Pid: m.pid, Text: fmt.Sprintf(
				"process %d (%s): the kernel refused its seccomp filter (%v); the collector library's recording stays stopped", m.pid, prog, unix.Errno(m.aux))})
		}
		return
	}
	if p == nil {
		return
	}
	n := &seccompNote{p: p, pid: m.pid, t: t, nr: m.signo, ret: m.aux}
	p.seccomp = n
	text := fmt.Sprintf("process %d (%s) installed a seccomp filter that denies the collector library's system call %s "+
		"(%s): %s stopped in it at %.3f s, before the filter took effect, and records nothing in the processes it starts "+
		"after that, which inherit the filter; what was recorded before is kept",
		m.pid, prog, callName(n.nr), filterAction(n.ret), libraryUses(s.spec, s.sigprof), float64(t)/1e9)
	if p.open() {
		p.w.Event(experiment.Event{Time: t, Kind: "warning", Pid: m.pid, Text: text})
	}
	if s.seccompDenials++; s.seccompDenials <= 3 {
		fmt.Fprintf(s.stderr, "er collect: warning: %s\n", text)
	}
	for _, q := range s.images {
		if q != p {
			s.seccompInherited(q)
		}
	}
}

// seccompLate acts on the messages of images er did not know when they came.
func (s *Session) seccompLate() {
	for _, m := range s.seccompPending {
		t := m.time - s.startNS
		s.seccompInstalled(s.imageAt(m.pid, t), m, t)
	}
	s.seccompPending = nil
}

// seccompSummary says on stderr how many more processes than the first few installed a filter that
// denies the library (each experiment says so).
func (s *Session) seccompSummary() {
	if s.seccompDenials > 3 {
		fmt.Fprintf(s.stderr, "er collect: and %d more processes installed such seccomp filters (see their experiments' logs)\n", s.seccompDenials-3)
	}
}

// seccompOf returns the filter that denies the library in image p: one its creators (or the images
// exec replaced) installed before p began.
func (p *proc) seccompOf() *seccompNote {
	for child, q := p, p.parent; q != nil; child, q = q, q.parent {
		if q.seccomp != nil && q.seccomp.t <= child.start {
			return q.seccomp
		}
	}
	return nil
}

// seccompInherited warns, once, in the experiment of image p, when it runs under a filter that denies
// the library, installed by a process before p began.
func (s *Session) seccompInherited(p *proc) {
	n := p.seccompOf()
	if n == nil || p.seccompSaid || !p.open() {
		return
	}
	p.seccompSaid = true
	p.w.Event(experiment.Event{Time: p.start, Kind: "warning", Pid: p.pid, Text: fmt.Sprintf(
		"the collector library records nothing in process %d (%s): it runs under the seccomp filter that process %d (%s) installed at %.3f s, "+
			"which denies the library's system call %s (%s), so %s is off in it",
		p.pid, p.prog, n.pid, n.p.prog, float64(n.t)/1e9, callName(n.nr), filterAction(n.ret), libraryUses(s.spec, s.sigprof))})
}

// ownSeccompFilters returns the seccomp filters er itself runs under (its parent's, which the target
// inherits): Seccomp_filters of /proc/self/status, 0 without any (-1: filters, not counted).
func ownSeccompFilters() int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil || statusField(string(status), "Seccomp") != "2" {
		return 0
	}
	n, err := strconv.Atoi(statusField(string(status), "Seccomp_filters"))
	if err != nil {
		return -1
	}
	return n
}

// probeWait bounds the probe: a filter may hand a call to a supervisor that never answers.
const probeWait = 10 * time.Second

// probeLibrary runs the collector library lib as a program, the probe of seccomp.c, under the filters
// er runs under: "" when it made every one of its system calls, or what stopped it.
func probeLibrary(lib string) string {
	dir, err := os.MkdirTemp("", "er-probe-")
	if err != nil {
		return "its probe could not run: " + err.Error()
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, lib)
	cmd.Env = []string{envSeccompProbe + "=" + dir}
	var out bytes.Buffer
	cmd.Stdout = &out
	err = cmd.Run()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	var ws syscall.WaitStatus
	if cmd.ProcessState != nil {
		ws = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	switch {
	case err == nil:
		return ""
	case ctx.Err() != nil:
		return fmt.Sprintf("its system call %s did not return in %v (a filter that hands it to a supervisor, SECCOMP_RET_USER_NOTIF?)", strings.TrimPrefix(last, "call "), probeWait)
	case ws.Signaled():
		if name, ok := strings.CutPrefix(last, "call "); ok {
			return fmt.Sprintf("they kill it at its system call %s (its probe was killed by %s)", name, unix.SignalName(ws.Signal()))
		}
		return fmt.Sprintf("they kill it (its probe was killed by %s before its first call)", unix.SignalName(ws.Signal()))
	case ws.Exited() && ws.ExitStatus() == 1:
		f := strings.Fields(last)
		if len(f) == 3 && f[0] == "failed" {
			if n, err := strconv.Atoi(f[2]); err == nil {
				return fmt.Sprintf("they fail its system call %s with %v", f[1], syscall.Errno(n))
			}
		}
	}
	return fmt.Sprintf("its probe failed (%v): %s", err, last)
}

// checkOwnSeccomp probes, when er runs under seccomp filters, whether they let the collector library
// make its system calls in the target (which inherits them): if they do, the library is told that
// they are checked (ER_SECCOMP_CHECKED); if not, it is not loaded, and er says why. It returns what
// the library was to be loaded for that is now off, or an error where nothing could be recorded.
func (s *Session) checkOwnSeccomp() error {
	n := ownSeccompFilters()
	if n == 0 || s.lib == "" {
		return nil
	}
	why := "its probe could not count them (no Seccomp_filters in /proc/self/status)"
	if n > 0 {
		if why = probeLibrary(s.lib); why == "" {
			s.seccompChecked = n
			return nil
		}
	}
	uses := libraryUses(s.spec, s.sigprof)
	if s.sigprof {
		return fmt.Errorf("er collect runs under seccomp filters (%d, from the process that started it), which the target inherits, "+
			"and the collector library cannot run under them: %s; clock profiling needs perf events (%s) or the library", max(n, 1), why, s.sigprofWhy)
	}
	text := fmt.Sprintf("er collect runs under seccomp filters (%d, from the process that started it), which the target inherits, "+
		"and the collector library cannot run under them: %s; so %s is off, and the target runs without the library", max(n, 1), why, uses)
	s.seccompText = text
	s.lib = ""
	fmt.Fprintf(s.stderr, "er collect: warning: %s\n", text)
	return nil
}
