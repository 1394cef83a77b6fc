package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"er/internal/analysis"
	"er/internal/erprint"
	"er/internal/report"
)

// The tables the page receives are er print's JSON tables (printmode json gives the same fields).
type (
	table  = report.JSONTable
	column = report.JSONColumn
	row    = report.JSONRow
	cell   = report.JSONCell
)

// toTable converts a table of er print's views.
func toTable(t *report.Table) *table { return report.ToJSON(t) }

// oneTable runs a command that prints one table.
func (s *Server) oneTable(res erprint.Result, err error) (*table, error) {
	if err != nil {
		return nil, err
	}
	if len(res.Tables) == 0 {
		return &table{Columns: []column{}, Rows: []row{}, Text: res.Text}, nil
	}
	t := toTable(res.Tables[0])
	t.Text = res.Text
	return t, nil
}

// funcParam reads the function parameter f.
func (s *Server) funcParam(r *http.Request) (int, error) {
	p, err := s.eng.Profile()
	if err != nil {
		return 0, err
	}
	if r.URL.Query().Get("f") == "" {
		return 0, badRequest("parameter f is missing: the function, 0 to %d", len(p.Functions)-1)
	}
	f, err := intParam(r, "f", -1, 0, int64(len(p.Functions))-1)
	if err != nil {
		return 0, err
	}
	return int(f), nil
}

// defaultLimit is how many functions the function list sends, at most, unless told.
const defaultLimit = 2000

// functions is the function list: sorted by the sort parameter (a column key or "name"), the
// rows whose names contain q (case-insensitive; a regular expression when it starts with '/'),
// with <Total> first, at most limit rows.
func (s *Server) functions(r *http.Request) (any, error) {
	q := r.URL.Query()
	limit, err := intParam(r, "limit", defaultLimit, 0, maxLimit)
	if err != nil {
		return nil, err
	}
	match, err := nameMatcher(q.Get("q"))
	if err != nil {
		return nil, err
	}
	if key := q.Get("sort"); key != "" && key != s.eng.SortKey() {
		if !isSortKey(key) {
			return nil, badRequest("parameter sort=%s is not a column key (e.totalcpu, i.user, name, ...)", clip(key))
		}
		if err := s.eng.SetSort(key); err != nil {
			return nil, badRequest("parameter sort=%s: %v", clip(key), err)
		}
		if err := s.settle(); err != nil {
			return nil, err
		}
	}
	t, err := s.oneTable(s.eng.View("functions"))
	if err != nil {
		return nil, err
	}
	t.Sort = s.eng.SortKey()
	if match != nil {
		kept := t.Rows[:0]
		for i, r := range t.Rows {
			if i == 0 || match(r.Name) {
				kept = append(kept, r)
			}
		}
		t.Rows = kept
	}
	t.Matched = len(t.Rows)
	if limit > 0 && int64(len(t.Rows)) > limit+1 {
		t.Rows = t.Rows[:limit+1]
	}
	return t, nil
}

// isSortKey says whether key looks like a sort key: a metric's key with its flavour, or "name" (1 to
// 64 of letters, digits, '_', '.' and '%'). Not a regular expression: compiling its {1,64} took 0.2 ms
// of every er command's start.
func isSortKey(key string) bool {
	if len(key) < 1 || len(key) > 64 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '%') {
			return false
		}
	}
	return true
}

// nameMatcher compiles a search: a case-insensitive substring, or a regular expression after '/'.
func nameMatcher(q string) (func(string) bool, error) {
	if q == "" {
		return nil, nil
	}
	if strings.HasPrefix(q, "/") {
		re, err := regexp.Compile("(?i)" + q[1:])
		if err != nil {
			return nil, badRequest("parameter q=%s is not a regular expression: %v", clip(q), err)
		}
		return re.MatchString, nil
	}
	lq := strings.ToLower(q)
	return func(s string) bool { return strings.Contains(strings.ToLower(s), lq) }, nil
}

