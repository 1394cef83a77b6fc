package analysis

import (
	"cmp"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"er/internal/experiment"
)

// OpenMP programs (docs/openmp.md).
//
// The collector library records a program's parallel regions (each with its master's stack at its
// start) and its threads' time in the runtime's states (experiment.OMPSchema, OMPRegionSchema).
// From them each event of a thread gets a context: its state (work, or one of the <OMP-*> states)
// and the region it is in. The user and expert view modes show the event at a stitched stack: its
// own frames up to the collector's trampoline that runs the region's outlined function, then the
// region's master's stack (and its parents', for nested regions), and the state's pseudo-frame as
// its leaf where the thread is in the runtime; the frame pass then takes the runtime's frames out
// and folds (user) or names (expert) the outlined functions. The machine mode shows the raw stacks:
// a stitched stack resolves to its raw one there. OpenMP Work and Wait split each clock event's time
// by its state.

// OpenMPMetrics follow the clock's metrics (and its microstates) in experiments of OpenMP programs:
// the time of each thread in user code, serial or parallel, and in the runtime's states (waiting,
// idle, overhead). Their sum is each thread's Total Thread Time (Total CPU Time without
// microstates).
var OpenMPMetrics = []Metric{
	{Name: "ompwork", Title: "OpenMP Work", Short: "OMP Work", Time: true},
	{Name: "ompwait", Title: "OpenMP Wait", Short: "OMP Wait", Time: true},
}

// HasOpenMP says whether d recorded an OpenMP program's regions.
func HasOpenMP(d *experiment.Data) bool { return hasOpenMP(d) }

func hasOpenMP(d *experiment.Data) bool {
	if d.OMPRegions().Len() > 0 {
		return true
	}
	v, ok := d.Log.Setting(experiment.SettingOpenMP)
	return ok && experiment.On(v)
}

// ompFramePass shows an OpenMP program's stacks as its users think of them: the runtime's frames
// out (a leaf in the runtime, in no recorded state, becomes <OMP-overhead>), the outlined functions
// folded into the functions that hold their regions (user) or named for them (expert).
var ompFramePass = &FramePass{Name: "openmp", Modes: []ViewMode{ViewUser, ViewExpert}, Frames: ompFrames, Applies: hasOpenMP}

func init() { RegisterPass(ompFramePass) }

// Classes of functions for the pass (builder.ompClass).
const (
	ompPlain uint8 = iota + 1
	ompRuntime
	ompOutlined
	ompState
	ompMark
)

// ompRuntimes are the OpenMP runtimes' file names: GCC's, LLVM's and Intel's.
var ompRuntimes = []string{"libgomp.so", "libomp.so", "libiomp5.so", "libomp-"}

func ompFrames(c *PassContext, fr []int32) []int32 {
	b := c.b
	if len(fr) == 0 {
		return fr
	}
	fr = b.ompCut(fr)
	leafRuntime := false
	out := fr[:0]
	inRuntime := false // below a runtime frame: what it calls is its own, up to an outlined function (a region's, a task's)
	outlined := false  // the last frame kept is an outlined function's
	for _, f := range fr {
		c := b.ompClassOf(f)
		if inRuntime && c != ompOutlined && c != ompState && !ruleLeaf(b.p.Functions[f].Kind) {
			continue
		}
		inRuntime = false
		switch c {
		case ompRuntime:
			inRuntime, leafRuntime = true, true
			continue
		case ompOutlined:
			// One function in the expert mode: an outlined function that another calls (clang's
			// .omp_outlined. calls its body, .omp_outlined._debug__., with -g) is its caller's.
			if b.mode == ViewUser || outlined {
				continue
			}
			f = b.ompExpertFunc(f, out, "parallel region")
			out, outlined, leafRuntime = append(out, f), true, false
			continue
		}
		out, outlined, leafRuntime = append(out, f), false, false
	}
	if leafRuntime && (len(out) == 0 || b.ompClassOf(out[len(out)-1]) != ompState) {
		out = append(out, b.pseudoFunc(experiment.OMPStateFrame(experiment.OMPOverhead)))
	}
	return out
}

// ruleLeaf says whether a function of kind k is a leaf the location rules make in place of the
// frames they fold, the state's pseudo-frame with them: <Collector> (the collector library's own
// work, collectorRules) and @plt (a lazy binding, pltRules). It stays the leaf: it is what ran.
func ruleLeaf(k FuncKind) bool { return k == FuncCollector || k == FuncPLTBind }

