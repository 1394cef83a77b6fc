package collect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"er/internal/counters"
	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"
	"golang.org/x/sys/unix"
)

// Counter profiling (-h). Each counter is a sampling sibling in the group of the clock's event (or,
// without clock profiling, of the dummy event that brings the processes' records), on every CPU,
// inherited by every thread and descendant as the clock is: a sample every Interval events, with the
// clock's call chain, registers and stack copy, so that its stack is unwound as a clock sample's; with
// '+', its data address too (PERF_SAMPLE_ADDR: a page fault's faulting address; a precise hardware
// event's, where the PMU gives one). The kernel writes them into the group's rings; Session.sample
// gives them to the counters' module (counterModule) by their event's id.

// counterStack is the user stack a counter's sample copies, at most: half the clock's default, as perf
// record's --call-graph dwarf (deeper frames are read from the live process). The kernel writes the
// whole copy into the ring at every sample, and counters come in bursts (a page-fault counter at every
// fault of a loop touching new memory).
const counterStack = 8192

// counterRingPages returns the data pages of each CPU's ring with counters: 16 MiB, some 1,800
// samples of a burst (a loop taking a page fault every 7 us fills it in 13 ms; with 4 MiB rings 2 runs
// in 5 lost samples of such a burst while er started, with 16 MiB none in 5), at most maxRingsBytes
// for all CPUs.
func counterRingPages(cpus, pageSize int) int {
	return int(min(pow2Floor(uint64(counterRingBytes/pageSize)), pow2Floor(uint64(maxRingsBytes/max(cpus, 1)/pageSize))))
}

const counterRingBytes = 16 << 20

// counterSiblings returns the sibling events of the counters of -h, in their order.
func (s *Session) counterSiblings() []perfevent.Sibling {
	var out []perfevent.Sibling
	for _, c := range s.spec.Counters {
		// With Precise, the exact instruction, and its data address, where the PMU samples precisely
		// (PEBS, IBS; CheckCounters lowered it where the PMU cannot).
		sb := counterSibling(&c)
		sb.StackUser, sb.Precise = counterStack, c.Precise
		out = append(out, sb)
	}
	return out
}

// counterSibling is the perf event of counter c, sampled every interval, as probed and opened.
func counterSibling(c *counters.Counter) perfevent.Sibling {
	return perfevent.Sibling{Type: uint64(c.Type), Config: c.Config, Config1: c.Config1, Config2: c.Config2, Period: c.Interval}
}

// microLayout returns the microstate samplers the clock's group needs beside the counters, and where
// the context-switch and major-fault samplers are among the counters and them (indexes from the first
// counter): a counter of the same event takes the sampler's place, since the kernel gives two sampling
// events of one software event in one group not both their samples (a context-switches counter had 2
// samples of 400 switches beside the microstates' sampler). Its stacks then serve both.
func (s *Session) microLayout() (micro []perfevent.Sibling, csAt, faultAt int) {
	all := microSiblings(s.spec.Interval.Nanoseconds())
	csAt, faultAt = -1, -1
	for i, c := range s.spec.Counters {
		if c.Type != unix.PERF_TYPE_SOFTWARE {
			continue
		}
		switch c.Config {
		case unix.PERF_COUNT_SW_CONTEXT_SWITCHES:
			csAt = i
		case unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ:
			faultAt = i
		}
	}
	n := len(s.spec.Counters)
	if csAt < 0 {
		csAt = n + len(micro)
		micro = append(micro, all[0])
	}
	if faultAt < 0 {
		faultAt = n + len(micro)
		micro = append(micro, all[1])
	}
	return micro, csAt, faultAt
}

// backtracking says whether a counter records data addresses.
func (s *Session) backtracking() bool {
	for _, c := range s.spec.Counters {
		if c.Backtrack {
			return true
		}
	}
	return false
}

