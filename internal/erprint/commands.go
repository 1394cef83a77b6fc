package erprint

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"er/internal/analysis"
	"er/internal/report"
	"er/internal/version"
)

// command is one er_print command.
type command struct {
	name     string
	aliases  []string
	group    string
	usage    string
	help     string
	minArgs  int
	maxArgs  int  // -1: any number
	data     bool // needs an experiment
	joinArgs bool // extra words in a script are one function name with spaces
	rc       bool // it may appear in an .er.rc file (marked * in help)
	rest     bool // in a script, the rest of the line is one argument; on the command line, the next word
	run      func(s *session, args []string) error
}

// Command groups, in help order.
var groups = []string{
	"Commands controlling the function list:",
	"Commands controlling the callers-callees and calltree lists:",
	"Commands controlling source and disassembly listings:",
	"Commands for load objects:",
	"Commands controlling the leak and allocation lists:",
	"Commands controlling the I/O activity report:",
	"Commands listing experiments, samples, threads and CPUs:",
	"Commands selecting and filtering the data shown:",
	"Commands that list metrics:",
	"Commands that control output:",
	"Commands that print other displays:",
	"Miscellaneous commands:",
}

var commands []*command

func init() {
	g := groups
	commands = []*command{
		{name: "functions", group: g[0], usage: "functions", help: "display functions with current metrics",
			data: true, run: (*session).functions},
		{name: "metrics", group: g[0], usage: "metrics metric_spec", help: "set a new list of metrics",
			minArgs: 1, maxArgs: 1, run: (*session).setMetrics},
		{name: "sort", group: g[0], usage: "sort metric_spec", help: "sort tables by the specified metric",
			minArgs: 1, maxArgs: 1, run: (*session).setSort},
		{name: "fsummary", group: g[0], usage: "fsummary", help: "display summary metrics for each function",
			data: true, run: (*session).fsummary},
		{name: "fsingle", group: g[0], usage: "fsingle function_name [N]", help: "display the summary metrics for specified function",
			minArgs: 1, maxArgs: 2, data: true, joinArgs: true, run: (*session).fsingle},

		{name: "callers-callees", aliases: []string{"gprof"}, group: g[1], usage: "callers-callees",
			help: "display the callers-callees for each function", data: true, run: (*session).callersCallees},
		{name: "csingle", group: g[1], usage: "csingle function_name [N]", help: "display the callers-callees for the specified function",
			minArgs: 1, maxArgs: 2, data: true, joinArgs: true, run: (*session).csingle},
		{name: "cprepend", group: g[1], usage: "cprepend function_name [N]", help: "add specified function to the head of the callstack fragment",
			minArgs: 1, maxArgs: 2, data: true, joinArgs: true, run: (*session).cprepend},
		{name: "cappend", group: g[1], usage: "cappend function_name [N]", help: "add specified function to the end of the callstack fragment",
			minArgs: 1, maxArgs: 2, data: true, joinArgs: true, run: (*session).cappend},
		{name: "crmfirst", group: g[1], usage: "crmfirst", help: "remove the first function from the callstack fragment",
			data: true, run: (*session).crmfirst},
		{name: "crmlast", group: g[1], usage: "crmlast", help: "remove the last function from the callstack fragment",
			data: true, run: (*session).crmlast},
		{name: "calltree", aliases: []string{"ctree"}, group: g[1], usage: "calltree", help: "display the tree of function calls",
			data: true, run: (*session).calltree},
		{name: "tthresh", group: g[1], usage: "tthresh value", help: "leave out of calltree the calls below value% of the total in every metric shown (default 0.1; 0 shows all)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.setThreshold("tthresh", &s.tthresh)(a) }},

		{name: "lines", group: g[2], usage: "lines", help: "display lines with current metrics",
			data: true, run: (*session).lines},
		{name: "lsummary", group: g[2], usage: "lsummary", help: "display summary metrics for each line",
			data: true, run: (*session).lsummary},
		{name: "pcs", group: g[2], usage: "pcs", help: "display PCs (instructions) with current metrics",
			data: true, run: (*session).pcs},
		{name: "psummary", group: g[2], usage: "psummary", help: "display summary metrics for each PC",
			data: true, run: (*session).psummary},
		{name: "source", group: g[2], usage: "source {function|file} [N]",
			help: "display annotated source for a function, or a whole file", minArgs: 1, maxArgs: 2, data: true, joinArgs: true,
			run: (*session).source},
		{name: "disasm", group: g[2], usage: "disasm {function|file} [N]",
			help: "display annotated disassembly for a function, or the functions of a file", minArgs: 1, maxArgs: 2, data: true,
			joinArgs: true, run: (*session).disasm},
		{name: "sthresh", group: g[2], usage: "sthresh value", help: "mark source lines with a metric at least value% of its largest (default 75)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.setThreshold("sthresh", &s.sthresh)(a) }},
		{name: "dthresh", group: g[2], usage: "dthresh value", help: "mark instructions with a metric at least value% of its largest (default 75)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.setThreshold("dthresh", &s.dthresh)(a) }},
		{name: "setpath", group: g[2], usage: "setpath path_list", help: "set the directories searched for source files ($expts: the experiments')",
			minArgs: 1, maxArgs: 1, run: (*session).setpath},
		{name: "addpath", group: g[2], usage: "addpath path_list", help: "append directories to the source search path",
			minArgs: 1, maxArgs: 1, run: (*session).addpath},
		{name: "pathmap", group: g[2], usage: "pathmap old-prefix new-prefix", help: "look for source files recorded under old-prefix in new-prefix",
			minArgs: 2, maxArgs: 2, run: (*session).pathmap},
		{name: "inline", group: g[2], usage: "inline {on|off}", help: "show inlined functions as functions of their own (on, the default), or as their callers (off)",
			minArgs: 1, maxArgs: 1, run: (*session).setInline},

		{name: "data_objects", aliases: []string{"dataobjects"}, group: g[3], usage: "data_objects",
			help: "display data objects (variables, heap blocks by allocating function) with the metrics of counters given with +",
			data: true, run: (*session).dataObjects},
		{name: "data_layout", aliases: []string{"datalayout"}, group: g[3], usage: "data_layout",
			help: "display the struct types whose members data addresses fell in, member by member",
			data: true, run: (*session).dataLayout},
		{name: "memobj", group: g[3], usage: "memobj type", help: "display memory objects of a type (mobj_list) with the data-space metrics",
			minArgs: 1, maxArgs: 1, data: true, run: (*session).memObjects},
		{name: "mobj_list", group: g[3], usage: "mobj_list", help: "display the memory object types",
			run: (*session).mobjList},
		{name: "indxobj", group: g[3], usage: "indxobj type", help: "display index objects of a type (indxobj_list) with the current metrics",
			minArgs: 1, maxArgs: 1, data: true, run: (*session).indxobj},
		{name: "indxobj_list", group: g[3], usage: "indxobj_list", help: "display the index object types",
			run: (*session).indxobjList},
		{name: "export_pprof", group: g[10], usage: "export_pprof file",
			help:    "write the profile as pprof's profile.proto (go tool pprof reads it): every metric, each call stack per thread, instructions with lines and inlined functions",
			minArgs: 1, maxArgs: 1, data: true, run: (*session).exportPprof},
		{name: "export_folded", group: g[10], usage: "export_folded file [metric]",
			help:    "write one metric (the sort metric by default) as FlameGraph's folded stacks (flamegraph.pl reads them)",
			minArgs: 1, maxArgs: 2, data: true, run: (*session).exportFolded},
		{name: "export_speedscope", group: g[10], usage: "export_speedscope file",
			help:    "write the profile as speedscope's JSON (https://www.speedscope.app): a sampled profile per metric, an evented one per thread",
			minArgs: 1, maxArgs: 1, data: true, run: (*session).exportSpeedscope},
		{name: "export_chrome", group: g[10], usage: "export_chrome file",
			help:    "write the threads' time lines in Chrome's Trace Event Format (Perfetto, chrome://tracing, the Firefox Profiler import it)",
			minArgs: 1, maxArgs: 1, data: true, run: (*session).exportChrome},
		{name: "objects", group: g[3], usage: "objects", help: "display load objects with errors or warnings",
			data: true, run: (*session).objects},
		{name: "object_list", group: g[3], usage: "object_list", help: "display load objects and their index",
			data: true, run: (*session).objectList},
		{name: "lobjects", group: g[3], usage: "lobjects", help: "display load objects with current metrics (er)",
			data: true, run: (*session).lobjects},

		{name: "leaks", group: g[4], usage: "leaks", help: "display memory leaks, aggregated by callstack",
			data: true, run: (*session).leaks},
		{name: "allocs", group: g[4], usage: "allocs", help: "display allocations, aggregated by callstack",
			data: true, run: (*session).allocs},
		{name: "heap", group: g[4], usage: "heap", help: "display allocations and leaks, aggregated by callstack",
			data: true, run: (*session).heap},
		{name: "heapstat", group: g[4], usage: "heapstat", help: "display heap statistics: peak, allocation and leak sizes",
			data: true, run: (*session).heapstat},

		{name: "ioactivity", group: g[5], usage: "ioactivity", help: "display I/O activity, aggregated by file name",
			data: true, run: (*session).ioactivity},
		{name: "iodetail", group: g[5], usage: "iodetail", help: "display I/O activity, aggregated by file descriptor",
			data: true, run: (*session).iodetail},
		{name: "iocallstack", group: g[5], usage: "iocallstack", help: "display I/O activity, aggregated by callstack",
			data: true, run: (*session).iocallstack},
		{name: "iostat", group: g[5], usage: "iostat", help: "display I/O statistics: sizes and times of the calls",
			data: true, run: (*session).iostat},

		{name: "experiment_list", aliases: []string{"exp_list"}, group: g[6], usage: "experiment_list",
			help: "display the loaded experiments", data: true, run: (*session).experimentList},
		{name: "sample_list", group: g[6], usage: "sample_list", help: "display the sample points of each process",
			data: true, run: (*session).sampleList},
		{name: "thread_list", aliases: []string{"lwp_list"}, group: g[6], usage: "thread_list", help: "display the threads with their events",
			data: true, run: (*session).threadList},
		{name: "cpu_list", group: g[6], usage: "cpu_list", help: "display the CPUs with their events",
			data: true, run: (*session).cpuList},
		{name: "sample_detail", group: g[10], usage: "sample_detail [exp_id]", help: "display the process usage in the selected samples, added up and each",
			maxArgs: 1, data: true, run: (*session).sampleDetail},

		{name: "sample_select", group: g[7], usage: "sample_select sample_spec", help: "select samples: all, or [exp_list:]list[+...] such as 2-5 or 1:3,4",
			minArgs: 1, maxArgs: 1, data: true, rest: true, run: (*session).sampleSelect},
		{name: "thread_select", group: g[7], usage: "thread_select thread_spec", help: "select threads by number (thread_list's Thread), as sample_select",
			minArgs: 1, maxArgs: 1, data: true, rest: true, run: (*session).threadSelect},
		{name: "lwp_select", group: g[7], usage: "lwp_select lwp_spec", help: "select threads by Linux thread id (thread_list's TID), as sample_select",
			minArgs: 1, maxArgs: 1, data: true, rest: true, run: (*session).lwpSelect},
		{name: "cpu_select", group: g[7], usage: "cpu_select cpu_spec", help: "select CPUs, as sample_select",
			minArgs: 1, maxArgs: 1, data: true, rest: true, run: (*session).cpuSelect},
		{name: "experiment_select", group: g[7], usage: "experiment_select exp_list", help: "select experiments: all, or a list such as 1,3-5",
			minArgs: 1, maxArgs: 1, data: true, rest: true, run: (*session).experimentSelect},
		{name: "filters", group: g[7], usage: "filters [expression|none]", help: "show only the events for which expression is true, such as THRID==2 or INSTK(main) (describe; none or nothing: all)",
			maxArgs: 1, rest: true, run: (*session).filters},
		{name: "describe", group: g[7], usage: "describe", help: "describe the fields of filter expressions and what each experiment recorded",
			data: true, run: (*session).describe},

		{name: "metric_list", group: g[8], usage: "metric_list", help: "display the available metrics and their keywords",
			run: (*session).metricList},
		{name: "cmetric_list", aliases: []string{"gmetric_list"}, group: g[8], usage: "cmetric_list",
			help: "display the available callers-callees metrics", run: (*session).cmetricList},

		{name: "outfile", group: g[9], usage: "outfile {filename|-|--}", help: "open filename for subsequent output (- stdout, -- stderr)",
			minArgs: 1, maxArgs: 1, run: (*session).outfile},
		{name: "appendfile", group: g[9], usage: "appendfile filename", help: "open filename for subsequent appended output",
			minArgs: 1, maxArgs: 1, run: (*session).appendfile},
		{name: "limit", group: g[9], usage: "limit n", help: "limit output to the first n entries (n=0 for no limit)",
			minArgs: 1, maxArgs: 1, run: (*session).setLimit},
		{name: "name", group: g[9], usage: "name {long|short|mangled}[:{soname|nosoname}]",
			help: "set long/short/mangled names for functions", minArgs: 1, maxArgs: 1, run: (*session).setName},
		{name: "printmode", group: g[9], usage: "printmode {text|csv|tsv|json|c}",
			help: "set the mode for printing tables (c: a one-character delimiter)", minArgs: 1, maxArgs: 1, run: (*session).setPrintmode},

		{name: "header", group: g[10], usage: "header [exp_id]", help: "display information about the experiment",
			maxArgs: 1, data: true, run: (*session).header},
		{name: "overview", group: g[10], usage: "overview [exp_id]", help: "display the process usage in each sample",
			maxArgs: 1, data: true, run: (*session).overview},
		{name: "statistics", group: g[10], usage: "statistics [exp_id]", help: "display the execution statistics data",
			maxArgs: 1, data: true, run: (*session).statistics},

		{name: "mapfile", group: g[11], usage: "mapfile load_object {file|-}",
			help:    "write load_object's functions by the sort metric, a link order for gold's --section-ordering-file (-: the output)",
			minArgs: 2, maxArgs: 2, data: true, run: (*session).mapfile},
		{name: "ifreq", group: g[11], usage: "ifreq", help: "display the instruction-frequency report (from count data, which er does not record: it says so)",
			data: true, run: (*session).ifreq},
		{name: "script", group: g[11], usage: "script file", help: "read er_print commands from script file",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.script(a[0]) }},
		{name: "version", group: g[11], usage: "version", help: "display the current release version",
			run: func(s *session, _ []string) error { s.printf("%s\n", version.String()); return nil }},
		{name: "help", group: g[11], usage: "help", help: "display the list of available commands",
			run: (*session).help},
		{name: "quit", aliases: []string{"exit"}, group: g[11], usage: "quit", help: "terminate processing and exit",
			run: func(*session, []string) error { return errQuit }},
	}
	commands = append(commands, experimentCommands(g)...)
	commands = append(commands, settingsCommands(g)...)
	commands = append(commands, objectCommands(g)...)
	// The commands of .er.rc files (help marks them *), as gprofng's.
	for _, c := range commands {
		switch c.name {
		case "sthresh", "dthresh", "addpath", "pathmap", "setpath", "name", "printmode", "limit", "en_desc", "tthresh":
			c.rc = true
		}
	}
}

// summed are the views that show the same from experiments whose trace files were summed as they
// were read (experiment.Options.Summed) as from their events: they need the totals of all events,
// and no event lists or filters.
var summed = map[string]bool{"functions": true, "fsummary": true, "fsingle": true, "callers-callees": true,
	"csingle": true, "calltree": true, "lines": true, "lsummary": true, "pcs": true, "psummary": true,
	"source": true, "disasm": true, "objects": true, "object_list": true, "lobjects": true, "leaks": true,
	"allocs": true, "heap": true, "heapstat": true, "ioactivity": true, "iodetail": true, "iocallstack": true,
	"iostat": true, "metric_list": true, "cmetric_list": true,
	"experiment_list": true, "header": true, "statistics": true}

// summable says whether the command-line steps can run on experiments read with their trace files
// summed: each is a command, a view of summed or a setting that needs no data, and none sets a
// filter or runs a script (whose commands are not known yet).
func summable(steps []step) bool {
	for _, st := range steps {
		c := st.cmd
		if c == nil || c.name == "filters" || c.name == "script" || c.data && !summed[c.name] {
			return false
		}
	}
	return len(steps) > 0
}

// lookup finds a command by name, alias, or unambiguous prefix.
func lookup(name string) (*command, error) {
	var matches []*command
	for _, c := range commands {
		if c.name == name {
			return c, nil
		}
		for _, a := range c.aliases {
			if a == name {
				return c, nil
			}
		}
		if strings.HasPrefix(c.name, name) {
			matches = append(matches, c)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, usagef("unknown command %q; \"help\" lists the commands", name)
	}
	var names []string
	for _, c := range matches {
		names = append(names, c.name)
	}
	return nil, usagef("ambiguous command %q: %s", name, strings.Join(names, ", "))
}

func (s *session) help(_ []string) error {
	s.printf("Usage: er print [-command [args]]... [-script file] [-] experiment...\n")
	s.printf("Commands are given on the command line with a leading '-', in a script, or interactively.\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(helpUsage(c)))
	}
	for _, g := range groups {
		s.printf("\n%s\n", g)
		for _, c := range commands {
			if c.group == g {
				star := ""
				if c.rc {
					star = " *"
				}
				s.printf("    %-*s  %s%s\n", width, helpUsage(c), c.help, star)
			}
		}
	}
	s.printf("\nThe commands marked * may appear in .er.rc files, which er print reads first: %s, ~/.er.rc, ./.er.rc\n"+
		"(regular files of at most 1 MiB, owned by you or root and not writable by every user; others are skipped\n"+
		"with a warning); it says on stderr each one it read, and what it set.\n", SystemRC)
	return nil
}

func helpUsage(c *command) string {
	u := c.usage
	if len(c.aliases) > 0 {
		name, rest, _ := strings.Cut(u, " ")
		u = strings.TrimSpace(name + "[" + strings.Join(c.aliases, "|") + "] " + rest)
	}
	return u
}

func (s *session) setMetrics(args []string) error {
	items, err := parseMetrics(args[0], s.ms)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.kind == itemMetric && it.flavor == attributed {
			return usagef("metric %s applies to callers-callees only; they show the attributed metrics of the function list's metrics", it.spec(s.ms))
		}
	}
	s.metrics, s.metricsSet = items, true
	found := false
	for _, it := range items {
		if sameKey(it, s.sortItem) {
			s.sortItem, found = it, true
		}
	}
	if !found {
		s.sortItem = items[0]
	}
	if s.text() {
		ms := s.ms
		s.printf("Current metrics: %s\n", specString(s.metrics, ms))
		s.printf("Current Sort Metric: %s\n", describeSort(s.sortItem, ms))
	}
	return nil
}

func (s *session) setSort(args []string) error {
	it, err := parseSort(args[0], s.metrics, s.ms)
	if err != nil {
		return err
	}
	if it.kind == itemMetric && it.flavor == attributed {
		it.flavor = exclusive
	}
	s.sortItem, s.sortSet = it, true
	if s.text() {
		s.printf("Current Sort Metric: %s\n", describeSort(it, s.ms))
	}
	return nil
}

func (s *session) setLimit(args []string) error {
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 {
		return usagef("limit: %q is not a count (0 for no limit)", args[0])
	}
	s.limit = n
	switch {
	case !s.text():
	case n == 0:
		s.printf("Print limit removed\n")
	default:
		s.printf("Print limit set to %d\n", n)
	}
	return nil
}

func (s *session) setName(args []string) error {
	style, opt, hasOpt := strings.Cut(args[0], ":")
	st, ok := analysis.ParseNameStyle(style)
	if !ok {
		return usagef("name: %q is not long, short or mangled", style)
	}
	soname := s.soname
	if hasOpt {
		switch opt {
		case "soname":
			soname = true
		case "nosoname":
			soname = false
		default:
			return usagef("name: %q is not soname or nosoname", opt)
		}
	}
	if st != s.style && s.sel.stacks { // FNAME matches names in the style: the filter keeps others
		s.selectionChanged()
	}
	s.style, s.soname = st, soname
	s.names = nil
	return nil
}

func (s *session) setPrintmode(args []string) error {
	m, err := report.ParseMode(args[0])
	if err != nil {
		return usagef("%v", err)
	}
	if m != s.mode {
		s.endDoc(false)
	}
	s.mode = m
	return nil
}

func (s *session) outfile(args []string) error {
	switch args[0] {
	case "-":
		return s.setOutput(s.stdout, nil)
	case "--":
		return s.setOutput(s.stderr, nil)
	}
	f, err := os.Create(args[0])
	if err != nil {
		return fmt.Errorf("outfile: %w", err)
	}
	return s.setOutput(f, f)
}

func (s *session) appendfile(args []string) error {
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("appendfile: %w", err)
	}
	return s.setOutput(f, f)
}

func (s *session) metricList(_ []string) error {
	ms := s.ms
	s.printf("Current metrics: %s\n", specString(s.metrics, ms))
	s.printf("Current Sort Metric: %s\n", describeSort(s.sortItem, ms))
	s.printf("Available metrics:\n")
	var rows [][2]string
	for _, m := range listOrder(ms) {
		for _, f := range []flavor{exclusive, inclusive} {
			it := item{kind: itemMetric, metric: m, flavor: f, value: true, pct: true}
			rows = append(rows, [2]string{it.title(ms), it.spec(ms)})
		}
	}
	for _, d := range availableDerived(ms) {
		_, num, den, _ := lookupDerived(d.name, ms)
		for _, f := range []flavor{exclusive, inclusive} {
			it := item{kind: itemMetric, metric: num, den: den, derived: d, flavor: f, value: true}
			rows = append(rows, [2]string{it.title(ms), it.spec(ms)})
		}
	}
	for _, k := range []itemKind{itemSize, itemAddress, itemName} {
		it := item{kind: k}
		rows = append(rows, [2]string{it.title(ms), it.spec(ms)})
	}
	s.printLabels(rows)
	return nil
}

func (s *session) cmetricList(_ []string) error {
	ms := s.ms
	cm := s.callers()
	s.printf("Current caller-callee metrics: %s\n", specString(cm, ms))
	s.printf("Current caller-callee sort Metric: %s\n", describeSort(s.callerSort(), ms))
	s.printf("Available caller-callee metrics:\n")
	var rows [][2]string
	for _, m := range listOrder(ms) {
		it := item{kind: itemMetric, metric: m, flavor: attributed, value: true, pct: true}
		rows = append(rows, [2]string{it.title(ms), it.spec(ms)})
	}
	rows = append(rows, [2]string{"Name", "name"})
	s.printLabels(rows)
	return nil
}

// listOrder is the order metric_list shows the metrics in, as gprofng: the tracing metrics, then
// those of sampled data (the clock metrics).
func listOrder(ms []analysis.Metric) []int {
	var order, clock []int
	for m := range ms {
		if analysis.Kinds[ms[m].Data].Sampled {
			clock = append(clock, m)
		} else {
			order = append(order, m)
		}
	}
	return append(order, clock...)
}

// printLabels prints "label: value" lines with the labels right-aligned.
func (s *session) printLabels(rows [][2]string) {
	w := 0
	for _, r := range rows {
		w = max(w, len(r[0]))
	}
	for _, r := range rows {
		s.printf("  %*s: %s\n", w, r[0], r[1])
	}
}

// callerSort is the sort item of callers-callees and the call tree: the attributed flavor of the
// function list's sort metric, or the name.
func (s *session) callerSort() item {
	it := s.sortItem
	if it.kind != itemMetric {
		return item{kind: itemName}
	}
	for _, c := range s.callers() {
		if c.kind == itemMetric && c.metric == it.metric {
			return c
		}
	}
	it.flavor = attributed
	return it
}

// commandNames lists every command name, sorted, for tests and completion.
func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return names
}

// CommandNames lists er print's commands and their aliases, for shell completion.
func CommandNames() []string {
	var out []string
	for _, c := range commands {
		out = append(out, c.name)
		out = append(out, c.aliases...)
	}
	return out
}
