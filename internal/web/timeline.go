package web

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"sync"

	"er/internal/analysis"
)

// timeline indexes the events of the profile of all events by thread and time. Every view reads it
// at once: it does not change once made, but for the leaves of the view modes other than the
// profile's, found as a page in that mode first needs them.
type timeline struct {
	p    *analysis.Profile
	rows []tlRow
	leaf []int32 // the leaf function of each function stack

	modeMu     sync.Mutex
	modeLeaves map[analysis.ViewMode][]int32 // by raw stack, in a mode with other stacks: its leaf, or -2 before it is known
}

// tlRow is one thread of one experiment: its events in time order.
type tlRow struct {
	Exp    int     `json:"exp"`
	Pid    uint32  `json:"pid"`
	Tid    uint32  `json:"tid"`
	Thread int     `json:"thread"`
	Label  string  `json:"label"` // the program, its pid, the thread's number and name: "java [2633] T:2 main"
	Prog   string  `json:"program"`
	Name   string  `json:"name,omitempty"` // the thread's name, where known
	jvm    bool    // a JVM's own thread: not in the Java user mode's timeline
	events []int32 // indexes into p.EventList
	maxDur int64   // the longest Dur of its events
}

// timelineIndex returns the timeline index, made once for every view.
func (s *Server) timelineIndex() (*timeline, error) {
	s.sh.tlMu.Lock()
	defer s.sh.tlMu.Unlock()
	if s.sh.tl != nil {
		return s.sh.tl, nil
	}
	p := s.sh.base
	_, exps := s.eng.Experiments()
	type key struct {
		exp int32
		pid uint32
		tid uint32
	}
	byKey := map[key]int{}
	tl := &timeline{p: p, leaf: make([]int32, p.NumStacks())}
	for i := range tl.leaf {
		if funcs, _ := p.Stack(i); len(funcs) > 0 {
			tl.leaf[i] = funcs[len(funcs)-1]
		}
	}
	for i := range p.EventList {
		e := &p.EventList[i]
		k := key{e.Exp, e.Pid, e.Tid}
		r, ok := byKey[k]
		if !ok {
			r = len(tl.rows)
			byKey[k] = r
			x := s.eng.Index(int(e.Exp))
			num := x.ThreadNumber(e.Pid, e.Tid)
			prog := programOf(&exps[e.Exp].Log)
			label := fmt.Sprintf("%s [%d] T:%d", prog, e.Pid, num)
			var th analysis.Thread
			if num > 0 {
				th = x.Threads()[num-1]
			}
			if th.Name != "" && th.Name != prog {
				label += " " + th.Name
			}
			tl.rows = append(tl.rows, tlRow{Exp: int(e.Exp) + 1, Pid: e.Pid, Tid: e.Tid, Thread: num, Label: label, Prog: prog,
				Name: th.Name, jvm: th.JVM})
		}
		tl.rows[r].events = append(tl.rows[r].events, int32(i))
		tl.rows[r].maxDur = max(tl.rows[r].maxDur, e.Dur)
	}
	sort.SliceStable(tl.rows, func(i, j int) bool {
		a, b := &tl.rows[i], &tl.rows[j]
		if a.Exp != b.Exp {
			return a.Exp < b.Exp
		}
		return a.Thread < b.Thread
	})
	// Rows alike (two experiments of one program whose pids were the same) say their experiment.
	seen := map[string]int{}
	for _, r := range tl.rows {
		seen[r.Label]++
	}
	for i := range tl.rows {
		if r := &tl.rows[i]; seen[r.Label] > 1 {
			r.Label += fmt.Sprintf(" (exp %d)", r.Exp)
		}
	}
	for _, r := range tl.rows {
		ev := r.events
		sort.SliceStable(ev, func(i, j int) bool { return p.EventList[ev[i]].Time < p.EventList[ev[j]].Time })
	}
	s.sh.tl = tl
	return tl, nil
}

// name is the name of function f of the timeline's profile, in view s: the profile of every event
// numbers functions as every view's profile does (each is refiltered from it).
func (tl *timeline) name(s *Server, f int32) string {
	if p, err := s.eng.Profile(); err == nil && p.Unfiltered() == tl.p {
		return s.eng.FuncName(int(f))
	}
	fns, _ := tl.p.Tables()
	return analysis.FunctionName(&fns[f], analysis.NameLong)
}

// funcKey identifies a function across profiles of the same experiments.
type funcKey struct {
	obj  string
	name string
	addr uint64
	kind analysis.FuncKind
}

func keyOf(fns []analysis.Function, objs []analysis.Object, f int) funcKey {
	fn := &fns[f]
	return funcKey{objs[fn.Object].Path, fn.Name, fn.Addr, fn.Kind}
}

