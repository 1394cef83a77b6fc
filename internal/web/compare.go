package web

import (
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
)

// compare answers the function list of each experiment argument side by side: for the metric
// given (the sort metric by default), each function's exclusive and inclusive values in every
// experiment, matched by name, and the change of the last from the first.
func (s *Server) compare(r *http.Request) (any, error) {
	if len(s.cmp) < 2 {
		return nil, badRequest("compare needs two or more experiments given to er analyzer")
	}
	m, _ := s.eng.SortMetric()
	if m < 0 {
		m = 0
	}
	if len(s.eng.Metrics()) == 0 {
		return nil, badRequest("there are no metrics to compare")
	}
	mp, err := intParam(r, "metric", int64(m), 0, int64(len(s.eng.Metrics()))-1)
	if err != nil {
		return nil, err
	}
	m = int(mp)
	metric := s.eng.Metrics()[m]
	type acc struct {
		name string
		vals []int64 // excl, incl per experiment
	}
	byName := map[string]*acc{}
	var order []*acc
	n := len(s.cmp)
	totals := make([]int64, n)
	for i, e := range s.cmp {
		p, err := e.Profile()
		if err != nil {
			return nil, err
		}
		mi := -1
		for j, pm := range p.Metrics {
			if pm.Name == metric.Name {
				mi = j
			}
		}
		if mi < 0 {
			continue
		}
		totals[i] = p.Total[mi]
		for f := 1; f < len(p.Functions); f++ {
			if !p.Used(f) {
				continue
			}
			name := e.FuncName(f)
			a := byName[name]
			if a == nil {
				a = &acc{name: name, vals: make([]int64, 2*n)}
				byName[name] = a
				order = append(order, a)
			}
			a.vals[2*i] += p.Exclusive(f)[mi]
			a.vals[2*i+1] += p.Inclusive(f)[mi]
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		di, dj := abs(order[i].vals[2*n-2]-order[i].vals[0]), abs(order[j].vals[2*n-2]-order[j].vals[0])
		if di != dj {
			return di > dj
		}
		return order[i].name < order[j].name
	})
	kind := "count"
	if metric.Time {
		kind = "time"
	}
	t := &table{NameTitle: "Name", Rows: []row{}}
	dirs := make([]string, n)
	for i := range s.cmp {
		d, _ := s.cmp[i].Experiments()
		dirs[i] = filepath.Base(d[0])
		t.Columns = append(t.Columns,
			column{Key: "e." + metric.Name + "." + strconv.Itoa(i+1), Title: "Excl. " + metric.Short + " [" + dirs[i] + "]", Kind: kind, Value: true, Pct: true},
			column{Key: "i." + metric.Name + "." + strconv.Itoa(i+1), Title: "Incl. " + metric.Short + " [" + dirs[i] + "]", Kind: kind, Value: true, Pct: true})
	}
	t.Columns = append(t.Columns, column{Key: "delta", Title: "Excl. change, last - first", Kind: kind, Value: true})
	total := &row{ID: -1, Name: "<Total>"}
	for i := range n {
		total.Cells = append(total.Cells, cell{V: totals[i], P: 100}, cell{V: totals[i], P: 100})
	}
	total.Cells = append(total.Cells, cell{V: totals[n-1] - totals[0], P: -1})
	t.Rows = append(t.Rows, *total)
	for _, a := range order {
		rw := row{ID: -1, Name: a.name}
		for i := range n {
			rw.Cells = append(rw.Cells, cell{V: a.vals[2*i], P: percent(a.vals[2*i], totals[i])},
				cell{V: a.vals[2*i+1], P: percent(a.vals[2*i+1], totals[i])})
		}
		rw.Cells = append(rw.Cells, cell{V: a.vals[2*n-2] - a.vals[0], P: -1})
		t.Rows = append(t.Rows, rw)
	}
	t.Matched = len(t.Rows)
	if len(t.Rows) > defaultLimit {
		t.Rows = t.Rows[:defaultLimit]
	}
	return map[string]any{"table": t, "experiments": dirs, "metric": metric.Title}, nil
}
