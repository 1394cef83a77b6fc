package collect

import (
	"os"
	"syscall"
)

// The task clock counts the time a thread is on a CPU, and on a virtual machine that includes the time
// the hypervisor took the CPU away (steal time), which the kernel leaves out of the thread's own CPU
// time where it accounts steal (CONFIG_PARAVIRT_TIME_ACCOUNTING). On a busy VM the counts were 1% to
// 1.5% more than getrusage (TestAccuracy, 8 threads at -p hi), and more while other processes woke
// often. For the founder, which er waits for, the kernel says its exact CPU time: scaleToRusage brings
// the founder's thread counts down to it.

// stealScaleMin is the smallest scale applied: a count more than 10% above the process's CPU time is
// not steal alone, and is left as it is.
const stealScaleMin = 0.9

// scaleToRusage scales the counts of the founder's threads to the founder's CPU time from wait4 when
// they add up to more (the steal time), and returns the founder's total count, exact then. It does
// nothing where the counts cover less than the process's whole life or the rusage holds more than the
// counts do (descendants er followed, or that the founder waited for).
func (s *Session) scaleToRusage(st *os.ProcessState, counted int64) int64 {
	if st == nil || s.subexperiments != 0 || s.stoppedAt != 0 || s.global.initPaused || len(s.global.toggles) > 0 ||
		s.founder == nil || s.founder.initPaused || len(s.founder.toggles) > 0 {
		return counted
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok {
		return counted
	}
	return scaleCounts(s.threadCPU[s.founder], counted, ru.Utime.Nano()+ru.Stime.Nano())
}

// scaleCounts scales the thread counts threads, which add up to counted, by cpuNS/counted when that is
// between stealScaleMin and 1, and returns the new total (cpuNS); otherwise it returns counted.
func scaleCounts(threads map[uint32]int64, counted, cpuNS int64) int64 {
	if counted <= 0 || cpuNS <= 0 || cpuNS >= counted || float64(cpuNS) < stealScaleMin*float64(counted) {
		return counted
	}
	f := float64(cpuNS) / float64(counted)
	for tid, ns := range threads {
		threads[tid] = int64(float64(ns) * f)
	}
	return cpuNS
}