// currentID maps function f of the profile of all events to the current profile's; -1 when the
// current profile does not have it.
func (s *Server) currentID(f int) (int, error) {
	p, err := s.eng.Profile()
	if err != nil {
		return 0, err
	}
	if p == s.sh.base {
		return f, nil
	}
	if p.Unfiltered() == s.sh.base { // refiltered: the same numbers
		if p.Used(f) {
			return f, nil
		}
		return -1, nil
	}
	if s.idsOf != p {
		s.ids, s.idsOf = make(map[funcKey]int, len(p.Functions)), p
		for i := range p.Functions {
			s.ids[keyOf(p.Functions, p.Objects, i)] = i
		}
	}
	fns, objs := s.sh.base.Tables()
	if id, ok := s.ids[keyOf(fns, objs, f)]; ok {
		return id, nil
	}
	return -1, nil
}

// leafOf is the leaf function of function stack st.
func (tl *timeline) leafOf(st int32) int32 {
	if st < 0 || int(st) >= len(tl.leaf) {
		return 0
	}
	return tl.leaf[st]
}

// viewMode is the page's view mode, and whether its stacks are the timeline profile's.
func (s *Server) viewMode(tl *timeline) (analysis.ViewMode, bool) {
	m, ok := analysis.ParseViewMode(s.eng.ViewMode())
	return m, !ok || tl.p.SameStacks(m)
}

// leafIn is the leaf function of event e in view mode m: of its raw stack as m shows it.
func (tl *timeline) leafIn(m analysis.ViewMode, same bool, e *analysis.Event) int32 {
	if same || e.Raw < 0 {
		return tl.leafOf(e.Stack)
	}
	tl.modeMu.Lock()
	defer tl.modeMu.Unlock()
	if tl.modeLeaves == nil {
		tl.modeLeaves = map[analysis.ViewMode][]int32{}
	}
	leaves := tl.modeLeaves[m]
	if leaves == nil {
		leaves = make([]int32, tl.p.NumRaw())
		for i := range leaves {
			leaves[i] = -2
		}
		tl.modeLeaves[m] = leaves
	}
	if int(e.Raw) >= len(leaves) {
		return 0
	}
	if leaves[e.Raw] == -2 {
		leaves[e.Raw] = 0
		if fr := tl.p.StackIn(m, e.Raw); len(fr) > 0 {
			leaves[e.Raw] = fr[len(fr)-1]
		}
	}
	return leaves[e.Raw]
}

// window returns the events of row r with t0 <= Time < t1 (none when t1 <= t0).
func (tl *timeline) window(r *tlRow, t0, t1 int64) []int32 {
	if t1 <= t0 {
		return nil
	}
	ev := tl.p.EventList
	lo := sort.Search(len(r.events), func(i int) bool { return ev[r.events[i]].Time >= t0 })
	hi := sort.Search(len(r.events), func(i int) bool { return ev[r.events[i]].Time >= t1 })
	return r.events[lo:hi]
}

// maxBins bounds the width of a timeline answer.
const maxBins = 4096

