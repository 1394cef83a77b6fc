package analysis

import (
	"er/internal/sat"
	"slices"

	"er/internal/experiment"
)

// Weighting clock samples by the kernel's count.
//
// A clock sample stands for one sampling period of its thread's CPU time, but the kernel's timer
// that takes the samples drifts when many threads share few CPUs: on 2 CPUs with 4 busy
// processes, a process's samples were off its own getrusage by up to 6% while the total stayed
// exact. The collector records, for each thread that lived and was recorded without pause, the
// CPU time the kernel counted on the clock event (Log.ThreadCPU, within 0.3% of getrusage). The
// samples of such a thread are weighted so that they add up to that count exactly: the count gives
// the thread's total, the samples how it divides among call stacks.

// maxWeight bounds the weight, besides two periods for the time after a thread's last samples: a
// thread whose samples and count disagree more than this (lost samples, a count the kernel
// reported under another thread) keeps its samples' own periods. The worst disagreement seen from
// the timer's drift was 6%.
const maxWeight = 1.25

// countedPeriods returns, for each clock sample of d, the CPU time it stands for after weighting by
// its thread's count; nil when d has no counts. Rounding is carried from sample to sample, so a
// thread's weighted periods add up to its count to the nanosecond.
func countedPeriods(d *experiment.Data) []int64 {
	ck := d.ClockTable()
	if len(d.Log.ThreadCPU) == 0 || ck.Len() == 0 {
		return nil
	}
	counted := make(map[uint32]int64, len(d.Log.ThreadCPU))
	reported := map[uint32]bool{}
	for _, t := range d.Log.ThreadCPU {
		counted[t.Tid] = t.CPUNS
		reported[t.Tid] = t.Reported
	}
	sampled, period := map[uint32]int64{}, map[uint32]int64{}
	var anyPeriod int64
	for i := range ck.Len() {
		cs := experiment.ClockAt(ck, i)
		s := &cs
		if _, ok := counted[s.Tid]; ok && s.Pid == d.Log.Pid && s.Mode.CPU() && !d.ProcessExit(s) {
			sampled[s.Tid] = sat.Add(sampled[s.Tid], s.Period)
			period[s.Tid] = max(period[s.Tid], s.Period)
			anyPeriod = max(anyPeriod, s.Period)
		}
	}
	// agree reports whether count c fits samples adding up to n of at most period p: a thread's count
	// exceeds its samples by up to a period on each CPU it ran on (the time since its last sample
	// there: the events are per CPU), and by one more for a sample that came late (a busy machine's
	// timer), besides the drift. With two periods and no more, a cc1 of 35 ms with one 10 ms sample at
	// -p on, on 2 CPUs, kept its one sample: make -j2 91.3% beside two CPU hogs. Its samples exceed its
	// count by the drift and by the steal time of a virtual machine, which the collector takes out of
	// the counts: in a thread of a few periods, two periods more (1,000 threads of 5 ms: 7 samples of
	// 1 ms for 5 ms counted, kept unweighted, put er print's total 1.2% above the count). A thread
	// without samples fits a count of two periods.
	tails := float64(max(d.Log.CPUs, 2) + 1)
	agree := func(c, n, p int64) bool {
		if n == 0 {
			return c <= 2*anyPeriod
		}
		slack := (maxWeight-1)*float64(n) + tails*float64(p)
		return float64(c) <= float64(n)+slack && float64(c) >= float64(n)/maxWeight-2*float64(p)
	}
	// A count the kernel reported for the thread itself is its CPU time, however few or many samples
	// the thread got: when the kernel swaps the perf contexts of two tasks, the sampling timer's
	// progress moves with the context, and a task of 0.1 s had 5 samples, its sibling 13, beside two
	// CPU hogs (both counts exact). Only counts er derived must agree with their samples.
	own := func(tid uint32, c, n, p int64) bool { return reported[tid] || agree(c, n, p) }
	swapCounts(counted, sampled, period, own, agree)
	type acc struct {
		weight    float64
		raw, done int64
	}
	accs := map[uint32]*acc{}
	for tid, n := range sampled {
		if c := counted[tid]; n > 0 && own(tid, c, n, period[tid]) {
			accs[tid] = &acc{weight: float64(c) / float64(n)}
		}
	}
	if len(accs) == 0 {
		return nil
	}
	out := make([]int64, ck.Len())
	for i := range out {
		cs := experiment.ClockAt(ck, i)
		s := &cs
		a := accs[s.Tid]
		if a == nil || s.Pid != d.Log.Pid || !s.Mode.CPU() || d.ProcessExit(s) {
			out[i] = s.Period
			continue
		}
		a.raw = sat.Add(a.raw, s.Period)
		upto := sat.Float(float64(a.raw)*a.weight + 0.5)
		if a.raw == sampled[s.Tid] {
			upto = counted[s.Tid] // the last sample closes the count exactly
		}
		out[i] = sat.Sub(upto, a.done)
		a.done = upto
	}
	return out
}

// swapCounts gives back their own counts to pairs of threads that each hold the other's. When the
// scheduler switches between two threads of a process, the kernel may swap their perf contexts
// instead of switching events (with inherit_stat it swaps the counts back); a worker thread that then
// exits with the process's original events reports no count of its own, and the main thread reports
// its own at its exit. Read the other way round (as the collector did before placing them, see
// collect's assignOrphanRead), of 4 workers one showed 1 ms counted of the 600 ms it measured, the
// main thread 602 ms of its 1 ms; experiments recorded then, and any pair the collector could not
// place, are put right here. Pairs are taken in thread order, each thread once, among the threads whose counts
// are not their own by own (a count the kernel reported for the thread is) and disagree with their samples.
func swapCounts(counted, sampled, period map[uint32]int64, own func(tid uint32, c, n, p int64) bool, agree func(c, n, p int64) bool) {
	var off []uint32
	for tid, c := range counted {
		if !own(tid, c, sampled[tid], period[tid]) {
			off = append(off, tid)
		}
	}
	slices.Sort(off)
	used := map[uint32]bool{}
	for i, a := range off {
		for _, b := range off[i+1:] {
			if used[a] || used[b] {
				continue
			}
			if agree(counted[b], sampled[a], period[a]) && agree(counted[a], sampled[b], period[b]) {
				counted[a], counted[b] = counted[b], counted[a]
				used[a], used[b] = true, true
			}
		}
	}
}
