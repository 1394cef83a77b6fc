package collect

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"er/internal/experiment"
	"golang.org/x/sys/unix"
)

// The task clock counts the time a thread is on a CPU, and on a virtual machine that includes the time
// the hypervisor took the CPU away (steal time), which the kernel leaves out of the thread's own CPU
// time where it accounts steal (CONFIG_PARAVIRT_TIME_ACCOUNTING). On a busy VM the counts were 1% to
// 1.5% more than getrusage (TestAccuracy, 8 threads at -p hi), and more while other processes woke
// often. For the founder, which er waits for, the kernel says its exact CPU time: scaleToRusage brings
// the founder's thread counts to it, each thread within the bounds its runtime count gives (see
// runtimeCounts), or all down by the same factor without them.

// stealScaleMin is the smallest scale applied: a count more than 10% above the process's CPU time is
// not steal alone, and is left as it is.
const stealScaleMin = 0.9

// scaleToRusage brings the clock counts to the founder's CPU time from wait4, and returns the
// founder's total count. For a process alone, each thread goes to the same fraction of the range its
// runtime count gives (interpolateCounts), or without runtime counts all go down by the same factor
// (scaleCounts). A process tree is placed alike, all its threads at one fraction, when runtime counts
// bound them: the founder's rusage then holds the descendants it waited for, as their parents did
// theirs (descendants nobody waited for leave it short: then the threads stay nearer their runtime
// counts, never below them). Nothing changes where the counts cover less than the processes' lives.
func (s *Session) scaleToRusage(st *os.ProcessState, counted int64) int64 {
	if st == nil || !s.recordedWhole(s.founder) {
		return counted
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok {
		return counted
	}
	cpuNS := ru.Utime.Nano() + ru.Stime.Nano()
	if s.ms != nil && s.ms.lagN > 0 {
		// The threads' counts are the kernel's own CPU clocks, from their schedstat (microstates.go),
		// as getrusage's are: nothing to bring to it (scaling would take from them what the task
		// clock's count has beyond them). The count is theirs.
		var sum int64
		for _, ns := range s.threadCPU[s.founder] {
			sum += ns
		}
		if s.subexperiments == 0 {
			// Except where no exact reading settled a window (a thread's last, or one the readings
			// of a starved er missed): its records' time on a CPU holds the steal time of the
			// window. Beside two CPU hogs a thread alone was counted 2.0351 s, its rusage 2.0015 s.
			// The process's rusage is exact: the counts come down to it, as without microstates.
			return scaleCounts(s.threadCPU[s.founder], sum, cpuNS)
		}
		return sum
	}
	lows := s.runtime.lows(s)
	if s.subexperiments == 0 {
		if lows != nil {
			if total, ok := interpolateStealFree(s.threadCPU[s.founder], lows[s.founder], s.founder.stolen, cpuNS); ok {
				return total
			}
		}
		return scaleCounts(s.threadCPU[s.founder], counted, cpuNS)
	}
	if lows == nil {
		return counted
	}
	type task struct {
		p   *proc
		tid uint32
	}
	all, allLows, allStolen := map[task]int64{}, map[task]int64{}, map[task]int64{}
	for p, tids := range s.threadCPU {
		for tid, c := range tids {
			all[task{p, tid}] = c
			if r, ok := lows[p][tid]; ok {
				allLows[task{p, tid}] = r
			}
			if st := p.stolen[tid]; st > 0 {
				allStolen[task{p, tid}] = st
			}
		}
	}
	if _, ok := interpolateStealFree(all, allLows, allStolen, cpuNS); !ok {
		return counted
	}
	for k, n := range all {
		if k.p == s.founder {
			counted += n - s.threadCPU[k.p][k.tid]
		}
		s.threadCPU[k.p][k.tid] = n
	}
	return counted
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

// interpolateCounts sets each thread's count c (an upper bound of its CPU time) to r + λ(c-r), where r
// is its lower bound in lows (c where it has none), with the one λ in [0, 1] that makes them add up to
// cpuNS; false, changing nothing, where cpuNS is not between the sums of the bounds.
func interpolateCounts[K comparable](threads, lows map[K]int64, cpuNS int64) (int64, bool) {
	var hiSum, loSum int64
	lo := map[K]int64{}
	for tid, c := range threads {
		r := lowerBound(lows, tid, c)
		lo[tid] = r
		hiSum += c
		loSum += r
	}
	if cpuNS < loSum || cpuNS > hiSum || hiSum <= 0 {
		return 0, false
	}
	lambda := 1.0
	if hiSum > loSum {
		lambda = float64(cpuNS-loSum) / float64(hiSum-loSum)
	}

	for tid, c := range threads {
		threads[tid] = lo[tid] + int64(lambda*float64(c-lo[tid])+0.5)
	}
	return cpuNS, true
}

// lowerBound is the lower bound in lows of a thread counted c: c where it has none, or one not in [0, c].
func lowerBound[K comparable](lows map[K]int64, k K, c int64) int64 {
	if r, ok := lows[k]; ok && r >= 0 && r <= c {
		return r
	}
	return c
}

// interpolateStealFree interpolates the thread counts threads as interpolateCounts does, each upper
// bound first less the steal time taken out of the thread's samples (stolen, see the steal time in each
// sample in counts.go), not below its lower bound; where cpuNS is not between those bounds' sums (a
// runtime count short of a thread's time, which took more out of its samples than was stolen), as
// interpolateCounts does with the counts as they are. With one λ for all threads between counts that
// hold all of each one's steal, the one the hypervisor took the most from kept the most: 0.3054 s for
// a thread that measured 0.3000 s, beside three that came within 0.5%.
func interpolateStealFree[K comparable](threads, lows, stolen map[K]int64, cpuNS int64) (int64, bool) {
	if len(stolen) > 0 {
		hi := make(map[K]int64, len(threads))
		for k, c := range threads {
			hi[k] = c
			if r := lowerBound(lows, k, c); r < c {
				hi[k] = max(c-stolen[k], r)
			}
		}
		if total, ok := interpolateCounts(hi, lows, cpuNS); ok {
			maps.Copy(threads, hi)
			return total, true
		}
	}
	return interpolateCounts(threads, lows, cpuNS)
}

// unsampledWarning says when the founder's main thread holds much more counted CPU time (mainNS, which
// includes what threads never reported) than its samples and those of the threads without a count of
// their own (sampledNS) stand for: with a thousand threads
// started at once, the kernel took neither samples nor counts of 10% to 45% of them in 1 run of 3 beside
// two busy loops (perf record too), and their CPU time is then only in the process's total. It returns
// "" when the difference is under 10 periods or 5% of the total count.
func unsampledWarning(mainNS, sampledNS, countedNS int64, interval time.Duration) string {
	missing := mainNS - sampledNS
	if countedNS <= 0 || missing < 10*interval.Nanoseconds() || float64(missing) < 0.05*float64(countedNS) {
		return ""
	}
	return fmt.Sprintf("%.3f s of CPU time (%.1f%% of the %.3f s counted) was lost to the samples: the kernel counted it "+
		"in threads of which it took neither samples nor counts (it happens when many threads start at once on a busy "+
		"machine); the views fall short by as much", float64(missing)/1e9, 100*float64(missing)/float64(countedNS), float64(countedNS)/1e9)
}

// minExitNS is the least CPU time recordProcessExits records: below it, wait4's microseconds and the
// counts' own rounding say nothing.
const minExitNS = 100_000

// recordProcessExits records, as one clock sample of the founder with the pseudo-frame
// experiment.FrameProcessExit, the CPU time of the process tree that the clock's counts do not
// hold: the founder's wait4 usage (which holds every descendant waited for) less every thread's
// placed count. Recent kernels (a 2025 change; 6.18 here) stop a task's perf events before they free the task's
// address space at its exit, and that teardown is CPU time of the task that no clock event sees:
// 0.06 s for a process that touched 1 GiB, 4% to 8% of make -j2 on a small C project (50 processes
// of a few ms). It is recorded only where the counts cover every process's whole life: no pause,
// no stop, no image whose events the kernel removed; and never for an attached process.
func (s *Session) recordProcessExits(st *os.ProcessState, end int64) {
	if st == nil || !s.recordedWhole(s.founder) {
		return
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok {
		return
	}
	var counted int64
	for _, p := range s.images {
		if p.unrecorded || !s.recordedWhole(p) {
			return
		}
	}
	for _, threads := range s.threadCPU {
		for _, ns := range threads {
			counted += ns
		}
	}
	rest := ru.Utime.Nano() + ru.Stime.Nano() - counted
	if counted <= 0 || rest < minExitNS {
		return
	}
	p := s.founderImage(end)
	if !p.open() {
		return
	}
	id, err := p.w.Stack([]uint64{experiment.FrameProcessExit})
	if err != nil {
		return
	}
	writeSpread(p.w, experiment.ClockSample{Time: end, Pid: uint32(s.pid), Tid: uint32(s.pid), Mode: experiment.ModeKernel, Period: rest, Stack: id})
}

// maxPseudoPeriod is the longest period of one pseudo-frame sample: readers take periods up to 60 s.
const maxPseudoPeriod = int64(10 * time.Second)

// writeSpread writes sample c as samples of at most maxPseudoPeriod each, which add up to its period.
func writeSpread(w *experiment.Writer, c experiment.ClockSample) {
	for left := c.Period; left > 0; left -= maxPseudoPeriod {
		c.Period = min(left, maxPseudoPeriod)
		if w.Clock(c) != nil {
			return
		}
	}
}

// recordUnsampled records, for each thread of image p with a count and no clock sample in p, one sample
// of its count with the pseudo-frame experiment.FrameUnsampled (less what its samples in the images
// before p stand for: a thread that exec started a new image in has its count in the last, its samples
// in all; see priorSampled), so that the views hold its CPU time:
// a process of a few milliseconds often ends before its first sample (at -p on, make -j2's gcc
// drivers and assemblers: 23% to 25% of the tree's CPU). Only where writeThreadCount records the counts, and not
// where samples were lost: a thread without samples may then have lost them, which the lost-samples
// warning says.
func (s *Session) recordUnsampled(p *proc) {
	if s.cmd == nil || s.lost > 0 || !p.open() || p.unrecorded || !s.recordedWhole(p) {
		return
	}
	var id uint32
	t := p.exitTime
	if !p.exited {
		t = s.now()
	}
	tids := make([]uint32, 0, len(s.threadCPU[p]))
	for tid := range s.threadCPU[p] {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	for _, tid := range tids {
		ns := s.ownCount(p, tid)
		if ns <= 0 || p.sampled[tid] > 0 {
			continue
		}
		if id == 0 {
			var err error
			if id, err = p.w.Stack([]uint64{experiment.FrameUnsampled}); err != nil {
				return
			}
		}
		writeSpread(p.w, experiment.ClockSample{Time: t, Pid: p.pid, Tid: tid, Mode: experiment.ModeUnknown, Period: ns, Stack: id})
	}
}

// kernelTick returns the kernel's tick (1/CONFIG_HZ) in ns, from its configuration in /boot or
// /proc/config.gz; 10 ms (the longest, HZ=100) where neither says.
func kernelTick() int64 {
	var u unix.Utsname
	var cfg []byte
	if unix.Uname(&u) == nil {
		cfg, _ = os.ReadFile("/boot/config-" + unix.ByteSliceToString(u.Release[:]))
	}
	if cfg == nil {
		if f, err := os.Open("/proc/config.gz"); err == nil {
			if z, err := gzip.NewReader(f); err == nil {
				cfg, _ = io.ReadAll(io.LimitReader(z, 1<<22))
			}
			f.Close()
		}
	}
	return tickOf(cfg)
}

// tickOf returns the tick that kernel configuration cfg gives (CONFIG_HZ), or 10 ms.
func tickOf(cfg []byte) int64 {
	for line := range bytes.Lines(cfg) {
		v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("CONFIG_HZ="))
		if !ok {
			continue
		}
		if hz, err := strconv.Atoi(string(v)); err == nil && hz >= 100 && hz <= 10000 {
			return int64(time.Second) / int64(hz)
		}
	}
	return int64(10 * time.Millisecond)
}
