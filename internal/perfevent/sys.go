package perfevent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Sentinel errors, for errors.Is on what OpenTask and Probe return.
var (
	// ErrPermission: the kernel refused perf_event_open (EACCES or EPERM).
	ErrPermission = errors.New("perf events not permitted")
	// ErrUnsupported: the event does not exist here (ENOENT, EOPNOTSUPP, ENODEV),
	// for example a hardware counter on a machine without a PMU.
	ErrUnsupported = errors.New("perf event not supported")
	// ErrClosed is returned by Wait and Drain after Close.
	ErrClosed = errors.New("perfevent: group closed")
	// ErrTaskExited is returned by Wait once the task and every thread and
	// process it created have exited; Drain once more to read their last records.
	ErrTaskExited = errors.New("perfevent: the task and all its descendants have exited")
)

// Files under /proc and /sys that this package reads; variables so tests can point them elsewhere.
var (
	paranoidPath      = "/proc/sys/kernel/perf_event_paranoid"
	maxSampleRatePath = "/proc/sys/kernel/perf_event_max_sample_rate"
	maxStackPath      = "/proc/sys/kernel/perf_event_max_stack"
	mlockKBPath       = "/proc/sys/kernel/perf_event_mlock_kb"
	onlineCPUsPath    = "/sys/devices/system/cpu/online"
)

// OpenError is a perf_event_open failure: which event, for which task and
// CPU, the errno, and what it means here. errors.Is matches Kind (ErrPermission,
// ErrUnsupported) and the errno.
type OpenError struct {
	Event  string     // event name, as EventName gives it
	Pid    int        // the task
	CPU    int        // the CPU, -1 for any
	Errno  unix.Errno // what the kernel returned
	Kind   error      // ErrPermission, ErrUnsupported or nil
	Detail string     // the cause and what to do, in words
}