// callers is the callers-callees view of function f, or of the fragment frag (function indexes
// separated by commas, caller first).
func (s *Server) callers(r *http.Request) (any, error) {
	f, err := s.funcParam(r)
	if err != nil {
		return nil, err
	}
	t, err := s.oneTable(s.eng.ExecFunc("csingle", f))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// source is the annotated source of function f.
func (s *Server) source(r *http.Request) (any, error) {
	f, err := s.funcParam(r)
	if err != nil {
		return nil, err
	}
	t, err := s.oneTable(s.eng.ExecFunc("source", f))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// disasm is the annotated disassembly of function f.
func (s *Server) disasm(r *http.Request) (any, error) {
	f, err := s.funcParam(r)
	if err != nil {
		return nil, err
	}
	return s.oneTable(s.eng.ExecFunc("disasm", f))
}

// tableCommands are the er print commands whose tables the page may ask for by name.
var tableCommands = map[string]bool{
	"thread_list": true, "cpu_list": true, "sample_list": true, "lobjects": true, "objects": true,
	"experiment_list": true, "leaks": true, "allocs": true, "heap": true, "heapstat": true,
	"iostat": true, "ioactivity": true, "iodetail": true, "statistics": true, "overview": true,
	"lines": true, "pcs": true, "data_objects": true, "data_layout": true,
}

// indexTables are the index object views the page may ask for as tables (cmd=omp_preg: indxobj
// OMP_preg; omp_task: OMP_task).
var indexTables = map[string]string{"omp_preg": "OMP_preg", "omp_task": "OMP_task"}

// table runs one of tableCommands (or indexTables) and answers all its tables.
func (s *Server) table(r *http.Request) (any, error) {
	cmd := r.URL.Query().Get("cmd")
	if typ, ok := indexTables[cmd]; ok {
		return s.tables(s.eng.IndexObjects(typ))
	}
	if !tableCommands[cmd] {
		names := make([]string, 0, len(tableCommands))
		for c := range tableCommands {
			names = append(names, c)
		}
		for c := range indexTables {
			names = append(names, c)
		}
		sort.Strings(names)
		return nil, badRequest("parameter cmd=%s is not a table the page may ask for (%s)", clip(cmd), strings.Join(names, ", "))
	}
	return s.tables(s.eng.View(cmd))
}

// tables answers the tables of a view.
func (s *Server) tables(res erprint.Result, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	out := struct {
		Tables []*table `json:"tables"`
		Text   string   `json:"text,omitempty"`
	}{Tables: []*table{}, Text: res.Text}
	for _, t := range res.Tables {
		out.Tables = append(out.Tables, toTable(t))
	}
	return out, nil
}

// filterRequest is the body of POST /api/filter: a time range, an er print filter expression, or
// neither to clear the filter.
type filterRequest struct {
	Range []int64 `json:"range"`
	Expr  *string `json:"expr"`
}

// decodeBody decodes a POST's JSON body into v: one object with only v's fields.
func decodeBody(r *http.Request, v any) error {
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return badRequest("POST %s: the body is not the JSON object it takes: %v", r.URL.Path, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return badRequest("POST %s: the body has more after its JSON object", r.URL.Path)
	}
	return nil
}

// setFilter sets the filter of every view: the time range and expression given, combined.
func (s *Server) setFilter(r *http.Request) (any, error) {
	var req filterRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	rng, expr := s.rangeNS, s.expr
	switch {
	case req.Range == nil && req.Expr == nil:
		rng, expr = nil, ""
	default:
		if req.Range != nil {
			if len(req.Range) != 2 {
				return nil, badRequest("POST /api/filter: range has %d numbers: give [t0, t1] in ns", len(req.Range))
			}
			rg := [2]int64(req.Range)
			if rg[1] <= rg[0] {
				rng = nil
			} else {
				rng = &rg
			}
		}
		if req.Expr != nil {
			expr = strings.TrimSpace(*req.Expr)
		}
	}
	if len(expr) > maxFilterLen {
		return nil, badRequest("POST /api/filter: the expression is %d bytes; at most %d are allowed", len(expr), maxFilterLen)
	}
	if err := s.applyFilter(rng, expr); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, &apiError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("POST /api/filter: %v (the client went away); the filter stays %q", err, s.expr)}
		}
		return nil, badRequest("%v", err)
	}
	return s.filterState(), nil
}

// applyFilter sets the view's filter to the range and expression and computes its profile; on
// error (a wrong expression, the client gone while it was evaluated) the old filter and profile
// stay. The compare engines follow when a compare view is asked for (compareEngines).
func (s *Server) applyFilter(rng *[2]int64, expr string) error {
	var parts []string
	if rng != nil {
		parts = append(parts, fmt.Sprintf("TSTAMP >= %d && TSTAMP < %d", rng[0], rng[1]))
	}
	if expr != "" {
		parts = append(parts, "("+expr+")")
	}
	if err := s.eng.SetFilter(strings.Join(parts, " && ")); err != nil {
		return err
	}
	s.rangeNS, s.expr = rng, expr
	s.tree = nil
	return nil
}

// compareEngines returns the engines of the experiments compared, with the view's filter.
func (s *Server) compareEngines() ([]*erprint.Engine, error) {
	for _, e := range s.cmp {
		if e.Filter() != s.eng.Filter() {
			if err := e.SetFilter(s.eng.Filter()); err != nil {
				return nil, err
			}
		}
	}
	return s.cmp, nil
}

// settle computes the profile after a change of the selection, so that the warnings it prints
// again (those of the overview) go nowhere, rather than into the answer of whichever view comes
// next.
func (s *Server) settle() error {
	_, err := s.eng.Profile()
	return err
}

type filterState struct {
	Range *[2]int64 `json:"range"`
	Expr  string    `json:"expr"`
	Text  string    `json:"text"`
}

