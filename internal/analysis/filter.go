package analysis

import (
	"slices"
	"sort"

	"er/internal/experiment"
)

// Filtering events.
//
// Options.Filter selects the events that a profile aggregates: er print's sample, thread, LWP, CPU
// and experiment selections and its filter expressions. It sees each event as an EventInfo, which
// an ExpIndex fills: besides what the event records, its thread's number in the experiment and
// the sample it belongs to.
//
// Samples. Sample points are taken at the start of the recording, every -S seconds and at the end;
// the overview file numbers them from 1 (the start point). A sample is the period between two
// consecutive points, numbered as gprofng numbers them: sample k runs from point k to point k+1,
// so that sample 1 is the period from the start to the first periodic point. An event at time t
// belongs to the sample whose period holds it, t_k < t <= t_k+1; an event at or before the first
// point is in sample 1, an event after the last point in sample N (N points), the period still open
// when the recording stopped. An experiment without sample points is one sample, 1. Points are
// those of the experiment: when several processes share an experiment, the point with one number
// is at the time that number was first recorded.
//
// Threads. Threads are numbered from 1 in each experiment: the experiment's own process first, then
// the others by process id; in a process, its main thread (tid = pid) first, then by thread id.
// Every event of any kind counts to make the list, so the numbers do not depend on a filter.

// EventInfo describes one event to Options.Filter.
type EventInfo struct {
	Exp    int      // experiment index, from 0, in the list given to Analyze
	Kind   DataKind // the data the event belongs to
	Pid    uint32   // process id
	Tid    uint32   // thread id (the LWP id)
	Thread int      // the thread's number in its experiment, from 1 (see ExpIndex.Threads)
	CPU    int64    // the CPU the event was taken on; -1 when the event records none (tracing events)
	Time   int64    // ns since the experiment's start: when the sample was taken, when the call returned
	Dur    int64    // ns the event lasted: a synchronization wait, an I/O call; 0 for others
	Sample int      // the sample the event belongs to (see ExpIndex.Samples)
	// Stack is the event's call stack, a stack of Prof (Prof.Stack: its functions, root first),
	// when the filter runs in Refilter; Prof is then the profile analysed without a filter, whose
	// function numbers the stack holds. Stack is -1 and Prof nil for an event that reaches no
	// stack there (one that adds to no metric, such as a free), and in Analyze, which resolves
	// stacks after filtering: a filter on stacks refilters a profile of all events.
	Stack int32
	Prof  *Profile
	// Raw is the event's raw stack in Prof, with Stack (-1 without): StackIn gives its functions
	// in another view mode (the stacks of USTACK, XSTACK and MSTACK).
	Raw int32
	// Data and Index are the event's experiment and its index among the kind's events there: a
	// kind's Columns read the event's own fields by them.
	Data  *experiment.Data
	Index int
}

// Thread is one thread of an experiment.
type Thread struct {
	Number   int // from 1
	Pid, Tid uint32
	// Name is the thread's name: a Java thread's (the JVMTI agent's), else the last the thread took
	// (PR_SET_NAME); "" where none is known.
	Name string
	// JVM says that the thread is a JVM's own (its GC, compilers, VM thread; not started by the
	// program): hidden from the Java user mode's timeline.
	JVM bool
}

// SamplePeriod is one sample of an experiment: the period between two sample points.
type SamplePeriod struct {
	Number     int
	Start, End int64  // ns since the start; End is the last event's time when Open
	StartPoint int    // the overview's number of the point that opens it; 0 when none
	EndPoint   int    // the point that closes it; 0 when none
	StartLabel string // the points' labels ("start", "periodic", "end", "signal ..."); "" for none
	EndLabel   string
	Open       bool // no sample point ends it: events after the last point, or no points at all
}

// ExpIndex numbers the threads and samples of one experiment and fills EventInfos of its events.
type ExpIndex struct {
	exp     int
	d       *experiment.Data
	threads []Thread
	byTid   map[uint64]int // pid<<32|tid -> thread number
	points  []point        // sample points by number
	samples []SamplePeriod
	periods []int64 // the clock samples' periods (ClockPeriods), computed on first use
	cpu     []int64 // the clock events' CPU time (ClockCPU), computed on first use

	lastKey    uint64 // cache of the last thread looked up
	lastThread int
	lastSample int       // index of the last sample SampleAt found (from 0), or -1
	threadOf   [][]int32 // by DataKind: each event's thread number; made on first use
	bound      []Bound   // by DataKind: the kinds' accessors of d's events
}

