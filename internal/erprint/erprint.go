// Package erprint is `er print` (er_print): its command table and interpreter, for command lines,
// scripts and interactive use.
package erprint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/experiment"
	"er/internal/gprofng"
	"er/internal/report"
	"er/internal/safedir"
)

// Prompt is printed before each command read in interactive mode.
const Prompt = "(er_print) "

// Exit codes of Main.
const (
	exitOK    = 0
	exitError = 1 // an experiment or a file could not be read or written
	exitUsage = 2 // a command or argument is wrong
)

// usageError is a mistake in a command or its arguments.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errQuit ends command processing.
var errQuit = errors.New("quit")

// env is what Main takes from the outside world; tests replace it.
type env struct {
	open        func(dir string) (*experiment.Data, error)
	openSummed  func(dir string) (*experiment.Data, error) // open with heap traces summed (summable); nil: open
	loadArchive func(exps []*experiment.Data) func(path string) (*experiment.Archive, error)
	openFile    func(path string, a *experiment.Archive) (*analysis.ObjectFile, error) // nil: no debug information or code
	loc         *time.Location
	rcFiles     func() []string // the .er.rc files to read first; nil: none
}

func defaultEnv() env {
	return env{open: openExperiment, openSummed: func(dir string) (*experiment.Data, error) {
		if gprofng.Is(dir) {
			return gprofng.Open(dir)
		}
		return experiment.OpenWith(dir, experiment.Options{Summed: true})
	}, loadArchive: buildArchive, openFile: analysis.OpenObjectFile, loc: time.Local, rcFiles: rcFiles}
}

// openExperiment opens an experiment that er collect recorded, or one that GNU gprofng did.
func openExperiment(dir string) (*experiment.Data, error) {
	if gprofng.Is(dir) {
		return gprofng.Open(dir)
	}
	return experiment.Open(dir)
}

// buildArchive returns a loader that describes a load object missing from the experiments' archives
// from the file itself, if it is still the file that was mapped (same build id when both are
// known), and saves it into each experiment that maps it, when the directory is writable.
func buildArchive(exps []*experiment.Data) func(path string) (*experiment.Archive, error) {
	return func(path string) (*experiment.Archive, error) {
		a, err := archive.Build(path)
		if err != nil {
			return nil, err
		}
		for _, d := range exps {
			for _, m := range d.Mappings {
				if m.Path != path {
					continue
				}
				if m.BuildID != "" && a.BuildID != "" && m.BuildID != a.BuildID {
					return nil, fmt.Errorf("%s has changed since the experiment (build id %s, was %s)", path, a.BuildID, m.BuildID)
				}
				// Best effort: the experiment may be read-only. Nothing beneath it is reached through a
				// link, only an experiment is written into, and only the user's own: another user's
				// names the object, and would get what er, run by root, read of it (the symbols of a
				// program only root may read).
				if root, err := safedir.OpenExperiment(d.Dir, false); err == nil {
					if ownedByUser(root) {
						_ = experiment.WriteArchiveTo(root, a)
					}
					root.Close()
				}
				break
			}
		}
		return a, nil
	}
}

// ownedByUser reports whether the directory d belongs to the user running er.
func ownedByUser(d *safedir.Dir) bool {
	fi, err := d.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uint32(os.Geteuid())
}

// Main runs er_print with args, the words after `er print`: commands, each prefixed with '-' and
// followed by its arguments, processed left to right; "-script file"; "-" for commands from
// stdin; and one or more experiment directories, which are read and aggregated first. With no
// command it reads commands from stdin, with a prompt. It returns the exit code: 0, 1 when
// something could not be read or written, 2 for a usage error.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, stdin, stdout, stderr, defaultEnv())
}