// counterLog returns the counters as log.xml records them.
func counterLog(cs []counters.Counter) []experiment.Counter {
	var out []experiment.Counter
	for _, c := range cs {
		out = append(out, experiment.Counter{Name: c.Name, Metric: c.MetricName(), Title: c.Title, Type: c.Type,
			Config: c.Config, Config1: c.Config1, Config2: c.Config2, Interval: c.Interval, Unit: c.Unit,
			MemOp: c.MemOp, Backtrack: c.Backtrack})
	}
	return out
}

// CheckCounters opens each counter of the spec once on er itself, so that one the machine cannot count
// is said before the target runs: which, why, and what can be used instead. A backtracking counter the
// PMU cannot sample precisely is sampled less precisely, or without data addresses, as it can; the
// warnings say so.
func CheckCounters(spec *Spec) (warnings []string, err error) {
	return checkCounters(spec, perfevent.ProbeSibling)
}

// checkCounters is CheckCounters with the probe given.
func checkCounters(spec *Spec, probe func(perfevent.Sibling) error) (warnings []string, err error) {
	env, _ := CounterEnv()
	for i := range spec.Counters {
		c := &spec.Counters[i]
		sb := counterSibling(c)
		err := probe(sb)
		if err == nil && c.Precise > 0 {
			var perr error // why the level asked for was refused
			for sb.Precise = c.Precise; sb.Precise > 0; sb.Precise-- {
				e := probe(sb)
				if e == nil {
					break
				}
				if perr == nil {
					perr = e
				}
			}
			if sb.Precise < c.Precise {
				what := fmt.Sprintf("precise_ip %d", sb.Precise)
				if sb.Precise == 0 {
					what = "no data addresses (its samples record where the PMU stopped, after some skid)"
				}
				warnings = append(warnings, fmt.Sprintf("-h +%s: the PMU cannot sample %s precisely (%v): %s", c.Name, c.Name, perr, what))
				c.Precise = sb.Precise
				c.Backtrack = sb.Precise > 0
			}
		}
		if err == nil {
			continue
		}
		if c.Class == counters.Hardware || c.Class == counters.Cache || c.Class == counters.Raw {
			return warnings, fmt.Errorf("-h %s: hardware counter %s ('%s') cannot be counted: %s", spec.CountersArg, c.Name, c.Title, env.NoHardware(err))
		}
		return warnings, fmt.Errorf("-h %s: %s ('%s') cannot be counted: %v", spec.CountersArg, c.Name, c.Title, err)
	}
	return warnings, nil
}

// probeCounter is the probe of the counter lists: nil when the counter opens here.
func probeCounter(c *counters.Counter) error { return perfevent.ProbeSibling(counterSibling(c)) }

// ListCounters writes the counter lists of `er collect -h`.
func ListCounters(w io.Writer) {
	env, err := CounterEnv()
	if err != nil {
		fmt.Fprintf(w, "(reading %s: %v)\n", counters.DevicesDir, err)
	}
	env.WriteList(w, probeCounter)
}

