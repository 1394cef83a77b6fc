package erprint

import (
	"er/internal/sat"
	"fmt"
	"golang.org/x/sys/unix"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"er/internal/analysis"
	"er/internal/experiment"
	"er/internal/report"
)

// selectExps returns the experiments an optional 1-based exp_id argument selects: all without one.
func (s *session) selectExps(cmd string, args []string) ([]int, error) {
	if len(args) == 0 {
		all := make([]int, len(s.exps))
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 || n > len(s.exps) {
		return nil, usagef("%s: experiment id %q is not between 1 and %d", cmd, args[0], len(s.exps))
	}
	return []int{n - 1}, nil
}

// seconds formats nanoseconds as seconds with 9 decimals.
func seconds(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return fmt.Sprintf("%s%d.%09d", sign, ns/1e9, ns%1e9)
}

// secondsMS formats nanoseconds as seconds with 3 decimals.
func secondsMS(ns int64) string {
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64)
}

func quoteCommand(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + a + "'"
	}
	return strings.Join(q, " ")
}

func settingNS(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// describeSetting writes a collection setting as er_print's header shows it.
// describeCounter is the header's line of a counter profiled: "HW counter profiling: cycles ('CPU
// Cycles'), interval 9999991 CPU-cycles, shown as time at 2596 MHz".
func describeCounter(c experiment.Counter, hz int64) string {
	kind := "HW counter" // hardware, cache or raw events, or a PMU's own type
	switch c.Type {
	case unix.PERF_TYPE_SOFTWARE, unix.PERF_TYPE_TRACEPOINT, unix.PERF_TYPE_BREAKPOINT:
		kind = "Counter"
	}
	text := fmt.Sprintf("%s profiling: %s ('%s'), interval %d %s", kind, c.Name, c.Title, c.Interval, c.Unit)
	if c.MemOp != "" {
		text += ", " + c.MemOp + " events"
	}
	if c.Unit == "CPU-cycles" && hz > 0 {
		text += fmt.Sprintf(", shown as time at %d MHz", hz/1_000_000)
	}
	if c.Backtrack {
		text += ", data addresses recorded"
	}
	return text + "."
}

func describeSetting(set experiment.Setting) string {
	ns, isNum := settingNS(set.Value)
	switch set.Name {
	case experiment.SettingClockProfiling:
		if set.Value == "off" {
			return "Clock-profiling off."
		}
		return ""
	case experiment.SettingClockInterval:
		if isNum {
			return fmt.Sprintf("Clock-profiling, interval = %d microsecs.", ns/1000)
		}
	case "sample_period_ns":
		if isNum && ns == 0 {
			return "Periodic sampling off."
		}
		if isNum {
			return fmt.Sprintf("Periodic sampling, %s secs.", strconv.FormatFloat(float64(ns)/1e9, 'f', -1, 64))
		}
	case "duration_limit_ns":
		if isNum && ns == 0 {
			return ""
		}
		if isNum {
			return fmt.Sprintf("Data collection duration limit, %s secs.", strconv.FormatFloat(float64(ns)/1e9, 'f', -1, 64))
		}
	case experiment.SettingCounters:
		return "" // (the counters' own lines say it)
	case experiment.SettingMicrostates:
		if set.Value == "on" {
			return "Microstates: Wait CPU, User Lock, Text and Data Page Fault, Other Wait, Total Thread Time and Wall Time, from the context switches."
		}
		return ""
	case experiment.SettingOffCPUStacks:
		switch set.Value {
		case "switches":
			return "Off-CPU stacks: sampled as threads leave a CPU (and read from outside for waits the sampler skipped)."
		case "last-run":
			return "Off-CPU stacks: where each thread last ran, and read from outside for waits of 1 ms or more (kernel samples, which the stacks at context switches need, are not permitted)."
		}
	case experiment.SettingHeapTracing, experiment.SettingIOTracing:
		switch set.Value {
		case "off":
			return ""
		case "on":
			return map[experiment.SettingKey]string{experiment.SettingHeapTracing: "Heap tracing.", experiment.SettingIOTracing: "IO tracing."}[set.Name]
		}
	case experiment.SettingSyncTracing:
		// "on (calibrated threshold)", "all" (threshold 0), or a threshold in microseconds.
		v := set.Value
		switch {
		case v == "off":
			return ""
		case v == "on":
			return "Synchronization tracing."
		case v == "all":
			v = "0"
		case strings.HasPrefix(v, "on ("):
			return "Synchronization tracing, " + strings.TrimSuffix(strings.TrimPrefix(v, "on ("), ")") + "."
		}
		return fmt.Sprintf("Synchronization tracing, threshold = %s microsecs.", strings.TrimSuffix(strings.TrimSuffix(v, "us"), "u"))
	case "sync_threshold_ns", "collector.sync_threshold_ns":
		if isNum {
			return fmt.Sprintf("Synchronization wait threshold = %s microsecs.", strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64))
		}
	case "size_limit_mb":
		if set.Value == "0" {
			return ""
		}
		return fmt.Sprintf("Experiment size limit, %s MB.", set.Value)
	}
	return fmt.Sprintf("%s = %s", set.Name, set.Value)
}