// ompCut cuts a stitched stack (root first) at its marks: the part after each mark (a region's or
// task's creator's frames, or the event's own) keeps its frames from its innermost outlined
// function on (the leafmost run of them: clang's .omp_outlined. calls its body), none when it has
// none; what is before is the thread's start, the runtime's frames that run the region or task,
// and the frames of the enclosing regions, which the part before the mark has. The state's
// pseudo-function, the leaf, stays.
func (b *builder) ompCut(fr []int32) []int32 {
	mark, taskMark := b.pseudoFunc(experiment.OMPMarkFrame), b.pseudoFunc(experiment.OMPTaskMarkFrame)
	isMark := func(f int32) bool { return f == mark || f == taskMark }
	first := slices.IndexFunc(fr, isMark)
	if first < 0 {
		return fr
	}
	out := fr[:first]
	for task, part := fr[first] == taskMark, fr[first+1:]; ; {
		end := slices.IndexFunc(part, isMark)
		seg := part
		if end >= 0 {
			seg = part[:end]
		}
		from, to := len(seg), len(seg)
		for i := len(seg) - 1; i >= 0; i-- {
			if b.ompClassOf(seg[i]) == ompOutlined {
				from, to = i, i+1
				for from > 0 && b.ompClassOf(seg[from-1]) == ompOutlined {
					from--
				}
				break
			}
		}
		if task && from < len(seg) && b.mode == ViewExpert {
			// A task's outlined function (and the body it calls), named for the task.
			out = append(out, b.ompExpertFunc(seg[from], out, "task"))
			out = append(out, seg[to:]...)
		} else {
			out = append(out, seg[from:]...)
		}
		if leaf := len(seg) - 1; from == len(seg) && leaf >= 0 && (b.ompClassOf(seg[leaf]) == ompState || ruleLeaf(b.p.Functions[seg[leaf]].Kind)) {
			out = append(out, seg[leaf]) // the state, or what the rules made of the leaf (the collector recording it, a lazy binding)
		}
		if end < 0 {
			return out
		}
		task, part = part[end] == taskMark, part[end+1:]
	}
}

// ompClassOf says what function f is to the pass, remembered.
func (b *builder) ompClassOf(f int32) uint8 {
	for int(f) >= len(b.ompClass) {
		b.ompClass = append(b.ompClass, 0)
	}
	if c := b.ompClass[f]; c != 0 {
		return c
	}
	fn := &b.p.Functions[f]
	c := ompPlain
	switch {
	case fn.Kind == FuncPseudo && (fn.Addr == experiment.OMPMarkFrame || fn.Addr == experiment.OMPTaskMarkFrame):
		c = ompMark
	case fn.Kind == FuncPseudo && strings.HasPrefix(fn.Name, "<OMP-"):
		c = ompState
	case fn.Kind == FuncView:
	case isOutlined(fn.Name):
		c = ompOutlined
	case fn.Object > 0 && fn.Object < len(b.p.Objects):
		base := path.Base(b.p.Objects[fn.Object].Path)
		for _, rt := range ompRuntimes {
			if strings.HasPrefix(base, rt) {
				c = ompRuntime
			}
		}
	}
	b.ompClass[f] = c
	return c
}

// isOutlined says whether a function's name is a compiler's outlined function of an OpenMP
// construct: GCC's foo._omp_fn.N, clang's .omp_outlined. (and its debug__ variants).
func isOutlined(name string) bool {
	return strings.Contains(name, "._omp_fn.") || strings.HasPrefix(name, ".omp_outlined.") ||
		strings.HasPrefix(name, "__omp_outlined__") || strings.HasPrefix(name, ".omp_task_entry.")
}

