package collect

import (
	"os"
	"runtime"
	"testing"
	"time"

	"er/internal/experiment"

	"golang.org/x/sys/unix"
)

func TestParseSchedstat(t *testing.T) {
	st, err := parseSchedstat([]byte("41472982 3707841 105\n"))
	if err != nil || st != (schedStat{exec: 41472982, delay: 3707841, count: 105}) {
		t.Errorf("parseSchedstat = %+v, %v", st, err)
	}
	for _, bad := range []string{"", "1 2\n", "1 2 3 4\n", "1 x 3\n", "1 -2 3\n"} {
		if _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q): no error", bad)
		}
	}
}

// TestReadSched reads this test's own thread's schedstat: its CPU time grows as it spins, and no
// file stays open between readings (an open one keeps the thread's /proc dentries in use when it is
// reaped).
func TestReadSched(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := &microstates{}
	rc := &reconcile{}
	pid, tid := uint32(os.Getpid()), uint32(unix.Gettid())
	a, ok := m.readSched(pid, tid, rc)
	if !ok {
		t.Skipf("no %s (a kernel without CONFIG_SCHED_INFO?)", schedPath(pid, tid))
	}
	if rc.fd != 0 || openFiles(t, schedPath(pid, tid)) != 0 {
		t.Errorf("the file is kept open: fd %d, %d open", rc.fd, openFiles(t, schedPath(pid, tid)))
	}
	for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
	}
	b, ok := m.readSched(pid, tid, rc)
	if !ok || b.exec <= a.exec || b.count < a.count || b.delay < a.delay {
		t.Errorf("readings %+v then %+v", a, b)
	}
	m.closeSched(rc)
	if rc.fd != 0 {
		t.Errorf("closed: fd %d", rc.fd)
	}
	if _, ok := m.readSched(pid, 1<<30, &reconcile{}); ok {
		t.Error("read a thread that does not exist")
	}
}

func TestFillWakes(t *testing.T) {
	q := []offInterval{
		{mode: experiment.ModeSleep, dur: 100, lag: 10, n: 1},
		{mode: experiment.ModeWaitCPU, dur: 1000, n: 5},
		{mode: experiment.ModeSleep, dur: 1000, n: 3},
		{mode: experiment.ModeDataFault, dur: 5000, n: 1},
	}
	// 800 over 5 sleeps: 160 each, but the first has only 90 left after its lag: 710 over the other 4.
	if got := fillWakes(q, 800); got != 800 || q[0].wake != 90 || q[1].wake != 0 || q[2].wake != 532 || q[3].wake != 178 {
		t.Errorf("fillWakes gave %d: %d %d %d %d", got, q[0].wake, q[1].wake, q[2].wake, q[3].wake)
	}
	// More than the sleeps hold: all of them, and no more.
	if got := fillWakes(q, 1e6); got != 90+1000+5000 || q[2].wake != 1000 || q[3].wake != 5000 {
		t.Errorf("fillWakes(1e6) gave %d: %+v", got, q)
	}
	if got := fillWakes(q, -5); got != 0 {
		t.Errorf("fillWakes(-5) gave %d", got)
	}
}