type point struct {
	number int
	time   int64
	label  string
}

// threadName returns the name of thread tid of process pid of experiment d (names: the last each
// thread took, Log.LastThreadNames), and whether it is a JVM's own thread: in a JVM's process, a thread
// the agent did not name a Java thread is one (GC and compiler threads are not Java threads), as
// is a Java thread the JVM started itself.
func threadName(d *experiment.Data, names map[[2]uint32]string, pid, tid uint32) (string, bool) {
	name := names[[2]uint32{pid, tid}]
	j := d.Java
	if j == nil || j.Pid != pid || len(j.Methods) == 0 {
		return name, false
	}
	flags, java := j.Threads[tid]
	if n := j.Names[tid]; n != "" {
		name = n
	}
	return name, !java && tid != pid || java && flags&experiment.JavaThreadSystem != 0
}

// NewExpIndex indexes experiment d, the exp-th (from 0) of those analysed together.
func NewExpIndex(exp int, d *experiment.Data) *ExpIndex {
	x := &ExpIndex{exp: exp, d: d, byTid: map[uint64]int{}, lastKey: ^uint64(0), lastSample: -1, threadOf: make([][]int32, len(Kinds))}
	var last int64
	add := func(pid, tid uint32, t int64) {
		k := uint64(pid)<<32 | uint64(tid)
		if _, ok := x.byTid[k]; !ok {
			x.byTid[k] = 0
			x.threads = append(x.threads, Thread{Pid: pid, Tid: tid})
		}
		last = max(last, t)
	}
	var ev EventInfo
	for _, k := range Kinds {
		b := k.Bind(d)
		x.bound = append(x.bound, b)
		for i, n := 0, k.Len(d); i < n; i++ {
			b.Info(i, &ev)
			add(ev.Pid, ev.Tid, ev.Time)
		}
	}
	own := d.Log.Pid
	sort.Slice(x.threads, func(a, b int) bool {
		ta, tb := x.threads[a], x.threads[b]
		if ta.Pid != tb.Pid {
			if ta.Pid == own || tb.Pid == own {
				return ta.Pid == own
			}
			return ta.Pid < tb.Pid
		}
		if ta.Tid == ta.Pid || tb.Tid == tb.Pid {
			return ta.Tid == ta.Pid && tb.Tid != tb.Pid
		}
		return ta.Tid < tb.Tid
	})
	names := d.Log.LastThreadNames()
	for i := range x.threads {
		th := &x.threads[i]
		th.Number = i + 1
		x.byTid[uint64(th.Pid)<<32|uint64(th.Tid)] = i + 1
		th.Name, th.JVM = threadName(d, names, th.Pid, th.Tid)
	}

	byNum := map[int]int{} // point number -> index in x.points
	for _, o := range d.Overview {
		n := int(o.Sample)
		if i, ok := byNum[n]; ok {
			if o.Time < x.points[i].time {
				x.points[i].time, x.points[i].label = o.Time, o.Label
			}
			continue
		}
		byNum[n] = len(x.points)
		x.points = append(x.points, point{number: n, time: o.Time, label: o.Label})
	}
	sort.Slice(x.points, func(a, b int) bool { return x.points[a].number < x.points[b].number })
	for k := 0; k+1 < len(x.points); k++ {
		// A sample starts at its first point, the first sample too: what a process used before its
		// first point is in no sample's usage (an event before it is in sample 1: SampleAt). gprofng
		// shows the same start (its first point came 5 ms into an experiment beside two CPU hogs).
		p, q := x.points[k], x.points[k+1]
		x.samples = append(x.samples, SamplePeriod{Number: k + 1, Start: p.time, End: q.time,
			StartPoint: p.number, EndPoint: q.number, StartLabel: p.label, EndLabel: q.label})
	}
	hasEvents := len(x.threads) > 0
	switch n := len(x.points); {
	case n == 0 && hasEvents:
		x.samples = append(x.samples, SamplePeriod{Number: 1, End: last, Open: true})
	case n > 0 && hasEvents && last > x.points[n-1].time:
		p := x.points[n-1]
		x.samples = append(x.samples, SamplePeriod{Number: max(n, 1), Start: p.time, End: last,
			StartPoint: p.number, StartLabel: p.label, Open: true})
	}
	return x
}

