package collect

import (
	"fmt"
	"time"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"

	"golang.org/x/sys/unix"
)

// Microstates: where each thread's time goes while it is not on a CPU, and its exact CPU time.
//
// The clock events carry the kernel's context-switch records (PERF_RECORD_SWITCH): each time a
// thread of the target leaves a CPU (and whether it was preempted, still runnable) and each time it
// comes back. From them the collector knows every thread's on-CPU and off-CPU intervals to the
// nanosecond:
//   - each clock sample stands for the CPU time its thread ran since its previous sample (not the
//     nominal period), and at its exit a thread's last partial interval is credited to its last
//     sample's stack: every thread's CPU time is its on-CPU time exactly;
//   - each off-CPU interval is recorded (experiment.Writer.OffCPU, profile.offcpu) as a clock event
//     of a waiting mode (ModeWaitCPU when the thread was preempted, ModeSleep when it blocked,
//     ModeTextFault or ModeDataFault when it slept in a major page fault) whose period is the
//     interval's length.
//
// The stack an off-CPU interval is attributed to comes from a sibling event that samples the
// context-switch software event, with the same stacks as the clock, at the moment the thread
// leaves the CPU. It samples at a rate (microFreq), not at every switch: a thread that switches a
// few thousand times a second has every switch sampled, one that switches 100,000 times a second has
// one in ten, so that copying stacks costs the target little. An interval whose switch was not
// sampled goes to the stack of the thread's last sampled switch of the same kind (blocked: its last
// sampled block; preempted: where it last ran), unless it lasts long enough for er to read its stack
// from outside while it waits (grabWaits, grab.go). A third sibling samples major page faults with
// their addresses: a blocked interval outside a system call followed by the thread's major fault
// was a page fault, on text when the address is in an executable mapping.
//
// Consecutive intervals of one thread with the same stack and mode are merged into one event for
// up to one sampling interval, so the experiment grows with the sampling rate, not the switch rate.

// microFreq is the rate at which the context switches of each thread on each CPU are sampled for their
// stacks, at most: a thread that switches less often has every switch sampled. The kernel starts a
// thread's event at the period of the event it inherits from (its creator's on that CPU), and adjusts
// it at each tick by the rate it saw, only while the thread runs: a thread that switched faster than
// this keeps a period of several switches until it runs again, and a long sleep it then starts may
// go unsampled (see grabWaits for those). At 1,000 a second that happened to a SIGSTOP after a phase
// of 12,000 page faults a second; 10,000 keeps the period at one switch for all but the busiest
// switchers.
func microFreq(int64) uint64 { return 10000 }

// microStack is the user stack a context-switch sample copies, at most: half the clock's default. A
// thread blocks in a system call or a fault, whose stack is rarely deep; deeper frames are read from
// the live process, where the thread waits in the same call unless it woke since.
const microStack = 8192

// negENOSYS is rax in the registers a thread entered a system call with (the kernel puts -ENOSYS there
// on entry and the call's number in orig_ax); a thread that blocks outside a system call (a page fault,
// a stop on its way back to user mode) has its own rax.
const negENOSYS = ^uint64(unix.ENOSYS) + 1

// microstates follows the threads' context switches.
type microstates struct {
	hooks
	s        *Session
	interval int64           // the merge window: the clock's sampling interval
	csIDs    map[uint64]bool // the ids of the context-switch sampling events
	faultIDs map[uint64]bool // the ids of the major-fault sampling events
	axIndex  int             // the index of rax in a sample's registers, -1 without registers
	threads  map[uint32]*thread
	steal    *cpuSteal // the CPUs' steal time, taken out of the clock samples' CPU time

	csIndex, faultIndex int                      // the indexes of the samplers among the group's siblings
	lastRun             bool                     // no context-switch samples (no kernel samples): off-CPU intervals go where each thread last ran
	pending             int                      // threads in an off-CPU interval whose switch was not sampled nor its stack read (grabWaits' work)
	ins                 map[*proc]map[uint32]int // each ended thread's switches onto a CPU, by image (switchLag)

	counted bool // clock samples carry their thread's count (the ground truth where records were lost)
	anyLoss bool // a ring lost records: threads first seen since may have lost theirs

	lagSum, lagN   int64 // the lag given back by exact readings, and the switches it was shared by
	applied, wakes int64 // readings applied, and the wakeups' waits they found (for the log)
}

// thread is one thread's state.
type thread struct {
	pid uint32

	on      bool  // on a CPU since onSince
	onSince int64 // when it last came onto a CPU, or its last clock sample since
	outAt   int64 // when it last left a CPU
	cpu     int64 // CPU time since its last clock sample, of the intervals that ended
	inAt    int64 // when it last came onto a CPU
	total   int64 // its CPU time, of the intervals that ended
	ins     int   // its switches onto a CPU

	lastStack     uint32 // the stack of its last clock sample
	lastSampleCPU int64  // its CPU time (total and since its last switch-in) at that sample
	sampleCPU     int64  // the same at the sample being handled (onCPU to sampled)
	guessing      bool   // it has preemptions whose stack waits for its next sample (offInterval.guess)

	lastMode  experiment.Mode // the mode of its last clock sample
	sampled   bool            // it has a clock sample (lastStack, lastMode)
	waitStack uint32          // the stack of its last sampled blocking switch
	waitMode  experiment.Mode // and how it blocked: ModeSleep, or modeMaybeFault outside a system call
	waited    bool            // waitStack and waitMode are set
	waitAt    int64           // when that block ended
	deferring bool            // it has blocks whose stack waits for its next known block (offInterval.deferred)

	lastFault     experiment.Mode // the kind of its last major fault: ModeTextFault or ModeDataFault
	lastFaultTime int64           // and when
	lastFaultCPU  int64           // and its CPU time (total) then

	grab   grabbed       // its stack read from outside while it waited (grabWaits)
	cs     pendingSwitch // a context-switch sample taken as it left the CPU, not yet matched
	out    offInterval   // the off-CPU interval it is in
	fault  offInterval   // the blocked interval it came back from: its major fault would follow
	merged []offInterval // the intervals being merged into events, at most maxMerged (by stack and mode)

	rc     reconcile     // its reconciliation with its schedstat (schedstat.go)
	queue  []offInterval // its ended off-CPU intervals waiting for a reading, grouped by stack and mode
	lagCPU int64         // the CPU time the readings gave back to it (written as System CPU), less what they took
	debt   int64         // CPU time the readings took from it, still to take from its next samples

	// suspect says a ring lost records since its last clock sample: its switch records may miss a
	// switch-out and the next switch-in (then an on-CPU interval held a sleep), so its next sample
	// stands for its count (where samples carry it) and its CPU time at its end for at most a period.
	suspect bool
}