func (s *Server) filterState() filterState {
	return filterState{Range: s.rangeNS, Expr: s.expr, Text: s.eng.Filter()}
}

// setMetrics sets the metric list ({"spec": "e.%totalcpu:i.%totalcpu:name"}; "default" for the
// default).
func (s *Server) setMetrics(r *http.Request) (any, error) {
	var req struct {
		Spec string `json:"spec"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if err := s.eng.SetMetrics(req.Spec); err != nil {
		return nil, badRequest("%v", err)
	}
	s.tree = nil
	if err := s.settle(); err != nil {
		return nil, err
	}
	return map[string]string{"sort": s.eng.SortKey()}, nil
}

// setViewMode sets the view mode of this page's views (POST /api/viewmode {"mode": "machine"}):
// user, expert or machine, as er print's viewmode.
func (s *Server) setViewMode(r *http.Request) (any, error) {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if err := s.eng.SetViewMode(req.Mode); err != nil {
		return nil, badRequest("%v", err)
	}
	s.tree = nil
	if err := s.settle(); err != nil {
		return nil, err
	}
	return map[string]string{"mode": s.eng.ViewMode()}, nil
}

// overview describes the experiments: what was run, for how long, what data, and a histogram of
// the metrics over time.
func (s *Server) overview(r *http.Request) (any, error) {
	p, err := s.eng.Profile()
	if err != nil {
		return nil, err
	}
	dirs, exps := s.eng.Experiments()
	type expInfo struct {
		Dir, Name, Command, Host, Lineage string
		Pid, Ppid                         uint32
		Start, Duration                   int64
		Exit                              string
		Events                            []int64 // of each kind of eventKinds
		Threads                           int
		CPUs                              int
	}
	var infos []expInfo
	dur := s.duration()
	has := analysis.DataKinds(exps)
	var eventKinds []string
	for _, k := range analysis.Kinds {
		if has[k.ID] {
			eventKinds = append(eventKinds, k.ShortTitle())
		}
	}
	for i, d := range exps {
		lg := &d.Log
		end := s.sh.ends[i]
		if lg.StopTime > 0 && lg.StopTime < end { // -t or -L stopped recording: the duration is what was recorded
			end = lg.StopTime
		}
		exit := lg.ExitText()
		var events []int64
		for _, k := range analysis.Kinds {
			if has[k.ID] {
				events = append(events, k.Events(d))
			}
		}
		infos = append(infos, expInfo{Dir: dirs[i], Name: filepath.Base(dirs[i]), Command: strings.Join(lg.Command, " "),
			Host: lg.Host, Lineage: lg.Lineage, Pid: lg.Pid, Ppid: lg.Ppid, Start: lg.StartTime, Duration: end,
			Exit: exit, Events: events,
			Threads: len(s.eng.Index(i).Threads()), CPUs: lg.CPUs})
	}
	var metrics []map[string]any
	for i, m := range p.Metrics {
		metrics = append(metrics, map[string]any{"name": m.Name, "title": m.Title, "time": m.Time, "total": p.Total[i]})
	}
	tl, err := s.timelineIndex()
	if err != nil {
		return nil, err
	}
	views := []string{"overview", "functions", "callers", "calltree", "flame", "source", "disasm", "timeline",
		"threads", "cpus", "samples", "objects"}
	for _, k := range analysis.Kinds {
		if k.View != "" && has[k.ID] {
			views = append(views, k.View)
		}
	}
	if _, exps := s.eng.Experiments(); slices.ContainsFunc(exps, analysis.HasOpenMP) {
		views = append(views, "openmp")
	}
	if len(s.cmp) > 1 {
		views = append(views, "compare")
	}
	pt := s.procTree()
	if len(pt.Processes) > pt.Founders { // descendants: the tree's tab comes after the overview
		views = append([]string{"overview", "processes"}, views[1:]...)
	}
	// The founders (or the processes whose parent is not loaded), by experiment index: the header
	// names them, and counts the others.
	founders := []int{}
	for _, p := range pt.Processes {
		if p.Parent < 0 {
			founders = append(founders, p.exps[0])
		}
	}
	return map[string]any{
		"founders": founders, "processes": len(pt.Processes),
		"experiments": infos, "duration": dur, "metrics": metrics, "events": p.Events,
		"dataEvents": p.DataEvents, "warnings": s.eng.Warnings(), "views": views,
		"filter": s.filterState(), "histogram": tl.histogram(0, dur, 240), "static": s.static,
		"kinds": dataKindNames(has), "eventKinds": eventKinds, "metricSpec": s.eng.MetricSpec(), "viewmode": s.eng.ViewMode(),
	}, nil
}

func dataKindNames(has []bool) []string {
	var out []string
	for _, k := range analysis.Kinds {
		if has[k.ID] {
			out = append(out, strings.ToLower(k.Title[:1])+k.Title[1:])
		}
	}
	return out
}
