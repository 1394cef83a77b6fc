package erprint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"er/internal/regfile"
	"er/internal/report"

	"er/internal/analysis"
)

// .er.rc files, and the settings commands they hold. As gprofng's display text and er_print, er print
// reads, before its command line, the system's rc file, then ~/.er.rc, then ./.er.rc: each line a
// command of those marked '*' in help (settings: dmetrics, dsort, name, sthresh, ...). A line with
// another command is said and skipped; a line that fails is said with its file and line, and the rest
// are read. er print says on stderr, once, each rc file it read and what it set (gprofng says
// "Processed FILE for default settings"), so that a ./.er.rc does not change its output unseen.
//
// An rc file is read only if it is a regular file (opened without blocking, so that a FIFO or a
// device cannot hang er print or feed it for ever), of at most maxRCSize bytes, owned by the user
// running er print or by root (or, for root under sudo, by the user who ran sudo: SUDO_UID, as git
// trusts a repository), and not writable by every user; otherwise it is said and not read. A
// directory of another user (a ./.er.rc where root runs er print in a user's directory) thus
// cannot change what er print shows. A shell reads its rc files without such checks, and so does
// gprofng (which hangs on a FIFO ./.gprofng.rc and reads /dev/urandom for ever); but a shell reads
// no rc file from the current directory, and git refuses a repository another user owns.

// SystemRC is the system's rc file.
const SystemRC = "/etc/er.rc"

// maxRCSize bounds an rc file: a few settings commands. A larger file is not read.
const maxRCSize = 1 << 20

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

// readRC runs the rc-file commands of each of files that exists and may be read (openRC), and
// says which it read and what they set.
func (s *session) readRC(files []string) {
	for _, name := range files {
		f, err := openRC(name)
		if err != nil {
			fmt.Fprintf(s.stderr, "er print: warning: %v\n", err)
			continue
		}
		if f == nil {
			continue
		}
		var set []string
		lr := newLineReader(io.LimitReader(f, maxRCSize), name)
		for {
			line, err := lr.next()
			if err != nil {
				if err != io.EOF {
					fmt.Fprintf(s.stderr, "er print: warning: %v\n", err)
				}
				break
			}
			ran, err := s.rcLine(line)
			if err != nil {
				fmt.Fprintf(s.stderr, "er print: warning: %s:%d: %v\n", name, lr.n, err)
			} else if ran != "" {
				set = append(set, ran)
			}
		}
		f.Close()
		fmt.Fprintf(s.stderr, "er print: read %s: %s\n", name, rcSummary(set))
	}
}

// rcSummary says what the commands of an rc file set: the first few, and how many more.
func rcSummary(set []string) string {
	const shown = 6
	switch {
	case len(set) == 0:
		return "no settings"
	case len(set) > shown:
		return strings.Join(set[:shown], "; ") + fmt.Sprintf("; and %d more", len(set)-shown)
	}
	return strings.Join(set, "; ")
}

// openRC opens rc file name, if it is one that er print reads: nil where there is no such file; an
// error, naming the file, where it is not read.
func openRC(name string) (*os.File, error) {
	f, fi, err := regfile.Open(name)
	var nr *regfile.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &nr):
		return nil, fmt.Errorf("%s: not a regular file but %s; not read (an rc file is a text file of settings commands: remove it, or put one there)", name, regfile.Kind(nr.Mode))
	case err != nil:
		return nil, fmt.Errorf("%v; not read", err)
	}
	why := ""
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Size() > maxRCSize:
		why = fmt.Sprintf("%d bytes, more than an rc file of settings commands holds (%d); not read (is it an rc file?)", fi.Size(), maxRCSize)
	case st != nil && !trustedOwner(st.Uid):
		you := "root, who runs er print"
		if euid := os.Geteuid(); euid != 0 {
			you = "you (" + strings.Replace(userName(uint32(euid)), " (uid", ", uid", 1) + " or root"
		}
		why = fmt.Sprintf("owned by %s, not by %s; not read: an rc file changes what er print shows, and another user's must not (chown it, or remove it)",
			userName(st.Uid), you)
	case fi.Mode().Perm()&0o002 != 0:
		why = "writable by every user; not read: anyone may have written it (chmod o-w it)"
	}
	if why != "" {
		f.Close()
		return nil, fmt.Errorf("%s: %s", name, why)
	}
	return f, nil
}

// trustedOwner says whether an rc file owned by uid may be read: the user running er print owns it,
// or root does, or the user who ran sudo where er print runs as root under sudo.
func trustedOwner(uid uint32) bool {
	euid := os.Geteuid()
	if uid == 0 || int64(uid) == int64(euid) {
		return true
	}
	if euid == 0 {
		if sudo, err := strconv.ParseUint(os.Getenv("SUDO_UID"), 10, 32); err == nil && uint32(sudo) == uid {
			return true
		}
	}
	return false
}

// userName names user uid: "alice (uid 1000)", or "uid 1000" where it has no name.
func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

// rcLine runs one line of an rc file: a command allowed there, quietly. It returns the command as it
// ran ("" for a blank line or a comment).
func (s *session) rcLine(line string) (string, error) {
	words, err := splitWords(line)
	if err != nil || len(words) == 0 || strings.HasPrefix(words[0], "#") {
		return "", err
	}
	cmd, err := lookup(words[0])
	if err != nil {
		return "", err
	}
	if !cmd.rc {
		return "", fmt.Errorf("%s is not a command of an .er.rc file (those marked * in help); skipped", cmd.name)
	}
	quiet := s.quiet
	s.quiet = true
	defer func() { s.quiet = quiet }()
	if err := s.exec(cmd, words[1:]); err != nil {
		return "", err
	}
	return strings.Join(append([]string{cmd.name}, words[1:]...), " "), nil
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
			if args[0] != s.viewMode() {
				s.prof, s.names, s.fragment, s.cmpProfiles = nil, nil, nil, nil // the stacks change
			}
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

// analysisMode is the view mode for Analyze.
func (s *session) analysisMode() analysis.ViewMode {
	m, _ := analysis.ParseViewMode(s.viewMode())
	return m
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