// ompExpertFunc returns the expert mode's function of outlined function f, called from the stack
// above (root first): "foo -- OMP parallel region from line 9 [foo._omp_fn.0]".
func (b *builder) ompExpertFunc(f int32, above []int32, what string) int32 {
	fn := &b.p.Functions[f]
	name := fn.Name
	holder, _, ok := strings.Cut(name, "._omp_fn.")
	if !ok {
		holder = "?"
		for i := len(above) - 1; i >= 0; i-- {
			if b.ompClassOf(above[i]) == ompPlain && b.p.Functions[above[i]].Kind != FuncView {
				holder = b.p.Functions[above[i]].Name
				break
			}
		}
	}
	where := ""
	if obj := fn.Object; obj > 0 && obj < len(b.objOS) {
		if fs := b.fileOf(b.objOS[obj]); fs != nil && fs.of != nil && fs.of.Debug != nil {
			if frames, ok := fs.of.Debug.Frames(fn.Addr); ok && len(frames) > 0 {
				where = fmt.Sprintf(" from line %d", frames[len(frames)-1].Line)
			}
		}
	}
	return (&PassContext{b: b}).ViewFunc(fn.Object, fmt.Sprintf("%s -- OMP %s%s [%s]", holder, what, where, name))
}

// ompView is what the OpenMP records of one experiment give its events: each event's state and
// stitched stack.
type ompView struct {
	n          int                // len(d.Stacks): the id of the first stitched stack
	extra      []experiment.Stack // the stitched stacks, ids n, n+1, ...
	orig       []uint32           // the raw stack of each
	stackOf    [][]uint32         // by DataKind: each event's stack; nil: the table's
	stateOf    [][]uint8          // by DataKind: each event's state (0: not of an OpenMP thread; its work)
	constOf    [][]int32          // by DataKind: each event's region's construct, an index of constructs plus 1; 0: none
	constructs []OMPConstruct
	taskOf     [][]int32 // by DataKind: each event's explicit task's construct, an index of tasks plus 1; 0: none
	tasks      []OMPConstruct
}

// OMPConstruct is a parallel region of the program's code (a construct), which its regions are
// instances of.
type OMPConstruct struct {
	Pid       uint32
	Addr      uint64 // its outlined function, or the return address of the runtime's call in the function holding it
	Instances int    // its regions
	Threads   int    // the most threads of one of its regions
	Time      int64  // its first region's start (a task's creation), ns since the experiment's start
	Task      bool   // an explicit task's construct (OMPTaskConstructs), not a parallel region's
	Region    int    // a task's: its first instance's creator's region's construct, an index of OMPConstructs plus 1; 0: none
}

// ompTask is an explicit task of the view.
type ompTask struct {
	region    int64  // its creator's region
	stack     uint32 // its creator's stack at its creation
	chain     int32  // its stitched parent stack (ompStitch.chains), -1 before it is made
	construct int32  // index of ompView.tasks
}

// frames returns stack id's frames: a stitched stack's, or, for the machine mode, its raw stack's.
func (v *ompView) frames(d *experiment.Data, id uint32, machine bool) experiment.Stack {
	if int(id) < len(d.Stacks) {
		return d.Stacks[id]
	}
	if v == nil {
		return nil
	}
	j := int(id) - v.n
	if j < 0 || j >= len(v.extra) {
		return nil
	}
	if machine {
		return d.Stacks[v.orig[j]]
	}
	return v.extra[j]
}

// ompViews holds each experiment's view, made once (ompViewOf), while the experiment lives.
var ompViews sync.Map // weak.Pointer[experiment.Data] -> *ompEntry

type ompEntry struct {
	once sync.Once
	v    *ompView
}

// ompViewOf returns d's OpenMP view, nil for an experiment without OpenMP regions.
func ompViewOf(d *experiment.Data) *ompView {
	if d.OMPRegions().Len() == 0 {
		return nil
	}
	key := weak.Make(d)
	e, loaded := ompViews.LoadOrStore(key, &ompEntry{})
	if !loaded {
		runtime.AddCleanup(d, func(k weak.Pointer[experiment.Data]) { ompViews.Delete(k) }, key)
	}
	en := e.(*ompEntry)
	en.once.Do(func() { en.v = newOMPView(d) })
	return en.v
}

// ompRegion is a parallel region of the view.
type ompRegion struct {
	start, end int64
	master     uint32
	parent     int64
	stack      uint32
	chain      int32 // its stitched parent stack (ompStitch.chains), -1 before it is made
	construct  int32 // index of ompView.constructs
}

type regKey struct {
	pid uint32
	id  int64
}

type tidKey struct{ pid, tid uint32 }

// ompSeg is a time of a thread in one state: [from, to).
type ompSeg struct {
	from, to int64
	state    experiment.OMPState
	region   int64
	task     int64 // the explicit task the thread runs (0: none)
}

// ompInterval is a recorded (or derived) time in a state, before the nesting is resolved.
type ompInterval struct {
	from, to int64
	state    experiment.OMPState
	region   int64
	task     int64
}