// step is one command-line action: a command with its arguments, a script, or reading stdin.
type step struct {
	cmd    *command
	args   []string
	script string
	stdin  bool
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	// Names, comments and source lines from experiments and binaries may hold terminal escape
	// sequences: what er print writes shows control characters escaped (report.SafeWriter).
	stdout, stderr = report.NewSafeWriter(stdout), report.NewSafeWriter(stderr)
	steps, dirs, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "er print: %v\n", err)
		fmt.Fprintln(stderr, "usage: er print [-command [args]]... [-script file] [-] experiment...")
		return exitUsage
	}
	s := newSession(stdin, stdout, stderr, e)
	defer s.finish()
	if e.rcFiles != nil {
		s.readRC(e.rcFiles())
	}
	needData := len(steps) == 0
	for _, st := range steps {
		if st.cmd == nil || st.cmd.data {
			needData = true
		}
		s.treeAhead = s.treeAhead || st.cmd != nil && st.cmd.name == "calltree"
	}
	if len(dirs) == 0 && needData {
		fmt.Fprintln(stderr, "er print: no experiment given")
		fmt.Fprintln(stderr, "usage: er print [-command [args]]... [-script file] [-] experiment...")
		return exitUsage
	}
	if len(dirs) > 0 {
		// Views of totals alone read heap traces summed: memory for the live blocks, not the calls.
		if summable(steps) && e.openSummed != nil {
			s.env.open = e.openSummed
		}
		// The en_desc settings given before the first command that uses the experiments choose what
		// is loaded: -en_desc off reads the founders alone, not every subexperiment first.
		s.preDesc(steps)
		if err := s.load(dirs); err != nil {
			fmt.Fprintf(stderr, "er print: %v\n", err)
			return exitError
		}
	}
	if len(steps) == 0 {
		steps = []step{{stdin: true}}
	}
	for _, st := range steps {
		var err error
		switch {
		case st.stdin:
			err = s.interactive(stdin)
		case st.script != "":
			err = s.script(st.script)
		default:
			err = s.exec(st.cmd, st.args)
		}
		if err == errQuit {
			break
		}
		if err != nil {
			return s.fail(err)
		}
	}
	return s.status
}

// parseArgs splits the command line into steps and experiment directories.
func parseArgs(args []string) ([]step, []string, error) {
	var steps []step
	var dirs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			steps = append(steps, step{stdin: true})
			continue
		case a == "--version" || a == "-V":
			a = "-version"
		case a == "--help" || a == "-h":
			a = "-help"
		case !strings.HasPrefix(a, "-") || len(a) == 1:
			dirs = append(dirs, a)
			continue
		}
		name := a[1:]
		if name == "script" {
			if i+1 >= len(args) {
				return nil, nil, usagef("-script needs a file name")
			}
			i++
			steps = append(steps, step{script: args[i]})
			continue
		}
		cmd, err := lookup(name)
		if err != nil {
			return nil, nil, err
		}
		st := step{cmd: cmd}
		need := cmd.minArgs
		if cmd.rest {
			need = max(need, 1) // "-filters none" on the command line
		}
		for len(st.args) < need {
			if i+1 >= len(args) {
				return nil, nil, usagef("-%s needs an argument: %s", cmd.name, cmd.usage)
			}
			i++
			st.args = append(st.args, args[i])
		}
		// Optional arguments are taken only when they are numbers ("fsingle f 2", "header 1"),
		// so that an experiment name is never taken for one.
		for len(st.args) < cmd.maxArgs && i+1 < len(args) && isNumber(args[i+1]) {
			i++
			st.args = append(st.args, args[i])
		}
		steps = append(steps, st)
	}
	return steps, dirs, nil
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// session is the state of one er_print run.
type session struct {
	treeAhead bool // build each profile's call tree in the background: a command will show it
	env       env
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	out       io.Writer // where views go: stdout, or the file of outfile/appendfile
	file      *os.File  // the open outfile, if any
	status    int       // worst exit code so far

	args []string   // the experiments and groups as given, for add_exp and drop_exp
	desc descFilter // en_desc
	dirs []string   // the loaded experiments' directories, founders followed by their descendants
	exps []*experiment.Data
	prof *analysis.Profile
	// base is the profile of all events: a selection refilters it (analysis.Profile.Refilter)
	// rather than resolving every stack again, so the load objects, their indices and the warnings
	// about symbols are the same under every selection. It holds for the experiments, inline
	// setting in baseKey.
	base       *analysis.Profile
	baseKey    baseKey
	baseEvents bool // base has its EventList

	ms       []analysis.Metric // the metrics of the loaded experiments' data (analysis.MetricsFor)
	metrics  []item            // the function list's metric list
	sortItem item
	limit    int
	style    analysis.NameStyle
	soname   bool
	mode     report.Mode
	view     *viewOut // in CSV and JSON, what the running command has printed (output.go)
	doc      int      // tables (CSV) or entries (JSON) written to the current output
	fragment []int    // the call-stack fragment of cprepend, cappend, crmfirst, crmlast
	names    []string // function names in the current style, filled as needed
	depth    int      // script nesting
	warned   int      // warnings of the profile printed so far

	foldInlines bool        // inline off: code inlined into a function is that function's
	sthresh     float64     // percent of the largest value that marks a hot source line
	dthresh     float64     // the same for instructions
	tthresh     float64     // percent of the total below which calltree leaves a call out
	searchPath  []string    // where source files are looked for; "$expts" is the experiments' directories
	pathmaps    [][2]string // prefixes of recorded paths, and what replaces them
	sourceCache map[string]*sourceFile

	sel     selection                     // sample_select, thread_select, ..., filters (select.go)
	indexes map[expKey]*analysis.ExpIndex // threads and samples of the loaded experiments

	// For Engine: capture, when set, takes the tables of views instead of the output; keepEvents
	// keeps the profile's event list; pick, when not 0, is the function (plus 1) that the next
	// command taking a function name acts on, whatever its argument.
	capture    func(*report.Table)
	keepEvents bool
	pick       int
	// private (Engine.Fork): the unfiltered profile is refiltered too, so that no profile this
	// session uses is another's. ctx, when set, stops a filter's evaluation (Engine.SetContext).
	private bool
	ctx     context.Context

	// rc.go: the default metric list and sort (dmetrics, dsort) and whether metrics and sort chose
	// others; the callers-callees metrics (cmetrics; nil: the function list's); viewmode, scc, dcc;
	// quiet while an rc file runs; when the session started (procstats).
	dmetrics, dsort     string
	metricsSet, sortSet bool
	cmetrics            []item
	viewmode, scc, dcc  string
	quiet               bool
	started             time.Time

	// compare.go: the compare mode ("", on, delta, ratio), and each group's profile.
	compare     string
	cmpProfiles []*analysis.Profile
	objVis      objectVisibility // objvis.go
}