// pendingSwitch is a context-switch sample.
type pendingSwitch struct {
	valid     bool
	stack     uint32
	inSyscall bool
}

// offInterval is an off-CPU interval, or several merged.
type offInterval struct {
	valid      bool
	start, end int64 // the first one's start, the last one's end
	dur        int64 // their lengths, summed
	mode       experiment.Mode
	stack      uint32
	cpu        uint32
	sampled    bool  // a context-switch sample (or grabWaits) says how it blocked
	guess      bool  // a preemption no context-switch sample saw: its stack is one of the samples around it
	guessCPU   int64 // the thread's CPU time (thread.total) at it
	// A block no context-switch sample saw, long after the thread's last known block (maxKnownAge):
	// its stack is that of the thread's next known block (sampled, or read from outside), if one comes
	// within maxDefer, else the last's (stack).
	deferred bool

	n         int   // how many intervals, in queue
	lag, wake int64 // of dur, the switches' lag and the wait for a CPU after the wakeup (applyReading)
}

// grabbed is a waiting thread's stack read from outside (see grab.go).
type grabbed struct {
	valid bool
	t     int64  // when the reading was done
	from  int64  // the start of the interval it was read in
	stack uint32 // the stack
	nr    int    // the system call it waited in, -1 outside one
}

// microSiblings returns the sampling events of the clock's group that microstates need: the context
// switches, for their stacks, and the major page faults, for their addresses.
func microSiblings(interval int64) []perfevent.Sibling {
	return []perfevent.Sibling{
		{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CONTEXT_SWITCHES, Freq: microFreq(interval), StackUser: microStack},
		// (Its samples' address is what is used, not their stacks: a stack copy of 8 bytes, the least,
		// where 16 KiB at each of a phase's 16,384 faults filled the rings beside two CPU hogs.)
		{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ, Period: 1, StackUser: 8},
	}
}

// useMicrostates adds the microstates' modules to the session: the threads' context switches in the
// clock events g, opened with o, whose siblings csIndex and faultIndex are those of microSiblings
// (or the counters' in their place), and the CPUs' steal time.
func (s *Session) useMicrostates(g *perfevent.Group, o perfevent.Options, csIndex, faultIndex int) {
	steal := &cpuSteal{path: "/proc/stat",
		margin: kernelTick() + int64(time.Millisecond) + int64(len(g.CPUs()))*s.spec.Interval.Nanoseconds()}
	steal.read(s.now())
	s.ms = newMicrostates(s, g, csIndex, faultIndex, o.SampleRegsUser)
	s.ms.counted = o.ReadCount
	s.ms.lastRun = o.ExcludeKernel
	s.ms.steal = steal
	s.use(steal)
	s.use(s.ms)
	s.clock.periods = s.ms
	if s.hwc != nil {
		s.hwc.follower = s.ms
	}
	s.setting(experiment.SettingMicrostates, "on")
	stacks := "switches"
	if o.ExcludeKernel {
		stacks = "last-run"
	}
	s.setting(experiment.SettingOffCPUStacks, stacks)
	if o.ExcludeKernel {
		s.w.Event(experiment.Event{Kind: "warning", Text: "off-CPU intervals are attributed to where each " +
			"thread last ran, not to where it blocked: stacks at context switches need kernel profiling " +
			"(sysctl kernel.perf_event_paranoid=1 or CAP_PERFMON permits it)"})
	}
}

// newMicrostates follows the context switches of the clock events g, whose siblings csIndex and
// faultIndex are those of microSiblings.
func newMicrostates(s *Session, g *perfevent.Group, csIndex, faultIndex int, regsMask uint64) *microstates {
	m := &microstates{s: s, interval: s.spec.Interval.Nanoseconds(), csIDs: map[uint64]bool{}, faultIDs: map[uint64]bool{},
		axIndex: perfevent.RegIndex(regsMask, perfevent.RegAMD64AX), threads: map[uint32]*thread{},
		csIndex: csIndex, faultIndex: faultIndex}
	m.updateIDs(g)
	return m
}

// updateIDs takes the ids of g's context-switch and fault samplers (again after AddTask opened more).
func (m *microstates) updateIDs(g *perfevent.Group) {
	for id, i := range g.SiblingIDs() {
		switch i {
		case m.csIndex:
			m.csIDs[id] = true
		case m.faultIndex:
			m.faultIDs[id] = true
		}
	}
}

// ids returns the ids of the context-switch and fault samplers of g.
func (m *microstates) ids(g *perfevent.Group) []uint64 {
	m.updateIDs(g)
	var out []uint64
	for _, ids := range []map[uint64]bool{m.csIDs, m.faultIDs} {
		for id := range ids {
			out = append(out, id)
		}
	}
	return out
}

// sample takes a sample of the context-switch sampler (its stack: the thread leaves the CPU) or of
// the major-fault sampler.
func (m *microstates) sample(r *perfabi.Sample) {
	if m.faultIDs[r.ID] {
		m.majorFault(r)
		return
	}
	p := m.s.cur[r.Pid]
	if !p.open() {
		return
	}
	if id, ok := m.s.sampleStack(r, p); ok {
		m.contextSwitch(r, id)
	}
}

// counterSampled takes a counter's sample r, recorded at stack (ok) or not, where the counter's event is a
// sampler's too (microLayout).
func (m *microstates) counterSampled(r *perfabi.Sample, stack uint32, ok bool) {
	switch {
	case m.csIDs[r.ID] && ok:
		m.contextSwitch(r, stack)
	case m.faultIDs[r.ID]:
		m.majorFault(r)
	}
}

