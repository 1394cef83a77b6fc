package collect

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"er/internal/counters"
	"er/internal/experiment"
	"er/internal/perfevent"
)

// Counter profiling (-h). Each counter is a sampling sibling in the group of the clock's event (or,
// without clock profiling, of the dummy event that brings the processes' records), on every CPU,
// inherited by every thread and descendant as the clock is: a sample every Interval events, with the
// clock's call chain, registers and stack copy, so that its stack is unwound as a clock sample's; with
// '+', its data address too (PERF_SAMPLE_ADDR: a page fault's faulting address; a precise hardware
// event's, where the PMU gives one). The kernel writes them into the group's rings; Session.sample
// takes them apart by their event's id.

// counterSiblings returns the sibling events of the counters of -h, in their order.
func (s *Session) counterSiblings() []perfevent.Sibling {
	var out []perfevent.Sibling
	for _, c := range s.spec.Counters {
		sb := perfevent.Sibling{Type: uint64(c.Type), Config: c.Config, Config1: c.Config1, Config2: c.Config2, Period: c.Interval}
		if c.Backtrack && c.Class != counters.Software && c.Class != counters.Tracepoint {
			// The exact instruction, and its data address, where the PMU samples precisely (PEBS, IBS).
			sb.Precise = 2
		}
		out = append(out, sb)
	}
	return out
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
// is said before the target runs: which, why, and what can be used instead.
func CheckCounters(spec Spec) error {
	env, _ := CounterEnv()
	for _, c := range spec.Counters {
		sb := perfevent.Sibling{Type: uint64(c.Type), Config: c.Config, Config1: c.Config1, Config2: c.Config2, Period: c.Interval}
		err := perfevent.ProbeSibling(sb)
		if err == nil {
			continue
		}
		if c.Class == counters.Hardware || c.Class == counters.Cache || c.Class == counters.Raw {
			return fmt.Errorf("-h %s: hardware counter %s ('%s') cannot be counted: %s", spec.CountersArg, c.Name, c.Title, env.NoHardware(err))
		}
		return fmt.Errorf("-h %s: %s ('%s') cannot be counted: %v", spec.CountersArg, c.Name, c.Title, err)
	}
	return nil
}

// probeCounter is the probe of the counter lists: nil when the counter opens here.
func probeCounter(c *counters.Counter) error {
	return perfevent.ProbeSibling(perfevent.Sibling{Type: uint64(c.Type), Config: c.Config, Config1: c.Config1, Config2: c.Config2, Period: c.Interval})
}

// ListCounters writes the counter lists of `er collect -h`.
func ListCounters(w interface{ Write([]byte) (int, error) }) {
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
	o.Callchain, o.KernelCallchain = true, true
	if s.spec.StackBytes > 0 {
		o.SampleRegsUser = perfevent.RegsAMD64All
		o.SampleStackUser = uint32(s.spec.StackBytes)
	}
	o.SampleAddr = s.backtracking()
	o.RingPages = max(minMicroRingPages, ringPages(IntervalOn, s.spec.StackBytes, runtime.NumCPU(), os.Getpagesize()))
	if s.spec.RingPages > 0 {
		o.RingPages = s.spec.RingPages
	}
	o.Siblings = s.counterSiblings()
	g, err := perfevent.OpenTask(s.pid, o)
	if errors.Is(err, perfevent.ErrPermission) {
		o.KernelCallchain, o.ExcludeKernel = false, true
		if g, err = perfevent.OpenTask(s.pid, o); err == nil {
			s.kernelNotPermitted()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening the counters (-h %s): %w", s.spec.CountersArg, err)
	}
	s.kernel = o.KernelCallchain
	s.w.UpdateLog(func(l *experiment.Log) { l.KernelStacks = s.kernel })
	if s.kernel {
		s.w.AddMapping(experiment.Mapping{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]", UnloadTime: -1})
	}
	s.counterBase = 0
	return g, nil
}

// takeCounterIDs maps the ids of g's counter siblings to the counters' indexes (again after AddTask
// opened more).
func (s *Session) takeCounterIDs(g *perfevent.Group) {
	if len(s.spec.Counters) == 0 {
		return
	}
	if s.hwcIDs == nil {
		s.hwcIDs = map[uint64]uint8{}
	}
	for id, i := range g.SiblingIDs() {
		if c := i - s.counterBase; c >= 0 && c < len(s.spec.Counters) {
			s.hwcIDs[id] = uint8(c)
		}
	}
}

// counterSample records sample r of counter c.
func (s *Session) counterSample(r *perfevent.Sample, c uint8) {
	t := s.rel(r.Time)
	p := s.cur[r.Pid]
	if !p.open() {
		if p == nil {
			s.dropped++
		}
		return
	}
	if p.pausedAt(t) || s.global.pausedAt(t) {
		return
	}
	id, ok := s.sampleStack(r, p)
	if !ok {
		return
	}
	mode := experiment.ModeUser
	if r.Kernel() {
		mode = experiment.ModeKernel
	}
	var addr uint64
	if s.spec.Counters[c].Backtrack {
		addr = r.Addr
	}
	if err := p.w.Counter(experiment.CounterSample{Time: t, Value: int64(r.Period), Addr: addr, Pid: r.Pid, Tid: r.Tid,
		CPU: r.CPU, Stack: id, Counter: c, Mode: mode}); err == nil {
		s.counterSamples++
	}
}