func newSession(stdin io.Reader, stdout, stderr io.Writer, e env) *session {
	s := &session{env: e, stdin: stdin, stdout: stdout, stderr: stderr, out: stdout,
		sthresh: defaultThreshold, dthresh: defaultThreshold, tthresh: defaultTreeThreshold, searchPath: []string{"$expts", "."},
		started: time.Now()}
	s.setDefaultMetrics(analysis.ClockMetrics)
	return s
}

// setDefaultMetrics makes ms the available metrics, with their default metric list, sorted by its
// first metric shown.
func (s *session) setDefaultMetrics(ms []analysis.Metric) {
	s.ms = ms
	s.applyDefaults()
	s.metricsSet, s.sortSet, s.cmetrics = false, false, nil
}

// load reads the experiments (with their descendants' subexperiments, as en_desc says; a group
// file gives its experiments) and prints their warnings.
func (s *session) load(args []string) error {
	for _, arg := range args {
		dirs, exps, err := s.expand(arg)
		if err != nil {
			return err
		}
		lw := loadWarnings(dirs, exps)
		for i, d := range exps {
			for _, w := range lw[i] {
				fmt.Fprintf(s.stderr, "er print: warning: %s\n", w)
			}
			for _, e := range d.Log.Events { // lost data makes every view fall short: say so in each
				if e.Kind == "warning" && isLost(e) {
					fmt.Fprintf(s.stderr, "er print: warning: %s: %s\n", dirs[i], e.Text)
				}
			}
		}
		s.args = append(s.args, arg)
		s.dirs = append(s.dirs, dirs...)
		s.exps = append(s.exps, exps...)
	}
	s.setDefaultMetrics(analysis.MetricsFor(s.exps))
	return nil
}

