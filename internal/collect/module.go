package collect

import (
	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"
)

// A module is one kind of data that a collection's perf events bring: the clock's samples, the
// counters' (-h), the microstates' context switches, the runtime counts, the CPUs' steal time, the
// counts in samples (docs/architecture.md, "Collection modules"). The session opens one group with
// every module's events as its siblings; then it drives the modules through one interface: the
// samples of a module's events go to it alone (by their event ids), every task record to all of them,
// and each read of the rings, the end of recording and the closing of the events to all of them.
// The session keeps what is common: the processes and their experiments, the mappings and the stacks.
type module interface {
	// ids returns the ids of the module's sampling events in g, whose samples are the module's
	// (again after AddTask opened more). The first module to claim an id has its samples.
	ids(g *perfevent.Group) []uint64
	// sample records a sample of one of its events, while recording.
	sample(r *perfabi.Sample)
	// task tells of a task record, before the session handles it: *Fork, *Comm at an exec (not the
	// gated target's, which is its start), *Switch, *Exit and *Lost.
	task(r perfabi.Record)
	// exitCount takes a Read record (a thread's count at its exit) of one of its events, and says
	// whether it was the module's.
	exitCount(r *perfabi.Read) bool
	// tick is called at every drain, before the rings are read; now is ns since the start.
	tick(now int64)
	// read is called after each read of the rings while recording, when every record up to upTo
	// (ns since the start) was handled.
	read(upTo int64)
	// busy says whether the module needs the rings read every deepReadEvery.
	busy() bool
	// stop is the end of recording, at t: what the module holds is written.
	stop(t int64)
	// closing is called before the events g are closed, to read their last counts.
	closing(g *perfevent.Group)
	// endCounts is the clock's count of every thread (ns), read at the end, with the threads' counts
	// in Session.threadCPU: a module may correct those.
	endCounts(total int64)
}

// hooks gives a module the hooks it does not need: embedded, it implements each as nothing.
type hooks struct{}

func (hooks) ids(*perfevent.Group) []uint64 { return nil }
func (hooks) sample(*perfabi.Sample)        {}
func (hooks) task(perfabi.Record)           {}
func (hooks) exitCount(*perfabi.Read) bool  { return false }
func (hooks) tick(int64)                    {}
func (hooks) read(int64)                    {}
func (hooks) busy() bool                    { return false }
func (hooks) stop(int64)                    {}
func (hooks) closing(*perfevent.Group)      {}
func (hooks) endCounts(int64)               {}

// clockPeriods is where the CPU time of each clock sample comes from: its nominal period, its
// thread's count (sampleCounts), or its thread's context switches (microstates).
type clockPeriods interface {
	// period returns the CPU time that clock sample r, taken at t (ns since the start), stands for,
	// when that time began (-1: not known), and the steal time taken out of it.
	period(r *perfabi.Sample, t int64) (period, since, stolen int64)
	// sampled notes the stack and mode of tid's clock sample, once recorded.
	sampled(tid, stack uint32, mode experiment.Mode)
}

// nominalPeriods gives each clock sample its period.
type nominalPeriods struct{}

func (nominalPeriods) period(r *perfabi.Sample, _ int64) (int64, int64, int64) {
	return int64(r.Period), -1, 0
}
func (nominalPeriods) sampled(uint32, uint32, experiment.Mode) {}

// use adds module m to the session, after those it has: a sample goes to the first that claims its
// event.
func (s *Session) use(m module) { s.mods = append(s.mods, m) }

// takeIDs maps the ids of g's sampling events to the modules they belong to (again after AddTask
// opened more).
func (s *Session) takeIDs(g *perfevent.Group) {
	if s.owner == nil {
		s.owner = map[uint64]module{}
	}
	for _, m := range s.mods {
		for _, id := range m.ids(g) {
			if _, taken := s.owner[id]; !taken {
				s.owner[id] = m
			}
		}
	}
}

// tell gives task record r to every module.
func (s *Session) tell(r perfabi.Record) {
	for _, m := range s.mods {
		m.task(r)
	}
}

// modulesBusy says whether a module needs the rings read every deepReadEvery.
func (s *Session) modulesBusy() bool {
	for _, m := range s.mods {
		if m.busy() {
			return true
		}
	}
	return false
}

// stopModules ends the modules' recording at t.
func (s *Session) stopModules(t int64) {
	for _, m := range s.mods {
		m.stop(t)
	}
}