// task follows the threads: their creation, exec, switches and exit, and the rings' losses.
func (m *microstates) task(r perfabi.Record) {
	switch r := r.(type) {
	case *perfabi.Fork:
		m.forked(r.Pid, r.Tid, m.s.rel(r.Time))
	case *perfabi.Comm:
		m.exec(r.Pid)
	case *perfabi.Switch:
		m.switched(r)
	case *perfabi.Exit:
		m.exited(r.Pid, r.Tid, m.s.rel(r.Time))
	case *perfabi.Lost:
		m.lost()
	}
}

// exitCount takes the exit counts of the samplers, which count nothing of use.
func (m *microstates) exitCount(r *perfabi.Read) bool { return m.csIDs[r.ID] || m.faultIDs[r.ID] }

// read reads the stacks of long waits whose switch the sampler skipped, and settles the threads'
// switches with their schedstat, every record up to upTo handled.
func (m *microstates) read(upTo int64) {
	m.grabWaits(upTo)
	m.settle(upTo)
}

// busy says whether waits wait for grabWaits.
func (m *microstates) busy() bool { return m.pending > 0 }

// endCounts gives the threads the switches' lag (switchLag), where recording covered the founder's
// whole life.
func (m *microstates) endCounts(total int64) {
	if m.s.recordedWhole(m.s.founder) {
		m.switchLag(total)
	}
}

// stop ends every thread still known at t.
func (m *microstates) stop(t int64) { m.finish(t) }

// period is the CPU time clock sample r of its thread at t stands for: the time it ran since its
// previous sample (onCPU), less the steal time of its CPU meanwhile.
func (m *microstates) period(r *perfabi.Sample, t int64) (period, since, stolen int64) {
	period = m.onCPU(r, t)
	own := m.steal.free(r.CPU, t, period, m.s.now())
	return own, t - period, period - own
}

// thread returns tid's state, new when unknown.
func (m *microstates) thread(pid, tid uint32) (*thread, bool) {
	th := m.threads[tid]
	if th != nil {
		th.pid = pid
		return th, true
	}
	th = &thread{pid: pid, suspect: m.anyLoss}
	m.threads[tid] = th
	return th, false
}

// forked starts the state of a new thread (or a new process's thread), created at t: it waits for a CPU
// until it first runs.
func (m *microstates) forked(pid, tid uint32, t int64) {
	th, known := m.thread(pid, tid)
	th.suspect = false // (its records start here)
	if !known && th.rc.fd == 0 {
		// The kernel's figures of a new thread start at zero, as the records'.
		th.rc.active = true
	}
	m.setOut(th, offInterval{valid: true, start: t, mode: experiment.ModeWaitCPU})
}

// setOut makes iv (or none) the off-CPU interval th is in, keeping count of those whose stack is still
// to be read (not sampled, not read by grabWaits).
func (m *microstates) setOut(th *thread, iv offInterval) {
	if th.out.valid && !th.out.sampled && !(th.grab.valid && th.grab.from == th.out.start) {
		m.pending--
	}
	if iv.valid && !iv.sampled {
		m.pending++
	}
	th.out = iv
}

// switched follows a context-switch record.
func (m *microstates) switched(r *perfabi.Switch) {
	t := m.s.rel(r.Time)
	th, known := m.thread(r.Pid, r.Tid)
	m.settleFault(r.Tid, th)
	if r.Out {
		if th.on {
			th.cpu += t - th.onSince
			th.total += t - th.inAt
		} else if !known && !th.suspect {
			// A thread running when the events were enabled (one attached to): its first record. (Not
			// one whose records were lost since: its next sample's count says what it ran.)
			ran := max(0, t-max(m.s.enabledAt, 0))
			th.cpu += ran
			th.total += ran
		}
		th.on, th.outAt = false, t
		iv := offInterval{valid: true, start: t, cpu: r.CPU}
		cs := th.cs
		th.cs = pendingSwitch{}
		switch {
		case r.Preempt:
			iv.mode = experiment.ModeWaitCPU
			iv.stack = th.lastStack
			if cs.valid {
				iv.stack = cs.stack
			} else {
				// Not seen: where the sample nearer to it in the thread's CPU time finds it, its last
				// or its next (see sampled).
				iv.guess, iv.guessCPU = true, th.total
				th.guessing = true
			}
		case cs.valid:
			iv.mode, iv.stack, iv.sampled = experiment.ModeSleep, cs.stack, true
			if !cs.inSyscall {
				iv.mode = modeMaybeFault
			}
			th.waitStack, th.waitMode, th.waited = cs.stack, iv.mode, true
			m.resolveDeferred(th, cs.stack)
		case th.waited:
			// Not sampled: as the thread's last sampled block (unless grabWaits reads its own), or, long
			// after it, its next.
			iv.mode, iv.stack = th.waitMode, th.waitStack
			iv.deferred = t-th.waitAt > maxKnownAge
		default:
			// (Where no switch is sampled, where it last ran: its next read from outside can be a
			// later phase's.)
			iv.mode, iv.stack, iv.deferred = experiment.ModeSleep, th.lastStack, !m.lastRun
		}
		th.deferring = th.deferring || iv.deferred
		m.setOut(th, iv)
		return
	}
	if rc := &th.rc; rc.active && rc.reading.valid && th.ins-rc.ins0 >= rc.reading.count-rc.count0 {
		// The switch-in after the reading's last: its window is in queue.
		if th.ins-rc.ins0 == rc.reading.count-rc.count0 {
			m.applyReading(r.Tid, th, th.outAt < rc.reading.t, false)
		} else {
			rc.reading = schedReading{}
		}
	}
	if th.out.valid {
		iv := th.out
		m.setOut(th, offInterval{})
		iv.end = t
		iv.dur = t - iv.start
		if g := th.grab; g.valid && g.from == iv.start && g.t < t {
			// Read from outside while it waited, and done before it came back: its own stack (not
			// the thread's next unsampled blocks': where the switches are not sampled, a wait read
			// in one phase of a program gave its stack to the short waits of the next).
			iv.stack, iv.sampled, iv.deferred = g.stack, true, false
			if iv.mode != experiment.ModeWaitCPU {
				iv.mode = experiment.ModeSleep
				if g.nr < 0 {
					iv.mode = modeMaybeFault
				}
				if !m.lastRun {
					// A known block, as a sampled one: the stack of the blocks the sampler skipped
					// around it.
					th.waitStack, th.waitMode, th.waited = g.stack, iv.mode, true
					m.resolveDeferred(th, g.stack)
				}
			}
		}
		th.grab = grabbed{}
		if iv.sampled && iv.mode != experiment.ModeWaitCPU {
			th.waitAt = t // (a known block's age runs from its end: sampled, or read from outside)
		}
		if iv.mode == experiment.ModeWaitCPU {
			m.add(r.Tid, th, iv)
		} else {
			th.fault = iv // until the thread's next record says whether it was a major fault
		}
	}
	th.on, th.onSince, th.inAt = true, t, t
	th.ins++
}