func (s *session) header(args []string) error {
	ids, err := s.selectExps("header", args)
	if err != nil {
		return err
	}
	for _, i := range ids {
		s.headerOf(i)
		s.printf("\n")
	}
	return nil
}

func (s *session) headerOf(i int) {
	d := s.exps[i]
	l := &d.Log
	s.printf("Experiment: %s\n", s.dirs[i])
	if d.Notes != "" { // the notes file (collect -C) is prepended to the header, as the manual says
		s.printf("Notes:\n")
		for _, line := range strings.Split(strings.TrimRight(d.Notes, "\n"), "\n") {
			s.printf("  %s\n", line)
		}
	}
	var errs, warns, comments, other []experiment.Event
	for _, e := range l.Events {
		switch e.Kind {
		case "error":
			errs = append(errs, e)
		case "warning":
			warns = append(warns, e)
		case "comment":
			comments = append(comments, e)
		case "start", "exit", "sample": // sample points are listed by sample_list and overview
		default:
			other = append(other, e)
		}
	}
	event := func(e experiment.Event) string {
		return fmt.Sprintf("  %s s%s: %s", secondsMS(e.Time), pidOf(e), e.Text)
	}
	if len(errs) == 0 {
		s.printf("No errors\n")
	} else {
		s.printf("Errors:\n")
		for _, e := range errs {
			s.printf("%s\n", event(e))
		}
	}
	if len(warns) == 0 && len(d.Warnings) == 0 {
		s.printf("No warnings\n")
	} else {
		s.printf("Warnings:\n")
		for _, e := range warns {
			s.printf("%s\n", event(e))
		}
		for _, w := range d.Warnings {
			s.printf("  reading the experiment: %s\n", w)
		}
	}
	s.printf("\n")
	bits := l.WordSize
	if bits == 0 {
		bits = 64
	}
	s.printf("Target command (%d-bit): %s\n", bits, quoteCommand(l.Command))
	s.printf("Process pid %d\n", l.Pid)
	if l.Cwd != "" {
		s.printf("Current working directory: %s\n", l.Cwd)
	}
	s.printf("Collector version: `%s'; experiment version %s (%d-bit)\n", l.CollectorVersion, l.FormatVersion, bits)
	s.printf("Host `%s', OS `%s', page size %d, architecture `%s'\n", l.Host, l.OS, l.PageSize, l.Arch)
	s.printf("  %d CPUs, clock speed %d MHz.\n", l.CPUs, l.ClockHz/1000000)
	if l.PageSize > 0 && l.MemoryBytes > 0 {
		s.printf("  Memory: %d pages @ %d = %d MB.\n", l.MemoryBytes/int64(l.PageSize), l.PageSize, l.MemoryBytes>>20)
	}
	s.printf("Data collection parameters:\n")
	for _, set := range l.Settings {
		if d := describeSetting(set); d != "" {
			s.printf("  %s\n", d)
		}
	}
	for _, c := range l.Counters {
		s.printf("  %s\n", describeCounter(c, l.ClockHz))
	}
	if l.KernelStacks {
		s.printf("  Kernel call stacks recorded.\n")
	}
	if len(comments) > 0 {
		s.printf("Comments:\n")
		for _, c := range comments {
			s.printf("  %s\n", c.Text)
		}
	}
	s.printf("\nExperiment started %s\n\n", time.Unix(0, l.StartTime).In(s.env.loc).Format("Mon Jan _2 15:04:05 2006"))
	if len(other) > 0 {
		s.printf("Events:\n")
		for _, e := range other {
			s.printf("  %s s%s: %s: %s\n", secondsMS(e.Time), pidOf(e), e.Kind, e.Text)
		}
		s.printf("\n")
	}
	if l.EndTime > 0 {
		s.printf("Experiment Ended: %s\n", seconds(l.EndTime))
		s.printf("Data Collection Duration: %s\n", seconds(l.RecordedDuration()))
	} else {
		s.printf("Experiment did not end: it is still being written, or its collector was killed\n")
	}
	s.printf("Target %s\n", l.ExitText())
	if n, truncated, failed := analysis.ClockStacks(d); n > 0 {
		s.printf("Call stacks: %d complete, %d truncated, %d failed unwinds (of %d events)\n",
			n-truncated-failed, truncated, failed, n)
	}
	if t := tracingSummary(d); t != "" {
		s.printf("Tracing data: %s\n", t)
	}
}