func newOMPView(d *experiment.Data) *ompView {
	rt, st := d.OMPRegions(), d.OMPTable()
	regions := map[regKey]*ompRegion{}
	ivs := map[tidKey][]ompInterval{}
	v := &ompView{n: len(d.Stacks), stackOf: make([][]uint32, len(Kinds)), stateOf: make([][]uint8, len(Kinds)),
		constOf: make([][]int32, len(Kinds)), taskOf: make([][]int32, len(Kinds))}
	constIdx, taskIdx := map[[2]uint64]int32{}, map[[2]uint64]int32{}
	for i := range rt.Len() {
		id := rt.Cols[experiment.RegColID].At(i)
		r := &ompRegion{start: rt.Time[i] - rt.DurAt(i), end: rt.Time[i], master: rt.Tid[i],
			parent: rt.Cols[experiment.RegColParent].At(i), stack: rt.Stack[i], chain: -1}
		ck := [2]uint64{uint64(rt.Pid[i]), uint64(rt.Cols[experiment.RegColFn].At(i))}
		c, ok := constIdx[ck]
		if !ok {
			c = int32(len(v.constructs))
			constIdx[ck] = c
			v.constructs = append(v.constructs, OMPConstruct{Pid: rt.Pid[i], Addr: ck[1], Time: r.start})
		}
		r.construct = c
		v.constructs[c].Instances++
		v.constructs[c].Threads = max(v.constructs[c].Threads, int(rt.Cols[experiment.RegColTeam].At(i)))
		regions[regKey{rt.Pid[i], id}] = r
		k := tidKey{rt.Pid[i], r.master}
		ivs[k] = append(ivs[k], ompInterval{r.start, r.end, experiment.OMPOverhead, id, 0})
	}
	kt := d.OMPTasks()
	tasks := map[regKey]*ompTask{}
	for i := range kt.Len() {
		pid := kt.Pid[i]
		ck := [2]uint64{uint64(pid), uint64(kt.Cols[experiment.TaskColFn].At(i))}
		c, ok := taskIdx[ck]
		if !ok {
			c = int32(len(v.tasks))
			taskIdx[ck] = c
			v.tasks = append(v.tasks, OMPConstruct{Pid: pid, Addr: ck[1], Time: kt.Time[i], Task: true})
		}
		v.tasks[c].Instances++
		region := kt.Cols[experiment.TaskColRegion].At(i)
		if r := regions[regKey{pid, region}]; r != nil && v.tasks[c].Region == 0 {
			v.tasks[c].Region = int(r.construct) + 1
		}
		tasks[regKey{pid, kt.Cols[experiment.TaskColID].At(i)}] = &ompTask{region: region, stack: kt.Stack[i], chain: -1, construct: c}
	}
	workers := map[tidKey]bool{}
	for i := range st.Len() {
		k := tidKey{st.Pid[i], st.Tid[i]}
		state := experiment.OMPState(st.Cols[experiment.OMPColState].At(i))
		id, task := st.Cols[experiment.OMPColRegion].At(i), st.Cols[experiment.OMPColTask].At(i)
		from, to := st.Time[i]-st.DurAt(i), st.Time[i]
		if t := tasks[regKey{k.pid, task}]; task != 0 && t != nil {
			id = t.region // a task's run is in its creator's region
		}
		if r := regions[regKey{k.pid, id}]; r != nil && r.master != k.tid && to > r.end {
			// A worker's time in its region ends with the region (the master's return): libomp
			// ends a worker's implicit task, and its wait at the region's barrier, as the worker
			// gets to it, which may be milliseconds later; the worker is idle meanwhile.
			if to = r.end; to <= from {
				continue
			}
		}
		ivs[k] = append(ivs[k], ompInterval{from, to, state, id, task})
		if state != experiment.OMPWork || task != 0 {
			continue
		}
		r := regions[regKey{k.pid, id}]
		if r == nil {
			continue
		}
		if r.master != k.tid {
			workers[k] = true
		}
		if r.end > to { // past its work, the thread waits for the team at the region's end
			ivs[k] = append(ivs[k], ompInterval{to, r.end, experiment.OMPImplicitBarrier, id, 0})
		}
	}
	segs := map[tidKey][]ompSeg{}
	for k, iv := range ivs {
		segs[k] = flatten(iv)
	}

	s := &ompStitch{d: d, v: v, regions: regions, tasks: tasks, chainIdx: map[[3]int64]int32{}, ids: map[stitchKey]uint32{}}
	var ev EventInfo
	for _, k := range Kinds {
		n := k.Len(d)
		if n == 0 || k.Table == nil || k.Table == experiment.OMPSchema || k.Table == experiment.OMPRegionSchema {
			continue
		}
		bound := k.Bind(d)
		stacks, states, consts, taskc := make([]uint32, n), make([]uint8, n), make([]int32, n), make([]int32, n)
		var periods, modes interface{ At(int) int64 }
		if k.Table == experiment.ClockSchema {
			periods, modes = &d.ClockTable().Cols[experiment.ClockColPeriod], &d.ClockTable().Cols[experiment.ClockColMode]
		}
		for i := range n {
			bound.Info(i, &ev)
			stack := bound.Stack(i)
			stacks[i] = stack
			key := tidKey{ev.Pid, ev.Tid}
			sg := segs[key]
			if sg == nil {
				continue
			}
			// The state at the event's stack: a CPU sample's at its time (its period, the thread's
			// CPU time since its previous sample, may span a sleep), an off-CPU interval's and a
			// traced call's in its middle (they end at their time).
			t := ev.Time - ev.Dur/2
			if periods != nil && !experiment.Mode(modes.At(i)).CPU() {
				t = ev.Time - periods.At(i)/2
			}
			state, region, task := experiment.OMPState(0), int64(0), int64(0)
			if j, ok := slices.BinarySearchFunc(sg, t, func(s ompSeg, t int64) int {
				switch {
				case s.to <= t:
					return -1
				case s.from > t:
					return 1
				}
				return 0
			}); ok {
				state, region, task = sg[j].state, sg[j].region, sg[j].task
			} else if workers[key] {
				state = experiment.OMPIdle
			}
			states[i] = uint8(state)
			stacks[i] = s.stitch(ev.Pid, stack, state, region, task)
			if r := regions[regKey{ev.Pid, region}]; r != nil {
				consts[i] = r.construct + 1
			}
			if tk := tasks[regKey{ev.Pid, task}]; task != 0 && tk != nil {
				taskc[i] = tk.construct + 1
			}
		}
		v.stackOf[k.ID], v.stateOf[k.ID], v.constOf[k.ID], v.taskOf[k.ID] = stacks, states, consts, taskc
	}
	return v
}

