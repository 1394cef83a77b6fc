package web

import (
	"er/internal/sat"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/experiment"
)

// A process of the experiments: the founder, or a descendant that er collect followed. Each of
// its images (the one fork started, then one per exec) has an experiment of its own, named by
// lineage (_f2, _f2_x1); the process is the chain of its images, and its parent the process
// whose image forked it.
type process struct {
	ID      int     `json:"id"`     // its index in the list, parents before children
	Parent  int     `json:"parent"` // the parent's ID; -1 for a founder (or a process whose parent is not loaded)
	Depth   int     `json:"depth"`
	Program string  `json:"program"` // its last image's program, without directories
	Command string  `json:"command"` // its last image's command line
	Pid     uint32  `json:"pid"`
	Ppid    uint32  `json:"ppid"`    // 0 for a founder
	Lineage string  `json:"lineage"` // its last image's lineage, as experiment_list shows it; "" for the founder
	Images  []image `json:"images"`
	// Threads is the number of its threads: those its events name, or the most a sample point
	// counted, whichever is larger.
	Threads int    `json:"threads"`
	Start   int64  `json:"start"` // ns since the founder's start: when its first image began
	End     int64  `json:"end"`   // when its last experiment ended (or its last event)
	Exit    string `json:"exit"`  // how its last image ended, as the overview says it
	// CPU is the Total CPU time of its clock samples, ns, as every view counts it (the <Total>
	// of the function list when the process alone is selected); User and System are its process
	// times (er print statistics' Process Times, summed over its images). The Incl values add
	// those of its descendants. The founder's CPU holds the tree's <Process exit> (its experiment
	// has it, with its pid), as er print's filter of its pid does.
	CPU         int64 `json:"cpu"`
	User        int64 `json:"user"`
	System      int64 `json:"system"`
	CPUIncl     int64 `json:"cpuIncl"`
	UserIncl    int64 `json:"userIncl"`
	SystemIncl  int64 `json:"systemIncl"`
	Events      int64 `json:"events"`      // its events of every kind (experiment_list's Events)
	Children    int   `json:"children"`    // processes it created (that are loaded)
	Descendants int   `json:"descendants"` // processes below it
	// Select and SelectTree are er print filter expressions that keep the process's events, and
	// those of it and its descendants.
	Select     string `json:"select"`
	SelectTree string `json:"selectTree"`

	key  procKey
	exps []int // its images' experiments, from 0
}

// image is one experiment of a process.
type image struct {
	Exp     int    `json:"exp"` // the experiment's id, from 1 (EXPID)
	Lineage string `json:"lineage"`
	Program string `json:"program"`
	Name    string `json:"name"` // the experiment's directory, as loaded
}

// procKey identifies a process: its founder's directory and its lineage up to its last fork
// (its images after that add exec steps).
type procKey struct {
	founder string
	lineage string
}

// procTree is the processes of the experiments, parents first, each one's children in lineage
// order.
type procTree struct {
	Processes []*process `json:"processes"`
	Founders  int        `json:"founders"`       // processes without a loaded parent
	Exps      int        `json:"subexperiments"` // experiments loaded, founders included
}

// execStep is a trailing exec step of a lineage (_x2).
var execStep = regexp.MustCompile(`_x[0-9]+$`)

// lastStep is the last step of a lineage (_f3, _x1).
var lastStep = regexp.MustCompile(`_[A-Za-z]+[0-9]+$`)

// processKey is the lineage of the process an image belongs to: without its exec steps.
func processKey(lineage string) string {
	for execStep.MatchString(lineage) {
		lineage = execStep.ReplaceAllString(lineage, "")
	}
	return lineage
}

// programOf is the program an experiment ran, without its directories.
func programOf(lg *experiment.Log) string {
	if len(lg.Command) == 0 || lg.Command[0] == "" {
		return "?"
	}
	return filepath.Base(lg.Command[0])
}

