package erprint

import (
	"fmt"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/report"
)

// Index objects (indxobj): the events grouped by an index of theirs (their thread, CPU, sample, second,
// process, experiment), with every metric of the current list: each index object's values are those
// of the profile refiltered to its events, so they are what the views would show of it.

// indexTypes are the index object types, with how each names an event's object.
var indexTypes = []struct {
	name, about string
	key         func(ev *analysis.EventInfo) int64
	label       func(k int64) string
	// named, when set, labels the objects in place of label, with the session's profile p.
	named func(s *session, p *analysis.Profile, k int64) string
	// recorded, when set, gives the objects experiment exp recorded, listed even where no event
	// falls in them (a region that ran but took no sample): keys as key gives them.
	recorded func(s *session, exp int) []int64
}{
	{"Threads", "threads, by experiment and thread number", func(ev *analysis.EventInfo) int64 { return int64(ev.Exp)<<32 | int64(ev.Thread) },
		func(k int64) string { return fmt.Sprintf("Thread %d (experiment %d)", k&0xffffffff, k>>32+1) }, nil, nil},
	{"CPUs", "the CPUs the events were taken on", func(ev *analysis.EventInfo) int64 { return ev.CPU },
		func(k int64) string {
			if k < 0 {
				return "<No CPU>"
			}
			return fmt.Sprintf("CPU %d", k)
		}, nil, nil},
	{"Samples", "sample points, by experiment", func(ev *analysis.EventInfo) int64 { return int64(ev.Exp)<<32 | int64(ev.Sample) },
		func(k int64) string { return fmt.Sprintf("Sample %d (experiment %d)", k&0xffffffff, k>>32+1) }, nil, nil},
	{"Seconds", "seconds since the experiment's start", func(ev *analysis.EventInfo) int64 { return ev.Time / 1e9 },
		func(k int64) string { return fmt.Sprintf("Second %d", k) }, nil, nil},
	{"Processes", "process ids", func(ev *analysis.EventInfo) int64 { return int64(ev.Pid) },
		func(k int64) string { return fmt.Sprintf("Process %d", k) }, nil, nil},
	{"Experiment_IDs", "experiments, by number", func(ev *analysis.EventInfo) int64 { return int64(ev.Exp) },
		func(k int64) string { return fmt.Sprintf("Experiment %d", k+1) }, nil, nil},
	{"OMP_preg", "OpenMP parallel regions of the code, each with all its instances (docs/openmp.md)",
		func(ev *analysis.EventInfo) int64 { return int64(ev.Exp)<<32 | int64(analysis.OMPConstructOf(ev)) }, nil,
		func(s *session, p *analysis.Profile, k int64) string {
			exp, c := int(k>>32), int(k&0xffffffff)
			cs := analysis.OMPConstructs(s.exps[exp])
			if c == 0 || c > len(cs) {
				return "<not in an OpenMP parallel region>"
			}
			name := p.OMPConstructName(exp, cs[c-1])
			if len(s.exps) > 1 {
				name += fmt.Sprintf(" (experiment %d)", exp+1)
			}
			return name
		},
		func(s *session, exp int) []int64 { return constructKeys(exp, len(analysis.OMPConstructs(s.exps[exp]))) }},
	{"OMP_task", "OpenMP explicit tasks of the code, each with all its instances (docs/openmp.md)",
		func(ev *analysis.EventInfo) int64 { return int64(ev.Exp)<<32 | int64(analysis.OMPTaskOf(ev)) }, nil,
		func(s *session, p *analysis.Profile, k int64) string {
			exp, c := int(k>>32), int(k&0xffffffff)
			cs := analysis.OMPTaskConstructs(s.exps[exp])
			if c == 0 || c > len(cs) {
				return "<not in an OpenMP task>"
			}
			name := p.OMPConstructName(exp, cs[c-1])
			if len(s.exps) > 1 {
				name += fmt.Sprintf(" (experiment %d)", exp+1)
			}
			return name
		},
		func(s *session, exp int) []int64 {
			return constructKeys(exp, len(analysis.OMPTaskConstructs(s.exps[exp])))
		}},
}