// flatten resolves nested intervals into the disjoint times of the innermost (the one that started
// last), in time order.
func flatten(iv []ompInterval) []ompSeg {
	slices.SortStableFunc(iv, func(a, b ompInterval) int {
		if c := cmp.Compare(a.from, b.from); c != 0 {
			return c
		}
		return cmp.Compare(b.to, a.to) // the outer first
	})
	var out []ompSeg
	var open []ompInterval
	at := int64(0)
	emit := func(to int64) {
		if len(open) > 0 && to > at {
			top := open[len(open)-1]
			if n := len(out); n > 0 && out[n-1].to == at && out[n-1].state == top.state && out[n-1].region == top.region && out[n-1].task == top.task {
				out[n-1].to = to
			} else {
				out = append(out, ompSeg{at, to, top.state, top.region, top.task})
			}
		}
		at = max(at, to)
	}
	closeTo := func(t int64) {
		for len(open) > 0 && open[len(open)-1].to <= t {
			emit(open[len(open)-1].to)
			open = open[:len(open)-1]
		}
	}
	for _, x := range iv {
		closeTo(x.from)
		emit(x.from)
		if n := len(open); x.task == 0 && n > 0 && open[n-1].task != 0 && x.region == open[n-1].region {
			x.task = open[n-1].task // a wait in a task's run is the task's
		}
		open = append(open, x)
	}
	closeTo(1<<63 - 1)
	return out
}

// ompStitch makes the stitched stacks of one experiment. A stitched stack is, leaf first, the
// state's pseudo-frame (where the thread is in a runtime state), the event's own frames, then for
// its region and each parent region, the mark (experiment.OMPMarkFrame) and the master's frames at
// the region's start. The frame pass, which knows the functions, cuts each part after a mark at its
// outlined function: what is below it (the runtime's frames, the thread's start) is not the
// program's (ompFrames).
type ompStitch struct {
	d        *experiment.Data
	v        *ompView
	regions  map[regKey]*ompRegion
	tasks    map[regKey]*ompTask
	chains   []experiment.Stack // a region's parent stack: its mark and master's frames, and its parent's
	chainIdx map[[3]int64]int32 // by mark, master's (creator's) stack and parent chain
	ids      map[stitchKey]uint32
}

