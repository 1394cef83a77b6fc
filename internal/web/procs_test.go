package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"er/internal/erprint"
	"er/internal/experiment"
)

// image of the process-tree fixture: one experiment, the founder's or a subexperiment.
type treeImage struct {
	lineage    string
	pid, ppid  uint32
	command    []string
	start, end int64
	samples    map[uint32]int // clock samples (10 ms each) by thread
	user, sys  int64          // process times used between its first and last sample points
	threads    int32          // the threads its sample points count
	exec       bool           // exec replaced it
}

// treeImages is a shell that ran cc (which forked, then exec'd cc1 with two threads) and forked
// a subshell whose pid is cc1's again (the pid was reused): six experiments, four processes.
var treeImages = []treeImage{
	{lineage: "", pid: 300, command: []string{"/bin/sh", "-c", "cc -c a.c; (loop)"}, start: 0, end: 3_000_000_000,
		samples: map[uint32]int{300: 10}, user: 120_000_000, sys: 30_000_000, threads: 1},
	{lineage: "_f1", pid: 301, ppid: 300, command: []string{"/bin/sh", "-c", "cc -c a.c; (loop)"}, start: 100_000_000, end: 200_000_000,
		user: 1_000_000, threads: 1, exec: true},
	{lineage: "_f1_x1", pid: 301, ppid: 300, command: []string{"/usr/bin/cc", "-c", "a.c"}, start: 200_000_000, end: 1_500_000_000,
		samples: map[uint32]int{301: 5}, user: 60_000_000, sys: 4_000_000, threads: 1},
	{lineage: "_f1_x1_f1", pid: 302, ppid: 301, command: []string{"/usr/bin/cc", "-c", "a.c"}, start: 300_000_000, end: 310_000_000,
		sys: 2_000_000, threads: 1, exec: true},
	{lineage: "_f1_x1_f1_x1", pid: 302, ppid: 301, command: []string{"/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "-quiet", "a.c"},
		start: 310_000_000, end: 1_400_000_000, samples: map[uint32]int{302: 30, 303: 20}, user: 500_000_000, sys: 20_000_000, threads: 2},
	{lineage: "_f2", pid: 302, ppid: 300, command: []string{"/bin/sh", "-c", "cc -c a.c; (loop)"}, start: 1_600_000_000, end: 2_900_000_000,
		samples: map[uint32]int{302: 7}, user: 70_000_000, sys: 1_000_000, threads: 1},
}

// writeTreeExperiment writes the process-tree fixture into dir and returns the founder's path.
func writeTreeExperiment(t testing.TB, dir string) string {
	t.Helper()
	founder := filepath.Join(dir, "tree.1.er")
	for _, im := range treeImages {
		path := founder
		if im.lineage != "" {
			path = filepath.Join(founder, im.lineage+".er")
		}
		lg := experiment.Log{CollectorVersion: "er test", Host: "testhost", OS: "Linux", Arch: "x86_64",
			CPUs: 2, PageSize: 4096, WordSize: 64, Command: im.command, Cwd: "/tmp", Pid: im.pid, Ppid: im.ppid,
			Lineage: im.lineage, StartTime: 1_700_000_000_000_000_000, EndTime: im.end, Exited: true,
			Settings: []experiment.Setting{{Name: "clock_profiling", Value: "on"}, {Name: "clock_interval_ns", Value: "10000000"}}}
		w, err := experiment.Create(path, lg)
		if err != nil {
			t.Fatal(err)
		}
		w.AddMapping(experiment.Mapping{Pid: im.pid, Start: progBase, End: progBase + 0x10000, Path: progPath, UnloadTime: -1})
		if im.lineage != "" {
			w.Event(experiment.Event{Time: im.start, Kind: "start", Pid: im.pid, Text: strings.Join(im.command, " ")})
		}
		exit := "exited"
		if im.exec {
			exit = "exec started a new image"
		}
		w.Event(experiment.Event{Time: im.end, Kind: "exit", Pid: im.pid, Text: exit})
		st, err := w.Stack(stackOf("main", "work", "leafA"))
		if err != nil {
			t.Fatal(err)
		}
		tids := slices.Sorted(maps.Keys(im.samples))
		for k := 1; k <= 100; k++ { // in time order; the main thread first
			for j, tid := range tids {
				if k > im.samples[tid] {
					continue
				}
				if err := w.Clock(experiment.ClockSample{Time: im.start + int64(k)*period + int64(j)*1000, Pid: im.pid, Tid: tid,
					Mode: experiment.ModeUser, Period: period, Stack: st}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for k, o := range []experiment.OverviewSample{
			{Time: im.start, UserNS: 5_000_000, SystemNS: 1_000_000, Label: "start"},
			{Time: im.end, UserNS: 5_000_000 + im.user, SystemNS: 1_000_000 + im.sys, Label: "end"},
		} {
			o.Pid, o.Sample, o.NumThreads = im.pid, uint32(k+1), im.threads
			if err := w.Overview(o); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	writeProgArchive(t, founder)
	return founder
}

// TestProcessTree checks /api/processes on the fixture: each process's program, pid, lineage,
// parent, threads, CPU and times, exactly, and equal to what er print says of its experiments
// (experiment_list; statistics' Process Times; the function list's total with the process
// selected by the filter the page sets when it is clicked).
func TestProcessTree(t *testing.T) {
	exp := writeTreeExperiment(t, t.TempDir())
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	t.Cleanup(ts.Close)
	var pt struct {
		Processes []process `json:"processes"`
		Founders  int       `json:"founders"`
		Exps      int       `json:"subexperiments"`
	}
	get(t, ts, "/api/processes", 200, &pt)
	if pt.Founders != 1 || pt.Exps != 6 || len(pt.Processes) != 4 {
		t.Fatalf("%d founders, %d experiments, %d processes; want 1, 6, 4", pt.Founders, pt.Exps, len(pt.Processes))
	}
	const ms = 1_000_000
	type want struct {
		program, lineage      string
		pid, ppid             uint32
		parent, depth         int
		images                []int
		threads               int
		cpu, cpuIncl          int64
		user, sys             int64
		userIncl, sysIncl     int64
		events                int64
		start, end            int64
		children, descendants int
		exit                  string
		sel, selTree          string
	}
	descExit := "exited; its exit status is not known (a descendant: its parent collects the status)"
	wants := []want{
		{"sh", "", 300, 0, -1, 0, []int{1}, 1, 10 * period, 72 * period, 120 * ms, 30 * ms, 751 * ms, 57 * ms, 10, 0, 3000 * ms, 2, 3,
			"exited with status 0", "PID == 300", "EXPID >= 1 && EXPID <= 6"},
		{"cc", "_f1_x1", 301, 300, 0, 1, []int{2, 3}, 1, 5 * period, 55 * period, 61 * ms, 4 * ms, 561 * ms, 26 * ms, 5, 100 * ms, 1500 * ms, 1, 1,
			descExit, "PID == 301", "EXPID >= 2 && EXPID <= 5"},
		{"cc1", "_f1_x1_f1_x1", 302, 301, 1, 2, []int{4, 5}, 2, 50 * period, 50 * period, 500 * ms, 22 * ms, 500 * ms, 22 * ms, 50, 300 * ms, 1400 * ms, 0, 0,
			descExit, "EXPID >= 4 && EXPID <= 5", "EXPID >= 4 && EXPID <= 5"},
		{"sh", "_f2", 302, 300, 0, 1, []int{6}, 1, 7 * period, 7 * period, 70 * ms, 1 * ms, 70 * ms, 1 * ms, 7, 1600 * ms, 2900 * ms, 0, 0,
			descExit, "EXPID == 6", "EXPID == 6"},
	}
	for i, w := range wants {
		p := pt.Processes[i]
		var images []int
		for _, im := range p.Images {
			images = append(images, im.Exp)
		}
		got := want{p.Program, p.Lineage, p.Pid, p.Ppid, p.Parent, p.Depth, images, p.Threads, p.CPU, p.CPUIncl, p.User, p.System,
			p.UserIncl, p.SystemIncl, p.Events, p.Start, p.End, p.Children, p.Descendants, p.Exit, p.Select, p.SelectTree}
		if fmt.Sprint(got) != fmt.Sprint(w) || p.ID != i {
			t.Errorf("process %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	if c := pt.Processes[2].Command; c != "/usr/lib/gcc/x86_64-linux-gnu/12/cc1 -quiet a.c" {
		t.Errorf("cc1's command %q", c)
	}

	// er print's experiment_list: each image's pid, ppid, lineage, events and program.
	eng, err := erprint.NewEngine([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Exec("experiment_list")
	if err != nil || len(res.Tables) != 1 {
		t.Fatalf("experiment_list: %v", err)
	}
	el := res.Tables[0]
	col := map[string]int{}
	for j, c := range el.Columns {
		col[c.Key] = j
	}
	if len(el.Rows) != 6 {
		t.Fatalf("experiment_list has %d rows", len(el.Rows))
	}
	byExp := map[int]*process{}
	for i := range pt.Processes {
		for _, im := range pt.Processes[i].Images {
			byExp[im.Exp] = &pt.Processes[i]
		}
	}
	evs := map[*process]int64{}
	for k, r := range el.Rows {
		p := byExp[k+1]
		cell := func(key string) string { return strings.TrimSpace(r.Cells[col[key]].Text) }
		if cell("pid") != strconv.Itoa(int(p.Pid)) || r.Name != p.Images[slicesIndex(p.Images, k+1)].Name {
			t.Errorf("experiment %d (%s, pid %s) is in process %s [%d]", k+1, r.Name, cell("pid"), p.Program, p.Pid)
		}
		if im := p.Images[slicesIndex(p.Images, k+1)]; cell("lineage") != orFounder(im.Lineage) || cell("target") != im.Program {
			t.Errorf("experiment %d: lineage %s, target %s; the tree says %s, %s", k+1, cell("lineage"), cell("target"), orFounder(im.Lineage), im.Program)
		}
		if k+1 == p.Images[len(p.Images)-1].Exp && cell("lineage") != orFounder(p.Lineage) {
			t.Errorf("process %s [%d]: lineage %q, its last image's %s", p.Program, p.Pid, p.Lineage, cell("lineage"))
		}
		if want := map[bool]string{true: "-", false: strconv.Itoa(int(p.Ppid))}[p.Ppid == 0]; cell("ppid") != want {
			t.Errorf("experiment %d: ppid %s, the tree's %s", k+1, cell("ppid"), want)
		}
		evs[p] += r.Cells[col["events"]].Value
	}
	for i := range pt.Processes {
		if p := &pt.Processes[i]; evs[p] != p.Events {
			t.Errorf("process %s [%d]: %d events, experiment_list %d", p.Program, p.Pid, p.Events, evs[p])
		}
	}

	// er print's statistics: each experiment's Process Times, added up by process (to the ms it
	// prints).
	res, err = eng.Exec("statistics")
	if err != nil {
		t.Fatal(err)
	}
	user, allUser := statTimes(t, res.Text, "User CPU")
	sys, allSys := statTimes(t, res.Text, "System CPU")
	if len(user) != 6 || len(sys) != 6 {
		t.Fatalf("statistics: %d and %d experiments' times", len(user), len(sys))
	}
	sumUser, sumSys := map[int]int64{}, map[int]int64{}
	for k := range 6 {
		p := byExp[k+1]
		sumUser[p.ID] += user[k]
		sumSys[p.ID] += sys[k]
	}
	for _, p := range pt.Processes {
		if sumUser[p.ID] != p.User || sumSys[p.ID] != p.System {
			t.Errorf("process %s [%d]: user %d, system %d; statistics %d, %d", p.Program, p.Pid, p.User, p.System, sumUser[p.ID], sumSys[p.ID])
		}
	}
	// The founder's times with its descendants are those of all the experiments.
	if p := pt.Processes[0]; allUser != p.UserIncl || allSys != p.SystemIncl {
		t.Errorf("founder with descendants: user %d, system %d; statistics of all: %d, %d", p.UserIncl, p.SystemIncl, allUser, allSys)
	}

	// Each process's CPU is the function list's total when the page selects it (alone, or with its
	// descendants), as er print -filters computes it.
	for _, p := range pt.Processes {
		for _, c := range []struct {
			expr string
			cpu  int64
		}{{p.Select, p.CPU}, {p.SelectTree, p.CPUIncl}} {
			rows := printRows(t, "-filters", c.expr, "-functions", exp)
			if rows[0].v["e.totalcpu"] != c.cpu {
				t.Errorf("process %s [%d]: CPU %d, er print -filters %q: %d", p.Program, p.Pid, c.cpu, c.expr, rows[0].v["e.totalcpu"])
			}
			body, _ := json.Marshal(map[string]string{"expr": c.expr})
			post(t, ts, "/api/filter", string(body), 200, nil)
			var tbl table
			get(t, ts, "/api/functions", 200, &tbl)
			if tbl.Rows[0].Cells[0].V != c.cpu {
				t.Errorf("process %s [%d] selected by %q: the function list's total is %d, want %d", p.Program, p.Pid, c.expr, tbl.Rows[0].Cells[0].V, c.cpu)
			}
		}
	}
	post(t, ts, "/api/filter", `{}`, 200, nil)
	// The tree does not follow the filter: it is of the whole run.
	post(t, ts, "/api/filter", `{"expr":"PID == 300"}`, 200, nil)
	var again struct {
		Processes []process `json:"processes"`
	}
	get(t, ts, "/api/processes", 200, &again)
	if again.Processes[1].CPU != 5*period {
		t.Errorf("under a filter, cc's CPU is %d", again.Processes[1].CPU)
	}
	get(t, ts, "/api/processes?x=1", 400, nil)
}

func slicesIndex(ims []image, exp int) int {
	for i, im := range ims {
		if im.Exp == exp {
			return i
		}
	}
	return -1
}

func orFounder(l string) string {
	if l == "" {
		return "(founder)"
	}
	return l
}

// statTimes reads the Process Times line name (User CPU, System CPU) of each experiment in
// statistics' text, in ns, and that of all of them.
func statTimes(t *testing.T, text, name string) (each []int64, all int64) {
	t.Helper()
	line := regexp.MustCompile(`^\s+` + name + `: ([0-9.]+)$`)
	inAll := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "Experiment: "):
			inAll = false
		case strings.HasPrefix(l, "All "):
			inAll = true
		}
		if m := line.FindStringSubmatch(l); m != nil {
			if inAll {
				all = secondsNS(t, m[1])
			} else {
				each = append(each, secondsNS(t, m[1]))
			}
		}
	}
	return each, all
}

func secondsNS(t *testing.T, s string) int64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(f*1000+0.5) * 1_000_000
}

// TestProcessTreeViews checks what the rest of the Analyzer says of a process tree: the overview
// names the founder and counts the processes, the Processes tab follows the Overview, every
// timeline row names its program, pid and thread, and the static report holds the tree.
func TestProcessTreeViews(t *testing.T) {
	exp := writeTreeExperiment(t, t.TempDir())
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	t.Cleanup(ts.Close)
	var o struct {
		Founders    []int    `json:"founders"`
		Processes   int      `json:"processes"`
		Views       []string `json:"views"`
		Experiments []struct{ Name string }
	}
	get(t, ts, "/api/overview", 200, &o)
	if fmt.Sprint(o.Founders) != "[0]" || o.Processes != 4 || len(o.Experiments) != 6 || o.Experiments[0].Name != "tree.1.er" {
		t.Errorf("overview: founders %v, %d processes, %d experiments", o.Founders, o.Processes, len(o.Experiments))
	}
	if len(o.Views) < 2 || o.Views[0] != "overview" || o.Views[1] != "processes" {
		t.Errorf("views %v: want Processes after Overview", o.Views)
	}
	var tl struct {
		Rows []struct {
			Label   string `json:"label"`
			Program string `json:"program"`
			Pid     uint32 `json:"pid"`
			Tid     uint32 `json:"tid"`
			Exp     int    `json:"exp"`
		} `json:"rows"`
	}
	get(t, ts, "/api/timeline?w=10", 200, &tl)
	var labels []string
	for _, r := range tl.Rows {
		labels = append(labels, r.Label)
	}
	if got, want := strings.Join(labels, ", "), "sh [300] T:1, cc [301] T:1, cc1 [302] T:1, cc1 [302] T:2, sh [302] T:1"; got != want {
		t.Errorf("timeline rows: %s\nwant %s", got, want)
	}
	var ev struct {
		Row string `json:"row"`
	}
	get(t, ts, "/api/event?row=3&t=330000000&tol=5000000", 200, &ev)
	if ev.Row != "cc1 [302] T:2" {
		t.Errorf("the event of row 3 is of %q", ev.Row)
	}

	// One experiment alone: no Processes tab, one founder, rows named by the program.
	_, ts1, _ := testServer(t)
	get(t, ts1, "/api/overview", 200, &o)
	if fmt.Sprint(o.Founders) != "[0]" || o.Processes != 1 || strings.Contains(strings.Join(o.Views, ","), "processes") {
		t.Errorf("one experiment: founders %v, %d processes, views %v", o.Founders, o.Processes, o.Views)
	}
	get(t, ts1, "/api/timeline?w=10", 200, &tl)
	if len(tl.Rows) != 2 || tl.Rows[0].Label != "prog [100] T:1" || tl.Rows[1].Label != "prog [100] T:2" {
		t.Errorf("one experiment's rows: %+v", tl.Rows)
	}

	// Two experiments of one program with the same pid: two founders, rows that say their experiment.
	dir := t.TempDir()
	b := filepath.Join(dir, "web.2.er")
	if err := os.Rename(writeTestExperiment(t, t.TempDir()), b); err != nil {
		t.Fatal(err)
	}
	s2, err := Open([]string{writeTestExperiment(t, dir), b})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(tokened(s2))
	t.Cleanup(ts2.Close)
	get(t, ts2, "/api/overview", 200, &o)
	if fmt.Sprint(o.Founders) != "[0 1]" || o.Processes != 2 || strings.Contains(strings.Join(o.Views, ","), "processes") {
		t.Errorf("two experiments: founders %v, %d processes, views %v", o.Founders, o.Processes, o.Views)
	}
	get(t, ts2, "/api/timeline?w=10", 200, &tl)
	labels = labels[:0]
	for _, r := range tl.Rows {
		labels = append(labels, r.Label)
	}
	if got, want := strings.Join(labels, ", "), "prog [100] T:1 (exp 1), prog [100] T:2 (exp 1), prog [100] T:1 (exp 2), prog [100] T:2 (exp 2)"; got != want {
		t.Errorf("two experiments' rows: %s\nwant %s", got, want)
	}

	// The static report holds the tree.
	report := filepath.Join(t.TempDir(), "report")
	if _, err := s.WriteStatic(report); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(report, "data.js"))
	if err != nil {
		t.Fatal(err)
	}
	js = js[strings.Index(string(js), "window.ER_STATIC = ")+len("window.ER_STATIC = "):]
	js = []byte(strings.TrimSuffix(string(js), ";\n"))
	var data map[string]json.RawMessage
	if err := json.Unmarshal(js, &data); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Processes []process `json:"processes"`
	}
	if err := json.Unmarshal(data["/api/processes"], &st); err != nil || len(st.Processes) != 4 || st.Processes[2].Program != "cc1" {
		t.Errorf("the static report's processes: %v, %s", err, data["/api/processes"])
	}
}

// TestProcessTreeGaps: a process whose parent's experiments are not there (er collect -F left
// them out) hangs under its nearest ancestor that is; a lineage that er collect does not write
// (M_r1) makes a root, and no loop.
func TestProcessTreeGaps(t *testing.T) {
	exp := writeTreeExperiment(t, t.TempDir())
	for _, sub := range []string{"_f1.er", "_f1_x1.er"} {
		if err := os.RemoveAll(filepath.Join(exp, sub)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := experiment.Create(filepath.Join(exp, "M_r1.er"), experiment.Log{Command: []string{"/usr/bin/rank"}, Pid: 400, Ppid: 300,
		Lineage: "M_r1", StartTime: 1_700_000_000_000_000_000, EndTime: 100_000_000, Exited: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.procTree().Processes {
		got = append(got, fmt.Sprintf("%d:%s[%d]<%d", p.Depth, p.Program, p.Pid, p.Parent))
	}
	if want := "0:sh[300]<-1 1:cc1[302]<0 1:sh[302]<0 0:rank[400]<-1"; strings.Join(got, " ") != want {
		t.Errorf("tree %s, want %s", strings.Join(got, " "), want)
	}
	for l, want := range map[string]string{"": "", "_x1": "", "_f1_x1_x2": "_f1", "_f1_x1_f3_x1": "_f1_x1_f3", "M_r1": "M_r1"} {
		if got := processKey(l); got != want {
			t.Errorf("processKey(%q) = %q, want %q", l, got, want)
		}
	}
}