// timeline answers, for the time window [t0, t1) cut into w bins, each thread's events: per bin,
// the leaf function seen most often there (-1 for none) and the number of events.
func (s *Server) timeline(r *http.Request) (any, error) {
	tl, err := s.timelineIndex()
	if err != nil {
		return nil, err
	}
	dur := s.duration()
	t0, err := intParam(r, "t0", 0, minTime, maxTime)
	if err != nil {
		return nil, err
	}
	t1, err := intParam(r, "t1", dur, minTime, maxTime)
	if err != nil {
		return nil, err
	}
	w, err := intParam(r, "w", 1000, 1, maxBins)
	if err != nil {
		return nil, err
	}
	if t1 <= t0 {
		return nil, badRequest("parameters t0=%d and t1=%d: the time window [t0, t1) is empty", t0, t1)
	}
	mode, same := s.viewMode(tl)
	type rowOut struct {
		tlRow
		Leaf  []int32 `json:"leaf"`
		Count []int32 `json:"count"`
		// State is, per bin, the thread state (analysis.State) its clock events spent the most time in
		// there; 0 for none. Absent where the row has no clock event.
		State []int8 `json:"state,omitempty"`
	}
	var stateNS [analysis.StateOtherWait + 1]int64
	rows := []rowOut{}
	names := map[int32]string{}
	counts := map[int32]int32{}
	span := float64(t1) - float64(t0)
	bin := func(t int64) int {
		return int(min(max((float64(t)-float64(t0))/span*float64(w), 0), float64(w-1)))
	}
	for i := range tl.rows {
		row := &tl.rows[i]
		if row.jvm && mode == analysis.ViewUser {
			continue // the Java user mode shows the program's threads, not the JVM's
		}
		ro := rowOut{tlRow: *row, Leaf: make([]int32, w), Count: make([]int32, w)}
		for b := range ro.Leaf {
			ro.Leaf[b] = -1
		}
		// Each bin shows the leaf function of most of the events that end in it.
		evs := tl.window(row, t0, t1)
		for k := 0; k < len(evs); {
			b := bin(tl.p.EventList[evs[k]].Time)
			clear(counts)
			var n int32
			for ; k < len(evs) && bin(tl.p.EventList[evs[k]].Time) == b; k++ {
				counts[tl.leafIn(mode, same, &tl.p.EventList[evs[k]])]++
				n++
			}
			best, bestN := int32(-1), int32(0)
			for f, c := range counts {
				if c > bestN || c == bestN && f < best {
					best, bestN = f, c
				}
			}
			ro.Leaf[b], ro.Count[b] = best, n
		}
		// A bin where no event ends shows the event whose span (a sample's CPU time, a call's
		// duration) covers it. Each bin's state is the one the clock events' spans cover most of it.
		var states [][len(stateNS)]int64
		binNS := span / float64(w)
		for _, k := range tl.window(row, t0, satAdd(t1, row.maxDur)) {
			e := &tl.p.EventList[k]
			if e.Dur <= 0 || e.Time-e.Dur >= t1 {
				continue
			}
			if e.State != analysis.StateNone && int(e.State) < len(stateNS) {
				if states == nil {
					states = make([][len(stateNS)]int64, w)
				}
				a, z := max(e.Time-e.Dur, t0), min(e.Time, t1)
				for b := bin(a); b <= bin(z-1) && a < z; b++ {
					lo := max(float64(a), float64(t0)+float64(b)*binNS)
					hi := min(float64(z), float64(t0)+float64(b+1)*binNS)
					states[b][e.State] += int64(max(hi-lo, 1))
				}
			}
			leaf := int32(-1)
			for b := bin(max(e.Time-e.Dur, t0)); b <= bin(min(e.Time, t1-1)); b++ {
				if ro.Leaf[b] < 0 {
					if leaf < 0 {
						leaf = tl.leafIn(mode, same, e)
					}
					ro.Leaf[b], ro.Count[b] = leaf, 1
				}
			}
		}
		if states != nil {
			ro.State = make([]int8, w)
			for b := range states {
				stateNS = states[b]
				best := 0
				for st := 1; st < len(stateNS); st++ {
					if stateNS[st] > stateNS[best] {
						best = st
					}
				}
				ro.State[b] = int8(best)
			}
		}
		for _, f := range ro.Leaf {
			if _, ok := names[f]; !ok && f >= 0 {
				names[f] = tl.name(s, f)
			}
		}
		rows = append(rows, ro)
	}
	return map[string]any{"t0": t0, "t1": t1, "w": w, "duration": dur, "rows": rows, "names": names}, nil
}

// event answers the event of timeline row (an index into the rows) nearest to time t, within tol
// ns: its time, kind, duration and call stack, leaf first.
func (s *Server) event(r *http.Request) (any, error) {
	tl, err := s.timelineIndex()
	if err != nil {
		return nil, err
	}
	if len(tl.rows) == 0 {
		return nil, badRequest("the timeline has no rows: the experiments have no events")
	}
	ri, err := intParam(r, "row", 0, 0, int64(len(tl.rows))-1)
	if err != nil {
		return nil, err
	}
	t, err := intParam(r, "t", 0, minTime, maxTime)
	if err != nil {
		return nil, err
	}
	tol, err := intParam(r, "tol", 1_000_000, 0, maxTolNS)
	if err != nil {
		return nil, err
	}
	best := tl.nearest(int(ri), t, tol)
	if best < 0 {
		return map[string]any{"found": false}, nil
	}
	e := &tl.p.EventList[best]
	frames, err := s.frames(tl, e)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"found": true, "time": e.Time, "dur": e.Dur, "kind": kindLabel(e.Kind),
		"row": tl.rows[ri].Label, "frames": frames}
	if name := stateNames[e.State]; name != "" {
		out["state"] = name
	}
	return out, nil
}

// stateNames names the thread states of clock events (analysis.State), as the metrics do.
var stateNames = map[analysis.State]string{analysis.StateUser: "User CPU", analysis.StateSystem: "System CPU",
	analysis.StateWaitCPU: "Wait CPU", analysis.StateUserLock: "User Lock", analysis.StateTextFault: "Text Page Fault",
	analysis.StateDataFault: "Data Page Fault", analysis.StateOtherWait: "Other Wait"}