// TestApplyReading drives a thread created under observation through a wait for its first CPU, a
// sleep and a preemption, applies a reading of its schedstat taken while it was off a CPU after them
// (the kernel counted 10 µs more CPU time a switch than the records, and 1 ms of wait for a CPU after
// the sleep's wakeup), then a sleep after the reading with a reading taken while the thread ran, and
// its exit; and reads back the experiment.
func TestApplyReading(t *testing.T) {
	mt := newMicroTest(t)
	s, m, th, sw := mt.s, mt.m, mt.th, mt.sw
	const ms, us = int64(time.Millisecond), int64(time.Microsecond)
	if !th.rc.active {
		t.Fatal("a new thread's reconciliation is not active")
	}
	sw(1*ms, false, false)
	m.sampled(11, 3, experiment.ModeUser)
	sw(5*ms, true, false) // asleep at stack 3
	sw(15*ms, false, false)
	sw(20*ms, true, true) // preempted
	sw(22*ms, false, false)
	sw(25*ms, true, false)
	// Read at 26 ms, off a CPU since 25: 12 ms of CPU by the records, 3 arrivals.
	th.rc.reading = schedReading{valid: true, t: 26 * ms, schedStat: schedStat{
		exec:  12*ms + 30*us,
		delay: (1*ms - 10*us) + 1*ms + (2*ms - 10*us), // the first CPU, the wakeup, the preemption
		count: 3,
	}}
	m.settle(30 * ms)
	if th.rc.reading.valid || len(th.queue) != 0 || m.applied != 1 {
		t.Fatalf("the reading was not applied: %+v, %d in queue", th.rc.reading, len(th.queue))
	}
	if m.lagN != 3 || m.lagSum != 30*us {
		t.Errorf("lag %d ns over %d switches, want 30 µs over 3", m.lagSum, m.lagN)
	}
	sw(35*ms, false, false) // a sleep no exact reading comes for: the average lag, 10 µs
	// Read at 36 ms while it runs: its CPU time is not exact, its waits and arrivals are: applied, the
	// sleep given the thread's average lag a switch, 10 µs, and no wait after its wakeup.
	m.settleFault(11, th) // (its next record would: the sleep was no major fault)
	th.rc.reading = schedReading{valid: true, t: 36 * ms, schedStat: schedStat{exec: 23 * ms, delay: 3980 * us, count: 4}}
	m.settle(37 * ms)
	if th.rc.reading.valid || len(th.queue) != 0 || m.applied != 2 || th.rc.estimated != 10*us || th.rc.switches != 1 {
		t.Errorf("a reading of the thread running: %+v, %d in queue, %d applied, %d ns estimated over %d switches",
			th.rc.reading, len(th.queue), m.applied, th.rc.estimated, th.rc.switches)
	}
	m.exited(10, 11, 40*ms)
	byMode := map[experiment.Mode]int64{}
	var life int64
	for _, c := range events(t, s) {
		byMode[c.Mode] += c.Period
		life += c.Period
	}
	want := map[experiment.Mode]int64{
		experiment.ModeWaitCPU: (1*ms - 10*us) + 1*ms + (2*ms - 10*us),
		experiment.ModeSleep:   (10*ms - 10*us - 1*ms) + (10*ms - 10*us),
		experiment.ModeKernel:  40 * us,
		experiment.ModeUser:    4*ms + 5*ms + 3*ms + 5*ms - 1, // at the exit, to just before it
	}
	for mode, ns := range want {
		if byMode[mode] != ns {
			t.Errorf("mode %d: %d ns, want %d", mode, byMode[mode], ns)
		}
	}
	if life != 40*ms-1 {
		t.Errorf("Total Thread Time %d ns, want the thread's life, %d", life, 40*ms-1)
	}
	if c := s.threadCPU[s.founder][11]; c != 17*ms-1+40*us {
		t.Errorf("the thread's count %d, want its CPU time with the lag given back, %d", c, 17*ms-1+40*us)
	}
}

// TestNegativeLag: where the kernel counted less CPU time than the records (a thread preempted more than
// it blocks), the window's intervals are longer by as much and the thread's next samples shorter.
func TestNegativeLag(t *testing.T) {
	mt := newMicroTest(t)
	th, sw := mt.th, mt.sw
	const ms, us = int64(time.Millisecond), int64(time.Microsecond)
	sw(1*ms, false, false)
	sw(5*ms, true, true) // preempted twice: 4 + 3 ms on a CPU by the records
	sw(6*ms, false, false)
	sw(9*ms, true, true)
	th.rc.reading = schedReading{valid: true, t: 10 * ms, schedStat: schedStat{exec: 7*ms - 30*us, delay: 1*ms + 1*ms + 30*us, count: 2}}
	sw(11*ms, false, false) // the third arrival applies the reading: the 30 µs go to the two waits
	if th.debt != 30*us || th.lagCPU != -30*us {
		t.Fatalf("debt %d, lag %d: want 30 µs owed", th.debt, th.lagCPU)
	}
	if p := th.pay(20 * us); p != 0 || th.debt != 10*us {
		t.Errorf("pay(20 µs) = %d, owing %d", p, th.debt)
	}
	if p := th.pay(5 * ms); p != 5*ms-10*us || th.debt != 0 {
		t.Errorf("pay(5 ms) = %d, owing %d", p, th.debt)
	}
}

