package erprint

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/export"
)

// exportOpts says what an export needs beyond the function stacks.
type exportOpts struct {
	instrs   bool // a location per instruction with its inlined functions and lines (unless objects are hidden)
	threads  bool // a stack per thread, labelled with its pid, tid and number
	timeline bool // the threads' timelines
}

// exportProfile builds the export of the current profile (its filter and view as er print shows them):
// every metric, every distinct stack with its values, functions named as the views name them; with
// o, the instructions, the threads and the timelines. Where object_hide or object_api change the
// stacks, the stacks stay function stacks: an instruction has no place in a hidden object's function.
func (s *session) exportProfile(o exportOpts) (*analysis.Profile, *export.Profile, error) {
	p, err := s.profile()
	if err != nil {
		return nil, nil, err
	}
	var is *analysis.InstrStacks
	if o.instrs || o.threads {
		is = p.InstrStacks() // first: it may find inlined functions
	}
	instrs := o.instrs && s.objVis.visibilityFunc() == nil && !analysis.HasPasses(s.analysisMode(), s.exps)
	out := &export.Profile{Main: -1}
	for _, m := range p.Metrics {
		unit := "count"
		switch {
		case m.Time:
			unit = "nanoseconds"
		case strings.Contains(m.Name, "bytes"):
			unit = "bytes"
		}
		out.Metrics = append(out.Metrics, export.Metric{Name: m.Name, Unit: unit})
	}
	builds := map[string]string{}
	for _, d := range s.exps {
		for path, a := range d.Archives {
			if a != nil && a.BuildID != "" {
				builds[path] = a.BuildID
			}
		}
		if out.StartNS == 0 || d.Log.StartTime < out.StartNS {
			out.StartNS = d.Log.StartTime
		}
		out.DurationNS = max(out.DurationNS, d.Log.RecordedDuration())
		out.Comments = append(out.Comments, "er experiment "+d.Dir+": "+strings.Join(d.Log.Command, " "))
	}
	for i, ob := range p.Objects {
		out.Objects = append(out.Objects, export.Object{Path: ob.Path, BuildID: builds[ob.Path]})
		if len(s.exps) > 0 && len(s.exps[0].Log.Command) > 0 && out.Main < 0 && strings.HasSuffix(ob.Path, "/"+strings.TrimPrefix(s.exps[0].Log.Command[0], "./")) {
			out.Main = i
		}
	}
	index := make([]int, len(p.Functions))
	for i := range index {
		index[i] = -1
	}
	fnIndex := func(f int) int {
		if index[f] < 0 {
			index[f] = len(out.Functions)
			fn := &p.Functions[f]
			out.Functions = append(out.Functions, export.Function{Name: s.funcName(p, f), SystemName: fn.Name,
				Object: fn.Object, Addr: fn.Addr})
		}
		return index[f]
	}
	// The stacks are made one at a time as the writers ask for them, in buffers of their own; the
	// first pass, here, numbers the functions in the order of their first use.
	var fbuf, lbuf []int
	funcsOf := func(st int) []int {
		funcs, _ := p.Stack(st)
		fbuf = fbuf[:0]
		for _, f := range funcs {
			fbuf = append(fbuf, fnIndex(int(f)))
		}
		return fbuf
	}
	locsOf := func(raw int) []int {
		if !instrs {
			return nil
		}
		lbuf = lbuf[:0]
		for _, l := range is.Stacks[raw].Locs {
			lbuf = append(lbuf, int(l))
		}
		return lbuf
	}
	if instrs {
		for _, l := range is.Locs {
			el := export.Location{Object: l.Object, Addr: l.Addr}
			for _, ln := range l.Lines {
				f := fnIndex(ln.Func)
				if out.Functions[f].File == "" {
					out.Functions[f].File = ln.File
				}
				el.Lines = append(el.Lines, export.Line{Func: f, Line: ln.Line})
			}
			out.Locations = append(out.Locations, el)
		}
	}
	switch {
	case o.threads:
		tv, err := p.ByThread()
		if err != nil {
			return nil, nil, err
		}
		var labels []export.Label
		out.Stacks = func(yield func(export.Stack) bool) {
			for _, v := range tv {
				labels = append(labels[:0], export.Label{Key: "pid", Value: int64(v.Pid)}, export.Label{Key: "tid", Value: int64(v.Tid)},
					export.Label{Key: "thread", Value: int64(v.Thread)})
				if len(s.exps) > 1 {
					labels = append(labels, export.Label{Key: "experiment", Value: int64(v.Exp + 1)})
				}
				if !yield(export.Stack{Funcs: funcsOf(is.Stacks[v.Raw].Stack), Locs: locsOf(v.Raw), Values: v.Values, Labels: labels}) {
					return
				}
			}
		}
	case instrs:
		out.Stacks = func(yield func(export.Stack) bool) {
			for r, rs := range is.Stacks {
				if !yield(export.Stack{Funcs: funcsOf(rs.Stack), Locs: locsOf(r), Values: rs.Values}) {
					return
				}
			}
		}
	default:
		out.Stacks = func(yield func(export.Stack) bool) {
			for st := 0; st < p.NumStacks(); st++ {
				_, vals := p.Stack(st)
				if !yield(export.Stack{Funcs: funcsOf(st), Values: vals}) {
					return
				}
			}
		}
	}
	for range out.Stacks {
	}
	if o.timeline {
		if out.Timelines, err = s.timelines(p, out.StartNS, fnIndex); err != nil {
			return nil, nil, err
		}
	}
	return p, out, nil
}

