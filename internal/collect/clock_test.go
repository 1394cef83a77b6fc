package collect

import (
	"testing"

	"er/internal/experiment"
	"er/internal/perfabi"
)

// fixedPeriods is a test clockPeriods: every sample stands for period, from since, with stolen taken
// out; it notes the stacks it is told of.
type fixedPeriods struct {
	ns, since, stolen int64
	stacks            []uint32
}

func (f *fixedPeriods) period(*perfabi.Sample, int64) (int64, int64, int64) {
	return f.ns, f.since, f.stolen
}
func (f *fixedPeriods) sampled(_, stack uint32, _ experiment.Mode) {
	f.stacks = append(f.stacks, stack)
}

// TestClockModule: a clock sample is written with the CPU time its periods say, at its stack, in its
// mode; one of a process er does not know is dropped and counted; one while its process is paused is
// not written.
func TestClockModule(t *testing.T) {
	s := testSession(t, Spec{Interval: IntervalOn})
	s.recording = true
	f := &fixedPeriods{ns: 700_000, since: -1, stolen: 300_000}
	s.clock.periods = f
	s.handle(&perfabi.Sample{ID: 1, Pid: 10, Tid: 10, Time: 1_000 + 5e6, Period: 1e6, Callchain: []uint64{0x401000}})
	s.handle(&perfabi.Sample{ID: 1, Pid: 10, Tid: 12, Time: 1_000 + 6e6, Period: 1e6, Callchain: []uint64{0x401000},
		Header: perfabi.Header{Misc: perfabi.CPUModeKernel}})
	s.handle(&perfabi.Sample{ID: 1, Pid: 99, Tid: 99, Time: 1_000 + 7e6, Period: 1e6, Callchain: []uint64{0x401000}})
	if s.dropped != 1 {
		t.Errorf("dropped %d, want 1 (process 99 is not known)", s.dropped)
	}
	s.founder.addToggle(7e6, true)
	s.handle(&perfabi.Sample{ID: 1, Pid: 10, Tid: 10, Time: 1_000 + 8e6, Period: 1e6, Callchain: []uint64{0x401000}})
	if len(f.stacks) != 2 {
		t.Errorf("periods told of %d stacks, want 2 (the paused sample's is not)", len(f.stacks))
	}
	if s.sampledNS[10] != 1e6 || s.founder.stolen[10] != 300_000 {
		t.Errorf("thread 10: sampled %d, stolen %d; want 1e6 (the period with its steal time), 300000", s.sampledNS[10], s.founder.stolen[10])
	}
	evs := events(t, s)
	if len(evs) != 2 {
		t.Fatalf("%d clock events, want 2: %+v", len(evs), evs)
	}
	for i, want := range []struct {
		tid  uint32
		mode experiment.Mode
	}{{10, experiment.ModeUser}, {12, experiment.ModeKernel}} {
		if c := evs[i]; c.Tid != want.tid || c.Mode != want.mode || c.Period != 700_000 || c.Stack != f.stacks[i] {
			t.Errorf("event %d = %+v, want thread %d in mode %d, 700000 ns at stack %d", i, c, want.tid, want.mode, f.stacks[i])
		}
	}
}