// reader returns a copy of x for another goroutine: it shares the tables x has made so far, which
// do not change, and makes and caches its own from then on. Call it where x is not in use.
func (x *ExpIndex) reader() *ExpIndex {
	c := *x
	c.lastKey, c.lastSample = ^uint64(0), -1
	c.threadOf = slices.Clone(x.threadOf)
	return &c
}

// Data is the experiment indexed.
func (x *ExpIndex) Data() *experiment.Data { return x.d }

// Threads lists the experiment's threads by number.
func (x *ExpIndex) Threads() []Thread { return x.threads }

// ThreadNumber returns the number of thread tid of process pid, or 0 when it has no event.
func (x *ExpIndex) ThreadNumber(pid, tid uint32) int {
	k := uint64(pid)<<32 | uint64(tid)
	if k == x.lastKey {
		return x.lastThread
	}
	n := x.byTid[k]
	x.lastKey, x.lastThread = k, n
	return n
}

// Samples lists the experiment's samples by number: one per pair of consecutive sample points,
// and one open sample when events follow the last point or there are no points.
func (x *ExpIndex) Samples() []SamplePeriod { return x.samples }

// SampleAt returns the number of the sample holding time t (see the comment at the top of this file).
func (x *ExpIndex) SampleAt(t int64) int {
	pts := x.points
	if len(pts) < 2 {
		return 1
	}
	// The first point k+1 (from the second) at or after t closes sample k. Events come mostly in
	// time order: try the last sample found first.
	if k := x.lastSample; k >= 0 && (k == 0 || t > pts[k].time) && (k == len(pts)-1 || t <= pts[k+1].time) {
		return k + 1
	}
	k := sort.Search(len(pts)-1, func(i int) bool { return t <= pts[i+1].time })
	x.lastSample = k
	return k + 1
}

// ClockPeriods returns the CPU time each clock sample stands for, indexed like the rows of the
// clock table: its period, weighted by its thread's counted CPU time when the experiment recorded
// it (as Analyze does). The slice is the index's own.
func (x *ExpIndex) ClockPeriods() []int64 {
	if x.periods == nil {
		x.periods = ClockPeriods(x.d)
	}
	return x.periods
}

// ClockCPU returns the CPU time each clock event stands for, indexed like the rows of the clock
// table: ClockPeriods, and 0 for an off-CPU interval. The slice is the index's own.
func (x *ExpIndex) ClockCPU() []int64 {
	if x.cpu == nil {
		x.cpu = x.ClockPeriods()
		t := x.d.ClockTable()
		for i := range x.cpu {
			if !experiment.Mode(t.Cols[experiment.ClockColMode].At(i)).CPU() {
				if &x.cpu[0] == &x.periods[0] {
					x.cpu = slices.Clone(x.periods)
				}
				x.cpu[i] = 0
			}
		}
	}
	return x.cpu
}

// ClockPeriods returns the CPU time each clock sample of d stands for, as Analyze counts it.
func ClockPeriods(d *experiment.Data) []int64 {
	if p := countedPeriods(d); p != nil {
		return p
	}
	ck := d.ClockTable()
	p := make([]int64, ck.Len())
	for i := range p {
		p[i] = ck.Cols[experiment.ClockColPeriod].At(i)
	}
	return p
}

// Event fills ev with what event i of kind k records (i indexes Clock, Heap, Sync or IO).
func (x *ExpIndex) Event(k DataKind, i int, ev *EventInfo) {
	x.event(k, i, ev)
	ev.Thread = x.ThreadNumber(ev.Pid, ev.Tid)
	ev.Sample = x.SampleAt(ev.Time)
}