// nearest returns the event of row ri nearest to time t, no further than tol; -1 if none.
func (tl *timeline) nearest(ri int, t, tol int64) int32 {
	best := int32(-1)
	for _, i := range tl.window(&tl.rows[ri], satAdd(t, -tol), satAdd(satAdd(t, tol), 1)) {
		if best < 0 || abs(tl.p.EventList[i].Time-t) < abs(tl.p.EventList[best].Time-t) {
			best = i
		}
	}
	return best
}

// frame is a function of a call stack, as the page shows it: its id in the current profile (-1
// when the current selection leaves it out) and its name.
type frame struct {
	ID   int32  `json:"id"`
	Name string `json:"name"`
}

// frames lists the functions of event e's stack as the page's view mode shows it, leaf first.
func (s *Server) frames(tl *timeline, e *analysis.Event) ([]frame, error) {
	funcs, _ := tl.p.Stack(int(e.Stack))
	if m, same := s.viewMode(tl); !same && e.Raw >= 0 {
		funcs = tl.p.StackIn(m, e.Raw)
	}
	out := []frame{}
	for i := len(funcs) - 1; i >= 0; i-- {
		id, err := s.currentID(int(funcs[i]))
		if err != nil {
			return nil, err
		}
		out = append(out, frame{int32(id), tl.name(s, funcs[i])})
	}
	return out, nil
}

// staticEvents are the answers of /api/event for every pixel of the timeline of the whole run, for
// a static report: rows[r][x] indexes events, -1 when nothing is near; events index stacks.
type staticEvents struct {
	T0     int64         `json:"t0"`
	T1     int64         `json:"t1"`
	W      int           `json:"w"`
	Rows   [][]int32     `json:"rows"`
	Events []staticEvent `json:"events"`
	Stacks [][]frame     `json:"stacks"`
}

type staticEvent struct {
	Time  int64  `json:"time"`
	Dur   int64  `json:"dur"`
	Kind  string `json:"kind"`
	Stack int32  `json:"stack"`
}

// eventsByPixel computes the staticEvents of the range [t0, t1] drawn w pixels wide, with the
// tolerance app.js asks for (two pixels).
func (s *Server) eventsByPixel(t0, t1 int64, w int) (*staticEvents, error) {
	tl, err := s.timelineIndex()
	if err != nil {
		return nil, err
	}
	_, same := s.viewMode(tl)
	out := &staticEvents{T0: t0, T1: t1, W: w, Rows: make([][]int32, len(tl.rows))}
	evIdx, stIdx := map[int32]int32{}, map[int32]int32{}
	tol := max(1, int64(math.Round(float64(t1-t0)/float64(w)*2)))
	for ri := range tl.rows {
		px := make([]int32, w)
		for x := range px {
			t := t0 + int64(math.Round((float64(x)+0.5)/float64(w)*float64(t1-t0)))
			best := tl.nearest(ri, t, tol)
			if best < 0 {
				px[x] = -1
				continue
			}
			k, ok := evIdx[best]
			if !ok {
				e := &tl.p.EventList[best]
				key := e.Stack // (in a mode of other stacks, its raw stack's)
				if !same {
					key = e.Raw
				}
				st, ok := stIdx[key]
				if !ok {
					fr, err := s.frames(tl, e)
					if err != nil {
						return nil, err
					}
					st = int32(len(out.Stacks))
					out.Stacks = append(out.Stacks, fr)
					stIdx[key] = st
				}
				k = int32(len(out.Events))
				out.Events = append(out.Events, staticEvent{e.Time, e.Dur, kindLabel(e.Kind), st})
				evIdx[best] = k
			}
			px[x] = k
		}
		out.Rows[ri] = px
	}
	return out, nil
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func kindLabel(k analysis.DataKind) string {
	if int(k) < len(analysis.Kinds) {
		return analysis.Kinds[k].Noun
	}
	return "clock"
}

// histogram counts the events of each kind in bins of [t0, t1).
func (tl *timeline) histogram(t0, t1 int64, bins int) map[string]any {
	p := tl.p
	series := map[string][]int64{}
	if t1 <= t0 {
		t1 = t0 + 1
	}
	span := float64(t1) - float64(t0)
	for i := range p.EventList {
		e := &p.EventList[i]
		if e.Time < t0 || e.Time >= t1 {
			continue
		}
		name := kindLabel(e.Kind)
		v := series[name]
		if v == nil {
			v = make([]int64, bins)
			series[name] = v
		}
		// Times beyond 2^53 ns round: the last event may land on the end.
		v[min(int((float64(e.Time)-float64(t0))/span*float64(bins)), bins-1)]++
	}
	return map[string]any{"t0": t0, "t1": t1, "bins": bins, "series": series}
}

// duration is the time span of the experiments: from their start to the end of the last one,
// or just past its last event when that is later (Open works it out).
func (s *Server) duration() int64 { return s.sh.dur }
