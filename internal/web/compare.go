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
	cmp, err := s.compareEngines()
	if err != nil {
		return nil, err
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
	n := len(cmp)
	totals := make([]int64, n)
	for i, e := range cmp {
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
	for i := range cmp {
		d, _ := cmp[i].Experiments()
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

// diffNode is one box of the differential flame graph: its values in the first experiment (A) and in
// the last (B).
type diffNode struct {
	Parent int    `json:"p"` // index into the answer's nodes; -1 for the root
	Depth  int    `json:"d"`
	Name   string `json:"name"`
	A      int64  `json:"a"`  // inclusive in the first
	B      int64  `json:"b"`  // inclusive in the last
	SelfA  int64  `json:"sa"` // exclusive in the first
	SelfB  int64  `json:"sb"`
}

// diffFlame answers the differential flame graph of the first and the last experiment given: er
// print's compare call tree (the trees merged by their path of function names), for the metric given
// (the sort metric by default), with the nodes at least 1/4000 of the larger total in either.
func (s *Server) diffFlame(r *http.Request) (any, error) {
	if len(s.cmp) < 2 {
		return nil, badRequest("compare needs two or more experiments given to er analyzer")
	}
	ms := s.eng.Metrics()
	if len(ms) == 0 {
		return nil, badRequest("there are no metrics to compare")
	}
	m, _ := s.eng.SortMetric()
	mp, err := intParam(r, "metric", int64(max(m, 0)), 0, int64(len(ms))-1)
	if err != nil {
		return nil, err
	}
	m = int(mp)
	tree, names, err := s.eng.CompareTree()
	if err != nil {
		return nil, err
	}
	last := len(names) - 1
	val := func(v [][]int64, g int) int64 {
		if v[g] == nil {
			return 0
		}
		return v[g][m]
	}
	ta, tb := val(tree[0].Incl, 0), val(tree[0].Incl, last)
	min := max(ta, tb) / 4000
	nodes := make([]diffNode, 0, len(tree))
	index := make([]int, len(tree)) // answer index of each tree node; -1 when left out
	for i := range tree {
		n := &tree[i]
		index[i] = -1
		a, b := val(n.Incl, 0), val(n.Incl, last)
		if i > 0 && (index[n.Parent] < 0 || max(a, b) < min || a == 0 && b == 0) {
			continue
		}
		parent := -1
		if i > 0 {
			parent = index[n.Parent]
		}
		index[i] = len(nodes)
		nodes = append(nodes, diffNode{Parent: parent, Depth: n.Depth, Name: n.Name, A: a, B: b,
			SelfA: val(n.Excl, 0), SelfB: val(n.Excl, last)})
		if len(nodes) >= maxFlameNodes {
			break
		}
	}
	exps := make([]string, len(names))
	for i, n := range names {
		exps[i] = filepath.Base(n)
	}
	return map[string]any{"nodes": nodes, "experiments": []string{exps[0], exps[last]}, "totals": []int64{ta, tb},
		"metric": ms[m].Title, "time": ms[m].Time}, nil
}
