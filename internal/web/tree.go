package web

import (
	"net/http"
	"sort"

	"er/internal/analysis"
	"er/internal/report"
)

// treeView is the call tree of the current profile, each node's children sorted by the sort
// metric (inclusive), largest first.
type treeView struct {
	p      *analysis.Profile
	tr     *analysis.Tree
	metric int // the metric that sizes nodes: the sort metric, else the first column's
	kids   map[int][]int
}

func (s *Server) treeIndex() (*treeView, error) {
	p, err := s.eng.Profile()
	if err != nil {
		return nil, err
	}
	if s.tree != nil && s.tree.p == p {
		return s.tree, nil
	}
	m, _ := s.eng.SortMetric()
	if m < 0 {
		m = 0
		if cols := s.eng.Columns(); len(cols) > 0 {
			m = cols[0].Metric
		}
	}
	s.tree = &treeView{p: p, tr: p.CallTree(), metric: m, kids: map[int][]int{}}
	return s.tree, nil
}

// children returns node n's children, largest first (ties by function name, then node).
func (t *treeView) children(n int, name func(int) string) []int {
	if k, ok := t.kids[n]; ok {
		return k
	}
	raw := t.tr.Children(n)
	k := make([]int, len(raw))
	for i, c := range raw {
		k[i] = int(c)
	}
	m := t.metric
	sort.SliceStable(k, func(i, j int) bool {
		a, b := t.tr.Inclusive(k[i])[m], t.tr.Inclusive(k[j])[m]
		if a != b {
			return a > b
		}
		return name(t.tr.Func(k[i])) < name(t.tr.Func(k[j]))
	})
	t.kids[n] = k
	return k
}

// hotShare is the share of the total below which the call tree's hot path is not opened.
const hotShare = 0.01

// calltree answers rows of the call tree: the children of node (with hot=1 and node 0, the root
// and its hot path opened: each node's largest child, while it holds at least 1% of the total).
func (s *Server) calltree(r *http.Request) (any, error) {
	tv, err := s.treeIndex()
	if err != nil {
		return nil, err
	}
	n, err := intParam(r, "node", 0, 0, int64(tv.tr.Len())-1)
	if err != nil {
		return nil, err
	}
	hotParam, err := enumParam(r, "hot", "0", "1")
	if err != nil {
		return nil, err
	}
	hot := hotParam == "1"
	cols := s.eng.Columns()
	out := &table{NameTitle: "Name", Tree: true, Rows: []row{}}
	for _, c := range cols {
		out.Columns = append(out.Columns, report.ToJSONColumn(c.Column))
	}
	p := tv.p
	mk := func(node int) row {
		cells := make([]cell, len(cols))
		for j, c := range cols {
			v := tv.tr.Exclusive(node)[c.Metric]
			if c.Inclusive {
				v = tv.tr.Inclusive(node)[c.Metric]
			}
			cells[j] = cell{V: v, P: percent(v, p.Total[c.Metric])}
		}
		f := tv.tr.Func(node)
		return row{ID: f, Name: s.eng.FuncName(f), Depth: tv.tr.Depth(node), Cells: cells, Node: node,
			Kids: len(tv.tr.Children(node)) > 0}
	}
	if !hot {
		for _, c := range tv.children(int(n), s.eng.FuncName) {
			out.Rows = append(out.Rows, mk(c))
		}
		out.Matched = len(out.Rows)
		return out, nil
	}
	// The node, then depth first: the children of every node on the hot path.
	out.Rows = append(out.Rows, mk(int(n)))
	total := p.Total[tv.metric]
	var open func(node int, pos int)
	open = func(node int, pos int) {
		kids := tv.children(node, s.eng.FuncName)
		rows := make([]row, len(kids))
		for i, c := range kids {
			rows[i] = mk(c)
		}
		out.Rows = append(out.Rows[:pos+1], append(rows, out.Rows[pos+1:]...)...)
		out.Rows[pos].Open = true
		if len(kids) > 0 && float64(tv.tr.Inclusive(kids[0])[tv.metric]) >= hotShare*float64(total) && total > 0 {
			open(kids[0], pos+1)
		}
	}
	open(int(n), 0)
	out.Matched = len(out.Rows)
	return out, nil
}

func percent(v, base int64) float64 {
	if base == 0 {
		return 0
	}
	return 100 * float64(v) / float64(base)
}

// flameNode is one box of the flame graph.
type flameNode struct {
	Node   int   `json:"n"`
	Parent int   `json:"p"` // index in the list; -1 for the root
	Func   int   `json:"f"`
	Value  int64 `json:"v"` // inclusive
	Self   int64 `json:"s"` // exclusive
	Depth  int   `json:"d"` // from the root of the list
}

// maxFlameNodes bounds the boxes of one flame graph answer; nodes too narrow to see are left out.
const maxFlameNodes = 20000

// flame answers the flame graph under node root (0: the whole tree): its nodes, depth first, that
// are at least 1/4000 of root's value (more when that is over maxFlameNodes), and root's
// ancestors for a breadcrumb.
func (s *Server) flame(r *http.Request) (any, error) {
	tv, err := s.treeIndex()
	if err != nil {
		return nil, err
	}
	root, err := intParam(r, "root", 0, 0, int64(tv.tr.Len())-1)
	if err != nil {
		return nil, err
	}
	m := tv.metric
	tr := tv.tr
	rv := tr.Inclusive(int(root))[m]
	var nodes []flameNode
	for div := int64(4000); ; div /= 2 {
		min := rv / div
		nodes = nodes[:0]
		var walk func(n, parent, depth int)
		walk = func(n, parent, depth int) {
			if len(nodes) > maxFlameNodes {
				return
			}
			v := tr.Inclusive(n)[m]
			if v < min || v == 0 && depth > 0 {
				return
			}
			i := len(nodes)
			nodes = append(nodes, flameNode{Node: n, Parent: parent, Func: tr.Func(n), Value: v, Self: tr.Exclusive(n)[m], Depth: depth})
			for _, c := range tv.children(n, s.eng.FuncName) {
				walk(c, i, depth+1)
			}
		}
		walk(int(root), -1, 0)
		if len(nodes) <= maxFlameNodes || div < 8 {
			break
		}
	}
	names := map[int]string{}
	for _, n := range nodes {
		if _, ok := names[n.Func]; !ok {
			names[n.Func] = s.eng.FuncName(n.Func)
		}
	}
	var path []map[string]any
	for n := int(root); n > 0; {
		n = tr.Parent(n)
		path = append([]map[string]any{{"n": n, "f": tr.Func(n), "name": s.eng.FuncName(tr.Func(n))}}, path...)
	}
	metric := tv.p.Metrics[m]
	return map[string]any{"nodes": nodes, "names": names, "path": path, "total": tv.p.Total[m],
		"metric": metric.Title, "time": metric.Time}, nil
}