// profile analyses the experiments the first time it is needed.
func (s *session) profile() (*analysis.Profile, error) {
	if s.prof != nil {
		return s.prof, nil
	}
	if len(s.exps) == 0 {
		return nil, usagef("no experiment is loaded")
	}
	key := baseKey{exps: s.exps, fold: s.foldInlines, vis: s.objVis.key(), mode: s.analysisMode()}
	if s.base != nil && !s.baseKey.equal(key) {
		s.base = nil
	}
	filter := s.eventFilter()
	var p *analysis.Profile
	var err error
	if s.base == nil {
		opts := analysis.Options{OpenFile: s.env.openFile, FoldInlines: s.foldInlines, Events: s.keepEvents, Visibility: s.objVis.visibilityFunc(),
			ViewMode: s.analysisMode()}
		if opts.OpenFile != nil { // copies that er archive kept stand in for missing or changed files
			opts.OpenFile = analysis.WithArchivedCopies(opts.OpenFile, s.dirs)
		}
		if s.env.loadArchive != nil {
			opts.LoadArchive = s.env.loadArchive(s.exps)
		}
		if p, err = analysis.Analyze(s.exps, opts); err != nil {
			return nil, err
		}
		s.base, s.baseKey, s.baseEvents, s.names = p, key, s.keepEvents, nil // names by function number
		s.baseKey.exps = slices.Clone(s.exps)
	}
	p = s.base
	if filter != nil || s.keepEvents && !s.baseEvents || s.private {
		var stopped func() error
		filter, stopped = s.stoppable(filter)
		if p, err = s.base.Refilter(filter, s.keepEvents); err != nil {
			return nil, err
		}
		if err := stopped(); err != nil {
			return nil, err
		}
	}
	if len(p.Metrics) != len(s.ms) {
		return nil, fmt.Errorf("internal error: the profile has %d metrics, the session %d", len(p.Metrics), len(s.ms))
	}
	s.prof, s.warned = p, 0
	s.newWarnings()
	if s.treeAhead {
		go p.CallTree() // on the other core, while the views before it run
	}
	return p, nil
}

// stopCheck is how many events a filter evaluates between two looks at the session's context.
const stopCheck = 1 << 12

// stoppable wraps filter (nil: none) so that it stops evaluating once the session's context is
// done: from then on it keeps no event, and stopped says why the profile it made is to be thrown
// away. Without a context it returns filter unchanged.
func (s *session) stoppable(filter func(*analysis.EventInfo) bool) (_ func(*analysis.EventInfo) bool, stopped func() error) {
	ctx := s.ctx
	if ctx == nil || filter == nil {
		return filter, func() error { return nil }
	}
	var n int
	var err error
	return func(ev *analysis.EventInfo) bool {
			if err != nil {
				return false
			}
			if n++; n%stopCheck == 1 {
				if err = ctx.Err(); err != nil {
					return false
				}
			}
			return filter(ev)
		}, func() error {
			if err != nil {
				return fmt.Errorf("the analysis was stopped: %w", err)
			}
			return nil
		}
}

// loadWarnings gives each experiment's warnings as read, each after its directory. That a
// collection is live, or was not finished, is said of the founder experiment once, with how many
// of its subexperiments are so, not again for each.
func loadWarnings(dirs []string, exps []*experiment.Data) [][]string {
	out := make([][]string, len(exps))
	founder := map[string]int{} // a founder's directory: its index
	for i, d := range exps {
		if d.Log.Lineage == "" {
			founder[filepath.Clean(dirs[i])] = i
		}
	}
	same := map[int]int{} // a founder's index: its subexperiments that are unfinished as it is
	for i, d := range exps {
		for _, w := range d.Warnings {
			if experiment.IsUnfinished(w) && d.Log.Lineage != "" {
				if f, ok := founder[experiment.FounderDir(dirs[i])]; ok && slices.Contains(exps[f].Warnings, w) {
					same[f]++
					continue
				}
			}
			out[i] = append(out[i], dirs[i]+": "+w)
		}
	}
	for f, n := range same {
		for j, w := range out[f] {
			if text := strings.TrimPrefix(w, dirs[f]+": "); experiment.IsUnfinished(text) {
				out[f][j] = fmt.Sprintf("%s and %d of its subexperiments: %s", dirs[f], n, text)
			}
		}
	}
	return out
}

// baseKey is what a session's unfiltered profile was computed for.
type baseKey struct {
	exps []*experiment.Data
	fold bool
	vis  string // objectVisibility.key
	mode analysis.ViewMode
}

