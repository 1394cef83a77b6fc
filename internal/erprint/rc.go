package erprint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"er/internal/report"
)

// .er.rc files, and the settings commands they hold. As gprofng's display text and er_print, er print
// reads, before its command line, the system's rc file, then ~/.er.rc, then ./.er.rc: each line a
// command of those marked '*' in help (settings: dmetrics, dsort, name, sthresh, ...). A line with
// another command is said and skipped; a line that fails is said with its file and line, and the rest
// are read.

// SystemRC is the system's rc file.
const SystemRC = "/etc/er.rc"

// rcFiles returns the rc files er print reads, in order: the system's, the home directory's, the
// current directory's (once, where the home directory is the current one).
func rcFiles() []string {
	files := []string{SystemRC}
	home, _ := os.UserHomeDir()
	if home != "" {
		files = append(files, filepath.Join(home, ".er.rc"))
	}
	if wd, err := os.Getwd(); err == nil && filepath.Clean(wd) != filepath.Clean(home) {
		files = append(files, filepath.Join(wd, ".er.rc"))
	}
	return files
}

// readRC runs the rc-file commands of each of files that exists.
func (s *session) readRC(files []string) {
	for _, name := range files {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			fmt.Fprintf(s.stderr, "er print: warning: %v\n", err)
			continue
		}
		lr := newLineReader(f, name)
		for {
			line, err := lr.next()
			if err != nil {
				if err != io.EOF {
					fmt.Fprintf(s.stderr, "er print: warning: %v\n", err)
				}
				break
			}
			if err := s.rcLine(line); err != nil {
				fmt.Fprintf(s.stderr, "er print: warning: %s:%d: %v\n", name, lr.n, err)
			}
		}
		f.Close()
	}
}

// rcLine runs one line of an rc file: a command allowed there, quietly.
func (s *session) rcLine(line string) error {
	words, err := splitWords(line)
	if err != nil || len(words) == 0 || strings.HasPrefix(words[0], "#") {
		return err
	}
	cmd, err := lookup(words[0])
	if err != nil {
		return err
	}
	if !cmd.rc {
		return fmt.Errorf("%s is not a command of an .er.rc file (those marked * in help); skipped", cmd.name)
	}
	quiet := s.quiet
	s.quiet = true
	defer func() { s.quiet = quiet }()
	return s.exec(cmd, words[1:])
}

