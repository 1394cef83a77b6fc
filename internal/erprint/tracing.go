package erprint

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"er/internal/analysis"
	"er/internal/report"
)

// The views of tracing data: heap (leaks, allocs, heap, heapstat) and I/O (ioactivity, iodetail,
// iocallstack, iostat), laid out as gprofng's er_print lays them out.

// lacks reports whether the profile has no data of kind k; if so, it says so: in text mode as the
// view's output, otherwise on stderr, so that CSV and JSON output stays parsable.
func (s *session) lacks(p *analysis.Profile, k analysis.DataKind) bool {
	has := false
	for _, m := range p.Metrics {
		has = has || m.Data == k
	}
	if has {
		return false
	}
	what := "the experiment has"
	if len(s.exps) > 1 {
		what = "the experiments have"
	}
	msg := fmt.Sprintf("%s no %s data; collect with %s", what, k, analysis.Kinds[k].Record)
	if s.text() {
		s.printf("%s\n\n", msg)
	} else {
		fmt.Fprintf(s.stderr, "er print: %s\n", msg)
	}
	return true
}

// frameName writes a frame as gprofng does: "malloc + 0x000000C7"; a pseudo-function by its name.
func (s *session) frameName(p *analysis.Profile, fr analysis.Frame) string {
	name := s.funcName(p, fr.Func)
	if off, ok := p.Offset(fr); ok {
		return fmt.Sprintf("%s + 0x%08X", name, off)
	}
	return name
}

// stackText joins the frames of a stack, leaf first, for CSV and JSON.
func (s *session) stackText(p *analysis.Profile, frames []analysis.Frame) string {
	parts := make([]string, len(frames))
	for i, fr := range frames {
		parts[i] = s.frameName(p, fr)
	}
	return strings.Join(parts, "; ")
}

// printFrames prints the frames of a stack, leaf first, indented.
func (s *session) printFrames(p *analysis.Profile, frames []analysis.Frame) {
	for _, fr := range frames {
		s.printf("  %s\n", s.frameName(p, fr))
	}
}

// metric returns the index of the named metric in the profile; the caller knows it is there.
func metric(p *analysis.Profile, name string) int { return analysis.MetricIndex(p.Metrics, name) }

// heapEntry is one allocation stack of the heap views.
type heapEntry struct {
	frames                               []analysis.Frame
	allocs, allocBytes, leaks, leakBytes int64
}

// heapEntries are the instruction stacks with allocations, in the order first seen.
func heapEntries(p *analysis.Profile) []heapEntry {
	ac, ab, lc, lb := metric(p, "heapalloccnt"), metric(p, "heapallocbytes"), metric(p, "heapleakcnt"), metric(p, "heapleakbytes")
	var out []heapEntry
	for _, as := range p.AddrStacks() {
		if v := as.Values; v[ac] > 0 {
			out = append(out, heapEntry{frames: as.Frames, allocs: v[ac], allocBytes: v[ab], leaks: v[lc], leakBytes: v[lb]})
		}
	}
	return out
}

func (s *session) leaks(_ []string) error { return s.heapList(true) }

func (s *session) allocs(_ []string) error { return s.heapList(false) }

// heapList prints the leaks or the allocations: one entry per distinct allocation stack, the
// largest number of bytes first.
func (s *session) heapList(leaks bool) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if s.lacks(p, analysis.DataHeap) {
		return nil
	}
	count := func(e *heapEntry) (int64, int64) {
		if leaks {
			return e.leaks, e.leakBytes
		}
		return e.allocs, e.allocBytes
	}
	var es []heapEntry
	for _, e := range heapEntries(p) {
		if n, _ := count(&e); n > 0 {
			es = append(es, e)
		}
	}
	sort.SliceStable(es, func(i, j int) bool {
		ni, bi := count(&es[i])
		nj, bj := count(&es[j])
		if bi != bj {
			return bi > bj
		}
		return ni > nj
	})
	var instances, bytes int64
	for i := range es {
		n, b := count(&es[i])
		instances += n
		bytes += b
	}
	distinct := len(es)
	es = es[:s.limited(len(es))]
	noun, verb, what := "Allocation", "Allocated", "Allocations"
	if leaks {
		noun, verb, what = "Leak", "Leaked", "Leaks"
	}
	if !s.text() {
		t := &report.Table{Columns: []report.Column{
			{Title: "Instances", Key: "instances", Kind: report.Count, Value: true},
			{Title: "Bytes " + verb, Key: "bytes", Kind: report.Count, Value: true},
		}, NameTitle: "Stack"}
		for i := range es {
			n, b := count(&es[i])
			t.Rows = append(t.Rows, report.Row{Name: s.stackText(p, es[i].frames), Cells: []report.Cell{{Value: n}, {Value: b}}})
		}
		return s.table(t)
	}
	s.printf("Summary Results: Distinct %s = %d, Total Instances = %d, Total Bytes %s = %d\n\n", what, distinct, instances, verb, bytes)
	for i := range es {
		n, b := count(&es[i])
		s.printf("%s #%d, Instances = %d, Bytes %s = %d\n", noun, i+1, n, verb, b)
		s.printFrames(p, es[i].frames)
		s.printf("\n")
	}
	return nil
}

