package perfevent

import (
	"errors"
	"math"

	"golang.org/x/sys/unix"
)

// Capabilities says what perf events can do on this machine, for this user.
type Capabilities struct {
	Paranoid         int    // kernel.perf_event_paranoid (see Paranoid); 99 when unreadable
	ClockProfiling   bool   // the task clock can be sampled (user mode at least)
	ClockError       string // why not, when ClockProfiling is false
	KernelStacks     bool   // samples may include kernel mode and kernel call chains
	HardwareCounters bool   // a hardware PMU is usable (the cycles counter opens)
	HardwareError    string // why not, when HardwareCounters is false
	MaxSampleRate    int    // kernel.perf_event_max_sample_rate, samples per second per CPU
	MaxStack         int    // kernel.perf_event_max_stack, frames in a call chain
	// MinPeriodNS is the shortest clock period worth asking for: the kernel
	// raises clock periods below 10 µs to 10 µs, and throttles sampling above
	// MaxSampleRate.
	MinPeriodNS uint64
	MaxPeriodNS uint64 // the longest period the kernel accepts
	NumCPU      int    // online CPUs
}

// Probe reports what this machine supports, opening (and closing at once)
// test events on the calling process.
func Probe() Capabilities {
	c := Capabilities{Paranoid: 99, MaxPeriodNS: math.MaxInt64}
	if p, err := Paranoid(); err == nil {
		c.Paranoid = p
	}
	c.MaxSampleRate, _ = readIntFile(maxSampleRatePath)
	c.MaxStack, _ = readIntFile(maxStackPath)
	c.MinPeriodNS = 10000
	if c.MaxSampleRate > 0 {
		c.MinPeriodNS = max(c.MinPeriodNS, uint64(1e9/c.MaxSampleRate))
	}
	if cpus, err := OnlineCPUs(); err == nil {
		c.NumCPU = len(cpus)
	}

	user := TaskClock(10e6)
	user.ExcludeKernel = true
	if err := tryOpen(user); err != nil {
		c.ClockError = err.Error()
	} else {
		c.ClockProfiling = true
	}
	kernel := TaskClock(10e6)
	kernel.KernelCallchain = true
	c.KernelStacks = tryOpen(kernel) == nil

	hw := HardwareCounter(unix.PERF_COUNT_HW_CPU_CYCLES, 1e6)
	hw.ExcludeKernel = true
	if err := tryOpen(hw); err != nil {
		c.HardwareError = err.Error()
	} else {
		c.HardwareCounters = true
	}
	return c
}

// tryOpen opens o, disabled, on the calling process and any CPU, and closes it.
func tryOpen(o Options) error {
	o.Disabled = true
	attr, err := o.attr(4096)
	if err != nil {
		return err
	}
	fd, err := openEvent(attr, &o, 0, -1)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// ClockAvailable reports whether this process may open a user-mode task-clock event on a process
// of its own: the least clock profiling needs. The error says why not (perf_event_paranoid, a
// seccomp filter, a kernel without perf events).
func ClockAvailable() error {
	o := TaskClock(10e6)
	o.ExcludeKernel = true
	return tryOpen(o)
}

// CountInSamples reports whether the kernel gives inherited task-clock events their thread's count in
// each sample (Options.ReadCount): kernels since a 2024 change do, older ones refuse PERF_SAMPLE_READ
// with inherit (EINVAL).
func CountInSamples() bool {
	o := TaskClock(10e6)
	o.ExcludeKernel = true
	o.InheritStat = true
	o.ReadCount = true
	return tryOpen(o) == nil
}

// SiblingsInSamples reports whether the kernel gives inherited task-clock events' samples the counts of
// their group (Options.ReadGroup): a leader and a counting sibling are opened as OpenTask opens them.
func SiblingsInSamples() bool {
	o := TaskClock(10e6)
	o.ExcludeKernel = true
	o.InheritStat = true
	o.ReadCount = true
	o.ReadGroup = true
	o.Disabled = true
	sb := Sibling{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CONTEXT_SWITCHES}
	o.Siblings = []Sibling{sb}
	attr, err := o.attr(4096)
	if err != nil {
		return false
	}
	fd, err := openEvent(attr, &o, 0, -1)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	sa := siblingAttr(attr, sb, 4096)
	sfd, err := unix.PerfEventOpen(sa, 0, -1, fd, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return false
	}
	unix.Close(sfd)
	return true
}

// ProbeSibling reports whether a sibling event sb could be opened on the calling process, counting
// user mode only where the kernel permits no more (perf_event_paranoid 2): nil when it can be, else the
// kernel's refusal, explained.
func ProbeSibling(sb Sibling) error {
	o := Options{Type: sb.Type, Config: sb.Config, PeriodNS: max(sb.Period, 1), Disabled: true}
	attr, err := o.attr(4096)
	if err != nil {
		return err
	}
	attr.Ext1, attr.Ext2 = sb.Config1, sb.Config2
	attr.Bits |= uint64(sb.Precise&3) << 15
	attr.Sample_type = 0
	for _, user := range []bool{false, true} {
		if user {
			attr.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv
			o.ExcludeKernel = true
		}
		var fd int
		fd, err = openEvent(attr, &o, 0, -1)
		if err == nil {
			unix.Close(fd)
			return nil
		}
		if !errors.Is(err, ErrPermission) {
			return err
		}
	}
	return err
}
