package erprint

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/experiment"
	"er/internal/report"
)

// compare {on|off|delta|ratio}, as er_print's: with two or more experiments (or groups) loaded, the
// views show each metric of their list for each of them side by side, matched by name: the first's
// values, then the others' (on), their differences from the first (delta), or their ratios to it
// (ratio). The function list, the callers-callees, the call tree (its nodes matched by their path of
// names from the root), the line and instruction lists, the load objects and the annotated source and
// disassembly (lines by file and number, instructions by function and offset) compare; the other
// views show the experiments aggregated, as without compare.

// comparedViews are the views that compare, as the note of the others names them.
const comparedViews = "functions, callers-callees, calltree, lines, pcs, lobjects, source and disasm"

// aggregatedInCompare are the views of metrics that show the experiments together in compare mode.
var aggregatedInCompare = map[string]bool{
	"fsummary": true, "fsingle": true, "csingle": true, "cprepend": true, "cappend": true, "crmfirst": true, "crmlast": true,
	"lsummary": true, "psummary": true, "leaks": true, "allocs": true, "heap": true, "heapstat": true,
	"ioactivity": true, "iodetail": true, "iocallstack": true, "iostat": true, "thread_list": true, "cpu_list": true,
	"sample_list": true, "statistics": true, "overview": true, "data_objects": true,
	"data_layout": true, "memobj": true, "indxobj": true,
}

// compareModes are compare's settings.
var compareModes = []string{"off", "on", "delta", "ratio"}

func (s *session) setCompare(args []string) error {
	if !slices.Contains(compareModes, args[0]) {
		return usagef("compare %q: on, off, delta or ratio", args[0])
	}
	s.compare = args[0]
	if s.compare == "off" {
		s.compare = ""
	}
	s.cmpProfiles = nil
	if s.text() {
		s.printf("Compare mode set to %s\n", args[0])
	}
	return nil
}

// comparing reports whether the views compare: compare is on and two or more groups are loaded.
func (s *session) comparing() bool {
	if s.compare == "" {
		return false
	}
	groups, _ := s.compareGroups()
	return len(groups) > 1
}