// event fills ev with what event i of kind k records itself: not its thread or sample numbers.
func (x *ExpIndex) event(k DataKind, i int, ev *EventInfo) {
	// Field by field, and the pointers only where they change: a filter fills one EventInfo for
	// every event, and a pointer stored is a write barrier while the collector runs (4,000,000
	// heap events: 6% of er print's time).
	ev.Exp, ev.Kind, ev.Pid, ev.Tid, ev.Thread, ev.CPU, ev.Time, ev.Dur, ev.Sample, ev.Stack, ev.Raw, ev.Index = x.exp, k, 0, 0, 0, -1, 0, 0, 0, -1, -1, i
	if ev.Prof != nil {
		ev.Prof = nil
	}
	if ev.Data != x.d {
		ev.Data = x.d
	}
	if int(k) < len(x.bound) {
		x.bound[k].Info(i, ev)
		return
	}
	kindOf(k).Info(x.d, i, ev) // a kind registered after the index was made
}

// threadNumbers returns the thread number of each event of kind k, computed once: filters are
// applied to every event, again whenever the selection changes, and the threads of a
// multithreaded program's events interleave.
func (x *ExpIndex) threadNumbers(k DataKind) []int32 {
	if x.threadOf[k] != nil {
		return x.threadOf[k]
	}
	var ev EventInfo
	n := kindOf(k).Len(x.d)
	out := make([]int32, n)
	for i := range out {
		x.event(k, i, &ev)
		out[i] = int32(x.ThreadNumber(ev.Pid, ev.Tid))
	}
	x.threadOf[k] = out
	return out
}

// eventSel applies Options.Filter to the events of one experiment.
type eventSel struct {
	f       func(*EventInfo) bool
	x       *ExpIndex
	es      *expState
	root    *Profile // the profile of all events, whose stacks es.rawOf numbers
	ev      EventInfo
	threads []int32 // of the kind of events being selected
	raws    []int32 // each event's raw stack in root (-1: none); nil in Analyze
}

// newEventSel returns filter f of the events of experiment es, whose raw stacks (when refiltering)
// are those of root; nil when f is nil.
func newEventSel(f func(*EventInfo) bool, es *expState, root *Profile) *eventSel {
	if f == nil {
		return nil
	}
	if es.index == nil {
		es.index = NewExpIndex(int(es.idx), es.d)
	}
	return &eventSel{f: f, x: es.index, es: es, root: root}
}

// keep reports whether the filter selects event i of kind k; a nil eventSel selects everything.
func (s *eventSel) keep(k DataKind, i int) bool {
	if s == nil {
		return true
	}
	s.x.event(k, i, &s.ev)
	s.ev.Thread = int(s.threads[i])
	s.ev.Sample = s.x.SampleAt(s.ev.Time)
	if s.raws != nil {
		if r := s.raws[i]; r >= 0 {
			s.ev.Stack, s.ev.Raw, s.ev.Prof = s.root.raw[r].stack, r, s.root
		}
	}
	return s.f(&s.ev)
}

// keepAll returns, for each of n events of kind k, whether the filter selects it; nil when there
// is no filter.
func (s *eventSel) keepAll(k DataKind, n int) []bool {
	if s == nil {
		return nil
	}
	out := make([]bool, n)
	s.threads = s.x.threadNumbers(k)
	s.raws = s.es.raws(k)
	for i := range out {
		out[i] = s.keep(k, i)
	}
	return out
}

// countKept counts the events that keep selects among n (all n when keep is nil).
func countKept(keep []bool, n int) int64 {
	if keep == nil {
		return int64(n)
	}
	var c int64
	for _, k := range keep {
		if k {
			c++
		}
	}
	return c
}

// EventStacks returns the call stack of each event of kind k of experiment exp (from 0, in the list
// given to Analyze), indexed like the kind's events: a stack of the unfiltered profile
// (Unfiltered, Stack), or -1 for an event that reaches none (one that adds to no metric). The
// slice is new. It is nil when the unfiltered profile was analysed with a filter, or exp is not one
// of its experiments.
func (p *Profile) EventStacks(exp int, k DataKind) []int32 {
	root := p.Unfiltered()
	if root.b == nil || exp < 0 || exp >= len(root.b.exps) {
		return nil
	}
	raws := root.b.exps[exp].raws(k)
	if raws == nil {
		return nil
	}
	out := make([]int32, len(raws))
	for i, r := range raws {
		out[i] = -1
		if r >= 0 {
			out[i] = root.raw[r].stack
		}
	}
	return out
}
