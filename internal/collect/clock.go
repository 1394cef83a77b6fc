package collect

import (
	"er/internal/experiment"
	"er/internal/perfabi"
)

// The clock module: the samples of the group's leader when it is the clock's event (and of any
// event no other module claims), each the CPU time its clockPeriods say, at its stack.
type clockModule struct {
	hooks
	s       *Session
	periods clockPeriods // where each sample's CPU time comes from
	// received counts the clock samples the rings gave, written or not (lostSamples).
	received int64
}

// sample routes sample r to the module of its event, or to the clock's.
func (s *Session) sample(r *perfabi.Sample) {
	m := s.owner[r.ID]
	if m == nil {
		s.clock.received++
		m = s.clock
	}
	if s.recording {
		m.sample(r)
	}
}

// sample records clock sample r: its thread's CPU time since its last, at its stack.
func (c *clockModule) sample(r *perfabi.Sample) {
	s := c.s
	t := s.rel(r.Time)
	period, since, stolen := c.periods.period(r, t)
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
	c.periods.sampled(r.Tid, id, mode)
	s.writeCPU(r.Pid, r.Tid, t, r.CPU, mode, period, stolen, id, since)
}

// sampleStack returns the id of sample r's call stack in p's experiment.
func (s *Session) sampleStack(r *perfabi.Sample, p *proc) (uint32, bool) {
	frames := s.stacks.stack(r, p.stackBuf[:0])
	p.stackBuf = frames
	id, err := p.w.Stack(frames)
	if err != nil {
		return 0, false
	}
	for _, pc := range frames {
		if pc >= experiment.KernelBase && pc < experiment.PseudoFrameBase {
			if len(s.kernelPCs) == 0 {
				s.readKernelSymbols()
			}
			s.kernelPCs[pc] = struct{}{}
		}
	}
	return id, true
}

// writeCPU records period ns of CPU time of thread tid of process pid, in mode, ending at t, at call
// stack id: a clock sample, or the time since a thread's last sample at its end. since is when that
// time began where known (-1: not known): of it, only what recording was not paused in is recorded.
// stolen is the steal time taken out of period (see sampleCounts.stealFree): what the samples stand
// for is compared with the counts, which hold it.
func (s *Session) writeCPU(pid, tid uint32, t int64, cpu uint32, mode experiment.Mode, period, stolen int64, id uint32, since int64) {
	p := s.cur[pid]
	if !s.recording || !p.open() {
		return
	}
	if since >= 0 {
		// The part of the sample's interval that recording was paused in is not recorded: of the
		// counted CPU time, at most the wall time it was not paused (exact for a thread that ran
		// throughout).
		period = min(period, unpausedWithin(since, t, p, &s.global))
	}
	if period <= 0 {
		return
	}
	if err := p.w.Clock(experiment.ClockSample{Time: t, Pid: pid, Tid: tid, CPU: cpu, Mode: mode,
		Period: period, Stack: id}); err == nil {
		s.samples++
		if t >= p.lastPoint {
			if mode == experiment.ModeUser {
				p.tailUser += period
			} else {
				p.tailSys += period
			}
		}
		if s.sampledNS == nil {
			s.sampledNS = map[uint32]int64{}
		}
		s.sampledNS[tid] += period + stolen
		if p.sampled == nil {
			p.sampled = map[uint32]int64{}
		}
		p.sampled[tid] += period + stolen
		if stolen > 0 {
			if p.stolen == nil {
				p.stolen = map[uint32]int64{}
			}
			p.stolen[tid] += stolen
		}
	}
}

// threadCounted takes the CPU time of thread tid of process pid, whose end (its exit, or the end of
// recording) was at t, from its context switches: as the count the kernel reports at a thread's exit
// with inherit_stat (see the Read records in handle), but always the thread's own.
func (s *Session) threadCounted(pid, tid uint32, t, ns int64) {
	s.readTotal += ns
	if p := s.imageAt(pid, t); p != nil {
		s.reportCount(p, tid, ns)
	}
}

// reportCount adds ns to the CPU time counted for thread tid of image p, a count of its own.
func (s *Session) reportCount(p *proc, tid uint32, ns int64) {
	if s.threadCPU == nil {
		s.threadCPU = map[*proc]map[uint32]int64{}
	}
	if s.threadCPU[p] == nil {
		s.threadCPU[p] = map[uint32]int64{}
	}
	s.threadCPU[p][tid] += ns
	if s.reported == nil {
		s.reported = map[*proc]map[uint32]bool{}
	}
	if s.reported[p] == nil {
		s.reported[p] = map[uint32]bool{}
	}
	s.reported[p][tid] = true
}