// settingsCommands are the settings commands of rc files and the processing and experiment lists.
func settingsCommands(g []string) []*command {
	return []*command{
		{name: "dmetrics", group: g[0], usage: "dmetrics metric_spec", rc: true,
			help:    "set the default metric list, used where no metrics command chose one (items of metrics the experiments lack are left out)",
			minArgs: 1, maxArgs: 1, run: (*session).setDmetrics},
		{name: "dsort", group: g[0], usage: "dsort metric_spec", rc: true,
			help:    "set the default sort metric, used where no sort command chose one",
			minArgs: 1, maxArgs: 1, run: (*session).setDsort},
		{name: "cmetrics", group: g[1], usage: "cmetrics metric_spec",
			help:    "set the callers-callees metrics (attributed; by default those of the function list)",
			minArgs: 1, maxArgs: 1, run: (*session).setCmetrics},
		{name: "viewmode", group: g[9], usage: "viewmode {user|expert|machine}", rc: true,
			help:    "set the view mode (the modes differ for Java and OpenMP programs; for native code they show the same)",
			minArgs: 1, maxArgs: 1, run: (*session).setViewmode},
		{name: "scc", group: g[2], usage: "scc com_spec", rc: true,
			help:    "set the compiler commentary classes of source listings (er's listings have no compiler commentary)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { s.scc = a[0]; return nil }},
		{name: "dcc", group: g[2], usage: "dcc com_spec", rc: true,
			help:    "set the compiler commentary classes of disassembly listings (er's listings have no compiler commentary)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { s.dcc = a[0]; return nil }},
		{name: "cc", group: g[2], usage: "cc com_spec", rc: true,
			help:    "set the compiler commentary classes of source and disassembly listings (er's listings have no compiler commentary)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { s.scc, s.dcc = a[0], a[0]; return nil }},
		{name: "compare", group: g[0], usage: "compare {on|off|delta|ratio}", rc: true,
			help:    "compare the experiments or groups loaded in the function list, callers-callees, call tree, lines, pcs, lobjects, source and disasm: their values side by side (on), the others' differences from the first (delta), or their ratios to it (ratio)",
			minArgs: 1, maxArgs: 1, run: (*session).setCompare},
		{name: "experiment_ids", group: g[6], usage: "experiment_ids", help: "display the loaded experiments' IDs and names",
			data: true, run: (*session).experimentIDs},
		{name: "procstats", group: g[11], usage: "procstats", help: "display er print's own processing statistics: time and memory",
			run: (*session).procstats},
	}
}

// setDmetrics sets the default metric list, and the current one where none was chosen.
func (s *session) setDmetrics(args []string) error {
	if strings.Contains(":"+args[0]+":", "::") {
		return usagef("metric spec %q has an empty item", args[0])
	}
	s.dmetrics = args[0]
	if s.ms != nil && !s.metricsSet {
		s.applyDefaults()
	}
	return nil
}

// setDsort sets the default sort metric, and the current one where none was chosen.
func (s *session) setDsort(args []string) error {
	s.dsort = args[0]
	if s.ms != nil && !s.sortSet {
		s.applyDefaults()
	}
	return nil
}

// applyDefaults makes the default metric list and sort (dmetrics, dsort, or gprofng's) current.
// The items of dmetrics that name metrics the experiments lack are left out.
func (s *session) applyDefaults() {
	ms := s.ms
	spec := defaultSpec(ms)
	if s.dmetrics != "" {
		var kept []string
		for _, part := range strings.Split(s.dmetrics, ":") {
			if _, err := parseMetrics(part, ms); err == nil {
				kept = append(kept, part)
			}
		}
		if len(kept) > 0 {
			spec = strings.Join(kept, ":")
		}
	}
	s.metrics, _ = parseMetrics(spec, ms)
	s.sortItem = firstVisible(s.metrics)
	if s.dsort != "" {
		if it, err := parseSort(s.dsort, s.metrics, ms); err == nil {
			s.sortItem = it
		}
	}
}

// setCmetrics sets the callers-callees metrics: attributed, whatever flavor the items give.
func (s *session) setCmetrics(args []string) error {
	items, err := parseMetrics(args[0], s.ms)
	if err != nil {
		return err
	}
	var out []item
	seen := map[int]bool{}
	for _, it := range items {
		if it.kind != itemMetric || seen[it.metric] || it.derived != nil {
			continue
		}
		seen[it.metric] = true
		it.flavor = attributed
		out = append(out, it)
	}
	s.cmetrics = append(out, item{kind: itemName})
	if s.text() {
		s.printf("Current caller-callee metrics: %s\n", specString(s.cmetrics, s.ms))
	}
	return nil
}

// callers returns the callers-callees metrics: cmetrics' where set, else the function list's.
func (s *session) callers() []item {
	if s.cmetrics != nil {
		return s.cmetrics
	}
	return callerMetrics(s.metrics)
}

// setViewmode sets or shows the view mode.
func (s *session) setViewmode(args []string) error {
	if len(args) == 1 {
		switch args[0] {
		case "user", "expert", "machine":
			s.viewmode = args[0]
		default:
			return usagef("viewmode %q: user, expert or machine", args[0])
		}
	}
	if s.text() {
		s.printf("Viewmode set to %s\n", s.viewMode())
	}
	return nil
}

// viewMode is the view mode, user by default.
func (s *session) viewMode() string {
	if s.viewmode == "" {
		return "user"
	}
	return s.viewmode
}

// experimentIDs lists the loaded experiments by ID.
func (s *session) experimentIDs(_ []string) error {
	t := &report.Table{Columns: []report.Column{{Title: "ID", Key: "id", Kind: report.Count, Value: true}}, NameTitle: "Experiment"}
	for i, d := range s.exps {
		t.Rows = append(t.Rows, report.Row{Name: d.Dir, Cells: []report.Cell{{Value: int64(i + 1)}}})
	}
	return s.table(t)
}

// procstats prints er print's own processing statistics.
func (s *session) procstats(_ []string) error {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	s.printf("Processing statistics:\n")
	s.printf("  Elapsed time (sec.): %.3f\n", time.Since(s.started).Seconds())
	s.printf("  CPU time (sec.): %.3f\n", cpu.Seconds())
	s.printf("  Maximum resident set size (MB): %.1f\n", float64(ru.Maxrss)/1024)
	s.printf("  Go heap in use (MB): %.1f\n", float64(m.HeapInuse)/(1<<20))
	s.printf("  Experiments loaded: %d\n", len(s.exps))
	if s.prof != nil {
		s.printf("  Functions: %d; distinct call stacks: %d\n", len(s.prof.Functions), s.prof.NumStacks())
	}
	return nil
}
