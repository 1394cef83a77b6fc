package collect

import (
	"fmt"
	"io"
	"slices"
	"testing"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"
)

// recorder is a test module: it claims the ids it is given and notes every hook called.
type recorder struct {
	hooks
	name    string
	claims  []uint64
	counts  map[uint64]bool // the ids of the exit counts it takes
	log     *[]string
	working bool
}

func (m *recorder) note(f string, a ...any) { *m.log = append(*m.log, m.name+" "+fmt.Sprintf(f, a...)) }

func (m *recorder) ids(*perfevent.Group) []uint64 { return m.claims }
func (m *recorder) sample(r *perfabi.Sample)      { m.note("sample %d", r.ID) }
func (m *recorder) task(r perfabi.Record)         { m.note("task %T", r) }
func (m *recorder) exitCount(r *perfabi.Read) bool {
	m.note("read %d", r.ID)
	return m.counts[r.ID]
}
func (m *recorder) tick(int64)               { m.note("tick") }
func (m *recorder) busy() bool               { return m.working }
func (m *recorder) stop(t int64)             { m.note("stop %d", t) }
func (m *recorder) endCounts(n int64)        { m.note("counted %d", n) }
func (m *recorder) closing(*perfevent.Group) {}

// TestModuleRouting: a module's events' samples go to it alone, the first to claim an id has it,
// samples of no module's event are the clock's (and counted as received, for lostSamples), every
// task record reaches every module in order before the session handles it, and an exit count a
// module takes is not the clock's.
func TestModuleRouting(t *testing.T) {
	s := testSession(t, Spec{Interval: IntervalOn})
	s.stderr = io.Discard
	s.recording = true
	var log []string
	a := &recorder{name: "a", claims: []uint64{7, 8}, counts: map[uint64]bool{7: true}, log: &log}
	b := &recorder{name: "b", claims: []uint64{8, 9}, log: &log}
	s.use(a)
	s.use(b)
	s.takeIDs(nil)
	for _, id := range []uint64{7, 8, 9} {
		s.handle(&perfabi.Sample{ID: id, Pid: 10, Tid: 10, Time: 2000, Period: 1e6})
	}
	if s.clock.received != 0 {
		t.Errorf("the modules' samples counted as clock samples: %d", s.clock.received)
	}
	s.handle(&perfabi.Sample{ID: 3, Pid: 10, Tid: 10, Time: 3000, Period: 1e6, Callchain: []uint64{0x401000}})
	if s.clock.received != 1 || s.samples != 1 {
		t.Errorf("a sample of no module's event: received %d, recorded %d; want 1, 1", s.clock.received, s.samples)
	}
	s.recording = false
	s.handle(&perfabi.Sample{ID: 7, Pid: 10, Tid: 10, Time: 4000})
	s.handle(&perfabi.Sample{ID: 3, Pid: 10, Tid: 10, Time: 4000, Period: 1e6})
	if s.clock.received != 2 {
		t.Errorf("a clock sample while not recording is not counted as received: %d", s.clock.received)
	}
	s.recording = true
	s.handle(&perfabi.Fork{Pid: 10, Ppid: 10, Tid: 11, Ptid: 10, Time: 5000})
	s.handle(&perfabi.Switch{Pid: 10, Tid: 11, Time: 5100})
	s.handle(&perfabi.Comm{Pid: 10, Tid: 10, Comm: "x", Time: 5200}) // not an exec: no module hears of it
	s.handle(&perfabi.Exit{Pid: 10, Ppid: 10, Tid: 11, Ptid: 10, Time: 5300})
	s.handle(&perfabi.Lost{Lost: 4, Time: 5400})
	s.handle(&perfabi.Read{Pid: 10, Tid: 11, ID: 7, Value: 5e6, Time: 5500})
	s.handle(&perfabi.Read{Pid: 10, Tid: 11, ID: 3, Value: 2e6, Time: 5600})
	if s.readTotal != 2e6 {
		t.Errorf("the clock's exit counts: %d, want 2e6 (the module's own not among them)", s.readTotal)
	}
	if s.lost != 4 {
		t.Errorf("lost %d, want 4", s.lost)
	}
	if s.modulesBusy() {
		t.Error("busy with no module busy")
	}
	b.working = true
	if !s.modulesBusy() {
		t.Error("not busy with a module busy")
	}
	s.drain()
	s.stopModules(6000)
	want := []string{"a sample 7", "a sample 8", "b sample 9",
		"a task *perfabi.Fork", "b task *perfabi.Fork",
		"a task *perfabi.Switch", "b task *perfabi.Switch",
		"a task *perfabi.Exit", "b task *perfabi.Exit",
		"a task *perfabi.Lost", "b task *perfabi.Lost",
		"a read 7", "a read 3", "b read 3",
		"a tick", "b tick", "a stop 6000", "b stop 6000"}
	if !slices.Equal(log, want) {
		t.Errorf("hooks called:\n%q\nwant\n%q", log, want)
	}
}

// TestNominalPeriods: without counts or microstates, a clock sample stands for its period, from a
// time not known, with no steal time taken out.
func TestNominalPeriods(t *testing.T) {
	p, since, stolen := nominalPeriods{}.period(&perfabi.Sample{Period: 1234}, 5000)
	if p != 1234 || since != -1 || stolen != 0 {
		t.Errorf("period = %d, %d, %d; want 1234, -1, 0", p, since, stolen)
	}
	nominalPeriods{}.sampled(1, 2, experiment.ModeUser) // (nothing to note)
}