type stitchKey struct {
	stack uint32
	state experiment.OMPState
	chain int32
}

// chainOf returns region r's parent stack (process pid), made once.
func (s *ompStitch) chainOf(pid uint32, r *ompRegion, depth int) int32 {
	if r.chain >= 0 {
		return r.chain
	}
	parent := int32(-1)
	if p := s.regions[regKey{pid, r.parent}]; p != nil && r.parent != 0 && depth < 64 {
		parent = s.chainOf(pid, p, depth+1)
	}
	r.chain = s.chainFrom(experiment.OMPMarkFrame, r.stack, parent)
	return r.chain
}

// taskChainOf returns task k's parent stack (process pid): its creator's frames at its creation,
// and those of its creator's region.
func (s *ompStitch) taskChainOf(pid uint32, k *ompTask) int32 {
	if k.chain >= 0 {
		return k.chain
	}
	parent := int32(-1)
	if r := s.regions[regKey{pid, k.region}]; r != nil && k.region != 0 {
		parent = s.chainOf(pid, r, 0)
	}
	k.chain = s.chainFrom(experiment.OMPTaskMarkFrame, k.stack, parent)
	return k.chain
}

// chainFrom returns the parent stack of mark, the frames of stack but its first, and parent's.
func (s *ompStitch) chainFrom(mark uint64, stack uint32, parent int32) int32 {
	key := [3]int64{int64(mark), int64(stack), int64(parent)}
	if c, ok := s.chainIdx[key]; ok {
		return c
	}
	fr := experiment.Stack{mark}
	if int(stack) < len(s.d.Stacks) && len(s.d.Stacks[stack]) > 1 {
		fr = append(fr, s.d.Stacks[stack][1:]...) // frame 0 is the runtime's entry point or the call's return address
	}
	if parent >= 0 {
		fr = append(fr, s.chains[parent]...)
	}
	c := int32(len(s.chains))
	s.chains = append(s.chains, fr)
	s.chainIdx[key] = c
	return c
}

// stitch returns the stack of an event of process pid with raw stack id stack, in state, region
// and explicit task.
func (s *ompStitch) stitch(pid uint32, stack uint32, state experiment.OMPState, region, task int64) uint32 {
	r := s.regions[regKey{pid, region}]
	k := s.tasks[regKey{pid, task}]
	if state == 0 || (r == nil && k == nil && state == experiment.OMPWork) {
		return stack // serial work: the raw stack
	}
	chain := int32(-1)
	switch {
	case state == experiment.OMPIdle:
	case task != 0 && k != nil:
		chain = s.taskChainOf(pid, k)
	case r != nil:
		chain = s.chainOf(pid, r, 0)
	}
	key := stitchKey{stack, state, chain}
	if id, ok := s.ids[key]; ok {
		return id
	}
	var raw experiment.Stack
	if int(stack) < len(s.d.Stacks) {
		raw = s.d.Stacks[stack]
	}
	var fr experiment.Stack
	switch {
	case state == experiment.OMPIdle && chain < 0:
		fr = experiment.Stack{experiment.OMPStateFrame(state)}
	default:
		if state != experiment.OMPWork {
			fr = append(fr, experiment.OMPStateFrame(state))
		}
		fr = append(fr, raw...)
		if chain >= 0 {
			fr = append(fr, s.chains[chain]...)
		}
	}
	id := uint32(s.v.n + len(s.v.extra))
	s.v.extra = append(s.v.extra, fr)
	s.v.orig = append(s.v.orig, stack)
	s.ids[key] = id
	return id
}

// numStacks is the number of stack ids of the experiment's events: its stacks and the stitched ones.
func (es *expState) numStacks() int {
	if es.omp != nil {
		return es.omp.n + len(es.omp.extra)
	}
	return len(es.d.Stacks)
}

// ompValues sets a clock event's OpenMP Work or Wait (at out[at], out[at+1]) to its time: its Total
// Thread Time where out has the microstates, else its CPU time; by the state of event i (states nil:
// all work, an experiment without OpenMP regions beside those with).
func ompValues(out []int64, at int, states []uint8, i int) {
	total := out[MetricTotalCPU]
	if at > MetricTotalThread {
		total = out[MetricTotalThread]
	}
	if states != nil && i < len(states) && states[i] > uint8(experiment.OMPWork) {
		out[at+1] = total
	} else {
		out[at] = total
	}
}

