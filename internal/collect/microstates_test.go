package collect

import (
	"testing"
	"time"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"
)

// addStacks gives the founder's experiment stacks 1 to n.
func addStacks(t *testing.T, s *Session, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if id, err := s.w.Stack(experiment.Stack{0x401000 + uint64(i)}); err != nil || id != uint32(i) {
			t.Fatalf("stack %d: id %d, %v", i, id, err)
		}
	}
}

func TestMicroFreq(t *testing.T) {
	sb := microSiblings(int64(IntervalOn))
	if len(sb) != 2 || sb[0].Freq != microFreq(0) || sb[0].StackUser != microStack || sb[1].Period != 1 || sb[1].StackUser != 8 ||
		!sb[0].Sampling() || !sb[1].Sampling() {
		t.Errorf("microSiblings = %+v", sb)
	}
}

// threadMicrostates returns a recording session with microstates for process 10 (its text at
// 0x400000): context-switch samples of event 1, major faults of event 2, stacks 1 to 9, and room for
// a sample's user registers.
func threadMicrostates(t *testing.T) (*Session, *microstates, []uint64) {
	t.Helper()
	s := testSession(t, Spec{Interval: IntervalOn})
	s.recording = true
	s.live.add(experiment.Mapping{Pid: 10, Start: 0x400000, End: 0x500000, Path: "/prog"})
	regs := make([]uint64, perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64R15)+1)
	m := &microstates{s: s, interval: int64(IntervalOn), csIDs: map[uint64]bool{1: true}, faultIDs: map[uint64]bool{2: true},
		axIndex: perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64AX), threads: map[uint32]*thread{}}
	s.ms = m
	addStacks(t, s, 9)
	return s, m, regs
}

// TestMicrostatesThread drives one thread's records through the state machine and reads back what the
// experiment holds: each clock sample's CPU time since the previous, the off-CPU intervals by mode and
// stack (a sampled block in a system call, a preemption, a block outside a system call followed by a
// major fault on text, a block the sampler skipped whose stack was read from outside), and at the exit
// the CPU time since the last sample and the thread's count.
func TestMicrostatesThread(t *testing.T) {
	s, m, regs := threadMicrostates(t)
	const ms = int64(time.Millisecond)
	at := func(rel int64) uint64 { return uint64(rel + s.startNS) }
	sw := func(rel int64, out, preempt bool) {
		m.switched(&perfabi.Switch{Pid: 10, Tid: 10, CPU: 1, Out: out, Preempt: preempt, Time: at(rel)})
	}
	cs := func(rel int64, stack uint32, inSyscall bool) {
		ax := uint64(0)
		if inSyscall {
			ax = negENOSYS
		}
		regs[m.axIndex] = ax
		m.contextSwitch(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(rel), ID: 1, RegsABI: 2, Regs: regs}, stack)
	}

	sw(0, false, false) // its first record: no interval before it
	if p := m.onCPU(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(10 * ms), Period: uint64(10*ms + 7)}, 10*ms); p != 10*ms {
		t.Errorf("the first sample stands for %d ns, want the 10 ms the thread ran", p)
	}
	m.sampled(10, 3, experiment.ModeUser)
	cs(12*ms, 5, true)
	sw(12*ms, true, false)  // blocks in a system call, sampled: stack 5
	sw(20*ms, false, false) // 8 ms asleep
	sw(21*ms, true, true)   // preempted, not sampled: the last sample's stack 3
	sw(23*ms, false, false) // 2 ms waiting for the CPU
	cs(24*ms, 7, false)
	sw(24*ms, true, false) // blocks outside a system call
	sw(30*ms, false, false)
	m.majorFault(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(30 * ms), ID: 2, Addr: 0x401234}) // on text: 6 ms
	sw(31*ms, true, false)                                                                    // not sampled: as the last sampled block (stack 7, outside a system call)
	m.threads[10].grab = grabbed{valid: true, t: 33 * ms, from: 31 * ms, stack: 9, nr: 202}
	sw(35*ms, false, false) // read from outside at 33 ms, in a futex: a sleep at stack 9, 4 ms
	m.exited(10, 10, 40*ms)

	type ev struct {
		mode   experiment.Mode
		period int64
		stack  uint32
	}
	var got []ev
	for _, c := range events(t, s) {
		got = append(got, ev{c.Mode, c.Period, c.Stack})
	}
	want := []ev{
		{experiment.ModeSleep, 8 * ms, 5},
		{experiment.ModeWaitCPU, 2 * ms, 3},
		{experiment.ModeTextFault, 6 * ms, 7},
		{experiment.ModeSleep, 4 * ms, 9},
		// The CPU time since the sample at 10 ms: 2 + 1 + 1 + 1 + 5 ms, to just before the exit.
		{experiment.ModeUser, 10*ms - 1, 3},
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if c := s.threadCPU[s.founder][10]; c != 20*ms-1 {
		t.Errorf("the thread's count %d, want its 20 ms on a CPU", c)
	}
	if len(m.threads) != 0 {
		t.Errorf("threads left after the exit: %v", m.threads)
	}
}