// Error says which event failed, for which task and CPU, and why.
func (e *OpenError) Error() string {
	s := fmt.Sprintf("perf_event_open %s (pid %d, cpu %d): %v", e.Event, e.Pid, e.CPU, e.Errno)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns Kind (when set) and Errno.
func (e *OpenError) Unwrap() []error {
	if e.Kind != nil {
		return []error{e.Kind, e.Errno}
	}
	return []error{e.Errno}
}

// openEvent calls perf_event_open(attr, pid, cpu, -1, CLOEXEC) and explains a failure.
func openEvent(attr *unix.PerfEventAttr, o *Options, pid, cpu int) (int, error) {
	for {
		fd, err := unix.PerfEventOpen(attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, explainOpen(err, o, pid, cpu)
		}
		return fd, nil
	}
}

// explainOpen turns a perf_event_open errno into an *OpenError saying what happened and what to do.
func explainOpen(err error, o *Options, pid, cpu int) error {
	errno, ok := err.(unix.Errno)
	if !ok {
		return fmt.Errorf("perf_event_open %s (pid %d, cpu %d): %w", EventName(o.Type, o.Config), pid, cpu, err)
	}
	e := &OpenError{Event: EventName(o.Type, o.Config), Pid: pid, CPU: cpu, Errno: errno}
	switch errno {
	case unix.EACCES, unix.EPERM:
		e.Kind = ErrPermission
		e.Detail = permissionDetail(o)
	case unix.ENOENT, unix.EOPNOTSUPP, unix.ENODEV:
		e.Kind = ErrUnsupported
		switch {
		case isHardware(o.Type):
			e.Detail = fmt.Sprintf("hardware counter %s is not supported on this machine (no PMU)", e.Event)
		case errno == unix.EOPNOTSUPP:
			e.Detail = fmt.Sprintf("event %s cannot be sampled on this kernel", e.Event)
		default:
			e.Detail = fmt.Sprintf("event %s is not supported by this kernel", e.Event)
		}
	case unix.ESRCH:
		e.Detail = fmt.Sprintf("no process %d", pid)
	case unix.EMFILE, unix.ENFILE:
		e.Detail = "too many open files: one event per CPU is needed; raise the limit (ulimit -n)"
	case unix.EOVERFLOW:
		lim, _ := readIntFile(maxStackPath)
		e.Detail = fmt.Sprintf("MaxStack %d exceeds %s (%d)", o.MaxStack, maxStackPath, lim)
	case unix.E2BIG:
		e.Detail = "this kernel does not know the perf_event_attr size this program uses (kernel too old)"
	case unix.EINVAL:
		e.Detail = fmt.Sprintf("the kernel rejected the event attributes (period %d, regs mask %#x, stack %d bytes, max stack %d, build id %v); "+
			"the kernel may be too old for one of them", o.PeriodNS, o.SampleRegsUser, o.SampleStackUser, o.MaxStack, o.BuildID)
	}
	return e
}

// permissionDetail explains EACCES/EPERM from perf_event_open in terms of kernel.perf_event_paranoid.
func permissionDetail(o *Options) string {
	p, err := Paranoid()
	if err != nil {
		return fmt.Sprintf("cannot read %s (%v); run with CAP_PERFMON or as root, or fall back to the SIGPROF clock", paranoidPath, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is %d", paranoidPath, p)
	switch {
	case p >= 3:
		b.WriteString(" (perf events are disabled for unprivileged users)")
	case p == 2:
		b.WriteString(" (unprivileged users may only sample user space")
		if !o.ExcludeKernel || o.KernelCallchain {
			b.WriteString("; this event asks for kernel samples or kernel call stacks")
		}
		b.WriteString(")")
	}
	if os.Geteuid() == 0 {
		b.WriteString("; running as root, so a seccomp filter or security module (for example a container's) is blocking perf_event_open")
	}
	b.WriteString("; to allow it: sysctl kernel.perf_event_paranoid=1 (or -1 for kernel stacks), or run with CAP_PERFMON, or fall back to the SIGPROF clock")
	return b.String()
}

// Paranoid returns the value of /proc/sys/kernel/perf_event_paranoid:
// -1 allows everything, 0 disallows raw tracepoints, 1 CPU-wide events,
// 2 kernel profiling, and 3 (on some distributions) all use by unprivileged users.
func Paranoid() (int, error) {
	return readIntFile(paranoidPath)
}

// readIntFile reads a file holding one decimal integer.
func readIntFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// OnlineCPUs returns the numbers of the online CPUs, from /sys/devices/system/cpu/online.
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile(onlineCPUsPath)
	if err != nil {
		return nil, err
	}
	cpus, err := ParseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", onlineCPUsPath, err)
	}
	return cpus, nil
}

// ParseCPUList parses a kernel CPU list such as "0-1,4,6-7" into ascending CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty CPU list")
	}
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q at %q", s, part)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q at %q", s, part)
			}
		}
		if len(cpus) > 0 && a <= cpus[len(cpus)-1] {
			return nil, fmt.Errorf("bad CPU list %q: %q is not ascending", s, part)
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("bad CPU list %q: range %q too large", s, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// tracefsDirs are where the kernel lists its trace events (tracefs, or tracefs under debugfs).
var tracefsDirs = []string{"/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"}

// TracepointID returns the id of kernel trace event system:name (sched:sched_stat_runtime), the
// config of a PERF_TYPE_TRACEPOINT event. tracefs is often readable by root only.
func TracepointID(system, name string) (uint64, error) {
	if system == "" || name == "" || strings.ContainsAny(system+name, "/.") {
		return 0, fmt.Errorf("perfevent: %q:%q is not a trace event name", system, name)
	}
	var firstErr error
	for _, dir := range tracefsDirs {
		path := filepath.Join(dir, system, name, "id")
		b, err := os.ReadFile(path)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("perfevent: %s: %q is not an event id", path, strings.TrimSpace(string(b)))
		}
		return id, nil
	}
	return 0, fmt.Errorf("perfevent: the id of trace event %s:%s: %w", system, name, firstErr)
}
