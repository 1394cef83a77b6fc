package erprint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/experiment"
	"er/internal/report"
)

// Engine is an er_print session driven by a program instead of by typed or scripted commands:
// the back end of the Analyzer web GUI. Views come back as tables, with each function row
// linked to its function (report.Row.ID); messages come back as text. An Engine is not safe for
// concurrent use.
type Engine struct {
	s      *session
	out    bytes.Buffer
	tables []*report.Table
}

// Result is what a command produced: its tables, and the text it printed.
type Result struct {
	Tables []*report.Table
	Text   string
}

// Column is one metric column of the function list.
type Column struct {
	report.Column
	Metric    int  // index into the profile's metrics
	Inclusive bool // inclusive; otherwise exclusive
}

// NewEngine loads the experiments and groups named by args, with their descendants, as er print
// does. The warnings of the experiments are in Warnings.
func NewEngine(args []string) (*Engine, error) {
	return newEngine(args, defaultEnv())
}

func newEngine(args []string, e env) (*Engine, error) {
	eng := &Engine{}
	s := newSession(strings.NewReader(""), &eng.out, &eng.out, e)
	s.mode = report.Mode{Kind: report.JSONMode}
	s.capture = func(t *report.Table) { eng.tables = append(eng.tables, t) }
	s.keepEvents = true
	s.treeAhead = true // the Analyzer's call tree and flame graph
	eng.s = s
	if err := s.load(args); err != nil {
		return nil, err
	}
	return eng, nil
}

// Fork returns a new Engine over the same loaded experiments that shares e's analysis of them (the
// profile of every event, which each selection refilters) and starts from e's metrics, sort and
// selection; from then on each has its own. Forks may be used concurrently, one goroutine each:
// a fork's profiles are its own (even the unfiltered one is a copy), so that what one fork's views
// compute on first use (lines, instructions, inlined functions) never races with another's reads.
// e must not be in use while it is forked.
func (e *Engine) Fork() *Engine {
	ne := &Engine{}
	s := *e.s
	s.stdin, s.stdout, s.stderr, s.out, s.file = strings.NewReader(""), &ne.out, &ne.out, &ne.out, nil
	s.capture = func(t *report.Table) { ne.tables = append(ne.tables, t) }
	s.metrics, s.cmetrics = slices.Clone(s.metrics), slices.Clone(s.cmetrics)
	s.prof, s.names, s.fragment, s.cmpProfiles, s.view, s.doc = nil, nil, nil, nil, nil, 0
	s.indexes, s.sourceCache = nil, map[string]*sourceFile{}
	s.private, s.ctx = true, nil
	if s.sel.filterText != "" { // the compiled filter remembers values per stack: compile it again
		c, err := compileFilter(s.sel.filterText, &filterEnv{style: &s.style, ctx: &s.ctx})
		if err == nil {
			s.sel.filter = c.eval
		}
	}
	ne.s = &s
	return ne
}

// Release drops the profiles e computed for its selection (they are computed again when next
// needed), keeping the selection, metrics and sort: what an idle view of the Analyzer keeps.
func (e *Engine) Release() {
	e.s.prof, e.s.names, e.s.cmpProfiles, e.s.warned = nil, nil, nil, 0
}

// SetContext makes ctx (nil: none) the context of the analyses e does from now on: when it is
// done, a filter being evaluated stops and the command that needed it fails with ctx's error.
func (e *Engine) SetContext(ctx context.Context) { e.s.ctx = ctx }

// Exec runs one command line, as in a script ("metrics e.%totalcpu:name", "filters TSTAMP < 5e9").
func (e *Engine) Exec(line string) (Result, error) {
	return e.run(func() error { return e.s.execLine(line) })
}

// ExecFunc runs a command whose argument is a function (csingle, cprepend, cappend, fsingle,
// source, disasm) on function f, an index into the current profile's functions.
func (e *Engine) ExecFunc(cmd string, f int) (Result, error) {
	return e.run(func() error {
		c, err := lookup(cmd)
		if err != nil {
			return err
		}
		p, err := e.s.profile()
		if err != nil {
			return err
		}
		if f < 0 || f >= len(p.Functions) {
			return usagef("%s: there is no function %d (the profile has %d)", cmd, f, len(p.Functions))
		}
		e.s.pick = f + 1
		defer func() { e.s.pick = 0 }()
		return e.s.exec(c, []string{fmt.Sprintf("#%d", f)})
	})
}

// View runs the view named cmd (functions, thread_list, leaks, statistics, ...), which takes no
// argument, and returns its tables: the Analyzer's way in, where Exec parses a command line.
func (e *Engine) View(cmd string) (Result, error) {
	return e.run(func() error {
		c, err := lookup(cmd)
		if err != nil {
			return err
		}
		return e.s.exec(c, nil)
	})
}

// IndexObjects is the view of the index objects of type typ (indxobj typ: "Threads", "OMP_preg").
func (e *Engine) IndexObjects(typ string) (Result, error) {
	return e.run(func() error { return e.s.indxobj([]string{typ}) })
}

// SetSort sorts the views by the metric column key ("e.totalcpu", "i.user") or by "name".
func (e *Engine) SetSort(key string) error {
	_, err := e.run(func() error { return e.s.setSort([]string{key}) })
	return err
}

// SetViewMode sets the view mode: "user", "expert" or "machine" (viewmode), whose frame passes the
// stacks of every view go through.
func (e *Engine) SetViewMode(mode string) error {
	_, err := e.run(func() error { return e.s.setViewmode([]string{mode}) })
	return err
}

// ViewMode is the view mode: "user" unless set.
func (e *Engine) ViewMode() string { return e.s.viewMode() }