// TestDeferredBlockStack: blocks the context-switch sampler skipped long after the thread's last known
// block wait for its next known one, sampled or read from outside, and take its stack; one soon after
// a known block takes that block's; one no known block follows within maxDefer keeps the last's. (A main
// thread's 200 reads in a phase of 0.4 s, none sampled, went to the pthread_join of the phase before:
// TestMicrostatesPhases, Other Wait 0.0221 s where the program timed 0.2090 s.)
func TestDeferredBlockStack(t *testing.T) {
	s, m, regs := threadMicrostates(t)
	const ms = int64(time.Millisecond)
	at := func(rel int64) uint64 { return uint64(rel + s.startNS) }
	sw := func(rel int64, out bool) {
		m.switched(&perfabi.Switch{Pid: 10, Tid: 10, CPU: 1, Out: out, Time: at(rel)})
	}
	cs := func(rel int64, stack uint32) {
		regs[m.axIndex] = negENOSYS
		m.contextSwitch(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(rel), ID: 1, RegsABI: 2, Regs: regs}, stack)
	}
	sw(0, false)
	cs(2*ms, 5)
	sw(2*ms, true) // sampled at stack 5: 8 ms
	sw(10*ms, false)
	sw(15*ms, true) // not sampled, 5 ms after a known block: stack 5, 1 ms
	sw(16*ms, false)
	sw(200*ms, true) // not sampled, long after: the next known block's, 4 + 4 ms
	sw(204*ms, false)
	sw(206*ms, true)
	sw(210*ms, false)
	cs(212*ms, 6)
	sw(212*ms, true) // sampled at stack 6: 4 ms
	sw(216*ms, false)
	sw(300*ms, true) // not sampled, long after: read from outside at stack 7, and the one before it
	sw(304*ms, false)
	sw(306*ms, true)
	m.threads[10].grab = grabbed{valid: true, t: 308 * ms, from: 306 * ms, stack: 7, nr: 0}
	sw(310*ms, false)
	sw(400*ms, true) // not sampled, and no known block follows: the last one's, stack 7, 2 s
	sw(2400*ms, false)
	m.exited(10, 10, 2500*ms)
	byStack := map[uint32]int64{}
	for _, c := range events(t, s) {
		if c.Mode == experiment.ModeSleep {
			byStack[c.Stack] += c.Period
		}
	}
	want := map[uint32]int64{5: 9 * ms, 6: 12 * ms, 7: 8*ms + 2000*ms}
	if len(byStack) != len(want) {
		t.Errorf("sleeps by stack %v, want %v", byStack, want)
	}
	for stack, ns := range want {
		if byStack[stack] != ns {
			t.Errorf("stack %d: %d ns asleep, want %d", stack, byStack[stack], ns)
		}
	}
}