// tracingSummary counts the tracing events of an experiment: "31 heap events, 12 synchronization
// wait events"; "" when it has none.
func tracingSummary(d *experiment.Data) string {
	var parts []string
	for _, k := range analysis.Kinds {
		if n := k.Events(d); n > 0 && !k.Sampled {
			parts = append(parts, fmt.Sprintf("%d %s events", n, k.Noun))
		}
	}
	return strings.Join(parts, ", ")
}

// pidOf names the process of an event, or nothing for an event of the whole collection (pid 0).
func pidOf(e experiment.Event) string {
	if e.Pid == 0 {
		return ""
	}
	return fmt.Sprintf(", pid %d", e.Pid)
}

// duration is the experiment's length: how long it recorded (to its end, or until -t or -L stopped
// recording), or the last event's time while unfinished.
func duration(d *experiment.Data) int64 {
	if d.Log.EndTime > 0 {
		return d.Log.RecordedDuration()
	}
	return d.LastTime()
}

// stats are the totals of one experiment, or of all.
type stats struct {
	duration           int64
	threads, processes int
	lost               int
	warnings, errors   int
	procUser, procSys  int64
	minflt, majflt     int64
	volcs, involcs     int64
	maxRSS             int64
	rssKnown, rssNone  bool // points with an RSS, and points without (gprofng's)
	procSet            map[uint32]bool
	threadSet          map[[2]uint32]bool
}

// isLost says whether a log event reports lost data.
func isLost(e experiment.Event) bool {
	return e.Kind == "lost" || strings.Contains(strings.ToLower(e.Text), "lost")
}

// statsOf returns the statistics of experiment d that are not of one kind of data.
func statsOf(d *experiment.Data) stats {
	var st stats
	st.duration = duration(d)
	threads := map[[2]uint32]bool{}
	procs := map[uint32]bool{}
	var ev analysis.EventInfo
	for _, k := range analysis.Kinds {
		b := k.Bind(d)
		for i, n := 0, k.Len(d); i < n; i++ {
			if k.Threaded == nil || k.Threaded(d, i) {
				b.Info(i, &ev)
				threads[[2]uint32{ev.Pid, ev.Tid}] = true
				procs[ev.Pid] = true
			}
		}
	}
	for _, e := range d.Log.Events {
		switch {
		case isLost(e):
			st.lost++
		}
		switch e.Kind {
		case "warning":
			st.warnings++
		case "error":
			st.errors++
		}
	}
	// Each process's usage is what it used between its first and last sample points in the
	// experiment: each experiment holds one process image, and a process that exec'd has an image
	// before the exec, whose last point is the exec, and one after it, whose first point is the
	// exec, so the images of a process add up to its usage, counted once (issue 12).
	first, last := map[uint32]experiment.OverviewSample{}, map[uint32]experiment.OverviewSample{}
	for _, o := range d.Overview {
		procs[o.Pid] = true
		if prev, ok := first[o.Pid]; !ok || o.Time < prev.Time {
			first[o.Pid] = o
		}
		if prev, ok := last[o.Pid]; !ok || o.Time >= prev.Time {
			last[o.Pid] = o
		}
		st.maxRSS = max(st.maxRSS, o.RSSBytes)
		st.rssKnown, st.rssNone = st.rssKnown || !o.MemoryUnknown, st.rssNone || o.MemoryUnknown
	}
	for pid, o := range last {
		f := first[pid]
		st.procUser = sat.Add(st.procUser, sat.Sub(o.UserNS, f.UserNS))
		st.procSys = sat.Add(st.procSys, sat.Sub(o.SystemNS, f.SystemNS))
		st.minflt = sat.Add(st.minflt, sat.Sub(o.MinFlt, f.MinFlt))
		st.majflt = sat.Add(st.majflt, sat.Sub(o.MajFlt, f.MajFlt))
		st.volcs = sat.Add(st.volcs, sat.Sub(o.VolCtxSw, f.VolCtxSw))
		st.involcs = sat.Add(st.involcs, sat.Sub(o.InvolCtxSw, f.InvolCtxSw))
	}
	st.threads, st.processes = len(threads), len(procs)
	st.threadSet, st.procSet = threads, procs
	return st
}