// kindOffset returns where metric name is among kind k's metrics in p's value vectors; -1 when p
// has no such metric.
func (p *Profile) kindOffset(k DataKind, name string) int {
	base := p.base[k]
	for i, m := range p.Metrics {
		if m.Data == k && m.Name == name && base >= 0 {
			return i - base
		}
	}
	return -1
}

// OMPStateHelp says what OMPState gives, for describe.
var OMPStateHelp = "the thread's OpenMP state: " + codes(experiment.NumOMPStates-1, func(i int) string { return experiment.OMPState(i).String() }) +
	" (serial code is work); 0 in experiments of programs without OpenMP regions"

// lastOMP is the last experiment OMPState looked at, and its view.
var lastOMP atomic.Pointer[struct {
	d *experiment.Data
	v *ompView
}]

// OMPState returns the OpenMP state of event ev (a filter's OMPSTATE): an experiment's with OpenMP
// regions is at least work; 0 for any other.
func OMPState(ev *EventInfo) int64 {
	d := ev.Data
	if d == nil {
		return 0
	}
	l := lastOMP.Load()
	if l == nil || l.d != d {
		l = &struct {
			d *experiment.Data
			v *ompView
		}{d, ompViewOf(d)}
		lastOMP.Store(l)
	}
	v := l.v
	if v == nil || int(ev.Kind) >= len(v.stateOf) || ev.Index >= len(v.stateOf[ev.Kind]) {
		return 0
	}
	return int64(max(v.stateOf[ev.Kind][ev.Index], uint8(experiment.OMPWork)))
}

// OMPConstructs returns the parallel regions of the code of experiment d (nil without OpenMP
// regions), which OMPConstructOf numbers from 1.
func OMPConstructs(d *experiment.Data) []OMPConstruct {
	if v := ompViewOf(d); v != nil {
		return v.constructs
	}
	return nil
}

// OMPConstructOf returns the construct of event ev's region (an index of OMPConstructs(ev.Data)
// plus 1), 0 for an event in no region.
func OMPConstructOf(ev *EventInfo) int {
	if ev.Data == nil {
		return 0
	}
	v := ompViewOf(ev.Data)
	if v == nil || int(ev.Kind) >= len(v.constOf) || ev.Index >= len(v.constOf[ev.Kind]) {
		return 0
	}
	return int(v.constOf[ev.Kind][ev.Index])
}

// OMPConstructName names construct c of experiment exp as the expert mode names its outlined
// function, "foo -- OMP parallel region from line 9 [foo._omp_fn.0]", or, where its address is a
// call's return address in the function holding it (OMPT), "foo -- OMP parallel region from line 9".
func (p *Profile) OMPConstructName(exp int, c OMPConstruct) string {
	var region OMPConstruct // a clang task's creator's region, whose function holds it
	name := p.ompConstructName(exp, c, &region)
	if region.Addr != 0 {
		if holder, _, ok := strings.Cut(p.ompConstructName(exp, region, new(OMPConstruct)), " -- "); ok {
			name = holder + strings.TrimPrefix(name, "?")
		}
	}
	return name
}