func (k baseKey) equal(o baseKey) bool {
	return k.fold == o.fold && k.vis == o.vis && k.mode == o.mode && slices.Equal(k.exps, o.exps)
}

// newWarnings prints the warnings the profile has added since the last call: files of load
// objects are read when a view first needs them.
func (s *session) newWarnings() {
	if s.prof == nil {
		return
	}
	for _, w := range s.prof.Warnings[s.warned:] {
		fmt.Fprintf(s.stderr, "er print: warning: %s\n", w)
	}
	s.warned = len(s.prof.Warnings)
}

// fail reports err on stderr and returns its exit code.
func (s *session) fail(err error) int {
	fmt.Fprintf(s.stderr, "er print: %v\n", err)
	code := exitError
	var ue *usageError
	if errors.As(err, &ue) {
		code = exitUsage
	}
	s.status = max(s.status, code)
	return s.status
}

// exec runs one command.
func (s *session) exec(cmd *command, args []string) error {
	if len(args) < cmd.minArgs || cmd.maxArgs >= 0 && len(args) > cmd.maxArgs {
		return usagef("usage: %s", cmd.usage)
	}
	if cmd.data && len(s.exps) == 0 {
		return usagef("%s: no experiment is loaded", cmd.name)
	}
	if aggregatedInCompare[cmd.name] && s.comparing() {
		// gprofng says such a view is not available when comparing; er shows the experiments together,
		// and says so.
		fmt.Fprintf(s.stderr, "er print: note: %s does not compare: it shows the experiments together (compare covers %s)\n",
			cmd.name, comparedViews)
	}
	return s.runView(cmd, args)
}

// execLine runs one line of a script or of interactive input.
func (s *session) execLine(line string) error {
	words, err := splitWords(line)
	if err != nil {
		return err
	}
	if len(words) == 0 || strings.HasPrefix(words[0], "#") {
		return nil
	}
	cmd, err := lookup(words[0])
	if err != nil {
		return err
	}
	args := words[1:]
	if cmd.rest && len(args) > 0 {
		args = []string{restArg(line)}
	}
	if cmd.maxArgs >= 0 && len(args) > cmd.maxArgs && cmd.joinArgs {
		args = joinName(args)
	}
	return s.exec(cmd, args)
}

// restArg is the argument of a command that takes the rest of its line (filters, the selections):
// the line after the command's name, as written but with each run of blanks outside double quotes
// made one space, so that FNAME("a  b") keeps its string; or, when the rest is one string in
// double quotes, as gprofng's scripts write an expression with spaces, that string, \" and \\ in
// it being " and \.
func restArg(line string) string {
	line = strings.TrimLeft(line, " \t\r")
	if i := strings.IndexAny(line, " \t\r"); i >= 0 {
		line = line[i:]
	} else {
		line = ""
	}
	rest := strings.TrimSpace(line)
	if len(rest) >= 2 && rest[0] == '"' {
		var b strings.Builder
		for i := 1; i < len(rest); i++ {
			switch c := rest[i]; {
			case c == '\\' && i+1 < len(rest) && (rest[i+1] == '"' || rest[i+1] == '\\'):
				b.WriteByte(rest[i+1])
				i++
			case c == '"':
				if i == len(rest)-1 {
					return b.String()
				}
				i = len(rest) // a quote before the end: not one string
			default:
				b.WriteByte(c)
			}
		}
	}
	var b strings.Builder
	quoted, blank := false, false
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c == '"' && (i == 0 || rest[i-1] != '\\'):
			quoted = !quoted
		case !quoted && (c == ' ' || c == '\t' || c == '\r'):
			blank = true
			continue
		}
		if blank {
			b.WriteByte(' ')
			blank = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// joinName rejoins a function name that has spaces ("f(int, char)"), keeping a final number as N.
func joinName(args []string) []string {
	if n := len(args); n > 1 && isNumber(args[n-1]) {
		return []string{strings.Join(args[:n-1], " "), args[n-1]}
	}
	return []string{strings.Join(args, " ")}
}

// splitWords splits a command line at spaces; double quotes group words.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (r == ' ' || r == '\t' || r == '\r'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, usagef("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// interactive reads commands from r, one a line, after a prompt, until quit or the end of input.
// A failing command is reported and the next one read.
func (s *session) interactive(r io.Reader) error {
	lr := newLineReader(r, "standard input")
	for {
		fmt.Fprint(s.stdout, Prompt)
		line, err := lr.next()
		if err == io.EOF {
			fmt.Fprintln(s.stdout)
			return nil
		}
		if err != nil {
			fmt.Fprintln(s.stdout)
			return err
		}
		err = s.execLine(line)
		if err == errQuit {
			return errQuit
		}
		if err != nil {
			s.fail(err)
		}
	}
}

// maxLine is the longest line of a script or of standard input, in bytes.
const maxLine = 1 << 20

// lineReader reads commands a line at a time, a line at most maxLine bytes long, so that an endless
// line (/dev/zero) ends with an error instead of taking all memory.
type lineReader struct {
	r    *bufio.Reader
	name string // the input, for errors: a file name, "standard input"
	n    int    // lines read
}

func newLineReader(r io.Reader, name string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), name: name}
}