func (a *stats) add(b stats) {
	a.duration = max(a.duration, b.duration)
	// A process is in the experiments of its images, before and after an exec: count it once.
	if a.procSet == nil {
		a.procSet, a.threadSet = map[uint32]bool{}, map[[2]uint32]bool{}
	}
	for p := range b.procSet {
		a.procSet[p] = true
	}
	for t := range b.threadSet {
		a.threadSet[t] = true
	}
	a.threads, a.processes = len(a.threadSet), len(a.procSet)
	a.lost += b.lost
	a.warnings += b.warnings
	a.errors += b.errors
	a.procUser = sat.Add(a.procUser, b.procUser)
	a.procSys = sat.Add(a.procSys, b.procSys)
	a.minflt = sat.Add(a.minflt, b.minflt)
	a.majflt = sat.Add(a.majflt, b.majflt)
	a.volcs = sat.Add(a.volcs, b.volcs)
	a.involcs = sat.Add(a.involcs, b.involcs)
	a.maxRSS = max(a.maxRSS, b.maxRSS)
	a.rssKnown, a.rssNone = a.rssKnown || b.rssKnown, a.rssNone || b.rssNone
}

func (s *session) statistics(args []string) error {
	ids, err := s.selectExps("statistics", args)
	if err != nil {
		return err
	}
	var all stats
	var ds []*experiment.Data
	for _, i := range ids {
		st := statsOf(s.exps[i])
		all.add(st)
		ds = append(ds, s.exps[i])
		s.printStats("Experiment: "+s.dirs[i], st, s.exps[i:i+1])
		s.printf("\n")
	}
	if len(ids) > 1 {
		s.printStats(fmt.Sprintf("All %d experiments", len(ids)), all, ds)
		s.printf("\n")
	}
	return nil
}

// printStats prints the statistics st of the experiments ds, under title: the lines of the
// experiments, then each kind's that they recorded or have events of, then the processes'.
func (s *session) printStats(title string, st stats, ds []*experiment.Data) {
	s.printf("%s\n", title)
	rows := [][2]string{
		{"Duration (sec.)", secondsMS(st.duration)},
		{"Processes", strconv.Itoa(st.processes)},
		{"Threads", strconv.Itoa(st.threads)},
	}
	for _, k := range analysis.Kinds {
		if k.InStats(ds) {
			for _, l := range k.KindStats(ds) {
				rows = append(rows, [2]string{l.Label, l.String()})
			}
		}
	}
	rows = append(rows,
		[2]string{"Lost data events", strconv.Itoa(st.lost)},
		[2]string{"Warnings", strconv.Itoa(st.warnings)},
		[2]string{"Errors", strconv.Itoa(st.errors)},
		[2]string{"", ""},
		[2]string{"Process Times (sec.)", ""},
		[2]string{"User CPU", secondsMS(st.procUser)},
		[2]string{"System CPU", secondsMS(st.procSys)},
		[2]string{"Minor Page Faults", strconv.FormatInt(st.minflt, 10)},
		[2]string{"Major Page Faults", strconv.FormatInt(st.majflt, 10)},
		[2]string{"Voluntary context switches", strconv.FormatInt(st.volcs, 10)},
		[2]string{"Involuntary context switches", strconv.FormatInt(st.involcs, 10)},
	)
	if st.rssNone && !st.rssKnown {
		rows = append(rows, [2]string{"Maximum resident set size", "not recorded (by gprofng)"})
	} else {
		rows = append(rows, [2]string{"Maximum resident set size (MB)", fmt.Sprintf("%.1f", float64(st.maxRSS)/(1<<20))})
	}
	w := 0
	for _, r := range rows {
		w = max(w, len(r[0]))
	}
	for _, r := range rows {
		if r[0] == "" {
			s.printf("\n")
			continue
		}
		s.printf("%s\n", strings.TrimRight(fmt.Sprintf("  %*s: %s", w, r[0], r[1]), " "))
	}
}