// constructKeys are the keys of OpenMP constructs 1..n of experiment exp.
func constructKeys(exp, n int) []int64 {
	keys := make([]int64, n)
	for c := range n {
		keys[c] = int64(exp)<<32 | int64(c+1)
	}
	return keys
}

// maxIndexObjects is the most index objects indxobj shows the metrics of (each is a refiltering).
const maxIndexObjects = 1000

// indxobjList lists the index object types.
func (s *session) indxobjList(_ []string) error {
	t := &report.Table{Columns: []report.Column{{Title: "Name", Key: "name", Kind: report.Text, Left: true},
		{Title: "Description", Key: "description", Kind: report.Text, Left: true}}}
	if s.text() {
		t.Title = []string{"Index object types (indxobj TYPE):"}
	}
	for _, it := range indexTypes {
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{{Text: it.name}, {Text: it.about}}})
	}
	return s.table(t)
}

// indxobj prints the index objects of a type with the current metrics (exclusive: an index object
// holds events, not functions), largest first by the sort metric.
func (s *session) indxobj(args []string) error {
	ti := -1
	var names []string
	for i, it := range indexTypes {
		names = append(names, it.name)
		if strings.EqualFold(it.name, args[0]) {
			ti = i
		}
	}
	if ti < 0 {
		return usagef("indxobj %q: unknown index object type; the types: %s (indxobj_list)", args[0], strings.Join(names, ", "))
	}
	typ := indexTypes[ti]
	p, err := s.profile()
	if err != nil {
		return err
	}
	filter := s.eventFilter()
	seen := map[int64]bool{}
	var keys []int64
	for i := range s.exps {
		s.eachEvent(i, func(ev *analysis.EventInfo, _, _ int64) {
			if k := typ.key(ev); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		})
		if typ.recorded != nil && s.sel.isAll() {
			for _, k := range typ.recorded(s, i) {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	if len(keys) > maxIndexObjects {
		return usagef("indxobj %s: %d index objects; at most %d (select fewer events with a filter)", typ.name, len(keys), maxIndexObjects)
	}
	slices.Sort(keys)
	var its []item
	for _, it := range shown(s.metrics) {
		if it.kind == itemMetric {
			it.flavor = exclusive
			if !slices.ContainsFunc(its, func(o item) bool { return o.metric == it.metric && o.derived == it.derived }) {
				its = append(its, it)
			}
		}
	}
	type row struct {
		key  int64
		vals []int64
	}
	rows := make([]row, 0, len(keys))
	for _, k := range keys {
		q, err := s.base.Refilter(func(ev *analysis.EventInfo) bool {
			return (filter == nil || filter(ev)) && typ.key(ev) == k
		}, false)
		if err != nil {
			return err
		}
		rows = append(rows, row{key: k, vals: q.Total})
	}
	sortIt := s.sortItem
	if sortIt.kind == itemMetric {
		sortIt.flavor = exclusive
		slices.SortStableFunc(rows, func(a, b row) int {
			va, vb := sortIt.of(a.vals), sortIt.of(b.vals)
			switch {
			case va > vb:
				return -1
			case va < vb:
				return 1
			}
			return 0
		})
	}
	title := fmt.Sprintf("Objects of type %s sorted by metric: %s", typ.name, sortIt.title(s.ms))
	if sortIt.kind != itemMetric {
		title = fmt.Sprintf("Objects of type %s", typ.name)
	}
	t := &report.Table{Title: []string{title}, Columns: s.columns(its), NameTitle: "Name"}
	cells := func(v []int64) []report.Cell {
		out := make([]report.Cell, len(its))
		for j, it := range its {
			x := it.of(v)
			out[j] = report.Cell{Value: x, Pct: percent(x, p.Total[it.metric])}
		}
		return out
	}
	t.Rows = append(t.Rows, report.Row{Name: analysis.TotalName, Cells: cells(p.Total)})
	for _, r := range rows[:s.limited(len(rows))] {
		name := ""
		if typ.named != nil {
			name = typ.named(s, p, r.key)
		} else {
			name = typ.label(r.key)
		}
		t.Rows = append(t.Rows, report.Row{Name: name, Cells: cells(r.vals)})
	}
	return s.table(t)
}