// modeMaybeFault marks an interval blocked outside a system call: a page fault when the thread's major
// fault follows it, else a sleep (a stop).
const modeMaybeFault experiment.Mode = 255

// settleFault adds tid's blocked interval that waited for a major fault record: none came. One that a
// sample saw outside a system call waited in a fault all the same when the thread had a major fault
// shortly before (the kernel read ahead around that fault, and this one waited for that read: a minor
// fault that sleeps), of the same kind; else it was a sleep (a stop, on the way back to user mode).
func (m *microstates) settleFault(tid uint32, th *thread) {
	if !th.fault.valid {
		return
	}
	iv := th.fault
	th.fault = offInterval{}
	if since := iv.start - th.lastFaultTime; iv.mode == modeMaybeFault && th.lastFault != 0 &&
		(since < readAheadWindow || th.total-th.lastFaultCPU < readAheadCPU && since < readAheadMaxWindow) {
		iv.mode = th.lastFault
	} else {
		iv.mode = experiment.ModeSleep
	}
	m.add(tid, th, iv)
}

// majorFaultLag is the longest from a thread's switch-in to the record of the major fault it blocked
// in: the kernel counts the fault as the handler ends, microseconds after the thread is back on a CPU
// (were it preempted first, its switch-out record would settle the interval before), or as long as
// the hypervisor takes the CPU away then (with 1 ms, beside two CPU hogs, 15% of a text-fault
// phase's waits went to Other Wait).
const majorFaultLag = int64(10 * time.Millisecond)

// readAheadWindow is how soon after a major fault a blocked fault is taken to wait for its read-ahead
// (or for a page another thread holds locked in the same burst of faults); readAheadCPU the same in
// the thread's CPU time, for a thread preempted for longer than that since (beside CPU hogs a
// preemption lasts some 10 ms).
// readAheadMaxWindow bounds the latter: a thread that ran little since its last fault but blocked
// much later (main, which had only started and joined threads since, stopped by SIGSTOP 1.4 s after
// its last text fault) did not wait for that read.
const (
	readAheadWindow    = 10_000_000
	readAheadCPU       = 1_000_000
	readAheadMaxWindow = 100_000_000
)

// contextSwitch takes a context-switch sample's stack (built by the session): the thread is leaving
// the CPU.
func (m *microstates) contextSwitch(r *perfabi.Sample, stack uint32) {
	th, _ := m.thread(r.Pid, r.Tid)
	inSyscall := true
	if m.axIndex >= 0 && m.axIndex < len(r.Regs) {
		inSyscall = r.Regs[m.axIndex] == negENOSYS
	}
	th.cs = pendingSwitch{valid: true, stack: stack, inSyscall: inSyscall}
}

// majorFault classifies the blocked interval before a thread's major page fault r: a fault in user
// mode that a sample did not see blocking in a system call (one in the kernel, on a system call's
// user buffer, is Other Wait). (A major fault that did not block, its page read by another thread
// meanwhile, classifies nothing.)
func (m *microstates) majorFault(r *perfabi.Sample) {
	th := m.threads[r.Tid]
	if th == nil || !th.fault.valid || r.Kernel() || th.fault.sampled && th.fault.mode != modeMaybeFault {
		return
	}
	if m.s.rel(r.Time)-th.fault.end > majorFaultLag {
		// Not the fault the interval waited in: one that found its page read meanwhile, after a
		// stop (a thread stopped by SIGSTOP, resumed, showed its 0.515 s stop as Text Page Fault).
		return
	}
	iv := th.fault
	th.fault = offInterval{}
	iv.mode = experiment.ModeDataFault
	if m.s.live.holds(r.Pid, r.Addr) {
		iv.mode = experiment.ModeTextFault
	}
	th.lastFault, th.lastFaultTime, th.lastFaultCPU = iv.mode, iv.end, th.total
	m.add(r.Tid, th, iv)
}

// onCPU returns the CPU time clock sample r of tid at t stands for: the time the thread ran since its
// previous sample, or the sample's own period for a thread not seen to come onto a CPU.
func (m *microstates) onCPU(r *perfabi.Sample, t int64) int64 {
	th, known := m.thread(r.Pid, r.Tid)
	m.settleFault(r.Tid, th)
	period := m.recordsCPU(r, t, th, known)
	if !m.counted {
		th.suspect = false
		return period
	}
	// Every sample moves its thread's mark (see sampleCounts), so that the count of a sample after a
	// loss is since the thread's previous sample on the event.
	counted, _ := m.s.counts.period(r, t)
	if th.suspect {
		// Its records may hold a sleep as CPU time (a make -j2 whose rings lost 52% of the records at
		// its start: one 30 ms cc1 recorded 0.19 s, its whole life): the count is the kernel's. (Less
		// its CPU on other CPUs since its last sample, which the records gave: short, not over.)
		th.total += counted - period
		period, th.suspect = counted, false
	}
	return period
}