// overview lists the samples of each experiment with the usage of its processes in each, and
// whether the sample selection holds them.
func (s *session) overview(args []string) error {
	ids, err := s.selectExps("overview", args)
	if err != nil {
		return err
	}
	for _, i := range ids {
		usage := s.samplesUsage(i)
		if len(usage) == 0 {
			if s.text() {
				s.printf("Experiment %d: %s: no samples\n\n", i+1, s.dirs[i])
			}
			continue
		}
		if err := s.table(s.overviewTable(i, usage)); err != nil {
			return err
		}
	}
	return nil
}

// overviewTable lists one experiment's samples with its processes' usage in each.
func (s *session) overviewTable(i int, usage []sampleUsage) *report.Table {
	count := func(title, key string) report.Column {
		return report.Column{Title: title, Key: key, Kind: report.Count, Value: true}
	}
	t := &report.Table{
		Title: []string{fmt.Sprintf("Experiment %d: %s: process usage in each sample", i+1, s.dirs[i])},
		Columns: []report.Column{
			{Title: "Sample", Key: "sample", Kind: report.Text},
			{Title: "Sel", Key: "sel", Kind: report.Text},
			{Title: "Start", Unit: "sec.", Key: "start", Kind: report.Time, Value: true},
			{Title: "End", Unit: "sec.", Key: "end", Kind: report.Time, Value: true},
			{Title: "User CPU", Unit: "sec.", Key: "user", Kind: report.Time, Value: true},
			{Title: "Sys. CPU", Unit: "sec.", Key: "system", Kind: report.Time, Value: true},
			count("Minor Faults", "minflt"),
			count("Major Faults", "majflt"),
			count("Vol. Ctx. Sw.", "volctxsw"),
			count("Invol. Ctx. Sw.", "involctxsw"),
			{Title: "RSS", Unit: "KB", Key: "rss_kb", Kind: report.Count, Value: true},
			count("Threads", "threads"),
		},
		NameTitle: "Labels",
	}
	exp := int64(i + 1)
	for k, sp := range s.expIndex(i).Samples() {
		u := usage[k]
		cells := []report.Cell{
			{Text: strconv.Itoa(sp.Number)}, {Text: yesNo(s.sel.expSelected(exp) && s.sel.samples.has(exp, int64(sp.Number)))},
			{Value: sp.Start}, {Value: sp.End},
			{Value: u.user}, {Value: u.system}, {Value: u.minflt}, {Value: u.majflt}, {Value: u.volcs}, {Value: u.involcs},
			{Value: u.rss >> 10}, {Value: u.threads},
		}
		if !u.known {
			for c := 4; c < len(cells); c++ {
				cells[c] = report.Cell{Blank: true}
			}
		}
		if u.memUnknown { // RSS and threads
			cells[len(cells)-2], cells[len(cells)-1] = report.Cell{Blank: true}, report.Cell{Blank: true}
		}
		t.Rows = append(t.Rows, report.Row{Name: sampleLabels(sp), Cells: cells})
	}
	return t
}

