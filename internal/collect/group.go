package collect

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/perfevent"
)

// openEvents opens the perf events: the clock, or without clock profiling a dummy event that
// reports the processes' forks, execs, exits and mappings, for the subexperiments of descendants.
func (s *Session) openEvents() error {
	if s.sigprof {
		return nil
	}
	var g *perfevent.Group
	var err error
	for _, w := range s.spec.Warnings {
		s.w.Event(experiment.Event{Kind: "warning", Text: w})
	}
	switch {
	case s.spec.Clock:
		s.setting(experiment.SettingClockSource, "perf")
		g, err = s.openClock()
	case len(s.spec.Counters) > 0:
		g, err = s.openCounterSideband()
	default:
		g, err = s.openSideband()
	}
	if err != nil {
		return err
	}
	if g == nil {
		return nil
	}
	if s.cmd == nil {
		if err := s.addThreads(g); err != nil {
			_ = g.Close()
			return err
		}
	}
	s.events = g
	s.aheadAt = max(g.RingBytes()/8, 1)
	if len(s.spec.Counters) > 0 {
		all := min(int(g.RingBytes())*len(g.CPUs()), 64<<20)
		s.ahead.reserve(all)
		s.batch.reserve(all)
	}
	if s.cmd == nil {
		// Attached: the experiment's time starts when its events do, all together (they opened
		// disabled). Opening them (a ring per CPU, each thread found in /proc) took 30-40 ms beside
		// two CPU hogs; the main thread's, open first, counted meanwhile and the others' not
		// (TestAttach: 1.8440 s recorded of 1.8808 s used in the window).
		s.startAt(monotonicNS())
	}
	s.takeIDs(g)
	s.enabledAt = s.now()
	if s.gate == nil { // (at the gate, the events start at the target's exec)
		if err := g.Enable(); err != nil {
			return err
		}
	}
	s.recording = true
	return nil
}

// openSideband opens a dummy software event: no samples, only the task and mapping records.
func (s *Session) openSideband() (*perfevent.Group, error) {
	o := perfevent.Dummy()
	s.gatedOptions(&o)
	g, err := perfevent.OpenTask(s.pid, o)
	if err != nil {
		s.w.Event(experiment.Event{Kind: "warning", Text: "descendant processes cannot be followed: " + err.Error()})
		return nil, nil
	}
	return g, nil
}

// openClock opens the clock-profiling events with kernel stacks, or with user stacks only where
// perf_event_paranoid does not permit kernel profiling.
func (s *Session) openClock() (*perfevent.Group, error) {
	o := perfevent.TaskClock(uint64(s.spec.Interval.Nanoseconds()))
	s.gatedOptions(&o)
	o.Callchain = true
	o.InheritStat = true
	o.KernelCallchain = true
	if s.spec.StackBytes > 0 {
		// Registers and a copy of the user stack, for DWARF unwinding; a sample is then some kilobytes,
		// so the rings are larger.
		o.SampleRegsUser = perfevent.RegsAMD64All
		o.SampleStackUser = uint32(s.spec.StackBytes)
		// Wake the reader every 100 ms of sampled CPU time (every 10 samples at -p on), besides its
		// drainEvery tick: each wakeup costs the target (the kernel wakes the reader from its CPU) and er.
		// Once a stack deeper than its copy was seen, the reader reads every 10 ms (loop's fast
		// tick): such a stack is completed from the live process, which works only while the
		// process is still in the call it was sampled in.
		o.WakeupEvents = uint32(max(1, wakeEvery/s.spec.Interval))
	}
	o.RingPages = ringPages(s.spec.Interval, s.spec.StackBytes, runtime.NumCPU(), os.Getpagesize())
	if s.spec.Microstates && s.spec.StackBytes > 0 {
		// The context switches' records and samples: a burst of new processes (make -j2 beside two CPU
		// hogs) lost 114 records with 1 MiB rings.
		o.RingPages = max(o.RingPages, minMicroRingPages)
	}
	if len(s.spec.Counters) > 0 {
		o.RingPages = max(o.RingPages, counterRingPages(runtime.NumCPU(), os.Getpagesize()))
	}
	if s.spec.RingPages > 0 {
		o.RingPages = s.spec.RingPages
	}
	// Each sample's CPU time from its thread's count, where the kernel gives it (see sampleCounts).
	// (And each counter sample its thread's count of the counter: see counterModule.value.)
	o.ReadCount = (s.spec.countInSamples() || len(s.spec.Counters) > 0) && perfevent.CountInSamples()
	var micro []perfevent.Sibling
	hwc := s.counterSiblings()
	o.SampleAddr = s.backtracking()
	if s.spec.Microstates {
		// Each sample's CPU time, and the off-CPU intervals, from the context switches (see
		// microstates); the counts in samples only where a ring lost records (thread.suspect).
		o.ContextSwitch, o.SampleAddr = true, true
		micro, _, _ = s.microLayout()
		// Each thread's CPU time comes from its context switches too, and so do the counts its exit
		// would report: inherit_stat, which costs every context switch more than the switch
		// records do, is not needed (nor the runtime counts it brings).
		o.InheritStat = false
	}
	// The threads' runtime counts, in the group where permitted (see runtimeCounts), and in each
	// sample where the kernel gives a group's counts there, to take the steal time out of it (see
	// sampleCounts.stealFree); with microstates, for that alone.
	if sb, ok := runtimeSibling(); ok {
		ro := o
		ro.Siblings = append(append([]perfevent.Sibling{sb}, hwc...), micro...)
		// (Not with microstates, whose samples' steal comes out by /proc/stat: cpuSteal.)
		ro.ReadGroup = ro.ReadCount && perfevent.CountInSamples() && perfevent.SiblingsInSamples()
		if ro.ContextSwitch && !ro.ReadGroup {
			ro.Siblings = nil // nothing to count for
		} else if g, err := openCounted(s.pid, &ro); err == nil {
			if !ro.ContextSwitch {
				s.runtime = newRuntimeCounts(s, g)
				s.use(s.runtime)
			}
			if ro.ReadCount && ro.ReadGroup {
				s.counts.runtimeAt = 1 // the leader's count, then the runtime's
				s.counts.lag = kernelTick() + int64(time.Millisecond)
			}
			return s.clockOpened(g, ro)
		}
	}
	o.Siblings = append(hwc, micro...)
	g, err := openCounted(s.pid, &o)
	if err != nil && len(micro) > 0 && !errors.Is(err, perfevent.ErrPermission) {
		// A kernel that refuses the context-switch events: CPU time only.
		s.w.Event(experiment.Event{Kind: "warning", Text: "microstates are not recorded: " + err.Error()})
		o.ContextSwitch, o.SampleAddr, o.Siblings, o.InheritStat = false, s.backtracking(), hwc, true
		o.ReadCount = (s.spec.countInSamples() || len(s.spec.Counters) > 0) && perfevent.CountInSamples()
		g, err = openCounted(s.pid, &o)
	}
	if errors.Is(err, perfevent.ErrPermission) {
		o.KernelCallchain, o.ExcludeKernel = false, true
		if g, err = openCounted(s.pid, &o); err == nil {
			s.kernelNotPermitted()
		}
	}
	if err != nil {
		return nil, err
	}
	return s.clockOpened(g, o)
}