// heap prints the allocations and leaks of each allocation stack, the most bytes allocated first.
func (s *session) heap(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if s.lacks(p, analysis.DataHeap) {
		return nil
	}
	es := heapEntries(p)
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].allocBytes != es[j].allocBytes {
			return es[i].allocBytes > es[j].allocBytes
		}
		return es[i].allocs > es[j].allocs
	})
	es = es[:s.limited(len(es))]
	if !s.text() {
		count := func(title, key string) report.Column {
			return report.Column{Title: title, Key: key, Kind: report.Count, Value: true}
		}
		t := &report.Table{Columns: []report.Column{count("Allocations", "heapalloccnt"), count("Bytes Allocated", "heapallocbytes"),
			count("Leaks", "heapleakcnt"), count("Bytes Leaked", "heapleakbytes")}, NameTitle: "Stack"}
		tot := heapEntry{}
		for _, e := range heapEntries(p) {
			tot.allocs += e.allocs
			tot.allocBytes += e.allocBytes
			tot.leaks += e.leaks
			tot.leakBytes += e.leakBytes
		}
		for _, e := range append([]heapEntry{tot}, es...) {
			name := analysis.TotalName
			if e.frames != nil {
				name = s.stackText(p, e.frames)
			}
			t.Rows = append(t.Rows, report.Row{Name: name, Cells: []report.Cell{{Value: e.allocs}, {Value: e.allocBytes}, {Value: e.leaks}, {Value: e.leakBytes}}})
		}
		return s.table(t)
	}
	ac, ab, lc, lb := metric(p, "heapalloccnt"), metric(p, "heapallocbytes"), metric(p, "heapleakcnt"), metric(p, "heapleakbytes")
	s.printf("%s\n", analysis.TotalName)
	s.printf("Instances = %d  Bytes Allocated = %d\n", p.Total[ac], p.Total[ab])
	s.printf("Instances = %d  Bytes Leaked = %d\n\n", p.Total[lc], p.Total[lb])
	for i, e := range es {
		s.printf("Stack %d\n", i+1)
		s.printf("Instances = %d  Bytes Allocated = %d\n", e.allocs, e.allocBytes)
		if e.leaks > 0 {
			s.printf("Instances = %d  Bytes Leaked = %d\n", e.leaks, e.leakBytes)
		}
		s.printFrames(p, e.frames)
		s.printf("\n")
	}
	return nil
}

// statWidth is the width of the label column of the heap and I/O statistics.
const statWidth = 34

// statLines collects the lines of a statistics report: sections of labelled values, printed as
// text in gprofng's layout, or as a table of (section, statistic, value) for CSV and JSON.
type statLines struct {
	rows    []report.Row
	lines   []string
	section string
}

// title starts a section: its title line, and a header line and a rule when header is not "".
func (st *statLines) title(section, title, header string, rule int) {
	st.section = section
	st.lines = append(st.lines, title)
	if header != "" {
		st.lines = append(st.lines, header)
	}
	if rule > 0 {
		st.lines = append(st.lines, strings.Repeat("-", rule))
	}
}

func (st *statLines) add(label, value string) {
	st.lines = append(st.lines, fmt.Sprintf("%-*s%s", statWidth, label, value))
	st.rows = append(st.rows, report.Row{Name: strings.TrimSpace(label), Section: st.section, Cells: []report.Cell{{Text: value}}})
}

func (st *statLines) blank() { st.lines = append(st.lines, "") }