// SetMetrics sets the metric list from spec ("e.%totalcpu:i.%totalcpu:name", or "default").
func (e *Engine) SetMetrics(spec string) error {
	_, err := e.run(func() error { return e.s.setMetrics([]string{spec}) })
	return err
}

// SetFilter keeps only the events for which the filter expression expr is true ("" keeps all) and
// computes the profile of those events. When the expression is wrong or the profile cannot be
// computed (the context is done), the selection and the profile stay what they were.
func (e *Engine) SetFilter(expr string) error {
	if expr == "" {
		expr = "none"
	}
	s := e.s
	sel, prof, frag, cmp, warned := s.sel, s.prof, s.fragment, s.cmpProfiles, s.warned
	_, err := e.run(func() error {
		if err := s.filters([]string{expr}); err != nil {
			return err
		}
		_, err := s.profile()
		return err
	})
	if err != nil {
		s.sel, s.prof, s.fragment, s.cmpProfiles, s.warned = sel, prof, frag, cmp, warned
	}
	return err
}

func (e *Engine) run(fn func() error) (Result, error) {
	e.out.Reset()
	e.tables = nil
	err := fn()
	r := Result{Tables: e.tables, Text: e.out.String()}
	e.tables = nil
	e.out.Reset()
	return r, err
}

// Profile returns the profile of the loaded experiments under the current selection, computed
// on first use; its EventList is filled.
func (e *Engine) Profile() (*analysis.Profile, error) { return e.s.profile() }

// FuncName is function f's name in the current name style.
func (e *Engine) FuncName(f int) string {
	p, err := e.s.profile()
	if err != nil || f < 0 || f >= len(p.Functions) {
		return ""
	}
	return e.s.funcName(p, f)
}

// Columns are the function list's metric columns, as the metrics command set them.
func (e *Engine) Columns() []Column {
	var out []Column
	for _, it := range shown(e.s.metrics) {
		if it.kind != itemMetric {
			continue
		}
		out = append(out, Column{Column: it.column(e.s.ms), Metric: it.metric, Inclusive: it.flavor == inclusive})
	}
	return out
}

// SortMetric is the metric the function list is sorted by, and whether it is inclusive; -1 when
// it is sorted by something else (name, size, address).
func (e *Engine) SortMetric() (metric int, incl bool) {
	if e.s.sortItem.kind != itemMetric {
		return -1, false
	}
	return e.s.sortItem.metric, e.s.sortItem.flavor == inclusive
}

// SortKey is the key of the column the function list is sorted by ("e.totalcpu", "name").
func (e *Engine) SortKey() string { return e.s.sortKey() }

// Metrics are the metrics of the loaded experiments' data.
func (e *Engine) Metrics() []analysis.Metric { return e.s.ms }

// Experiments are the loaded experiments, founders followed by their descendants, and their
// directories.
func (e *Engine) Experiments() ([]string, []*experiment.Data) { return e.s.dirs, e.s.exps }

// Index is the index of loaded experiment i (from 0): its threads and samples.
func (e *Engine) Index(i int) *analysis.ExpIndex { return e.s.expIndex(i) }

// Filter is the current filter expression; "" when there is none.
func (e *Engine) Filter() string { return e.s.sel.filterText }

// Warnings are the warnings of the experiments as loaded and of the profile so far.
func (e *Engine) Warnings() []string {
	var out []string
	for _, ws := range loadWarnings(e.s.dirs, e.s.exps) {
		out = append(out, ws...)
	}
	if e.s.prof != nil {
		out = append(out, e.s.prof.Warnings...)
	}
	return out
}

// WriteText runs a command line and copies what it printed as text to w (tables in text mode).
func (e *Engine) WriteText(w io.Writer, line string) error {
	mode, capture := e.s.mode, e.s.capture
	e.s.mode, e.s.capture = report.Mode{Kind: report.TextMode}, nil
	defer func() { e.s.mode, e.s.capture = mode, capture }()
	r, err := e.run(func() error { return e.s.execLine(line) })
	io.WriteString(w, r.Text)
	return err
}

// MetricSpec is the function list's metric list, as the metrics command takes it.
func (e *Engine) MetricSpec() string { return specString(e.s.metrics, e.s.ms) }

// NameIn is function f's name in profile p, an earlier profile of this engine or the current
// one, in the current name style.
func (e *Engine) NameIn(p *analysis.Profile, f int) string { return e.s.makeName(p, f) }

// SourcesRead lists the source files whose lines the session has read (for a source or a
// disassembly view), as found: the recorded path, a path map's or the archived copy.
func (e *Engine) SourcesRead() []string {
	var out []string
	for _, sf := range e.s.sourceCache {
		if sf.path != "" && sf.lines != nil {
			out = append(out, sf.path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// KeepEvents says whether the profiles computed from now on fill their EventList.
func (e *Engine) KeepEvents(keep bool) { e.s.keepEvents = keep }

// CompareTree returns the call trees of the experiments or groups loaded, analysed each on its own
// under the current filter and merged by the path of function names from the root (node 0, <Total>;
// a parent before its children), and the groups' names: what compare's call tree shows, and the
// Analyzer's differential flame graph. The nodes' vectors are in the order of Metrics.
func (e *Engine) CompareTree() ([]CompareNode, []string, error) {
	ps, names, err := e.s.compareProfiles()
	if err != nil {
		return nil, nil, err
	}
	if len(ps) < 2 {
		return nil, nil, fmt.Errorf("compare needs two or more experiments or groups; %d loaded", len(ps))
	}
	return e.s.compareTree(ps), names, nil
}