// founderOf is the directory of the founder experiment that holds experiment dir: dir itself for a
// founder.
func founderOf(dir string, lg *experiment.Log) string {
	dir = filepath.Clean(dir)
	if lg.Lineage != "" && experiment.IsSubexperiment(dir) {
		return filepath.Dir(dir)
	}
	return dir
}

// processes answers the process tree.
func (s *Server) processes(r *http.Request) (any, error) {
	return s.procTree(), nil
}

// procTree builds the process tree once, for every view.
func (s *Server) procTree() *procTree {
	s.sh.procsMu.Lock()
	defer s.sh.procsMu.Unlock()
	if s.sh.procs != nil {
		return s.sh.procs
	}
	dirs, exps := s.eng.Experiments()
	// Each experiment's CPU time and events, as the profile of every event has them.
	cpu, events := make([]int64, len(exps)), make([]int64, len(exps))
	for i := range s.sh.base.EventList {
		e := &s.sh.base.EventList[i]
		events[e.Exp]++
		if analysis.Kinds[e.Kind].CPUTime != nil && e.State.CPU() {
			cpu[e.Exp] = sat.Add(cpu[e.Exp], e.Dur)
		}
	}
	byKey := map[procKey]*process{}
	var order []*process
	for i, d := range exps {
		lg := &d.Log
		k := procKey{founderOf(dirs[i], lg), processKey(lg.Lineage)}
		p := byKey[k]
		if p == nil {
			p = &process{key: k, Parent: -1, Start: -1}
			byKey[k] = p
			order = append(order, p)
		}
		p.exps = append(p.exps, i)
		p.Images = append(p.Images, image{Exp: i + 1, Lineage: lg.Lineage, Program: programOf(lg), Name: dirs[i]})
		// The last image names the process.
		p.Program, p.Command, p.Pid, p.Ppid, p.Lineage = programOf(lg), strings.Join(lg.Command, " "), lg.Pid, lg.Ppid, lg.Lineage
		p.Exit = lg.ExitText()
		p.End = max(p.End, s.expEnd(i))
		if st := imageStart(d); p.Start < 0 || st < p.Start {
			p.Start = st
		}
		user, system := processTimes(d)
		p.CPU = sat.Add(p.CPU, cpu[i])
		p.User = sat.Add(p.User, user)
		p.System = sat.Add(p.System, system)
		p.Events = sat.Add(p.Events, events[i])
	}
	// Parents: the process whose image forked it, or the nearest loaded ancestor.
	kids := map[*process][]*process{}
	var roots []*process
	for _, p := range order {
		var parent *process
		for l := p.key.lineage; l != "" && parent == nil; {
			up := lastStep.ReplaceAllString(l, "")
			if up == l { // not a lineage er collect writes: no step to go up by
				break
			}
			l = processKey(up)
			parent = byKey[procKey{p.key.founder, l}]
		}
		if parent == nil || parent == p {
			roots = append(roots, p)
			continue
		}
		kids[parent] = append(kids[parent], p)
	}
	t := &procTree{Processes: []*process{}, Founders: len(roots), Exps: len(exps)}
	var walk func(p *process, parent, depth int)
	walk = func(p *process, parent, depth int) {
		p.ID, p.Parent, p.Depth = len(t.Processes), parent, depth
		t.Processes = append(t.Processes, p)
		p.Children = len(kids[p])
		p.CPUIncl, p.UserIncl, p.SystemIncl = p.CPU, p.User, p.System
		for _, c := range kids[p] {
			walk(c, p.ID, depth+1)
			p.CPUIncl = sat.Add(p.CPUIncl, c.CPUIncl)
			p.UserIncl = sat.Add(p.UserIncl, c.UserIncl)
			p.SystemIncl = sat.Add(p.SystemIncl, c.SystemIncl)
			p.Descendants += 1 + c.Descendants
		}
	}
	for _, p := range roots {
		walk(p, -1, 0)
	}
	s.threadCounts(t)
	s.selections(t)
	s.sh.procs = t
	return t
}