// timelines returns each thread's timed events of each kind of data (those that last: clock
// samples, for the CPU time or the off-CPU interval before them, and traced calls) as spans of
// their stacks, ns since start; fnIndex gives a function's index in the export, and is called
// here for every function of their stacks, in the order of the events. The spans are made as the
// writers ask for them, from the refiltered profile's event list and an index of it by thread,
// kind and start time (4 bytes an event).
func (s *session) timelines(p *analysis.Profile, start int64, fnIndex func(int) int) ([]export.Timeline, error) {
	q, err := p.Refilter(s.eventFilter(), true)
	if err != nil {
		return nil, err
	}
	type key struct {
		exp      int32
		pid, tid uint32
		kind     analysis.DataKind
	}
	type timeline struct {
		exp, thread int
		kind        analysis.DataKind
		n, at       int // its events, and where they are in order
		tl          export.Timeline
	}
	var tls []timeline
	index := map[key]int{}
	seen := make([]bool, q.NumStacks())
	ev := q.EventList
	for i := range ev {
		e := &ev[i]
		if e.Dur <= 0 {
			continue
		}
		k := key{e.Exp, e.Pid, e.Tid, e.Kind}
		t, ok := index[k]
		if !ok {
			t = len(tls)
			index[k] = t
			x := s.expIndex(int(e.Exp))
			tl := timeline{exp: int(e.Exp), thread: x.ThreadNumber(e.Pid, e.Tid), kind: e.Kind}
			name := fmt.Sprintf("thread %d (pid %d, tid %d)", tl.thread, e.Pid, e.Tid)
			if len(s.exps) > 1 {
				name = fmt.Sprintf("experiment %d, %s", tl.exp+1, name)
			}
			if e.Kind != analysis.DataClock {
				name += ", " + analysis.Kinds[e.Kind].Noun
			}
			proc := fmt.Sprintf("pid %d", e.Pid)
			if d := x.Data(); len(d.Log.Command) > 0 {
				proc = fmt.Sprintf("%s (pid %d)", filepath.Base(d.Log.Command[0]), e.Pid)
			}
			tl.tl = export.Timeline{Name: name, Process: proc, Pid: e.Pid, Tid: e.Tid}
			tls = append(tls, tl)
		}
		tls[t].n++
		if !seen[e.Stack] {
			seen[e.Stack] = true
			fr, _ := q.Stack(int(e.Stack))
			for _, f := range fr {
				fnIndex(int(f))
			}
		}
	}
	// The events of each timeline together, in the event list's order, then by start.
	at := 0
	for i := range tls {
		tls[i].at = at
		at += tls[i].n
	}
	order := make([]int32, at)
	next := make([]int, len(tls))
	for i := range ev {
		if e := &ev[i]; e.Dur > 0 {
			t := index[key{e.Exp, e.Pid, e.Tid, e.Kind}]
			order[tls[t].at+next[t]] = int32(i)
			next[t]++
		}
	}
	var fbuf []int
	for i := range tls {
		tl := &tls[i]
		mine := order[tl.at : tl.at+tl.n]
		byStart := func(a, b int32) int { return cmp.Compare(ev[a].Time-ev[a].Dur, ev[b].Time-ev[b].Dur) }
		if !slices.IsSortedFunc(mine, byStart) {
			slices.SortStableFunc(mine, byStart)
		}
		offset := s.exps[tl.exp].Log.StartTime - start
		tl.tl.Spans = func(yield func(export.Span) bool) {
			for _, k := range mine {
				e := &ev[k]
				fr, _ := q.Stack(int(e.Stack))
				fbuf = fbuf[:0]
				for _, f := range fr {
					fbuf = append(fbuf, fnIndex(int(f)))
				}
				end := offset + e.Time
				if !yield(export.Span{Start: end - e.Dur, End: end, Funcs: fbuf}) {
					return
				}
			}
		}
	}
	slices.SortFunc(tls, func(a, b timeline) int {
		return cmp.Or(cmp.Compare(a.exp, b.exp), cmp.Compare(a.thread, b.thread), cmp.Compare(a.kind, b.kind))
	})
	out := make([]export.Timeline, len(tls))
	for i := range tls {
		out[i] = tls[i].tl
	}
	return out, nil
}