// kernelNotPermitted warns that kernel profiling is not permitted: user mode only.
func (s *Session) kernelNotPermitted() {
	p, _ := perfevent.Paranoid()
	s.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("kernel profiling is not permitted "+
		"(/proc/sys/kernel/perf_event_paranoid is %d): user-mode samples and stacks only; "+
		"sysctl kernel.perf_event_paranoid=1 or CAP_PERFMON permits it", p)})
}

// clockOpened records what the clock events g, opened with o, record, and returns them.
func (s *Session) clockOpened(g *perfevent.Group, o perfevent.Options) (*perfevent.Group, error) {
	s.readCount = o.ReadCount
	var micro []perfevent.Sibling
	csAt, faultAt := 0, 0
	if o.ContextSwitch {
		micro, csAt, faultAt = s.microLayout()
	}
	base := len(o.Siblings) - len(micro) - len(s.spec.Counters)
	s.useCounters(base)
	if o.ContextSwitch {
		s.useMicrostates(g, o, base+csAt, base+faultAt)
	}
	s.useCounts()
	if s.readCount && s.ms == nil {
		s.setting(experiment.SettingClockPeriods, "counted")
	}
	s.kernelStacks(o.KernelCallchain)
	return g, nil
}

// kernelStacks records whether the events record kernel stacks (kernel): the log says so, and the
// kernel's mapping is added.
func (s *Session) kernelStacks(kernel bool) {
	s.kernel = kernel
	s.w.UpdateLog(func(l *experiment.Log) { l.KernelStacks = s.kernel })
	if s.kernel {
		// The kernel is mapped into every process; map.xml records it once, as process 0.
		s.w.AddMapping(experiment.Mapping{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]", UnloadTime: -1})
	}
}

// useCounters adds the counters' module (-h), whose first sibling in the group is at base.
func (s *Session) useCounters(base int) {
	if len(s.spec.Counters) == 0 {
		return
	}
	s.hwc = &counterModule{s: s, base: base}
	s.use(s.hwc)
}

// useCounts adds the module of the counts in samples, where samples carry them (readCount): the clock
// samples' CPU time comes from them, but with microstates, whose samples use them too.
func (s *Session) useCounts() {
	if !s.readCount {
		return
	}
	c := countedPeriods{s: s}
	s.use(c)
	if s.ms == nil {
		s.clock.periods = c
	}
}

// openCounted opens the events as openShrinking does, and without their counts in samples where the
// kernel refuses them there (o.ReadCount is then false).
func openCounted(pid int, o *perfevent.Options) (*perfevent.Group, error) {
	g, err := openShrinking(pid, o)
	if err != nil && o.ReadCount {
		o.ReadCount = false
		g, err = openShrinking(pid, o)
	}
	return g, err
}

// openShrinking opens the events with smaller rings when the kernel refuses to lock as much memory as asked
// (an unprivileged user gets kernel.perf_event_mlock_kb, 516 KiB by default, for all CPUs together).
func openShrinking(pid int, o *perfevent.Options) (*perfevent.Group, error) {
	for {
		g, err := perfevent.OpenTask(pid, *o)
		if err == nil || o.RingPages <= 8 || !(errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM)) ||
			errors.Is(err, perfevent.ErrPermission) {
			return g, err
		}
		if o.RingPages == 0 {
			o.RingPages = perfevent.DefaultRingPages
		}
		o.RingPages /= 4
	}
}