// TestStopNotFault: a thread stopped outside a system call (SIGSTOP, delivered on its way back to user
// mode) whose next record is a major fault 15 ms after it came back, one that did not block (its page
// read meanwhile), waited in a stop: Other Wait, not Text Page Fault (0.515 s of a stop, beside two
// CPU hogs, showed as Text). A fault within the lag of the switch-in is the one it waited in. Nor is a
// stop long after the thread's last text fault a wait for its read-ahead, however little it ran since.
func TestStopNotFault(t *testing.T) {
	for _, tc := range []struct {
		before  bool // a text fault at 5 ms, the thread's CPU 0.5 ms since
		faultAt int64
		want    experiment.Mode
	}{{false, 115, experiment.ModeSleep}, {false, 101, experiment.ModeTextFault}, {true, 0, experiment.ModeSleep}} {
		s, m, regs := threadMicrostates(t)
		const ms = int64(time.Millisecond)
		at := func(rel int64) uint64 { return uint64(rel + s.startNS) }
		sw := func(rel int64, out bool) {
			m.switched(&perfabi.Switch{Pid: 10, Tid: 10, CPU: 1, Out: out, Time: at(rel)})
		}
		sw(0, false)
		stop := int64(10)
		if tc.before {
			// Blocked in a text fault from 1 ms to 5 ms; runs 0.5 ms in all until 200 ms.
			m.contextSwitch(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(1 * ms), ID: 1, RegsABI: 2, Regs: regs}, 5)
			sw(1*ms, true)
			sw(5*ms, false)
			m.majorFault(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(5 * ms), ID: 2, Addr: 0x401234})
			m.switched(&perfabi.Switch{Pid: 10, Tid: 10, CPU: 1, Out: true, Preempt: true, Time: at(5*ms + ms/4)})
			sw(200*ms, false) // preempted until 200 ms (a CPU hog's slice, and more)
			stop = 200
		}
		m.contextSwitch(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(stop*ms + ms/4), ID: 1, RegsABI: 2, Regs: regs}, 5)
		sw(stop*ms+ms/4, true) // stopped, outside a system call
		sw(stop*ms+90*ms, false)
		if !tc.before {
			m.majorFault(&perfabi.Sample{Pid: 10, Tid: 10, Time: at(tc.faultAt * ms), ID: 2, Addr: 0x401234})
		}
		m.exited(10, 10, stop*ms+200*ms)
		var got []experiment.Mode
		for _, c := range events(t, s) {
			if c.Mode != experiment.ModeUser && c.Mode != experiment.ModeWaitCPU && c.Period > 80*ms {
				got = append(got, c.Mode)
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("before %v, a major fault at %d ms: the stop's modes %v, want [%v]", tc.before, tc.faultAt, got, tc.want)
		}
	}
}

// TestMicrostatesMerge: a thread's intervals of one mode and stack are one event while they fit in a
// sampling interval; another stack, mode or a longer span writes the event.
func TestMicrostatesMerge(t *testing.T) {
	s := testSession(t, Spec{Interval: IntervalOn})
	s.recording = true
	m := &microstates{s: s, interval: int64(10 * time.Millisecond), threads: map[uint32]*thread{}}
	addStacks(t, s, 4)
	th, _ := m.thread(10, 11)
	const us = int64(time.Microsecond)
	for i := range int64(30) { // 30 intervals of 100 us, one every ms
		m.add(11, th, offInterval{valid: true, start: i * 1000 * us, end: i*1000*us + 100*us, dur: 100 * us, mode: experiment.ModeSleep, stack: 4})
	}
	m.add(11, th, offInterval{valid: true, start: 31000 * us, end: 31050 * us, dur: 50 * us, mode: experiment.ModeWaitCPU, stack: 4})
	m.finish(40000 * us)
	var periods []int64
	var total int64
	for _, c := range events(t, s) {
		if !c.Mode.CPU() {
			periods = append(periods, c.Period)
			total += c.Period
		}
	}
	// Spans of 10 ms: intervals 0-10 (11 of them end within 10 ms of the first's start), and so on.
	if len(periods) < 3 || len(periods) > 5 || total != 30*100*us+50*us {
		t.Errorf("merged events %v (total %d), want 3 or 4 sleeps and a wait, 3.05 ms in all", periods, total)
	}
}