// recordsCPU returns the CPU time clock sample r of th at t stands for by the switch records (see
// onCPU).
func (m *microstates) recordsCPU(r *perfabi.Sample, t int64, th *thread, known bool) int64 {
	th.sampleCPU = th.total
	if !known || !th.on {
		// A thread that was running when the events were enabled, or whose switch-in record was lost
		// (a full ring): it ran since it came back onto a CPU, after it left one, for at most the
		// period; its time off a CPU ends there (not at its next switch-in record: a make -j2 whose
		// rings lost records early was 22% over its getrusage with the nominal period each time).
		p := int64(r.Period)
		if iv := th.out; known && iv.valid {
			p = min(p, max(t-iv.start, 0))
			m.setOut(th, offInterval{})
			iv.end = t - p
			iv.dur = iv.end - iv.start
			if iv.mode == modeMaybeFault {
				iv.mode = experiment.ModeSleep
			}
			m.add(r.Tid, th, iv)
			th.ins++ // (the arrival the kernel counted)
		}
		cpu := th.cpu // (its CPU time since its last sample, before it left the CPU)
		th.on, th.onSince, th.inAt, th.cpu = true, t, t, 0
		th.total += p
		return th.pay(cpu + p)
	}
	if r.Kernel() && th.sampled && th.cpu > 0 && t-th.inAt < switchInWindow {
		// A sample on the kernel's way back onto the CPU (the thread's sampling timer, stopped when it
		// left the CPU, went off as it came back): what it ran before that goes to where its previous
		// sample saw it, not to the switch (beside two CPU hogs a user-mode spin had 5% of its time
		// in such samples).
		m.s.writeCPU(r.Pid, r.Tid, th.inAt, r.CPU, th.lastMode, th.cpu, 0, th.lastStack, -1)
		th.cpu = 0
	}
	period := th.cpu + t - th.onSince
	th.cpu, th.onSince = 0, t
	th.sampleCPU = th.total + t - th.inAt
	return th.pay(period)
}

// pay returns CPU time period of th less what it owes (debt), and owes that much less.
func (th *thread) pay(period int64) int64 {
	d := min(th.debt, max(period, 0))
	th.debt -= d
	return period - d
}

// switchInWindow is how soon after a thread came back onto a CPU a kernel-mode sample is taken to
// be one of the switch.
const switchInWindow = 100_000

// exec writes what process pid's threads hold of the image exec is replacing into its experiment,
// and forgets their stacks, which that experiment holds.
func (m *microstates) exec(pid uint32) {
	for tid, th := range m.threads {
		if th.pid == pid {
			m.settleFault(tid, th) // into the old image's experiment
			m.stopReconciling(tid, th)
			m.flush(tid, th, true)
			th.sampled, th.waited, th.lastStack, th.waitStack = false, false, 0, 0
			th.cs, th.grab = pendingSwitch{}, grabbed{}
		}
	}
}

// sampled notes the stack and mode of tid's clock sample.
func (m *microstates) sampled(tid uint32, stack uint32, mode experiment.Mode) {
	th := m.threads[tid]
	if th == nil {
		return
	}
	// The preemptions since its last sample that no context-switch sample saw: a preempted thread
	// resumes where it left off, so where it was is where the sample nearer to the preemption in its
	// CPU time finds it, this one or the last (the last is far when a phase of the program began
	// after it); before its first sample, this one (not nowhere: 4% of 4 spinners' Wait CPU once).
	now := th.sampleCPU
	for _, ivs := range [][]offInterval{th.queue, th.merged} {
		if !th.guessing {
			break
		}
		for i := range ivs {
			if g := &ivs[i]; g.guess {
				if !th.sampled || now-g.guessCPU < g.guessCPU-th.lastSampleCPU {
					g.stack = stack
				}
				g.guess = false
			}
		}
	}
	th.lastStack, th.lastMode, th.sampled, th.lastSampleCPU, th.guessing = stack, mode, true, now, false
}

// add takes off-CPU interval iv of tid: into its queue, where its reconciliation with its schedstat is
// active (grouped with the last groups of the same stack and mode within a sampling interval), else
// into the events being merged.
func (m *microstates) add(tid uint32, th *thread, iv offInterval) {
	if iv.dur <= 0 {
		return
	}
	if !th.rc.active {
		m.merge(tid, th, iv)
		return
	}
	for i := len(th.queue) - 1; i >= 0 && i >= len(th.queue)-maxMerged; i-- {
		if g := &th.queue[i]; g.stack == iv.stack && g.mode == iv.mode && g.guess == iv.guess && g.deferred == iv.deferred && iv.end-g.start <= m.interval {
			g.end = iv.end
			g.dur += iv.dur
			g.n++
			g.guessCPU = iv.guessCPU
			return
		}
	}
	if len(th.queue) >= maxQueue {
		// Readings do not come: the older half goes as the records have it.
		m.writeQueue(tid, th, th.queue[:maxQueue/2], false)
		th.queue = append(th.queue[:0], th.queue[maxQueue/2:]...)
	}
	iv.n = 1
	th.queue = append(th.queue, iv)
}

// maxKnownAge is how long after a thread's last known block (sampled, or read from outside) a block
// the sampler skipped waits for its next known block's stack, and maxDefer how long at most. The
// kernel sets a thread's context-switch sampling period at the ticks it runs through, from the
// switches since the last such tick as if they were a tick's: a thread that runs little and switches
// often keeps a period of many switches. A main thread woken 200 times in 0.4 s at a read had none of
// them sampled, and its last sampled block was a pthread_join of the phase before: 0.36 s of Other
// Wait there instead (TestMicrostatesPhases, 3 runs of 8 on a quiet machine).
const (
	maxKnownAge = 10_000_000
	maxDefer    = 1_000_000_000
)

// resolveDeferred gives th's deferred blocks the stack of its known block.
func (m *microstates) resolveDeferred(th *thread, stack uint32) {
	if !th.deferring {
		return
	}
	th.deferring = false
	for _, ivs := range [][]offInterval{th.queue, th.merged} {
		for i := range ivs {
			if g := &ivs[i]; g.deferred {
				g.stack, g.deferred = stack, false
			}
		}
	}
	if th.fault.valid && th.fault.deferred {
		th.fault.stack, th.fault.deferred = stack, false
	}
}