// exportPprof writes the profile as pprof's profile.proto.
func (s *session) exportPprof(args []string) error {
	_, ep, err := s.exportProfile(exportOpts{instrs: true, threads: true})
	if err != nil {
		return err
	}
	return writeExport(args[0], func(f *os.File) error { return export.Pprof(ep, f) })
}

// exportFolded writes one metric of the profile as FlameGraph's folded stacks: the metric named, else
// the sort metric, else the first.
func (s *session) exportFolded(args []string) error {
	p, ep, err := s.exportProfile(exportOpts{})
	if err != nil {
		return err
	}
	m := 0
	if s.sortItem.kind == itemMetric && s.sortItem.derived == nil {
		m = s.sortItem.metric
	}
	if len(args) > 1 {
		if m = analysis.MetricIndex(p.Metrics, args[1]); m < 0 {
			return usagef("export_folded: unknown metric %q; available: %s", args[1], metricNames(p.Metrics))
		}
	}
	return writeExport(args[0], func(f *os.File) error { return export.Folded(ep, m, f) })
}

// exportSpeedscope writes the profile as speedscope's JSON: a sampled profile per metric, and an
// evented profile per thread and kind of data.
func (s *session) exportSpeedscope(args []string) error {
	_, ep, err := s.exportProfile(exportOpts{timeline: true})
	if err != nil {
		return err
	}
	name := "er"
	if len(s.exps) > 0 {
		name = filepath.Base(s.exps[0].Dir)
	}
	return writeExport(args[0], func(f *os.File) error { return export.Speedscope(ep, name, f) })
}

// exportChrome writes the threads' timelines as Chrome's Trace Event Format.
func (s *session) exportChrome(args []string) error {
	_, ep, err := s.exportProfile(exportOpts{timeline: true})
	if err != nil {
		return err
	}
	return writeExport(args[0], func(f *os.File) error { return export.Chrome(ep, f) })
}