// microTest is a recording session whose microstates follow thread 11 of process 10, created at 0 and
// not read from outside (its schedstat readings are the test's), with stacks 1 to 3.
type microTest struct {
	s  *Session
	m  *microstates
	th *thread
}

func newMicroTest(t *testing.T) *microTest {
	t.Helper()
	s := testSession(t, Spec{Interval: IntervalOn})
	s.recording = true
	m := &microstates{s: s, interval: int64(IntervalOn), csIDs: map[uint64]bool{}, faultIDs: map[uint64]bool{},
		axIndex: -1, threads: map[uint32]*thread{}}
	s.ms = m
	addStacks(t, s, 3)
	m.forked(10, 11, 0)
	th := m.threads[11]
	th.rc.fd = -1
	return &microTest{s: s, m: m, th: th}
}

// sw is the thread's context-switch record at rel ns.
func (mt *microTest) sw(rel int64, out, preempt bool) {
	mt.m.switched(&perfabi.Switch{Pid: 10, Tid: 11, CPU: 1, Out: out, Preempt: preempt, Time: uint64(rel + mt.s.startNS)})
}

// sample is the thread's clock sample at rel ns, at stack; it returns the CPU time it stands for.
func (mt *microTest) sample(rel int64, stack uint32) int64 {
	p := mt.m.onCPU(&perfabi.Sample{Pid: 10, Tid: 11, Time: uint64(rel + mt.s.startNS), Period: uint64(IntervalOn)}, rel)
	mt.m.sampled(11, stack, experiment.ModeUser)
	return p
}

// events closes the session's experiment and returns its clock events.
func events(t *testing.T, s *Session) []experiment.ClockSample {
	t.Helper()
	if err := s.w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	return d.ClockSamples()
}

// waitsByStack sums the Wait CPU of events by stack.
func waitsByStack(evs []experiment.ClockSample) map[uint32]int64 {
	waits := map[uint32]int64{}
	for _, c := range evs {
		if c.Mode == experiment.ModeWaitCPU {
			waits[c.Stack] += c.Period
		}
	}
	return waits
}

// TestPreemptedBeforeFirstSample: a new thread preempted before any sample (and no context-switch
// sample of it) waits at the stack of its first sample, not at none; its wait for its first CPU stays
// at none (it had not run).
func TestPreemptedBeforeFirstSample(t *testing.T) {
	mt := newMicroTest(t)
	const ms = int64(time.Millisecond)
	mt.sw(1*ms, false, false)
	mt.sw(2*ms, true, true) // preempted for 30 ms, more than a sampling interval
	mt.sw(32*ms, false, false)
	mt.m.sampled(11, 2, experiment.ModeUser)
	mt.m.exited(10, 11, 40*ms)
	if waits := waitsByStack(events(t, mt.s)); waits[2] != 30*ms || waits[0] != 1*ms {
		t.Errorf("Wait CPU by stack %v, want 30 ms at the first sample's stack 2 and 1 ms at none", waits)
	}
}

// TestPreemptionStack: a preemption no context-switch sample saw waits at the stack of the clock sample
// nearer to it in the thread's CPU time, its last or its next.
func TestPreemptionStack(t *testing.T) {
	mt := newMicroTest(t)
	const ms = int64(time.Millisecond)
	mt.sw(0, false, false)
	mt.sample(1*ms, 1)
	mt.sw(9*ms, true, true) // 8 ms of CPU after the sample at stack 1, 1 ms before the next: stack 2
	mt.sw(20*ms, false, false)
	mt.sample(21*ms, 2)
	mt.sw(22*ms, true, true) // 1 ms after the sample at stack 2, 9 ms before the next: stack 2
	mt.sw(30*ms, false, false)
	mt.sample(39*ms, 3)
	mt.m.exited(10, 11, 40*ms)
	if waits := waitsByStack(events(t, mt.s)); waits[2] != 11*ms+8*ms || len(waits) != 1 {
		t.Errorf("Wait CPU by stack %v, want all 19 ms at stack 2", waits)
	}
}