// maxMerged is how many events (of different stacks or modes) a thread merges intervals into at once;
// maxHeld how many it holds while their stacks wait (guess, deferred).
const (
	maxMerged = 4
	maxHeld   = 64
)

// merge merges off-CPU interval iv of tid into the event of its stack and mode being merged, writing
// the events being merged first when iv ends more than a sampling interval after the first began, or
// when maxMerged of other stacks or modes are being merged. An event whose stack waits (guess,
// deferred) is not written then, but takes no interval that ends more than a sampling interval after
// its first began either: an event stands for a time of its thread no longer than that, so that
// what happened in the program meanwhile (an OpenMP thread's state) is known of it. Past maxHeld of
// them, the oldest is written with the stack it has.
func (m *microstates) merge(tid uint32, th *thread, iv offInterval) {
	if iv.dur <= 0 {
		return
	}
	for i := range th.merged {
		if mg := &th.merged[i]; mg.deferred && iv.end-mg.start > maxDefer {
			mg.deferred = false // no known block came: the last one's stack
		}
	}
	for _, mg := range th.merged {
		if !mg.guess && !mg.deferred && iv.end-mg.start > m.interval {
			m.flush(tid, th, false)
			break
		}
	}
	for i := range th.merged {
		if mg := &th.merged[i]; mg.stack == iv.stack && mg.mode == iv.mode && mg.guess == iv.guess && mg.deferred == iv.deferred &&
			iv.end-mg.start <= m.interval {
			mg.end = iv.end
			mg.dur += iv.dur
			mg.guessCPU = iv.guessCPU
			return
		}
	}
	if len(th.merged) >= maxMerged {
		m.flush(tid, th, false)
		if len(th.merged) >= maxHeld { // all of them waiting for a stack
			m.writeOff(tid, th, th.merged[0])
			th.merged = append(th.merged[:0], th.merged[1:]...)
		}
	}
	iv.n, iv.lag, iv.wake = 0, 0, 0
	th.merged = append(th.merged, iv)
}

// maxOffPeriod is the longest off-CPU event written: a longer wait is several (a clock event's period
// is at most 60 s in the format).
const maxOffPeriod = 10_000_000_000

// flush writes tid's merged off-CPU events; all of them, or all but those whose stack waits for the
// thread's next sample (preemptions) or its next known block.
func (m *microstates) flush(tid uint32, th *thread, all bool) {
	kept := th.merged[:0]
	for _, mg := range th.merged {
		if (mg.guess || mg.deferred) && !all {
			kept = append(kept, mg)
		} else {
			m.writeOff(tid, th, mg)
		}
	}
	th.merged = kept
}

// writeOff writes merged off-CPU event mg of tid.
func (m *microstates) writeOff(tid uint32, th *thread, mg offInterval) {
	s := m.s
	p := s.cur[th.pid]
	if !s.recording || !p.open() {
		return
	}
	dur := mg.dur
	if p.initPaused || len(p.toggles) > 0 || s.global.initPaused || len(s.global.toggles) > 0 {
		// Of the merged intervals, at most the time recording was not paused in their span.
		dur = min(dur, unpausedWithin(mg.start, mg.end, p, &s.global))
	}
	if dur <= 0 {
		return
	}
	// In pieces of at most maxOffPeriod, the last ending at the last interval's end.
	for end := mg.end; dur > 0; {
		piece := min(dur, maxOffPeriod)
		_ = p.w.OffCPU(experiment.ClockSample{Time: end, Pid: th.pid, Tid: tid, CPU: mg.cpu, Mode: mg.mode,
			Period: piece, Stack: mg.stack})
		end -= piece
		dur -= piece
	}
}

// settle applies the schedstat readings the records have caught up with (those taken before upTo, the
// time up to which every record was handled), and reads the schedstat of each thread that has off-CPU
// intervals waiting for one (or no figures to start from yet).
func (m *microstates) settle(upTo int64) {
	for tid, th := range m.threads {
		rc := &th.rc
		if rc.reading.valid && rc.reading.t < upTo {
			r := rc.reading
			done, k := th.ins-rc.ins0, r.count-rc.count0
			switch {
			case r.count == 0 && th.ins > 0 && (!rc.active || done > 0):
				// The kernel does not count arrivals (no CONFIG_SCHED_INFO): no reconciliation.
				m.stopReconciling(tid, th)
				m.closeSched(rc)
				rc.fd = -1
			case !rc.active:
				// The figures to start from: taken where the thread was off a CPU from before the
				// reading until after it (no arrival near it), so that its arrivals match its records.
				rc.reading = schedReading{}
				if !th.on && th.outAt < r.t && !th.fault.valid {
					rc.active = true
					rc.exec0, rc.delay0, rc.count0 = r.exec, r.delay, r.count
					rc.total0, rc.ins0 = th.total, th.ins
					rc.lag, rc.preempt, rc.wake = 0, 0, 0
				}
			case done == k && !th.fault.valid:
				// Its window is in queue; its CPU time is exact where it was off a CPU all through.
				m.applyReading(tid, th, !th.on && th.outAt < r.t, false)
			case done > k || upTo-r.t > staleReading:
				// Its records and the kernel's count of its arrivals disagree (records lost): start
				// again from a reading where they agree.
				m.stopReconciling(tid, th)
			}
		}
		if !rc.reading.valid && rc.fd >= 0 && (len(th.queue) > 0 || !rc.active) {
			t := m.s.now()
			if st, ok := m.readSched(th.pid, tid, rc); ok {
				rc.reading = schedReading{valid: true, t: t, schedStat: st}
			}
		}
	}
}

// staleReading is how long a reading waits for the records of its thread's arrivals.
const staleReading = 1_000_000_000

// stopReconciling writes tid's queue as the records have it, and ends its reconciliation.
func (m *microstates) stopReconciling(tid uint32, th *thread) {
	m.writeQueue(tid, th, th.queue, false)
	th.queue = th.queue[:0]
	th.rc.active, th.rc.reading = false, schedReading{}
}