// writeExport writes a file with write, saying which file where it fails.
func writeExport(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// ExportMain is `er export`: [-format pprof|folded|speedscope|chrome] [-metric NAME] -o FILE
// experiment...; the format from the file's name where not given (.folded, .txt: folded; .trace.json,
// .trace: chrome; .json: speedscope; else pprof).
func ExportMain(args []string, stdout, stderr io.Writer) int {
	format, metric, out := "", "", ""
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--help" || a == "-help" || a == "-h" {
			fmt.Fprint(stdout, exportUsage)
			return 0
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		if i+1 >= len(args) {
			fmt.Fprintf(stderr, "er export: option %s needs a value\n", a)
			return 2
		}
		switch a {
		case "-format":
			format = args[i+1]
		case "-metric":
			metric = args[i+1]
		case "-o":
			out = args[i+1]
		default:
			fmt.Fprintf(stderr, "er export: unknown option %q (run `er export --help`)\n", a)
			return 2
		}
		i++
	}
	exps := args[i:]
	if out == "" || len(exps) == 0 {
		fmt.Fprint(stderr, exportUsage)
		return 2
	}
	if format == "" {
		switch {
		case strings.HasSuffix(out, ".folded"), strings.HasSuffix(out, ".txt"):
			format = "folded"
		case strings.HasSuffix(out, ".trace.json"), strings.HasSuffix(out, ".trace"):
			format = "chrome"
		case strings.HasSuffix(out, ".json"):
			format = "speedscope"
		default:
			format = "pprof"
		}
	}
	var cmd []string
	switch format {
	case "pprof":
		if metric != "" {
			fmt.Fprintln(stderr, "er export: -metric is for -format folded (a pprof profile holds every metric)")
			return 2
		}
		cmd = []string{"-export_pprof", out}
	case "folded":
		cmd = []string{"-export_folded", out}
		if metric != "" {
			cmd = append(cmd, metric)
		}
	case "speedscope":
		if metric != "" {
			fmt.Fprintln(stderr, "er export: -metric is for -format folded (a speedscope file holds a profile per metric)")
			return 2
		}
		cmd = []string{"-export_speedscope", out}
	case "chrome":
		if metric != "" {
			fmt.Fprintln(stderr, "er export: -metric is for -format folded (a Chrome trace holds the threads' time lines)")
			return 2
		}
		cmd = []string{"-export_chrome", out}
	default:
		fmt.Fprintf(stderr, "er export: -format %q: pprof, folded, speedscope or chrome\n", format)
		return 2
	}
	return run(append(cmd, exps...), strings.NewReader(""), stdout, stderr, defaultEnv())
}

const exportUsage = `Usage: er export [-format pprof|folded|speedscope|chrome] [-metric NAME] -o FILE experiment...

Writes the experiments' profile for other tools:
  pprof       pprof's profile.proto (go tool pprof, and the services that read pprof): every metric a
              sample type; a location per instruction with its source line and the functions inlined
              there (innermost first); a sample per call stack and thread, labelled pid, tid and
              thread (the thread's number in er print; and experiment, with more than one); a mapping
              per load object with its build id. Where object_hide or object_api (in .er.rc) change the
              stacks, a location per function instead.
  folded      FlameGraph's folded stacks of one metric (flamegraph.pl; the metric named, else the first).
  speedscope  speedscope's JSON: a sampled profile per metric, and an evented profile per thread and
              kind of data (its clock samples and traced calls in time order: the thread's time line).
  chrome      the Trace Event Format of Chrome's trace viewer, which Perfetto, chrome://tracing and
              the Firefox Profiler import: the same time lines, a complete event per stretch of time a
              function was on a thread's stack, with process and thread names.
The format is the file's: .folded or .txt is folded, .trace.json or .trace chrome, .json speedscope,
else pprof. er print's export_pprof, export_folded, export_speedscope and export_chrome do the same
with its filters and settings.
`