// TestLostSwitchIn: a sample of a thread whose switch-in record was lost stands for at most the time
// since it left a CPU, where its time off a CPU ends.
func TestLostSwitchIn(t *testing.T) {
	mt := newMicroTest(t)
	const ms = int64(time.Millisecond)
	mt.sw(0, false, false)
	mt.sw(5*ms, true, true) // its switch-in at about 9 ms is lost
	if p := mt.sample(12*ms, 2); p != 12*ms {
		t.Errorf("the sample stands for %d ns, want its 5 ms before it left the CPU and the 7 ms since", p)
	}
	mt.sw(20*ms, true, false)
	mt.m.exited(10, 11, 30*ms)
	var life int64
	for _, c := range events(t, mt.s) {
		life += c.Period
	}
	// Written here: the CPU since that sample (8 ms, at the exit) and the waits (preempted at 5 ms and
	// back, at the most, 7 ms before the sample: none; then 10 ms asleep, to just before the exit); the
	// sample's 12 ms are the session's to write.
	if want := 30*ms - 1 - 12*ms; life != want {
		t.Errorf("the thread's events add up to %d ns, want %d", life, want)
	}
}

// TestLostSleep: a ring lost a thread's switch-out and its next switch-in, so its records show one
// on-CPU interval holding a sleep. Its next sample stands for its count (the kernel's), not for the
// sleep; a thread that ends before a sample after a loss is credited at most one period; a thread
// first seen after a loss, by a switch-out, is not taken to have run since the events were enabled.
func TestLostSleep(t *testing.T) {
	mt := newMicroTest(t)
	mt.m.counted = true
	const ms = int64(time.Millisecond)
	sample := func(rel, count int64) int64 {
		p := mt.m.onCPU(&perfabi.Sample{Pid: 10, Tid: 11, ID: 7, Time: uint64(rel + mt.s.startNS),
			Period: uint64(IntervalOn), Count: uint64(count)}, rel)
		mt.m.sampled(11, 2, experiment.ModeUser)
		return p
	}
	mt.sw(0, false, false)
	if p := sample(10*ms, 10*ms); p != 10*ms {
		t.Fatalf("the first sample stands for %d ns, want 10 ms", p)
	}
	// On again at 10 ms; it sleeps from 12 ms to 200 ms, both records lost; out at 205 ms recorded.
	mt.m.lost()
	mt.sw(205*ms, true, false)
	mt.sw(300*ms, false, false)
	if p := sample(303*ms, 20*ms); p != 10*ms {
		t.Errorf("the sample after the loss stands for %d ns, want its count's 10 ms (not the records' 198 ms)", p)
	}
	// Without a loss since, the records again.
	if p := sample(313*ms, 30*ms); p != 10*ms {
		t.Errorf("the next sample stands for %d ns, want 10 ms", p)
	}
	mt.sw(315*ms, true, false)
	mt.m.lost()
	mt.sw(500*ms, false, false) // (its 3 ms on at 400 ms, and off at 403 ms, lost)
	mt.m.exited(10, 11, 600*ms)

	// A thread whose fork record was lost: its first record is a switch-out at 700 ms.
	mt.m.switched(&perfabi.Switch{Pid: 10, Tid: 12, CPU: 1, Out: true, Time: uint64(700*ms + mt.s.startNS)})
	mt.m.exited(10, 12, 710*ms)
	cpu := map[uint32]int64{}
	for _, c := range events(t, mt.s) {
		if c.Mode == experiment.ModeUser || c.Mode == experiment.ModeKernel {
			cpu[c.Tid] += c.Period
		}
	}
	// Thread 11's exit: at most a period (not the 102 ms of its last on-CPU interval and the 2 ms before
	// it); thread 12: nothing.
	if want := int64(IntervalOn); cpu[11] != want {
		t.Errorf("thread 11's CPU at its exit %d ns, want %d", cpu[11], want)
	}
	if cpu[12] != 0 {
		t.Errorf("thread 12 (first seen after a loss) credited %d ns of CPU, want none", cpu[12])
	}
}
