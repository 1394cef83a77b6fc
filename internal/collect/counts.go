package collect

import (
	"slices"

	"er/internal/experiment"
	"er/internal/perfabi"
)

// The CPU time of each clock sample, from the thread's count in it.
//
// A task-clock sample stands for one period of CPU time by the kernel's timer, and that timer drifts
// when more threads are runnable than there are CPUs: a process's samples were off its getrusage by up
// to 6% beside CPU hogs. Where the kernel puts the event's count in each sample (PERF_SAMPLE_READ with
// inherit, perfevent.CountInSamples), a sample stands instead for its thread's counted CPU time since
// the thread's previous sample on the same event (the events are per CPU, and so are the counts): the
// samples of a thread then add up to its count but for the time after its last sample on each CPU,
// drift or not, and pauses cut nothing short (see Session.writeCPU). Older kernels keep the periods.

// SampleCountsEnv names the environment variable that sets when samples carry their threads' counts:
// on (always), off (never), or unset (see Spec.countInSamples).
const SampleCountsEnv = "ER_SAMPLE_COUNTS"

// countMark is a thread's count on one event at its last sample.
type countMark struct {
	id    uint64 // the event
	count uint64
	t     int64 // the sample's time
	// With runtime counts in the samples (see the steal time in each sample): the runtime count at
	// the last sample, and the steal time taken out of the mark's samples.
	runtime uint64
	stolen  int64
}

// threadCounts is a thread's last count on each event it was sampled on.
type threadCounts struct {
	marks  []countMark
	exited int64 // the time of its exit record; 0 while it runs
	// With runtime counts in the samples: the runtime counts at the last samples on every event
	// added up, the steal time taken out of its samples, and the last taken out by period.
	runtime, stolen, lastStolen int64
}

// sampleCounts tracks the counts of every sampled thread.
type sampleCounts struct {
	threads map[uint32]*threadCounts
	exits   int // exits since the last purge
	// runtimeAt is the index of the runtime count in a sample's group read (Sample.Siblings), 0 where
	// samples do not carry it.
	runtimeAt int
	lag       int64 // the most the runtime count lags behind the thread's count on one event: a tick
}

// The steal time in each sample. A sample's count is the task clock's, which holds the time the
// hypervisor took the CPU while the thread was on it (see steal.go), and so does the time between a
// thread's context switches: beside two CPU hogs, one sample of -p hi stood for 65.6 ms (the vCPU
// taken away for as long) in a function that ran for 0.5 s, 6.7% over what it measured. Where the
// clock's group counts the scheduler's runtime (runtimeCounts, which never holds steal time) and the
// samples carry their group's counts (perfevent.Options.ReadGroup), the clock's count less the
// runtime's is the steal time so far plus the runtime's lag (it moves only when the scheduler
// accounts: a tick, a switch, so it lags by up to a tick). The steal time taken out of a thread's
// samples on one CPU's event is the most that difference has been less a tick: none where there is
// no steal, and each stolen stretch out of the sample it fell in but for a tick's worth. (A runtime
// count short of the thread's time, which a thread woken often from other CPUs has, is taken for
// steal too; with microstates, where that showed, see cpuSteal.)

// purgeEvery is the number of exits between purges of the threads that ended, and purgeAge how long
// after its exit a thread is forgotten: records reach the reader within a drain, far less than that.
const (
	purgeEvery = 1024
	purgeAge   = int64(10e9)
)