// expEnd is when experiment i ended: its end, or its last event while unfinished.
func (s *Server) expEnd(i int) int64 { return s.sh.ends[i] }

// imageStart is when an image began, ns since the founder's start: its start event (a
// descendant's), else its first sample point, else 0.
func imageStart(d *experiment.Data) int64 {
	for _, e := range d.Log.Events {
		if e.Kind == "start" {
			return e.Time
		}
	}
	if len(d.Overview) > 0 {
		t := d.Overview[0].Time
		for _, o := range d.Overview {
			t = min(t, o.Time)
		}
		return t
	}
	return 0
}

// processTimes is the user and system CPU time an image used between its first and last sample
// points, as er print's statistics counts them (its Process Times).
func processTimes(d *experiment.Data) (user, system int64) {
	first, last := map[uint32]experiment.OverviewSample{}, map[uint32]experiment.OverviewSample{}
	for _, o := range d.Overview {
		if prev, ok := first[o.Pid]; !ok || o.Time < prev.Time {
			first[o.Pid] = o
		}
		if prev, ok := last[o.Pid]; !ok || o.Time >= prev.Time {
			last[o.Pid] = o
		}
	}
	for pid, o := range last {
		f := first[pid]
		user = sat.Add(user, sat.Sub(o.UserNS, f.UserNS))
		system = sat.Add(system, sat.Sub(o.SystemNS, f.SystemNS))
	}
	return user, system
}

// threadCounts sets each process's number of threads: the threads its events name (each thread
// once, whichever image it ran in), or the most that a sample point counted.
func (s *Server) threadCounts(t *procTree) {
	_, exps := s.eng.Experiments()
	for _, p := range t.Processes {
		tids := map[[2]uint32]bool{}
		most := 0
		for _, i := range p.exps {
			for _, th := range s.eng.Index(i).Threads() {
				tids[[2]uint32{th.Pid, th.Tid}] = true
			}
			for _, o := range exps[i].Overview {
				most = max(most, int(o.NumThreads))
			}
		}
		p.Threads = max(len(tids), most)
	}
}

// selections sets the filter expressions that keep a process's events, and those of its
// subtree: by PID where no other loaded process has its pid, else by its experiments' ids.
func (s *Server) selections(t *procTree) {
	pids := map[uint32]int{}
	for _, p := range t.Processes {
		pids[p.Pid]++
	}
	for _, p := range t.Processes {
		ids := expIDs(p)
		if pids[p.Pid] == 1 {
			p.Select = fmt.Sprintf("PID == %d", p.Pid)
		} else {
			p.Select = idRanges(ids)
		}
		if p.Descendants == 0 {
			p.SelectTree = p.Select
			continue
		}
		for _, c := range t.Processes[p.ID+1 : p.ID+1+p.Descendants] {
			ids = append(ids, expIDs(c)...)
		}
		p.SelectTree = idRanges(ids)
	}
}

func expIDs(p *process) []int {
	ids := make([]int, len(p.exps))
	for i, e := range p.exps {
		ids[i] = e + 1
	}
	return ids
}

// idRanges is a filter expression that keeps the experiments of ids: "EXPID >= 2 && EXPID <= 7"
// for a run of ids, runs joined by ||.
func idRanges(ids []int) string {
	ids = append([]int(nil), ids...)
	slices.Sort(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] <= ids[j]+1 {
			j++
		}
		switch {
		case ids[i] == ids[j]:
			parts = append(parts, fmt.Sprintf("EXPID == %d", ids[i]))
		default:
			parts = append(parts, fmt.Sprintf("EXPID >= %d && EXPID <= %d", ids[i], ids[j]))
		}
		i = j + 1
	}
	if len(parts) == 1 {
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = "(" + p + ")"
	}
	return strings.Join(parts, " || ")
}