// sampleLabels names a sample by the labels of the points that bound it: "start - periodic".
func sampleLabels(sp analysis.SamplePeriod) string {
	switch {
	case sp.Open && sp.StartLabel == "":
		return "(no sample points)"
	case sp.Open:
		return sp.StartLabel + " - (after the last sample point)"
	}
	return sp.StartLabel + " - " + sp.EndLabel
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (s *session) experimentList(_ []string) error {
	lineage := false
	for _, d := range s.exps {
		lineage = lineage || d.Log.Lineage != ""
	}
	cols := []report.Column{
		{Title: "ID", Key: "id", Kind: report.Text},
		{Title: "Sel", Key: "sel", Kind: report.Text},
		{Title: "PID", Key: "pid", Kind: report.Text},
	}
	if lineage {
		cols = append(cols, report.Column{Title: "PPID", Key: "ppid", Kind: report.Text},
			report.Column{Title: "Lineage", Key: "lineage", Kind: report.Text, Left: true})
	}
	cols = append(cols, report.Column{Title: "Events", Key: "events", Kind: report.Count, Value: true},
		report.Column{Title: "Target", Key: "target", Kind: report.Text, Left: true})
	t := &report.Table{Columns: cols, NameTitle: "Experiment"}
	for i, d := range s.exps {
		target := ""
		if len(d.Log.Command) > 0 {
			target = filepath.Base(d.Log.Command[0])
		}
		var events int64
		if s.sel.isAll() { // the events of every kind (of which a summed experiment holds sums)
			for _, k := range analysis.Kinds {
				events += k.Events(d)
			}
		} else {
			s.eachEvent(i, func(*analysis.EventInfo, int64, int64) { events++ })
		}
		cells := []report.Cell{{Text: strconv.Itoa(i + 1)}, {Text: yesNo(s.sel.expSelected(int64(i + 1)))}, {Text: strconv.Itoa(int(d.Log.Pid))}}
		if lineage {
			ppid, lin := "-", d.Log.Lineage
			if d.Log.Ppid != 0 {
				ppid = strconv.Itoa(int(d.Log.Ppid))
			}
			if lin == "" {
				lin = "(founder)"
			}
			cells = append(cells, report.Cell{Text: ppid}, report.Cell{Text: lin})
		}
		cells = append(cells, report.Cell{Value: events}, report.Cell{Text: target})
		t.Rows = append(t.Rows, report.Row{Name: s.dirs[i], Cells: cells})
	}
	return s.table(t)
}

// countColumns are the event-count and CPU-time columns of the list views: the events that the
// selection keeps.
func countColumns() []report.Column {
	return []report.Column{
		{Title: "Events", Key: "events", Kind: report.Count, Value: true},
		{Title: "Total CPU", Unit: "sec.", Key: "totalcpu", Kind: report.Time, Value: true, Percent: true},
	}
}

type tally struct{ events, cpu, thread int64 }

// threadList lists the threads of each experiment, by number, with their selected events; where
// microstates were recorded, with each thread's Total Thread Time (its life, as recorded) too.
func (s *session) threadList(_ []string) error {
	t := &report.Table{Columns: append([]report.Column{
		{Title: "Exp", Key: "exp", Kind: report.Text},
		{Title: "Sel", Key: "sel", Kind: report.Text},
		{Title: "PID", Key: "pid", Kind: report.Text},
		{Title: "Thread", Key: "thread", Kind: report.Text},
		{Title: "TID", Key: "tid", Kind: report.Text},
	}, countColumns()...)}
	for i := range s.exps { // a column of names where any thread took one
		if slices.ContainsFunc(s.expIndex(i).Threads(), func(th analysis.Thread) bool { return th.Name != "" }) {
			t.NameTitle = "Name"
		}
	}
	micro := slices.ContainsFunc(analysis.MetricsFor(s.exps), func(m analysis.Metric) bool { return m.Name == "total" })
	if micro {
		t.Columns = append(t.Columns, report.Column{Title: "Total Thread", Unit: "sec.", Key: "total", Kind: report.Time, Value: true})
	}
	var total int64
	for i := range s.exps {
		x := s.expIndex(i)
		threads := x.Threads()
		per := make([]tally, len(threads)+1)
		s.eachEvent(i, func(ev *analysis.EventInfo, cpu, thread int64) {
			per[ev.Thread].events++
			per[ev.Thread].cpu = sat.Add(per[ev.Thread].cpu, cpu)
			per[ev.Thread].thread = sat.Add(per[ev.Thread].thread, thread)
			total = sat.Add(total, cpu)
		})
		exp := int64(i + 1)
		for _, th := range threads {
			sel := s.sel.expSelected(exp) && s.sel.threads.has(exp, int64(th.Number)) && s.sel.lwps.has(exp, int64(th.Tid))
			row := report.Row{Name: th.Name, Cells: []report.Cell{
				{Text: strconv.Itoa(i + 1)}, {Text: yesNo(sel)}, {Text: strconv.Itoa(int(th.Pid))}, {Text: strconv.Itoa(th.Number)},
				{Text: strconv.Itoa(int(th.Tid))}, {Value: per[th.Number].events}, {Value: per[th.Number].cpu}}}
			if micro {
				row.Cells = append(row.Cells, report.Cell{Value: per[th.Number].thread})
			}
			t.Rows = append(t.Rows, row)
		}
	}
	fillPercent(t, 6, total)
	return s.table(t)
}

// fillPercent sets the percentages of column col to shares of total.
func fillPercent(t *report.Table, col int, total int64) {
	for i := range t.Rows {
		c := &t.Rows[i].Cells[col]
		c.Pct = percent(c.Value, total)
	}
}

// cpuList lists the CPUs of each experiment's clock samples with the selected samples on each.
func (s *session) cpuList(_ []string) error {
	t := &report.Table{Columns: append([]report.Column{
		{Title: "Exp", Key: "exp", Kind: report.Text},
		{Title: "Sel", Key: "sel", Kind: report.Text},
		{Title: "CPU", Key: "cpu", Kind: report.Text},
	}, countColumns()...)}
	var total int64
	for i, d := range s.exps {
		per := map[int64]*tally{}
		for _, c := range cpusOf(d) {
			per[int64(c)] = &tally{}
		}
		s.eachEvent(i, func(ev *analysis.EventInfo, cpu, _ int64) {
			if tl := per[ev.CPU]; tl != nil && analysis.Kinds[ev.Kind].HasCPU {
				tl.events++
				tl.cpu += cpu
				total += cpu
			}
		})
		exp := int64(i + 1)
		for _, c := range cpusOf(d) {
			tl := per[int64(c)]
			t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{
				{Text: strconv.Itoa(i + 1)}, {Text: yesNo(s.sel.expSelected(exp) && s.sel.cpus.has(exp, int64(c)))}, {Text: strconv.Itoa(int(c))},
				{Value: tl.events}, {Value: tl.cpu}}})
		}
	}
	fillPercent(t, 4, total)
	return s.table(t)
}