// next returns the next line without its end (\n or \r\n), or io.EOF after the last.
func (lr *lineReader) next() (string, error) {
	var b []byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(b)+len(chunk) > maxLine+1 || len(b)+len(chunk) == maxLine+1 && chunk[len(chunk)-1] != '\n' {
			return "", fmt.Errorf("%s: line %d is longer than %d bytes; er print reads commands a line at a time (is it a script?)",
				lr.name, lr.n+1, maxLine)
		}
		b = append(b, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(b) > 0 { // a last line without its end
			err = nil
		}
		if err != nil {
			if err != io.EOF {
				err = fmt.Errorf("%s: reading line %d: %w", lr.name, lr.n+1, err)
			}
			return "", err
		}
		lr.n++
		b = bytes.TrimSuffix(b, []byte("\n"))
		return string(bytes.TrimSuffix(b, []byte("\r"))), nil
	}
}

// openScript opens script file name without blocking, so that a FIFO with no writer is an empty
// script rather than a wait for ever (its reads still wait for what a writer writes: -script <(...)
// works). A script is named on purpose, so it may be any file: one of an endless line, or of
// lines that are no commands (/dev/zero, /dev/urandom), stops at its first bad line.
func openScript(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

// script runs the commands of a file; the first failure stops it.
func (s *session) script(name string) error {
	if s.depth >= 16 {
		return usagef("script %s: scripts nested too deeply", name)
	}
	f, err := openScript(name)
	if err != nil {
		return fmt.Errorf("script: %w", err)
	}
	defer f.Close()
	s.depth++
	defer func() { s.depth-- }()
	lr := newLineReader(f, name)
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.execLine(line); err != nil {
			if err == errQuit {
				return err
			}
			var ue *usageError
			if errors.As(err, &ue) {
				return usagef("%s:%d: %v", name, lr.n, err)
			}
			return fmt.Errorf("%s:%d: %w", name, lr.n, err)
		}
	}
}

// setOutput sends views to w (a file when f is not nil), closing an earlier outfile.
func (s *session) setOutput(w io.Writer, f *os.File) error {
	s.endDoc(false)
	err := s.closeOut()
	if f != nil { // an outfile: escaped as standard output is
		w = report.NewSafeWriter(f)
	}
	s.out, s.file = w, f
	return err
}

func (s *session) closeOut() error {
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	s.out = s.stdout
	return err
}

// printf writes to the current output (in CSV and JSON, to what the command prints: output.go).
func (s *session) printf(format string, args ...any) {
	if s.quiet {
		return
	}
	if s.view != nil {
		s.view.addText(fmt.Sprintf(format, args...))
		return
	}
	fmt.Fprintf(s.out, format, args...)
}

// table writes a table to the current output in the current print mode; in text mode a blank
// line follows it. In CSV and JSON it is written with what else the command prints (output.go).
func (s *session) table(t *report.Table) error {
	if s.capture != nil {
		s.capture(t)
		return nil
	}
	if s.view != nil {
		s.view.addTable(t)
		return nil
	}
	if err := report.Write(s.out, t, s.mode); err != nil {
		return err
	}
	if s.text() {
		s.printf("\n")
	}
	return nil
}

// text reports whether views are printed for people (not CSV or JSON).
func (s *session) text() bool { return s.mode.Kind == report.TextMode }
