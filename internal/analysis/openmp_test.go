package analysis

import (
	"testing"

	"er/internal/events"
	"er/internal/experiment"
)

// ompFake is an OpenMP program's experiment: a master (progPid) and a worker (progPid+1) in one
// region of foo, [1000, 5000), and samples of each state, of 10 units each.
func ompFake() *fake {
	fk := newFake("main", "foo", "foo._omp_fn.0", "spin")
	fk.addObject("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0", 0x7f0000000000, 0x1000, "GOMP_parallel", "gomp_thread_start", "GOMP_barrier", "gomp_barrier_wait")
	fk.addObject("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f1000000000, 0x1000, "start_thread")
	const worker = progPid + 1
	at := func(tid uint32, t int64, funcs ...string) {
		fk.d.AppendClock(experiment.ClockSample{Time: t, Pid: progPid, Tid: tid, Mode: experiment.ModeUser, Period: 10, Stack: fk.stack(funcs...)})
	}
	at(progPid, 500, "main", "spin")                                                                            // serial
	at(progPid, 1500, "main", "foo", "GOMP_parallel", "foo._omp_fn.0", "spin")                                  // the master's work
	at(worker, 1500, "start_thread", "gomp_thread_start", "foo._omp_fn.0", "spin")                              // the worker's
	at(worker, 2200, "start_thread", "gomp_thread_start", "foo._omp_fn.0", "GOMP_barrier", "gomp_barrier_wait") // an explicit barrier
	at(progPid, 4500, "main", "foo", "GOMP_parallel", "gomp_barrier_wait")                                      // the master at the region's end
	at(worker, 4900, "start_thread", "gomp_thread_start", "gomp_barrier_wait")                                  // the worker there
	at(worker, 6000, "start_thread", "gomp_thread_start", "gomp_barrier_wait")                                  // idle
	regions := events.New(experiment.OMPRegionSchema)
	master := fk.stack("main", "foo", "GOMP_parallel") // frame 0 the entry point, then the return addresses
	regions.AddHeader(5000, 4000, 1, progPid, progPid, -1, master)
	for c, v := range []int64{1, 0, int64(fk.addr["foo._omp_fn.0"]), 2} {
		regions.Cols[c].Append(v)
	}
	states := events.New(experiment.OMPSchema)
	for _, s := range []struct {
		tid      uint32
		from, to int64
		state    experiment.OMPState
	}{{progPid, 1100, 4000, experiment.OMPWork}, {worker, 1200, 4800, experiment.OMPWork}, {worker, 2000, 2500, experiment.OMPExplicitBarrier}} {
		states.AddHeader(s.to, s.to-s.from, 1, progPid, s.tid, -1, 0)
		states.Cols[experiment.OMPColState].Append(int64(s.state))
		states.Cols[experiment.OMPColRegion].Append(1)
		states.Cols[experiment.OMPColTask].Append(0)
	}
	states.SortByTime()
	fk.d.Tables[experiment.OMPRegionSchema.Name], fk.d.Tables[experiment.OMPSchema.Name] = regions, states
	return fk
}

// TestOpenMPViews: the user mode stitches the worker's stacks under the region's function, folds
// the outlined function into it and shows each state as the leaf; the expert mode names the
// outlined function for its region; the machine mode shows the raw stacks; OpenMP Work and Wait
// split the time by state.
func TestOpenMPViews(t *testing.T) {
	fk := ompFake()
	mode := func(m ViewMode) *Profile {
		t.Helper()
		p, err := Analyze([]*experiment.Data{fk.d}, Options{ViewMode: m})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	incl := func(p *Profile, name string) int64 { return p.Inclusive(fn(t, p, name))[0] }
	excl := func(p *Profile, name string) int64 { return p.Exclusive(fn(t, p, name))[0] }
	user := mode(ViewUser)
	for _, c := range []struct {
		name       string
		incl, excl int64
	}{
		{"main", 60, 0}, {"foo", 50, 0}, {"spin", 30, 30}, {"<OMP-explicit_barrier>", 10, 10},
		{"<OMP-implicit_barrier>", 20, 20}, {"<OMP-idle>", 10, 10},
	} {
		if i, e := incl(user, c.name), excl(user, c.name); i != c.incl || e != c.excl {
			t.Errorf("user mode: %s inclusive %d, exclusive %d; want %d, %d", c.name, i, e, c.incl, c.excl)
		}
	}
	for _, gone := range []string{"foo._omp_fn.0", "GOMP_barrier", "gomp_barrier_wait", "start_thread", "gomp_thread_start"} {
		if fs := user.FindFunctions(gone); len(fs) != 0 && user.Used(fs[0]) {
			t.Errorf("user mode shows %s", gone)
		}
	}
	// OpenMP Work and Wait: the serial and parallel work, and the rest.
	w, wt := user.kindOffset(DataClock, "ompwork"), user.kindOffset(DataClock, "ompwait")
	if w < 0 || user.Total[w] != 30 || user.Total[wt] != 40 || user.Total[w]+user.Total[wt] != user.Total[MetricTotalCPU] {
		t.Errorf("OpenMP Work %v, Wait %v of %d", user.Total[w], user.Total[wt], user.Total[MetricTotalCPU])
	}
	expert := mode(ViewExpert)
	if i := incl(expert, "foo -- OMP parallel region [foo._omp_fn.0]"); i != 30 || incl(expert, "foo") != 50 {
		t.Errorf("expert mode: the region's function %d, foo %d; want 30, 50", i, incl(expert, "foo"))
	}
	machine := mode(ViewMachine)
	if incl(machine, "foo._omp_fn.0") != 30 || incl(machine, "foo") != 20 || incl(machine, "start_thread") != 40 ||
		len(machine.FindFunctions("<OMP-idle>")) != 0 {
		t.Errorf("machine mode: foo._omp_fn.0 %d, foo %d, start_thread %d; want the raw stacks' 30, 20, 40",
			incl(machine, "foo._omp_fn.0"), incl(machine, "foo"), incl(machine, "start_thread"))
	}
	// A user-mode profile's stacks in the machine mode are the raw ones (StackIn), and OMPSTATE
	// selects the events of a state.
	barrier, err := user.Refilter(func(ev *EventInfo) bool { return OMPState(ev) == int64(experiment.OMPExplicitBarrier) }, false)
	if err != nil || barrier.Total[MetricTotalCPU] != 10 {
		t.Errorf("OMPSTATE==6: %v, %v", barrier, err)
	}
	if cs := OMPConstructs(fk.d); len(cs) != 1 || cs[0].Instances != 1 || cs[0].Threads != 2 ||
		user.OMPConstructName(0, cs[0]) != "foo -- OMP parallel region [foo._omp_fn.0]" {
		t.Errorf("constructs %+v", cs)
	}
	st := map[string][]int64{}
	for _, l := range ompStats([]*experiment.Data{fk.d}) {
		st[l.Label] = l.Values
	}
	if r, w, wt := st["OpenMP parallel regions"], st["OpenMP Work (sec.)"], st["OpenMP Wait (sec.)"]; len(r) != 3 || r[0] != 1 || r[1] != 1 || r[2] != 2 ||
		len(w) != 2 || w[0] != 30 || wt[0] != 40 || st["  <OMP-implicit_barrier> (sec.)"][0] != 20 {
		t.Errorf("statistics %v", st)
	}
	raws := user.EventRaws(0, DataClock)
	names := func(fr []int32) (out []string) {
		for _, f := range fr {
			out = append(out, user.Functions[f].Name)
		}
		return out
	}
	if got := names(user.StackIn(ViewMachine, raws[2])); len(got) != 4 || got[0] != "start_thread" || got[2] != "foo._omp_fn.0" {
		t.Errorf("the worker's sample in the machine mode: %q", got)
	}
}