// compareGroups returns the loaded experiments by group: each experiment or group given, with the
// subexperiments of its descendants.
func (s *session) compareGroups() ([][]*experiment.Data, []string) {
	var groups [][]*experiment.Data
	var names []string
	for _, d := range s.exps {
		founder := experiment.FounderDir(d.Dir)
		if founder == "" {
			founder = d.Dir
		}
		name := filepath.Clean(founder)
		i := slices.Index(names, name)
		if i < 0 {
			i = len(names)
			names = append(names, name)
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	return groups, names
}

// compareProfiles analyses each group on its own (made once, until the experiments change).
func (s *session) compareProfiles() ([]*analysis.Profile, []string, error) {
	groups, names := s.compareGroups()
	if s.cmpProfiles != nil && len(s.cmpProfiles) == len(groups) {
		return s.cmpProfiles, names, nil
	}
	var ps []*analysis.Profile
	for _, g := range groups {
		opts := analysis.Options{OpenFile: s.env.openFile, FoldInlines: s.foldInlines, Visibility: s.objVis.visibilityFunc(), ViewMode: s.analysisMode()}
		if s.env.loadArchive != nil {
			opts.LoadArchive = s.env.loadArchive(g)
		}
		p, err := analysis.Analyze(g, opts)
		if err != nil {
			return nil, nil, err
		}
		if f := s.eventFilter(); f != nil {
			if p, err = p.Refilter(f, false); err != nil {
				return nil, nil, err
			}
		}
		ps = append(ps, p)
	}
	s.cmpProfiles = ps
	return ps, names, nil
}

// cmpRow is a row of a compared view: a name and, for each group, its exclusive and inclusive
// vectors in the order of the session's metrics (nil: the group has no such row). Attributed items
// show the exclusive vector.
type cmpRow struct {
	name       string
	section    string
	depth      int
	mark       string
	excl, incl [][]int64
}

// cmpRows merges the groups' rows by a key.
type cmpRows struct {
	n     int
	rows  []cmpRow
	index map[string]int
}

func newCmpRows(n int) *cmpRows { return &cmpRows{n: n, index: map[string]int{}} }

// add adds group g's vectors to the row of key (made, named name, when new) and returns its index.
func (c *cmpRows) add(key, name string, g int, excl, incl []int64) int {
	i, ok := c.index[key]
	if !ok {
		i = len(c.rows)
		c.index[key] = i
		c.rows = append(c.rows, cmpRow{name: name, excl: make([][]int64, c.n), incl: make([][]int64, c.n)})
	}
	r := &c.rows[i]
	r.excl[g] = addVec(r.excl[g], excl)
	r.incl[g] = addVec(r.incl[g], incl)
	return i
}

// cmpValue is item it's value of row r in group g, and whether the group has the row.
func cmpValue(r *cmpRow, g int, it item) (int64, bool) {
	v := r.excl[g]
	if it.flavor == inclusive {
		v = r.incl[g]
	}
	if v == nil {
		return 0, false
	}
	return it.of(v), true
}

// sortCmp orders rows by item it's value in the first group, largest first, then by name.
func sortCmp(rows []cmpRow, it item) {
	slices.SortStableFunc(rows, func(a, b cmpRow) int {
		if it.kind == itemMetric {
			va, _ := cmpValue(&a, 0, it)
			vb, _ := cmpValue(&b, 0, it)
			if va != vb {
				if va > vb {
					return -1
				}
				return 1
			}
		}
		return strings.Compare(a.name, b.name)
	})
}

// totalsRow is the <Total> row of the groups' profiles.
func (s *session) totalsRow(ps []*analysis.Profile) cmpRow {
	r := cmpRow{name: analysis.TotalName, excl: make([][]int64, len(ps)), incl: make([][]int64, len(ps))}
	for g, p := range ps {
		r.excl[g], r.incl[g] = metricVector(s.ms, p, p.Total), metricVector(s.ms, p, p.Total)
	}
	return r
}

// compareColumns are the columns of items its for n groups, as the compare mode shows them.
func (s *session) compareColumns(its []item, n int) []report.Column {
	var cols []report.Column
	for _, it := range its {
		for g := range n {
			c := it.column(s.ms)
			tag := fmt.Sprintf(" [%d]", g+1)
			c.Title += tag
			c.Key += fmt.Sprintf("[%d]", g+1)
			if g > 0 {
				switch s.compare {
				case "delta":
					c.Title, c.Key, c.Percent = "Delta "+c.Title, "delta."+c.Key, false
				case "ratio":
					c.Title, c.Key, c.Kind, c.Unit, c.Percent = "Ratio "+c.Title, "ratio."+c.Key, report.Ratio, "", false
				}
			}
			cols = append(cols, c)
		}
	}
	return cols
}

// compareCells are row r's cells for items its: each group's value, or its difference from or
// ratio to the first group's; percentages of base(g) (nil: none).
func (s *session) compareCells(r *cmpRow, its []item, n int, base func(g int) []int64) []report.Cell {
	var cells []report.Cell
	for _, it := range its {
		first, hasFirst := cmpValue(r, 0, it)
		for g := range n {
			v, ok := cmpValue(r, g, it)
			switch {
			case g == 0 || s.compare == "on":
				c := report.Cell{Value: v, Blank: !ok}
				if b := base(g); b != nil && it.derived == nil {
					c.Pct = percent(v, b[it.metric])
				}
				cells = append(cells, c)
			case s.compare == "delta":
				cells = append(cells, report.Cell{Value: v - first})
			case s.compare == "ratio":
				c := report.Cell{Blank: !ok || !hasFirst || first == 0}
				if !c.Blank {
					c.Value = int64(float64(v) * ratioScale / float64(first))
				}
				cells = append(cells, c)
			}
		}
	}
	return cells
}

// compareTitle is a compared view's title: what it is, then the groups by number.
func (s *session) compareTitle(what string, names []string) []string {
	if !s.text() {
		return nil
	}
	title := []string{what + ", compare " + s.compare}
	for g, n := range names {
		title = append(title, fmt.Sprintf("  [%d] %s", g+1, n))
	}
	return title
}

// compareList prints a compared list: <Total>, then the rows each group's profile gives (rowsOf adds
// them to c), sorted by the sort item in the first group and cut to the limit.
func (s *session) compareList(what string, rowsOf func(g int, p *analysis.Profile, c *cmpRows)) error {
	ps, names, err := s.compareProfiles()
	if err != nil {
		return err
	}
	c := newCmpRows(len(ps))
	for g, p := range ps {
		rowsOf(g, p, c)
	}
	sortCmp(c.rows, s.sortItem)
	total := s.totalsRow(ps)
	all := append([]cmpRow{total}, c.rows...)
	its := metricItems(s.metrics)
	t := &report.Table{Title: s.compareTitle(what+" sorted by metric: "+s.sortItem.title(s.ms)+" [1]", names),
		Columns: s.compareColumns(its, len(ps)), NameTitle: "Name"}
	base := func(g int) []int64 { return total.excl[g] }
	for i := range all[:s.limited(len(all))] {
		t.Rows = append(t.Rows, report.Row{Name: all[i].name, Cells: s.compareCells(&all[i], its, len(ps), base)})
	}
	return s.table(t)
}

// compareFunctions is the function list in compare mode.
func (s *session) compareFunctions() error {
	return s.compareList("Functions", func(g int, p *analysis.Profile, c *cmpRows) {
		for f := 1; f < len(p.Functions); f++ {
			if p.Used(f) {
				name := p.FuncName(f, s.style)
				c.add(name, name, g, metricVector(s.ms, p, p.Exclusive(f)), metricVector(s.ms, p, p.Inclusive(f)))
			}
		}
	})
}

// compareLines is the line list in compare mode: lines matched by function, line and file.
func (s *session) compareLines() error {
	return s.compareList("Lines", func(g int, p *analysis.Profile, c *cmpRows) {
		lt := p.Lines()
		for i, l := range lt.Lines {
			name := s.lineName(p, l)
			c.add(name, name, g, metricVector(s.ms, p, lt.Exclusive(i)), metricVector(s.ms, p, lt.Inclusive(i)))
		}
	})
}

// comparePCs is the instruction list in compare mode: instructions matched by function and offset.
func (s *session) comparePCs() error {
	return s.compareList("PCs", func(g int, p *analysis.Profile, c *cmpRows) {
		pt := p.PCs()
		for i, in := range pt.PCs {
			name := s.pcName(p, in)
			c.add(name, name, g, metricVector(s.ms, p, pt.Exclusive(i)), metricVector(s.ms, p, pt.Inclusive(i)))
		}
	})
}

// compareObjects is the load-object list in compare mode: objects matched by name.
func (s *session) compareObjects() error {
	return s.compareList("Load Objects", func(g int, p *analysis.Profile, c *cmpRows) {
		for o := 1; o < len(p.Objects); o++ {
			name := p.Objects[o].Name
			c.add(name, name, g, metricVector(s.ms, p, p.ObjectExclusive(o)), metricVector(s.ms, p, p.ObjectInclusive(o)))
		}
	})
}

// compareCallers is callers-callees in compare mode: for each function of the compared function list
// (in its order, cut to the limit), its callers and callees in each group matched by name, with their
// attributed metrics; percentages of the function's inclusive metrics in its group.
func (s *session) compareCallers() error {
	ps, names, err := s.compareProfiles()
	if err != nil {
		return err
	}
	fc := newCmpRows(len(ps))
	for g, p := range ps {
		for f := 1; f < len(p.Functions); f++ {
			if p.Used(f) {
				name := p.FuncName(f, s.style)
				fc.add(name, name, g, metricVector(s.ms, p, p.Exclusive(f)), metricVector(s.ms, p, p.Inclusive(f)))
			}
		}
	}
	sortCmp(fc.rows, s.sortItem)
	its := metricItems(s.callers())
	cols := s.compareColumns(its, len(ps))
	if s.text() {
		for _, l := range s.compareTitle(s.callerTitle()+" [1]", names) {
			s.printf("%s\n", l)
		}
		s.printf("\n")
	}
	sortIt := s.callerSort()
	fns := []string{analysis.TotalName}
	for _, r := range fc.rows {
		fns = append(fns, r.name)
	}
	for _, fname := range fns[:s.limited(len(fns))] {
		callers, callees := newCmpRows(len(ps)), newCmpRows(len(ps))
		self := cmpRow{name: fname, mark: "*", section: "Function", excl: make([][]int64, len(ps)), incl: make([][]int64, len(ps))}
		for g, p := range ps {
			f := s.functionNamed(p, fname)
			if f < 0 {
				continue
			}
			cc, err := p.CallersCallees([]int{f})
			if err != nil {
				return err
			}
			self.excl[g], self.incl[g] = metricVector(s.ms, p, cc.Exclusive), metricVector(s.ms, p, cc.Inclusive)
			for _, a := range cc.Callers {
				v := metricVector(s.ms, p, a.Value)
				n := s.funcName(p, a.Func)
				callers.add(n, n, g, v, v)
			}
			for _, a := range cc.Callees {
				v := metricVector(s.ms, p, a.Value)
				n := s.funcName(p, a.Func)
				callees.add(n, n, g, v, v)
			}
		}
		sortCmp(callers.rows, sortIt)
		sortCmp(callees.rows, sortIt)
		base := func(g int) []int64 { return self.incl[g] }
		t := &report.Table{Columns: cols, NameTitle: "Name"}
		add := func(rows []cmpRow, section string) {
			for i := range rows {
				t.Rows = append(t.Rows, report.Row{Name: rows[i].name, Mark: rows[i].mark, Section: sectionIf(!s.text(), section),
					Cells: s.compareCells(&rows[i], its, len(ps), base)})
			}
		}
		add(callers.rows, "Callers")
		add([]cmpRow{self}, "Function")
		add(callees.rows, "Callees")
		if err := s.table(t); err != nil {
			return err
		}
	}
	return nil
}

// functionNamed is the function of p that the views name name (the first used one); 0 for <Total>;
// -1 when none.
func (s *session) functionNamed(p *analysis.Profile, name string) int {
	if name == analysis.TotalName {
		return 0
	}
	for f := 1; f < len(p.Functions); f++ {
		if p.Used(f) && p.FuncName(f, s.style) == name {
			return f
		}
	}
	return -1
}

// CompareNode is a node of the groups' call trees merged by the path of function names from the
// root: its parent (-1 for the root), depth, name and, per group, its inclusive and exclusive
// vectors in the order of the session's metrics (nil where the group has no such path).
type CompareNode struct {
	Parent     int
	Depth      int
	Name       string
	Incl, Excl [][]int64
	children   []int
}

// compareTree merges the groups' call trees; node 0 is the root (<Total>).
func (s *session) compareTree(ps []*analysis.Profile) []CompareNode {
	nodes := []CompareNode{{Parent: -1, Name: analysis.TotalName, Incl: make([][]int64, len(ps)), Excl: make([][]int64, len(ps))}}
	index := map[[2]string]int{}
	for g, p := range ps {
		tr := p.CallTree()
		// The merged node of each of the tree's nodes, by a walk from the root.
		merged := make([]int, tr.Len())
		stack := []int{0}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			m := 0
			if n != 0 {
				parent := merged[tr.Parent(n)]
				name := s.funcName(p, tr.Func(n))
				k := [2]string{fmt.Sprint(parent), name}
				var ok bool
				if m, ok = index[k]; !ok {
					m = len(nodes)
					index[k] = m
					nodes = append(nodes, CompareNode{Parent: parent, Depth: nodes[parent].Depth + 1, Name: name,
						Incl: make([][]int64, len(ps)), Excl: make([][]int64, len(ps))})
					nodes[parent].children = append(nodes[parent].children, m)
				}
			}
			merged[n] = m
			nodes[m].Incl[g] = addVec(nodes[m].Incl[g], metricVector(s.ms, p, tr.Inclusive(n)))
			nodes[m].Excl[g] = addVec(nodes[m].Excl[g], metricVector(s.ms, p, tr.Exclusive(n)))
			for _, c := range tr.Children(n) {
				stack = append(stack, int(c))
			}
		}
	}
	return nodes
}

// compareCalltree is the call tree in compare mode: the groups' trees merged by path, each node with
// its inclusive metrics in each group; children sorted by the first group's value.
func (s *session) compareCalltree() error {
	ps, names, err := s.compareProfiles()
	if err != nil {
		return err
	}
	nodes := s.compareTree(ps)
	its := metricItems(s.callers())
	sortIt := s.callerSort()
	sortIt.flavor = inclusive
	t := &report.Table{Title: s.compareTitle("Functions Call Tree. Metric: "+sortIt.title(s.ms)+" [1]", names),
		Columns: s.compareColumns(its, len(ps)), NameTitle: "Name", Tree: true}
	total := s.totalsRow(ps)
	base := func(g int) []int64 { return total.excl[g] }
	stack := []int{0}
	for len(stack) > 0 && (s.limit == 0 || len(t.Rows) < s.limit) {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := &nodes[n]
		r := cmpRow{name: nd.Name, excl: nd.Incl, incl: nd.Incl}
		t.Rows = append(t.Rows, report.Row{Name: nd.Name, Depth: nd.Depth, Cells: s.compareCells(&r, its, len(ps), base)})
		kids := slices.Clone(nd.children)
		slices.SortStableFunc(kids, func(a, b int) int {
			va, vb := cmpNodeValue(&nodes[a], sortIt), cmpNodeValue(&nodes[b], sortIt)
			if va != vb {
				if va > vb {
					return -1
				}
				return 1
			}
			return strings.Compare(nodes[a].Name, nodes[b].Name)
		})
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	return s.table(t)
}

// cmpNodeValue is a merged node's inclusive value of it in the first group (0 when absent there).
func cmpNodeValue(n *CompareNode, it item) int64 {
	if it.kind != itemMetric || n.Incl[0] == nil {
		return 0
	}
	return it.of(n.Incl[0])
}

// metricVector returns p's vector v in the order of the session's metrics ms (by name; 0 where p lacks
// one): the groups' profiles may have different metrics.
func metricVector(ms []analysis.Metric, p *analysis.Profile, v []int64) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		if j := analysis.MetricIndex(p.Metrics, m.Name); j >= 0 {
			out[i] = v[j]
		}
	}
	return out
}