// TestStealNotWake: a host that stole the vCPU while the thread ran makes the kernel count less CPU time
// than the records (its clock leaves out steal) but no wait for a CPU (run_delay leaves it out too):
// the preemptions that negative lag lengthens are not the kernel's waits, and must not be taken from
// the waits after the thread's later wakeups. (A CI run on a stealing host, the switches' lag -95 µs a
// switch: phase_wakeup's Wait CPU 0.0402 s of the 0.18 s it timed, the rest in Other Wait, after two
// CPU-bound phases.)
func TestStealNotWake(t *testing.T) {
	mt := newMicroTest(t)
	m, th, sw := mt.m, mt.th, mt.sw
	const ms = int64(time.Millisecond)
	sw(1*ms, false, false)
	sw(5*ms, true, true) // preempted twice; 2 ms of its 7 on a CPU by the records were stolen
	sw(6*ms, false, false)
	sw(9*ms, true, true)
	th.rc.reading = schedReading{valid: true, t: 10 * ms, schedStat: schedStat{exec: 5 * ms, delay: 2 * ms, count: 2}}
	sw(11*ms, false, false)
	sw(12*ms, true, false) // asleep, woken at 20 ms, on a CPU at 23: 3 ms of wait after its wakeup
	sw(23*ms, false, false)
	sw(24*ms, true, false)
	th.rc.reading = schedReading{valid: true, t: 25 * ms, schedStat: schedStat{exec: 7 * ms, delay: 7 * ms, count: 4}}
	sw(30*ms, false, false)
	if m.applied != 2 || m.wakes != 3*ms {
		t.Errorf("%d readings applied, %d ns of waits after wakeups found, want 2 and %d", m.applied, m.wakes, 3*ms)
	}
}

// TestNegativeLagAtExit: a thread that exits owing CPU time to a negative lag (the debt its samples had
// no time left to pay) has the kernel's CPU time as its count, not its samples' (which hold what it
// owed): its intervals were lengthened by the lag, so a count that kept it put Total Thread Time over
// its life by as much (a spinner beside three others on 2 CPUs: 0.5318 s for a life of 0.5250 s).
func TestNegativeLagAtExit(t *testing.T) {
	mt := newMicroTest(t)
	th, sw := mt.th, mt.sw
	const ms, us = int64(time.Millisecond), int64(time.Microsecond)
	sw(1*ms, false, false)
	sampled := mt.sample(4*ms, 1) // (onCPU's periods: the session writes them)
	sw(5*ms, true, true)
	sw(6*ms, false, false)
	sampled += mt.sample(9*ms, 1) // (its CPU time up to its switch out is in its samples)
	sw(9*ms, true, true)
	th.rc.reading = schedReading{valid: true, t: 10 * ms, schedStat: schedStat{exec: 7*ms - 30*us, delay: 1*ms + 1*ms + 30*us, count: 2}}
	sw(11*ms, false, false)
	mt.m.exited(10, 11, 11*ms+10*us+1) // 10 µs more on a CPU: 20 µs of the 30 still owed
	life := sampled
	for _, c := range events(t, mt.s) {
		life += c.Period
	}
	if c, want := mt.s.threadCPU[mt.s.founder][11], 7*ms-30*us+10*us; c != want {
		t.Errorf("the thread's count %d ns, want the kernel's CPU time and its 10 µs since, %d", c, want)
	}
	// Its samples hold the 20 µs it could not pay: the views weight them to its count.
	if want := 11*ms + 10*us + 20*us; life != want {
		t.Errorf("its events add up to %d ns, want its life and the 20 µs unpaid, %d", life, want)
	}
}