// sampleList lists the samples of each experiment with their selected events.
func (s *session) sampleList(_ []string) error {
	t := &report.Table{Columns: append([]report.Column{
		{Title: "Exp", Key: "exp", Kind: report.Text},
		{Title: "Sel", Key: "sel", Kind: report.Text},
		{Title: "Sample", Key: "sample", Kind: report.Text},
		{Title: "Start", Unit: "sec.", Key: "start", Kind: report.Time, Value: true},
		{Title: "End", Unit: "sec.", Key: "end", Kind: report.Time, Value: true},
	}, countColumns()...), NameTitle: "Labels"}
	var total int64
	for i := range s.exps {
		samples := s.expIndex(i).Samples()
		per := make([]tally, len(samples)+2)
		s.eachEvent(i, func(ev *analysis.EventInfo, cpu, _ int64) {
			if ev.Sample < len(per) {
				per[ev.Sample].events++
				per[ev.Sample].cpu += cpu
			}
			total += cpu
		})
		exp := int64(i + 1)
		for _, sp := range samples {
			t.Rows = append(t.Rows, report.Row{Name: sampleLabels(sp), Cells: []report.Cell{
				{Text: strconv.Itoa(i + 1)}, {Text: yesNo(s.sel.expSelected(exp) && s.sel.samples.has(exp, int64(sp.Number)))},
				{Text: strconv.Itoa(sp.Number)}, {Value: sp.Start}, {Value: sp.End},
				{Value: per[sp.Number].events}, {Value: per[sp.Number].cpu}}})
		}
	}
	fillPercent(t, 6, total)
	return s.table(t)
}