// addVec adds b to a (nil: b's copy).
func addVec(a, b []int64) []int64 {
	if a == nil {
		return slices.Clone(b)
	}
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// cmpListing is what a compared annotated listing (source, disasm) needs: the groups' profiles and
// their totals. Its rows are the listing's as without compare (from the experiments aggregated, hot
// lines marked by their values); its columns each group's values, as the compared lists show them.
type cmpListing struct {
	ps    []*analysis.Profile
	total cmpRow
}

// compareListing returns the compared listing's groups, or nil when the views do not compare.
func (s *session) compareListing() (*cmpListing, error) {
	if !s.comparing() {
		return nil, nil
	}
	ps, _, err := s.compareProfiles()
	if err != nil {
		return nil, err
	}
	return &cmpListing{ps: ps, total: s.totalsRow(ps)}, nil
}

// columns are the compared metric columns of items its.
func (c *cmpListing) columns(s *session, its []item) []report.Column {
	return s.compareColumns(its, len(c.ps))
}

// cells are row r's compared cells, with percentages of each group's totals.
func (c *cmpListing) cells(s *session, r *cmpRow, its []item) []report.Cell {
	return s.compareCells(r, its, len(c.ps), func(g int) []int64 { return c.total.excl[g] })
}

// lineRow is source line file:line in each group (zero where a group has no events there).
func (c *cmpListing) lineRow(s *session, file string, line int) cmpRow {
	r := cmpRow{excl: make([][]int64, len(c.ps)), incl: make([][]int64, len(c.ps))}
	for g, p := range c.ps {
		r.excl[g], r.incl[g] = make([]int64, len(s.ms)), make([]int64, len(s.ms))
		if e, i, ok := p.Lines().FileLine(file, line); ok {
			r.excl[g], r.incl[g] = metricVector(s.ms, p, e), metricVector(s.ms, p, i)
		}
	}
	return r
}

// noLineRow is the instructions without line numbers of the function named name in each group.
func (c *cmpListing) noLineRow(s *session, name string) cmpRow {
	r := cmpRow{excl: make([][]int64, len(c.ps)), incl: make([][]int64, len(c.ps))}
	for g, p := range c.ps {
		r.excl[g], r.incl[g] = make([]int64, len(s.ms)), make([]int64, len(s.ms))
		if f := s.functionNamed(p, name); f > 0 {
			lt := p.Lines()
			if i := lt.Find(analysis.SourceLine{Func: f}); i >= 0 {
				r.excl[g], r.incl[g] = metricVector(s.ms, p, lt.Exclusive(i)), metricVector(s.ms, p, lt.Inclusive(i))
			}
		}
	}
	return r
}

// instRow is the instruction at offset off in the function named name, in each group (the groups'
// builds of the function may be at other addresses).
func (c *cmpListing) instRow(s *session, name string, off uint64) cmpRow {
	r := cmpRow{excl: make([][]int64, len(c.ps)), incl: make([][]int64, len(c.ps))}
	for g, p := range c.ps {
		r.excl[g], r.incl[g] = make([]int64, len(s.ms)), make([]int64, len(s.ms))
		if f := s.functionNamed(p, name); f > 0 {
			fn := &p.Functions[f]
			pt := p.PCs()
			if i := pt.Find(fn.Object, f, fn.Addr+off); i >= 0 {
				r.excl[g], r.incl[g] = metricVector(s.ms, p, pt.Exclusive(i)), metricVector(s.ms, p, pt.Inclusive(i))
			}
		}
	}
	return r
}