// applyReading applies tid's reading to the off-CPU intervals in its queue, which are those that ended
// at its arrivals onto a CPU up to the reading's; cpuExact says whether the reading's CPU time is exact
// (the thread was off a CPU while it was read). A reading taken while the thread ran has its waits for
// a CPU and its arrivals exact (the kernel adds to them as the thread arrives on a CPU), not its CPU
// time (brought up to date at the scheduler's ticks): its window's lag is the thread's average a switch
// (last: at its end), and the next exact reading settles the difference (an estimate too large comes
// back as a negative lag). Applied at once, such readings keep the windows short, so that the waits
// after wakeups that a window shares by its sleeps are each one's nearly.
func (m *microstates) applyReading(tid uint32, th *thread, cpuExact, last bool) {
	rc := &th.rc
	r := rc.reading
	rc.reading = schedReading{}
	m.applied++
	var n, durs int64
	for _, g := range th.queue {
		n += int64(g.n)
		durs += g.dur
	}
	// The switches' lag: what the kernel counted of the thread's CPU time beyond the records. Where
	// the reading's CPU time is not exact, the thread's average: the next exact reading gives what
	// this window's switches had beyond it (the sums run from the thread's start).
	var lag int64
	rc.switches += n
	if cpuExact {
		// (Negative where the records' CPU time is more than the kernel's: a thread preempted more
		// than it blocks, whose switches out the kernel counts first. What the records gave its
		// samples stays; it counts in the averages.)
		lag = (r.exec - rc.exec0) - (th.total - rc.total0) - rc.lag
		m.lagSum += lag + rc.estimated
		m.lagN += rc.switches
		rc.lagSum += lag + rc.estimated
		rc.lagN += rc.switches
		rc.switches, rc.estimated = 0, 0
	} else {
		lag = m.averageLag(th, n)
	}
	// (A negative lag lengthens the intervals, and is taken from the thread's next samples.)
	lag = min(lag, durs)
	var given, preempt, longer int64
	for i := range th.queue {
		g := &th.queue[i]
		g.lag = min(g.dur, lag*int64(g.n)/max(n, 1))
		given += g.lag
		if g.mode == experiment.ModeWaitCPU {
			preempt += g.dur - g.lag
			longer -= min(g.lag, 0)
		}
	}
	// The wakeups' waits: the arrivals' waits less the preemptions'.
	wake := (r.delay - rc.delay0) - (rc.preempt + preempt) - rc.wake
	if wake < 0 {
		// The preemptions a negative lag lengthened are more than the kernel's waits: as far as they
		// were lengthened, that was time the kernel counted in neither its CPU time nor its waits (a
		// host that stole the vCPU while the thread ran), no wait to take from its later wakeups.
		d := min(-wake, longer)
		preempt -= d
		wake += d
	}
	woke := fillWakes(th.queue, wake)
	if !cpuExact {
		rc.estimated += given
	}
	rc.lag += given
	rc.preempt += preempt
	rc.wake += woke
	m.wakes += woke
	m.writeQueue(tid, th, th.queue, true)
	th.queue = th.queue[:0]
}

// fillWakes shares wake among the sleeps of queue, equally by interval but at most each one's time
// left after its lag, and returns what it gave.
func fillWakes(queue []offInterval, wake int64) int64 {
	if wake <= 0 {
		return 0
	}
	var left int64 // intervals not full
	for i := range queue {
		if g := &queue[i]; g.mode != experiment.ModeWaitCPU {
			g.wake = -1
			left += int64(g.n)
		}
	}
	var given int64
	for left > 0 && wake > 0 {
		full := false
		for i := range queue {
			g := &queue[i]
			if g.wake == -1 && g.dur-g.lag <= wake*int64(g.n)/left {
				g.wake = g.dur - g.lag
				wake -= g.wake
				given += g.wake
				left -= int64(g.n)
				full = true
			}
		}
		if full {
			continue
		}
		// Equal shares, the rounding's remainder to the last.
		last, share := -1, int64(0)
		for i := range queue {
			if g := &queue[i]; g.wake == -1 {
				g.wake = wake * int64(g.n) / left
				share += g.wake
				last = i
			}
		}
		queue[last].wake += wake - share
		given += wake
		break
	}
	for i := range queue {
		if g := &queue[i]; g.wake == -1 {
			g.wake = 0
		}
	}
	return given
}

// averageLag is the lag of n switches of th: its own average a switch where its exact readings found
// one, else the session's; none where that is negative.
func (m *microstates) averageLag(th *thread, n int64) int64 {
	var lag int64
	if th.rc.lagN > 0 {
		lag = th.rc.lagSum * n / th.rc.lagN
	} else if m.lagN > 0 {
		lag = m.lagSum * n / m.lagN
	}
	return max(lag, 0)
}

// writeQueue writes groups of tid's intervals: each one's lag as System CPU at its stack, its wait
// after its wakeup as Wait CPU, the rest in its mode. Unreconciled (a thread's last window, or one no
// reading came for), each has the session's average lag.
func (m *microstates) writeQueue(tid uint32, th *thread, groups []offInterval, reconciled bool) {
	for _, g := range groups {
		if !reconciled {
			// The thread's own lag a switch where its readings found one, else the session's.
			g.wake, g.lag = 0, min(m.averageLag(th, int64(g.n)), g.dur)
			if th.rc.active {
				th.rc.lag += g.lag
				if g.mode == experiment.ModeWaitCPU {
					th.rc.preempt += g.dur - g.lag
				}
			}
		}
		th.lagCPU += g.lag
		if g.lag > 0 {
			m.s.writeCPU(th.pid, tid, g.end, g.cpu, experiment.ModeKernel, g.lag, 0, g.stack, g.end-g.lag)
		} else {
			th.debt -= g.lag
		}
		wake := g.wake
		g.dur -= g.lag + wake
		m.merge(tid, th, g)
		if wake > 0 {
			g.mode, g.dur = experiment.ModeWaitCPU, wake
			m.merge(tid, th, g)
		}
	}
}

// lost marks every thread suspect: a ring lost records (which of them is not said).
func (m *microstates) lost() {
	m.anyLoss = true
	for _, th := range m.threads {
		th.suspect = true
	}
}