func (s *session) printStatLines(st *statLines) error {
	if !s.text() {
		return s.table(&report.Table{Columns: []report.Column{{Title: "Value", Key: "value", Kind: report.Text}},
			NameTitle: "Statistic", Rows: st.rows})
	}
	for _, l := range st.lines {
		s.printf("%s\n", strings.TrimRight(l, " "))
	}
	return nil
}

// histogram adds the non-empty size ranges of ss.
func (st *statLines) histogram(ss *analysis.SizeStats) {
	for i, n := range ss.Hist {
		if n > 0 {
			st.add("  "+analysis.SizeBucketLabels[i], strconv.FormatInt(n, 10))
		}
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// secs6 formats nanoseconds as seconds with 6 decimals and gprofng's unit: "0.000092 (secs.)".
func secs6(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 6, 64) + " (secs.)" }

func (s *session) heapstat(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if s.lacks(p, analysis.DataHeap) {
		return nil
	}
	h := p.Heap
	const rule = 55
	var st statLines
	st.blank()
	if len(h.Peaks) > 0 { // heap tracing was on, but there may be no event
		st.title("Peak", "Process With Highest Peak Memory Usage", "", rule)
		st.add("Heap size bytes", itoa64(h.Peak.Bytes))
		st.add("Experiment Id", strconv.Itoa(h.Peak.Exp+1))
		st.add("Process Id", strconv.FormatUint(uint64(h.Peak.Pid), 10))
		st.add("Time of peak", secondsMS(h.Peak.Time)+" (secs.)")
		st.blank()
	}
	st.title("Allocations", "Memory Allocations Statistics", fmt.Sprintf("%-*s%s", statWidth, "Allocation Size Range", "Allocations"), rule)
	st.histogram(&h.Allocs)
	st.blank()
	if h.Allocs.Count > 0 {
		st.add("Smallest allocation bytes", itoa64(h.Allocs.Min))
		st.add("Largest allocation bytes", itoa64(h.Allocs.Max))
	}
	st.add("Total allocations", itoa64(h.Allocs.Count))
	st.add("Total bytes", itoa64(h.Allocs.Bytes))
	st.blank()
	st.title("Leaks", "Memory Leaks Statistics", fmt.Sprintf("%-*s%s", statWidth, "Leak Size Range", "Leaks"), rule)
	st.histogram(&h.Leaks)
	st.blank()
	if h.Leaks.Count > 0 {
		st.add("Smallest leaked bytes", itoa64(h.Leaks.Min))
		st.add("Largest leaked bytes", itoa64(h.Leaks.Max))
	}
	st.add("Total leaked", itoa64(h.Leaks.Count))
	st.add("Total bytes", itoa64(h.Leaks.Bytes))
	st.blank()
	if h.DoubleFrees > 0 || h.UnknownFrees > 0 || h.FailedAllocs > 0 {
		st.title("Ignored", "Ignored Calls", "", rule)
		st.add("Frees of freed blocks", itoa64(h.DoubleFrees))
		st.add("Frees of unknown blocks", itoa64(h.UnknownFrees))
		st.add("Failed allocations", itoa64(h.FailedAllocs))
		st.blank()
	}
	return s.printStatLines(&st)
}

// ioItems are the I/O metrics of the metric list, shown exclusive (a file or a stack has no
// inclusive metrics), or the four I/O times when the list has none.
func (s *session) ioItems() []item {
	var its []item
	seen := map[int]bool{}
	for _, it := range shown(s.metrics) {
		if it.kind != itemMetric || s.ms[it.metric].Data != analysis.DataIO || seen[it.metric] {
			continue
		}
		seen[it.metric] = true
		it.flavor = exclusive
		its = append(its, it)
	}
	if len(its) == 0 {
		for _, name := range []string{"ioreadtime", "iowritetime", "ioothertime", "ioerrortime"} {
			its = append(its, item{kind: itemMetric, metric: analysis.MetricIndex(s.ms, name), flavor: exclusive, value: true})
		}
	}
	return its
}

// ioTime is the time of all the I/O of values v.
func ioTime(p *analysis.Profile, v []int64) int64 {
	var t int64
	for _, name := range []string{"ioreadtime", "iowritetime", "ioothertime", "ioerrortime"} {
		t += v[metric(p, name)]
	}
	return t
}

func (s *session) ioactivity(_ []string) error { return s.ioGroups(false) }

func (s *session) iodetail(_ []string) error { return s.ioGroups(true) }

// ioGroups prints the I/O metrics of each file, or of each descriptor of each file: sorted by the
// sort metric when it is an I/O metric, else by the time of all their I/O; <Total> first.
func (s *session) ioGroups(byFD bool) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if s.lacks(p, analysis.DataIO) {
		return nil
	}
	gs := append([]analysis.IOGroup(nil), p.IOFiles...)
	if byFD {
		gs = append([]analysis.IOGroup(nil), p.IODescriptors...)
	}
	name := func(g *analysis.IOGroup) string {
		if byFD {
			return fmt.Sprintf("%s (FD=%d)", g.Name, g.FD)
		}
		return g.Name
	}
	key := func(g *analysis.IOGroup) int64 { return ioTime(p, g.Values) }
	if it := s.sortItem; it.kind == itemMetric && s.ms[it.metric].Data == analysis.DataIO {
		key = func(g *analysis.IOGroup) int64 { return g.Values[it.metric] }
	}
	sort.SliceStable(gs, func(i, j int) bool {
		if a, b := key(&gs[i]), key(&gs[j]); a != b {
			return a > b
		}
		return name(&gs[i]) < name(&gs[j])
	})
	gs = append([]analysis.IOGroup{{Name: analysis.TotalName, Values: p.Total}}, gs...)
	gs = gs[:s.limited(len(gs))]
	its := s.ioItems()
	t := &report.Table{Columns: s.columns(its), NameTitle: "Name"}
	for i := range gs {
		n := name(&gs[i])
		if i == 0 {
			n = analysis.TotalName
		}
		cells := make([]report.Cell, len(its))
		for j, it := range its {
			v := it.of(gs[i].Values)
			cells[j] = report.Cell{Value: v, Pct: percent(v, p.Total[it.metric])}
		}
		t.Rows = append(t.Rows, report.Row{Name: n, Cells: cells})
	}
	return s.table(t)
}