func (p *Profile) ompConstructName(exp int, c OMPConstruct, holderRegion *OMPConstruct) string {
	region := OMPConstruct{}
	defer func() { *holderRegion = region }()
	what := "parallel region"
	if c.Task {
		what = "task"
	}
	name := fmt.Sprintf("OMP %s at %#x", what, c.Addr)
	p.lazy(func() {
		b := p.Unfiltered().b
		if b == nil || exp < 0 || exp >= len(b.exps) {
			return
		}
		es := b.exps[exp]
		pm := es.procs[c.Pid]
		if pm == nil {
			pm = es.fallback
		}
		epoch := 0
		if pm != nil {
			epoch = pm.epoch(c.Time)
		}
		outlined := false
		loc := b.frameLoc(es, pm, epoch, c.Addr, false)
		if f := &b.p.Functions[loc.fn]; isOutlined(f.Name) {
			outlined = true
		} else {
			loc = b.frameLoc(es, pm, epoch, c.Addr-1, true) // a return address: the call is before it
		}
		fn := &b.p.Functions[loc.fn]
		line := ""
		if fs := b.fileOf(loc.os); fs != nil && fs.of != nil && fs.of.Debug != nil {
			at := loc.addr
			if outlined {
				at = fn.Addr
			}
			if frames, ok := fs.of.Debug.Frames(at); ok && len(frames) > 0 {
				line = fmt.Sprintf(" from line %d", frames[len(frames)-1].Line)
			}
		}
		switch {
		case outlined:
			holder, _, ok := strings.Cut(fn.Name, "._omp_fn.")
			if !ok {
				holder = "?"
				if cs := OMPConstructs(b.exps[exp].d); c.Task && c.Region > 0 && c.Region <= len(cs) {
					region = cs[c.Region-1] // the function of the task's creator's region: named below
				}
			}
			name = fmt.Sprintf("%s -- OMP %s%s [%s]", holder, what, line, fn.Name)
		case fn.Kind == FuncSymbol:
			name = fmt.Sprintf("%s -- OMP %s%s", fn.Name, what, line)
		}
	})
	return name
}

// OMPTaskConstructs returns the explicit tasks of the code of experiment d (nil without them),
// which OMPTaskOf numbers from 1.
func OMPTaskConstructs(d *experiment.Data) []OMPConstruct {
	if v := ompViewOf(d); v != nil {
		return v.tasks
	}
	return nil
}

// OMPTaskOf returns the construct of the explicit task event ev ran in (an index of
// OMPTaskConstructs(ev.Data) plus 1), 0 for an event in no explicit task.
func OMPTaskOf(ev *EventInfo) int {
	if ev.Data == nil {
		return 0
	}
	v := ompViewOf(ev.Data)
	if v == nil || int(ev.Kind) >= len(v.taskOf) || ev.Index >= len(v.taskOf[ev.Kind]) {
		return 0
	}
	return int(v.taskOf[ev.Kind][ev.Index])
}

// ompStats are the statistics lines of the experiments' OpenMP regions and tasks (none without):
// the constructs and their instances, the threads of the largest team, and OpenMP Work and Wait
// with their shares of the threads' time, by state. The metrics of each region and task are
// indxobj OMP_preg and OMP_task's.
func ompStats(ds []*experiment.Data) []Stat {
	var regions, instances, tasks, taskRuns, team int64
	var byState [experiment.NumOMPStates]int64
	any := false
	for _, d := range ds {
		v := ompViewOf(d)
		if v == nil {
			continue
		}
		any = true
		regions += int64(len(v.constructs))
		for _, c := range v.constructs {
			instances += int64(c.Instances)
			team = max(team, int64(c.Threads))
		}
		tasks += int64(len(v.tasks))
		for _, c := range v.tasks {
			taskRuns += int64(c.Instances)
		}
		t := d.ClockTable()
		periods := &t.Cols[experiment.ClockColPeriod]
		for i, s := range v.stateOf[0] { // (0: the clock kind, registered first)
			byState[max(s, uint8(experiment.OMPWork))] += periods.At(i)
		}
	}
	if !any {
		return nil
	}
	var total int64
	for _, v := range byState {
		total += v
	}
	ofTotal := func(v []int64) string { return fmt.Sprintf("%s (%5.1f%%)", secondsMS(v[0]), percentOf(v[0], v[1])) }
	lines := []Stat{
		{Label: "OpenMP parallel regions", Values: []int64{regions, instances, team},
			Format: func(v []int64) string { return fmt.Sprintf("%d (%d instances; at most %d threads)", v[0], v[1], v[2]) }},
		{Label: "OpenMP tasks", Values: []int64{tasks, taskRuns},
			Format: func(v []int64) string { return fmt.Sprintf("%d (%d instances)", v[0], v[1]) }},
		{Label: "OpenMP Work (sec.)", Values: []int64{byState[experiment.OMPWork], total}, Format: ofTotal},
		{Label: "OpenMP Wait (sec.)", Values: []int64{total - byState[experiment.OMPWork], total}, Format: ofTotal},
	}
	for s := experiment.OMPOverhead; int(s) < experiment.NumOMPStates; s++ {
		if byState[s] > 0 {
			lines = append(lines, Stat{Label: "  <OMP-" + s.String() + "> (sec.)", Values: []int64{byState[s], total}, Format: ofTotal})
		}
	}
	return lines
}