// period returns the CPU time that sample r, taken at time t (relative to the start), stands for, and the
// time its interval began: the thread's previous sample on the same event, or 0 for its first. It is
// the count since that sample, and at most the time between them, which a thread's count on one CPU
// cannot exceed. A count below the previous one (a thread id used again) restarts the thread.
func (c *sampleCounts) period(r *perfabi.Sample, t int64) (ns, since int64) {
	if c.threads == nil {
		c.threads = map[uint32]*threadCounts{}
	}
	th := c.threads[r.Tid]
	if th == nil || th.exited != 0 && t > th.exited {
		th = &threadCounts{}
		c.threads[r.Tid] = th
	}
	i := 0
	for i < len(th.marks) && th.marks[i].id != r.ID {
		i++
	}
	if i == len(th.marks) {
		th.marks = append(th.marks, countMark{id: r.ID})
	}
	m := &th.marks[i]
	since = m.t
	if r.Count < m.count {
		since, m.count = 0, 0
	}
	ns = int64(r.Count - m.count)
	if ns < 0 || ns > t-since {
		ns = max(t-since, 0)
	}
	th.lastStolen = 0
	if c.runtimeAt > 0 && r.Leader && len(r.Siblings) > c.runtimeAt {
		rt := r.Siblings[c.runtimeAt]
		if rt < m.runtime {
			m.runtime, m.stolen = 0, 0 // a thread id used again
		}
		th.runtime += int64(rt - m.runtime)
		m.runtime = rt
		if s := int64(r.Count) - int64(rt) - c.lag; s > m.stolen {
			th.lastStolen = min(s-m.stolen, ns)
			m.stolen = s
		}
	}
	m.count, m.t = r.Count, t
	return ns, since
}

// stealFree returns the part of ns, the count of the sample of thread tid that period has just
// read, that was the thread's own CPU time (see the steal time in each sample).
func (c *sampleCounts) stealFree(tid uint32, ns int64) int64 {
	th := c.threads[tid]
	if th == nil {
		return ns
	}
	return ns - th.lastStolen
}

// exit notes that thread tid exited at time t, and now and then forgets the threads that exited long
// before it.
func (c *sampleCounts) exit(tid uint32, t int64) {
	if th := c.threads[tid]; th != nil {
		th.exited = t
	}
	c.exits++
	if c.exits < purgeEvery {
		return
	}
	c.exits = 0
	for tid, th := range c.threads {
		if th.exited != 0 && th.exited < t-purgeAge {
			delete(c.threads, tid)
		}
	}
}

// unpausedWithin returns how much of the time from a to b recording was not paused in any of images
// ps (an image's own pauses, and er's global ones).
func unpausedWithin(a, b int64, ps ...*proc) int64 {
	if b <= a {
		return 0
	}
	toggled := false
	for _, p := range ps {
		toggled = toggled || p.initPaused || len(p.toggles) > 0
	}
	if !toggled { // every sample of a run without pauses comes here: nothing to allocate
		return b - a
	}
	cuts := []int64{a, b}
	for _, p := range ps {
		for _, tg := range p.toggles {
			if tg.t > a && tg.t < b {
				cuts = append(cuts, tg.t)
			}
		}
	}
	slices.Sort(cuts)
	var n int64
	for i := 1; i < len(cuts); i++ {
		x, y := cuts[i-1], cuts[i]
		if y <= x {
			continue
		}
		paused := false
		for _, p := range ps {
			paused = paused || p.pausedAt(x) // a toggle takes effect at its time: (x, y) has x's state
		}
		if !paused {
			n += y - x
		}
	}
	return n
}

// countedPeriods is the module of the counts in samples: each clock sample's CPU time is its thread's
// count since its previous sample, less the steal time in it, and a thread's marks end at its exit.
type countedPeriods struct {
	hooks
	s *Session
}

func (c countedPeriods) task(r perfabi.Record) {
	if e, ok := r.(*perfabi.Exit); ok {
		c.s.counts.exit(e.Tid, c.s.rel(e.Time))
	}
}

func (c countedPeriods) period(r *perfabi.Sample, t int64) (period, since, stolen int64) {
	period, since = c.s.counts.period(r, t)
	own := c.s.counts.stealFree(r.Tid, period)
	return own, since, period - own
}

func (countedPeriods) sampled(uint32, uint32, experiment.Mode) {}