// openCounterSideband opens the dummy event that brings the processes' records, with the counters as
// its sampling siblings: for -h without clock profiling.
func (s *Session) openCounterSideband() (*perfevent.Group, error) {
	o := perfevent.Dummy()
	s.gatedOptions(&o)
	o.Callchain, o.KernelCallchain = true, true
	if s.spec.StackBytes > 0 {
		o.SampleRegsUser = perfevent.RegsAMD64All
		o.SampleStackUser = uint32(s.spec.StackBytes)
	}
	o.SampleAddr = s.backtracking()
	o.ReadCount = perfevent.CountInSamples()
	o.RingPages = max(counterRingPages(runtime.NumCPU(), os.Getpagesize()), ringPages(IntervalOn, s.spec.StackBytes, runtime.NumCPU(), os.Getpagesize()))
	if s.spec.RingPages > 0 {
		o.RingPages = s.spec.RingPages
	}
	o.Siblings = s.counterSiblings()
	g, err := openCounted(s.pid, &o)
	if errors.Is(err, perfevent.ErrPermission) {
		o.KernelCallchain, o.ExcludeKernel = false, true
		if g, err = openCounted(s.pid, &o); err == nil {
			s.kernelNotPermitted()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening the counters (-h %s): %w", s.spec.CountersArg, err)
	}
	s.kernelStacks(o.KernelCallchain)
	s.readCount = o.ReadCount
	s.useCounters(0)
	s.useCounts()
	return g, nil
}

// counterModule records the counters' samples (-h): each its event's count since its thread's last
// sample, at its stack.
type counterModule struct {
	hooks
	s       *Session
	base    int              // the index of the first counter among the group's siblings
	index   map[uint64]uint8 // the ids of the counters' sibling events, to their indexes in spec.Counters
	samples int64            // counter samples recorded
	last    map[counterKey]uint64
	// follower takes the samples of a counter whose event is a microstates sampler too (microLayout).
	follower interface {
		counterSampled(r *perfabi.Sample, stack uint32, ok bool)
	}
}

// ids maps the ids of g's counter siblings to the counters' indexes.
func (c *counterModule) ids(g *perfevent.Group) []uint64 {
	if c.index == nil {
		c.index = map[uint64]uint8{}
	}
	var out []uint64
	for id, i := range g.SiblingIDs() {
		if k := i - c.base; k >= 0 && k < len(c.s.spec.Counters) {
			c.index[id] = uint8(k)
			out = append(out, id)
		}
	}
	return out
}

// sample records counter sample r, and gives it to the follower.
func (c *counterModule) sample(r *perfabi.Sample) {
	id, ok := c.record(r, c.index[r.ID])
	if c.follower != nil {
		c.follower.counterSampled(r, id, ok)
	}
}

// record records sample r of counter k, and returns its stack's id (false where it was not
// recorded).
func (c *counterModule) record(r *perfabi.Sample, k uint8) (uint32, bool) {
	s := c.s
	t := s.rel(r.Time)
	p := s.cur[r.Pid]
	if !p.open() {
		if p == nil {
			s.dropped++
		}
		return 0, false
	}
	if p.pausedAt(t) || s.global.pausedAt(t) {
		return 0, false
	}
	id, ok := s.sampleStack(r, p)
	if !ok {
		return 0, false
	}
	mode := experiment.ModeUser
	if r.Kernel() {
		mode = experiment.ModeKernel
	}
	var addr uint64
	if s.spec.Counters[k].Backtrack {
		addr = r.Addr
	}
	if err := p.w.Counter(experiment.CounterSample{Time: t, Value: c.value(r), Addr: addr, Pid: r.Pid, Tid: r.Tid,
		CPU: r.CPU, Stack: id, Counter: k, Mode: mode}); err == nil {
		c.samples++
	}
	return id, true
}

// counterKey is a thread's event on one CPU: the counts in samples are per thread and CPU.
type counterKey struct {
	tid uint32
	id  uint64
}

// value returns the events sample r of a counter stands for: where samples carry their
// thread's count (perfevent.Options.ReadCount), the count since the thread's previous sample of the
// event, so that samples the rings lost are counted at the next one (a burst of page faults whose rings
// overflowed beside two CPU hogs lost 54 to 860 of 4,500 samples, each an event); else its period.
func (c *counterModule) value(r *perfabi.Sample) int64 {
	if !c.s.readCount {
		return int64(r.Period)
	}
	if c.last == nil {
		c.last = map[counterKey]uint64{}
	}
	k := counterKey{r.Tid, r.ID}
	last, seen := c.last[k]
	c.last[k] = r.Count
	switch {
	case !seen:
		// The thread's first sample on this CPU's event: its count since it started counting there.
		return int64(r.Count)
	case r.Count < last: // a thread id used again
		return int64(r.Count)
	}
	return int64(r.Count - last)
}