// ioClasses are the lines of an iocallstack block, in gprofng's order: a time, a byte count (or
// none) and a call count.
var ioClasses = []struct{ label, time, bytes, count string }{
	{"Write", "iowritetime", "iowritebytes", "iowritecnt"},
	{"Read", "ioreadtime", "ioreadbytes", "ioreadcnt"},
	{"Other I/O", "ioothertime", "", "ioothercnt"},
	{"I/O Error", "ioerrortime", "", "ioerrorcnt"},
}

// printIOValues prints a line for each class of I/O with calls in v.
func (s *session) printIOValues(p *analysis.Profile, v []int64) {
	for _, c := range ioClasses {
		n := v[metric(p, c.count)]
		if n == 0 {
			continue
		}
		line := fmt.Sprintf("%s Time=%s", c.label, secs6(v[metric(p, c.time)]))
		if c.bytes != "" {
			line += fmt.Sprintf("  %s Bytes=%d", c.label, v[metric(p, c.bytes)])
		}
		s.printf("%s  %s Count=%d\n", line, c.label, n)
	}
}

// iocallstack prints the I/O metrics of each call stack, the most I/O time first.
func (s *session) iocallstack(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if s.lacks(p, analysis.DataIO) {
		return nil
	}
	var io []int
	for _, name := range []string{"ioreadcnt", "iowritecnt", "ioothercnt", "ioerrorcnt"} {
		io = append(io, metric(p, name))
	}
	all := p.AddrStacks()
	var order []int
	for i, as := range all {
		for _, m := range io {
			if as.Values[m] > 0 {
				order = append(order, i)
				break
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return ioTime(p, all[order[i]].Values) > ioTime(p, all[order[j]].Values) })
	order = order[:s.limited(len(order))]
	if !s.text() {
		var its []item
		for m := range s.ms {
			if s.ms[m].Data == analysis.DataIO {
				its = append(its, item{kind: itemMetric, metric: m, flavor: exclusive, value: true})
			}
		}
		t := &report.Table{Columns: s.columns(its), NameTitle: "Stack"}
		row := func(name string, v []int64) {
			cells := make([]report.Cell, len(its))
			for j, it := range its {
				cells[j] = report.Cell{Value: it.of(v)}
			}
			t.Rows = append(t.Rows, report.Row{Name: name, Cells: cells})
		}
		row(analysis.TotalName, p.Total)
		for _, i := range order {
			row(s.stackText(p, all[i].Frames), all[i].Values)
		}
		return s.table(t)
	}
	s.printf("%s\n", analysis.TotalName)
	s.printIOValues(p, p.Total)
	s.printf("\n")
	for n, i := range order {
		s.printf("Stack %d\n", n+1)
		s.printIOValues(p, all[i].Values)
		s.printFrames(p, all[i].Frames)
		s.printf("\n")
	}
	return nil
}

func (s *session) iostat(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if s.lacks(p, analysis.DataIO) {
		return nil
	}
	io := p.IO
	var st statLines
	sizes := func(section, what string, ss *analysis.SizeStats) {
		st.title(section, section+" Statistics", fmt.Sprintf("%-*s%s Calls", statWidth, "I/O Size Range", section), 55)
		st.histogram(ss)
		st.blank()
		if ss.Count > 0 {
			st.add("Longest "+what, secs6(ss.Longest))
			st.add("Smallest "+what+" bytes", itoa64(ss.Min))
			st.add("Largest "+what+" bytes", itoa64(ss.Max))
		}
		st.add("Total time", secs6(ss.Time))
		st.add("Total calls", itoa64(ss.Count))
		st.add("Total bytes", itoa64(ss.Bytes))
		st.blank()
	}
	calls := func(section string, ss *analysis.SizeStats) {
		st.title(section, section+" Statistics", "", 53)
		st.add("Total time", secs6(ss.Time))
		st.add("Total calls", itoa64(ss.Count))
		st.blank()
	}
	st.blank()
	sizes("Write", "write", &io.Write)
	sizes("Read", "read", &io.Read)
	calls("Other I/O", &io.Other)
	if io.Error.Count > 0 {
		calls("I/O Error", &io.Error)
	}
	apiStats(&st, io)
	return s.printStatLines(&st)
}

// apiStats adds to iostat the calls by interface, system-call wrappers or stdio, and the system
// calls the kernel counted: stdio buffers, so that its calls make fewer system calls than they are,
// inside libc, where tracing does not see them (500,000 fprintf calls, 201,439 write system calls).
func apiStats(st *statLines, io *analysis.IOStats) {
	const rule = 53
	st.title("API", "Calls by Interface", "", rule)
	for _, a := range []struct {
		name string
		c    *analysis.IOCalls
	}{{"System calls", &io.Syscall}, {"stdio calls", &io.Stdio}} {
		st.add(a.name+": reads", itoa64(a.c.Reads))
		st.add(a.name+": writes", itoa64(a.c.Writes))
		st.add(a.name+": other", itoa64(a.c.Other))
		if a.c.Failed > 0 {
			st.add(a.name+": failed", itoa64(a.c.Failed))
		}
	}
	st.lines = append(st.lines, "(System calls: read, write, open, ... each one call to the kernel; stdio: fread,",
		"fwrite, printf, ..., which buffer and call the kernel from inside libc when a buffer fills.)")
	st.blank()
	st.title("Kernel", "System Calls Counted by the Kernel", "", rule)
	if io.KernelProcs == 0 {
		st.add("Read and write system calls", "not recorded (noted when the process calls exit)")
		st.blank()
		return
	}
	for _, k := range []struct {
		what            string
		kernel, wrapped int64
		stdio           int64
	}{{"Read", io.Kernel.Reads, io.Syscall.Reads, io.Stdio.Reads}, {"Write", io.Kernel.Writes, io.Syscall.Writes, io.Stdio.Writes}} {
		st.section = "Kernel " + strings.ToLower(k.what) + "s" // in CSV and JSON, the lines below are of this
		st.add(k.what+" system calls", itoa64(k.kernel))
		st.add("  by the system calls above", itoa64(min(k.wrapped, k.kernel)))
		st.add("  inside stdio and other code", itoa64(max(k.kernel-k.wrapped, 0)))
	}
	st.section = "Kernel"
	if io.KernelProcs < io.Procs {
		st.add("Processes counted", fmt.Sprintf("%d of %d (noted when a process calls exit)", io.KernelProcs, io.Procs))
	}
	st.lines = append(st.lines, "(Read and write system calls of the processes while traced: read, pread, readv,",
		"write, pwrite, writev, ..., as /proc/PID/io counts them; strace -c -f counts the same calls.)")
	st.blank()
}
