package collect

import (
	"bytes"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Reconciling each thread's off-CPU intervals with what the kernel's scheduler counted of it.
//
// The switch records say when a thread left a CPU and came back, but not when a sleeping thread was
// woken: the time from its wakeup to its return to a CPU (runnable, waiting for a CPU: Wait CPU) is
// inside its sleep. And the records come some microseconds after the scheduler started the thread's
// CPU clock at each switch-in (the switch itself, and perf's own work in it), so that by them a thread
// has that much less CPU time, and that much more off-CPU time, than by its own clock: some 2 µs a
// switch on a virtual machine, 3% of a phase of major page faults.
//
// The kernel keeps both per thread (CONFIG_SCHED_INFO), in /proc/PID/task/TID/schedstat: its CPU
// time (sum_exec_runtime, which CLOCK_THREAD_CPUTIME_ID reads), its time runnable and waiting for a
// CPU (run_delay: after a preemption, and after a wakeup) and its number of arrivals onto a CPU
// (pcount). er reads it for each thread that had off-CPU intervals since the last reading, and
// applies the reading when the records have caught up with it, at the thread's pcount-th switch-in:
//   - the records' CPU time up to there falls short of the kernel's by the switches' lag: it is given
//     back, shared equally by the off-CPU intervals of the window (each is that much shorter), as
//     System CPU at their stacks (where the thread was switched: in the scheduler, under the call it
//     waited in);
//   - the window's run_delay, less its preemptions' waits (which the records have, less their lag),
//     is the time its sleeps waited for a CPU after their wakeups: it is taken from the sleeps' ends
//     and made Wait CPU at their stacks, shared equally by them (at most each one's length).
//
// A reading's CPU time is exact only when the thread was off a CPU while it was read (a running
// thread's is updated at the scheduler's ticks); otherwise the reading is dropped and its intervals
// wait for the next exact one, so that the lag they get is theirs (an estimate would be too much as
// often as too little, and too much cannot be taken back from the samples). A thread's last window
// gets its own average lag a switch (else the session's), and the wakeups' waits where a reading
// covers it; after its last reading its sleeps keep them.

// schedStat is what /proc/PID/task/TID/schedstat says of a thread.
type schedStat struct {
	exec  int64 // its CPU time, ns
	delay int64 // its time runnable, waiting for a CPU, ns
	count int   // its arrivals onto a CPU
}

// parseSchedstat parses a schedstat file: "exec delay count\n".
func parseSchedstat(b []byte) (schedStat, error) {
	f := bytes.Fields(b)
	if len(f) != 3 {
		return schedStat{}, fmt.Errorf("want 3 numbers, have %q", b)
	}
	var v [3]int64
	for i := range f {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil || n < 0 {
			return schedStat{}, fmt.Errorf("field %d: %q is not a count", i+1, f[i])
		}
		v[i] = n
	}
	return schedStat{exec: v[0], delay: v[1], count: int(v[2])}, nil
}

// schedReading is a reading of a thread's schedstat not yet applied.
type schedReading struct {
	valid bool
	t     int64 // when the read began, ns since the start
	schedStat
}

// reconcile is a thread's reconciliation state.
type reconcile struct {
	fd     int  // -1: its schedstat cannot be read; 0: it can (the file is opened at each reading)
	active bool // the sums below are set: its intervals wait in queue for readings
	// At the thread's start (or its first reading, for a thread er did not see created): the kernel's
	// figures and the records' (CPU time, switch-ins).
	exec0, delay0 int64
	count0        int
	total0        int64
	ins0          int
	// What the readings applied so far gave: the lag given back, the preemptions' waits (less their
	// lag) and the wakeups' waits taken from sleeps.
	lag, preempt, wake int64
	reading            schedReading
	// The lag its exact readings found, and the switches it was shared by; the switches of the windows
	// since its last exact reading, and the lag those windows were given by its average (estimated).
	lagSum, lagN, switches, estimated int64
}

// maxQueue is how many groups of off-CPU intervals a thread keeps waiting for a reading; beyond, the
// oldest half are written as the records have them (a thread that er cannot read).
const maxQueue = 1024

// schedPath is thread tid's schedstat file.
func schedPath(pid, tid uint32) string {
	return procPath(pid, tid, "schedstat")
}

// readSched reads thread tid's schedstat, opening and closing its file: a file kept open keeps the
// kernel's dentries of the thread's /proc directory in use when the thread is reaped.
func (m *microstates) readSched(pid, tid uint32, rc *reconcile) (schedStat, bool) {
	if rc.fd < 0 {
		return schedStat{}, false
	}
	var buf [96]byte
	fd, err := unix.Open(schedPath(pid, tid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		rc.fd = -1
		return schedStat{}, false
	}
	n, err := unix.Pread(fd, buf[:], 0)
	unix.Close(fd)
	if err != nil || n <= 0 {
		rc.fd = -1
		return schedStat{}, false
	}
	st, err := parseSchedstat(buf[:n])
	if err != nil {
		rc.fd = -1
		return schedStat{}, false
	}
	return st, true
}

// closeSched ends a thread's readings of its schedstat (its file is not kept open).
func (m *microstates) closeSched(rc *reconcile) { rc.fd = 0 }