// TestRunningReading: a reading taken while the thread ran closes its window at once (its waits for a
// CPU and its arrivals are exact then), so two sleeps with different waits after their wakeups, read
// between them only while the thread ran, each get their own wait (dropped, as before, the window of
// both shared 2.5 ms equally); the lag estimated for the first window (the thread's average, 10 µs a
// switch) is settled by the next exact reading, which found 12 µs a switch since the one before.
func TestRunningReading(t *testing.T) {
	mt := newMicroTest(t)
	m, th, sw := mt.m, mt.th, mt.sw
	const ms, us = int64(time.Millisecond), int64(time.Microsecond)
	// An exact reading first: 10 µs a switch over the wait for its first CPU and a preemption, both
	// at stack 1 (its samples' there).
	sw(1*ms, false, false)
	mt.sample(4*ms, 1)
	sw(5*ms, true, true)
	sw(6*ms, false, false)
	mt.sample(9*ms, 1)
	sw(9*ms, true, true) // preempted again, off a CPU when read at 10 ms
	th.rc.reading = schedReading{valid: true, t: 10 * ms, schedStat: schedStat{exec: 7*ms + 20*us, delay: (1*ms - 10*us) + (1*ms - 10*us), count: 2}}
	m.settle(10*ms + 1)
	delay := (1*ms - 10*us) + (1*ms - 10*us)
	// That preemption ends at 11 ms; sleep 1 at stack 2, 10 ms, of which its last 2 ms waiting for a
	// CPU; read at 22.5 ms while it runs.
	sw(11*ms, false, false)
	mt.sample(12*ms, 2)
	sw(12*ms, true, false)
	sw(22*ms, false, false)
	m.settleFault(11, th) // (its next record would: the sleeps are no major faults)
	delay += (2*ms - 10*us) + 2*ms
	th.rc.reading = schedReading{valid: true, t: 22*ms + 500*us, schedStat: schedStat{exec: 8 * ms, delay: delay, count: 4}}
	m.settle(23 * ms)
	// (Its window: the preemption and sleep 1, 10 µs each.)
	if m.applied != 2 || len(th.queue) != 0 || th.rc.estimated != 20*us {
		t.Fatalf("the reading of the thread running: %d applied, %d in queue, %d ns estimated", m.applied, len(th.queue), th.rc.estimated)
	}
	// Sleep 2 at stack 3, 10 ms, of which 0.5 ms waiting; then off a CPU again and read: exact, 12 µs
	// a switch since the first reading (so 4 µs more for the second window's two switches, 12 for sleep
	// 2's: 16 µs to sleep 2's window).
	mt.sample(24*ms, 3)
	sw(24*ms, true, false)
	sw(34*ms, false, false)
	m.settleFault(11, th)
	delay += 500 * us
	sw(35*ms, true, false)                                                                     // asleep at stack 3 again, past the reading
	cpu := (5*ms - 1*ms) + (9*ms - 6*ms) + (12*ms - 11*ms) + (24*ms - 22*ms) + (35*ms - 34*ms) // by the records
	th.rc.reading = schedReading{valid: true, t: 36 * ms, schedStat: schedStat{exec: cpu + 20*us + 36*us, delay: delay, count: 5}}
	m.settle(37 * ms)
	if m.applied != 3 || th.rc.estimated != 0 || th.rc.lagN != 5 || th.rc.lagSum != 56*us {
		t.Errorf("the exact reading: %d applied, %d estimated, lag %d ns over %d switches, want 56 µs over 5", m.applied, th.rc.estimated, th.rc.lagSum, th.rc.lagN)
	}
	m.exited(10, 11, 40*ms)
	waits := map[uint32]int64{}
	kernel := map[uint32]int64{}
	for _, c := range events(t, mt.s) {
		switch c.Mode {
		case experiment.ModeWaitCPU:
			waits[c.Stack] += c.Period
		case experiment.ModeKernel:
			kernel[c.Stack] += c.Period
		}
	}
	if waits[2] != 2*ms || waits[3] != 500*us {
		t.Errorf("waits after the wakeups: sleep 1 %d ns, sleep 2 %d ns; want 2 ms and 0.5 ms", waits[2], waits[3])
	}
	if kernel[2] != 10*us || kernel[3] != 16*us {
		t.Errorf("lag: sleep 1 %d, sleep 2 %d; want 10 and 16 µs", kernel[2], kernel[3])
	}
}

// openFiles counts this process's open files on path.
func openFiles(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == path {
			n++
		}
	}
	return n
}