// exited ends tid at t (its exit record): its off-CPU events are written, and the CPU time since its
// last clock sample is credited to that sample's stack.
func (m *microstates) exited(pid, tid uint32, t int64) {
	th := m.threads[tid]
	if th == nil {
		return
	}
	delete(m.threads, tid)
	// Just before the exit: a process's mappings end at its exit, and what it did at that time would
	// resolve to none of them.
	m.end(pid, tid, th, t-1)
}

// end writes what tid's state holds at t: its pending off-CPU intervals (closed at t) and its CPU time
// since its last sample.
func (m *microstates) end(pid, tid uint32, th *thread, t int64) {
	m.settleFault(tid, th)
	if rc := &th.rc; rc.active && rc.reading.valid && th.ins-rc.ins0 == rc.reading.count-rc.count0 {
		m.applyReading(tid, th, !th.on && th.outAt < rc.reading.t, true)
	}
	m.stopReconciling(tid, th)
	m.closeSched(&th.rc)
	th.rc.fd = -1
	if iv := th.out; iv.valid {
		iv.end, iv.dur = t, t-iv.start
		if iv.mode == modeMaybeFault {
			iv.mode = experiment.ModeSleep
		}
		m.add(tid, th, iv)
	}
	m.setOut(th, offInterval{})
	m.flush(tid, th, true)
	cpu, total := th.cpu, th.total
	if th.on {
		cpu += t - th.onSince
		total += t - th.inAt
	}
	cpu = th.pay(cpu)
	if th.suspect && cpu > m.interval {
		// Records lost since its last sample: it ran at most a period since then (unless its samples
		// were lost too, and then the recording falls short, as the warning says), not a sleep's time.
		total -= cpu - m.interval
		cpu = m.interval
	}
	// Its count is the kernel's CPU time: the records' with the lags given back and taken. What it still
	// owes (debt) stays in its samples, and the views weight them down to the count; a count that kept
	// it had the time twice, there and in the intervals the negative lag lengthened.
	total += th.lagCPU
	th.on, th.cpu, th.total, th.lagCPU, th.debt = false, 0, 0, 0, 0
	if p := m.s.imageAt(pid, t); p != nil {
		if m.ins == nil {
			m.ins = map[*proc]map[uint32]int{}
		}
		if m.ins[p] == nil {
			m.ins[p] = map[uint32]int{}
		}
		m.ins[p][tid] += th.ins
	}
	m.s.threadCounted(pid, tid, t, total)
	th.ins = 0
	if cpu <= 0 {
		return
	}
	mode := th.lastMode
	if !th.sampled {
		mode = experiment.ModeUser
	}
	m.s.writeCPU(pid, tid, t, 0, mode, cpu, 0, th.lastStack, t-cpu)
}

// grabAfter is how long a thread must have waited, without a sample of the switch it waits since,
// for grabWaits to read its stack; maxGrabs is the most it reads at a time.
const (
	grabAfter = 1_000_000
	maxGrabs  = 64
)

// grabWaits reads the stacks of the threads that wait since a switch the sampler skipped, for a
// while, at now: every record up to then was handled, so they still waited then.
func (m *microstates) grabWaits(now int64) {
	s, n := m.s, 0
	for tid, th := range m.threads {
		iv := &th.out
		if !iv.valid || iv.sampled || now-iv.start < grabAfter || th.grab.valid && th.grab.from == iv.start {
			continue
		}
		if n++; n > maxGrabs {
			return
		}
		p := s.cur[th.pid]
		if !p.open() {
			continue
		}
		w, ok := readWaiting(th.pid, tid)
		if !ok {
			continue
		}
		frames := s.stacks.grabStack(th.pid, tid, w, p.stackBuf[:0])
		p.stackBuf = frames
		id, err := p.w.Stack(frames)
		if err != nil {
			continue
		}
		th.grab = grabbed{valid: true, t: s.now(), from: iv.start, stack: id, nr: w.nr}
		m.pending--
	}
}

// maxLagShare bounds the switch lag switchLag gives back: more than this share of the threads' CPU time
// is not the switches' (records were lost).
const maxLagShare = 0.05

// switchLag gives the threads back the CPU time the switch records leave out: the kernel starts a
// thread's CPU clock when the scheduler picks it, some microseconds before the switch-in record (after
// the switch and the move of the perf events; more where that reprograms a virtual machine's timer, as
// at -p hi), so the records' CPU time falls short of the task clock's count by some microseconds a
// switch (8 threads on 2 CPUs at -p hi: 1% a thread). counted, the task clock's count of all threads,
// less their CPU time from the records, is shared among the ended threads by their switches onto a
// CPU, into their counts (Session.threadCPU, which the analysis weights their samples by). Their
// off-CPU intervals keep that time: a thread's Total Thread Time is over its life by as much.
func (m *microstates) switchLag(counted int64) {
	s := m.s
	var recorded int64
	var switches int
	for p, tids := range m.ins {
		for tid, n := range tids {
			recorded += s.threadCPU[p][tid]
			switches += n
		}
	}
	lag := counted - recorded
	if m.lagN > 0 {
		// The threads' CPU time is the kernel's, from their schedstat.
		return
	}
	if switches == 0 || lag <= 0 || float64(lag) > maxLagShare*float64(recorded) {
		return
	}
	per := float64(lag) / float64(switches)
	for p, tids := range m.ins {
		for tid, n := range tids {
			s.threadCPU[p][tid] += int64(per*float64(n) + 0.5)
		}
	}
}

// finish ends every thread still known at t: recording stopped while they lived.
func (m *microstates) finish(t int64) {
	for tid, th := range m.threads {
		m.end(th.pid, tid, th, t)
	}
	clear(m.threads)
	if m.applied > 0 {
		lag := 0.0
		if m.lagN > 0 {
			lag = float64(m.lagSum) / float64(m.lagN) / 1e3
		}
		m.s.w.Event(experiment.Event{Time: t, Kind: "comment", Text: fmt.Sprintf(
			"microstates: %d schedstat readings reconciled the threads' switches: %.3f s of waits for a CPU after wakeups; the switches' lag %.2f µs a switch", m.applied, float64(m.wakes)/1e9, lag)})
	}
}
