package erprint

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"er/internal/analysis"
	"er/internal/report"
)

// funcName is function f's name in the current style, with its load object when "name ...:soname".
// Names are demangled once and kept until the style changes.
func (s *session) funcName(p *analysis.Profile, f int) string {
	if len(s.names) != len(p.Functions) {
		s.names = make([]string, len(p.Functions))
	}
	if s.names[f] == "" {
		s.names[f] = s.makeName(p, f)
	}
	return s.names[f]
}

func (s *session) makeName(p *analysis.Profile, f int) string {
	n := p.FuncName(f, s.style)
	if s.soname {
		switch p.Functions[f].Kind {
		case analysis.FuncSymbol, analysis.FuncPLT, analysis.FuncKernel:
			n += " [" + p.Objects[p.Functions[f].Object].Name + "]"
		}
	}
	return n
}

// shown returns the items of list that are columns: not hidden, not the name.
func shown(list []item) []item {
	var out []item
	for _, it := range list {
		if it.kind != itemName && !it.hidden() {
			out = append(out, it)
		}
	}
	return out
}

func (s *session) columns(its []item) []report.Column {
	var cols []report.Column
	for _, it := range its {
		cols = append(cols, it.column(s.ms))
	}
	return cols
}

func percent(v, base int64) float64 {
	if base == 0 {
		return 0
	}
	return 100 * float64(v) / float64(base)
}

// funcValue is what item it shows for function f: a metric in its flavor, the size or the address.
func funcValue(p *analysis.Profile, f int, it item) int64 {
	switch it.kind {
	case itemSize:
		return int64(p.Functions[f].Size)
	case itemMetric:
		if it.flavor == inclusive {
			return it.of(p.Inclusive(f))
		}
		return it.of(p.Exclusive(f))
	}
	return 0
}

func address(p *analysis.Profile, f int) string {
	fn := &p.Functions[f]
	return fmt.Sprintf("%d:0x%08x", fn.Object, fn.Addr)
}

// funcCells are function f's cells for items its, with percentages of the totals.
func funcCells(p *analysis.Profile, f int, its []item) []report.Cell {
	cells := make([]report.Cell, len(its))
	for j, it := range its {
		switch it.kind {
		case itemAddress:
			cells[j] = report.Cell{Text: address(p, f)}
		case itemSize:
			cells[j] = report.Cell{Value: funcValue(p, f, it)}
		default:
			v := funcValue(p, f, it)
			cells[j] = report.Cell{Value: v, Pct: percent(v, p.Total[it.metric])}
		}
	}
	return cells
}

// sortedFunctions orders the functions (not <Total>) by the sort item: metrics and sizes largest
// first, names and addresses in increasing order; ties by name, then index.
func (s *session) sortedFunctions(p *analysis.Profile) []int {
	order := make([]int, 0, len(p.Functions)-1)
	for f := 1; f < len(p.Functions); f++ {
		if p.Used(f) {
			order = append(order, f)
		}
	}
	names := make([]string, len(p.Functions))
	for f := range names {
		names[f] = s.funcName(p, f)
	}
	it := s.sortItem
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		switch it.kind {
		case itemMetric, itemSize:
			if va, vb := funcValue(p, a, it), funcValue(p, b, it); va != vb {
				return va > vb
			}
		case itemAddress:
			fa, fb := &p.Functions[a], &p.Functions[b]
			if fa.Object != fb.Object {
				return fa.Object < fb.Object
			}
			if fa.Addr != fb.Addr {
				return fa.Addr < fb.Addr
			}
		}
		return names[a] < names[b]
	})
	return order
}

// limited cuts n rows to the print limit.
func (s *session) limited(n int) int {
	if s.limit > 0 && n > s.limit {
		return s.limit
	}
	return n
}

func (s *session) sortTitle() string {
	return "Functions sorted by metric: " + s.sortItem.title(s.ms)
}

func (s *session) functions(_ []string) error {
	if s.comparing() {
		return s.compareFunctions()
	}
	p, err := s.profile()
	if err != nil {
		return err
	}
	its := shown(s.metrics)
	t := &report.Table{Title: []string{s.sortTitle()}, Columns: s.columns(its), NameTitle: "Name"}
	rows := append([]int{0}, s.sortedFunctions(p)...)
	for _, f := range rows[:s.limited(len(rows))] {
		t.Rows = append(t.Rows, report.Row{ID: f + 1, Name: s.funcName(p, f), Cells: funcCells(p, f, its)})
	}
	return s.table(t)
}

// findFunction resolves a function name and an optional 1-based choice among same-named functions.
func (s *session) findFunction(p *analysis.Profile, cmd string, args []string) (int, error) {
	if s.pick > 0 {
		return s.pick - 1, nil
	}
	name := args[0]
	fs := p.FindFunctions(name)
	if len(fs) == 0 {
		return 0, usagef("%s: no function named %q", cmd, name)
	}
	if len(args) > 1 {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > len(fs) {
			return 0, usagef("%s: %q is not a number from 1 to %d for the functions named %q", cmd, args[1], len(fs), name)
		}
		return fs[n-1], nil
	}
	if len(fs) == 1 {
		return fs[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d functions are named %q; choose one with \"%s %s N\":", cmd, len(fs), name, cmd, name)
	for i, f := range fs {
		fn := &p.Functions[f]
		fmt.Fprintf(&b, "\n  %d) %s [%s] %s", i+1, p.FuncName(f, s.style), p.Objects[fn.Object].Path, address(p, f))
	}
	return 0, usagef("%s", b.String())
}

func (s *session) fsummary(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	rows := append([]int{0}, s.sortedFunctions(p)...)
	rows = rows[:s.limited(len(rows))]
	if s.text() {
		s.printf("%s\n\n", s.sortTitle())
	}
	return s.summaries(p, rows)
}

func (s *session) fsingle(args []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	f, err := s.findFunction(p, "fsingle", args)
	if err != nil {
		return err
	}
	return s.summaries(p, []int{f})
}

// summaryItems are the metrics of a function summary: every exclusive and inclusive metric of
// the metric list, shown with value and percentage.
func (s *session) summaryItems() []item {
	var its []item
	for _, it := range s.metrics {
		if it.kind == itemMetric && it.flavor != attributed {
			it.value, it.pct = true, true
			its = append(its, it)
		}
	}
	return its
}

// summaries prints the summary block of each function, or, in CSV or JSON, one table of them.
func (s *session) summaries(p *analysis.Profile, fs []int) error {
	its := s.summaryItems()
	if !s.text() {
		all := append(append([]item(nil), its...), item{kind: itemSize}, item{kind: itemAddress})
		cols := append(s.columns(all),
			report.Column{Title: "Load Object", Key: "object", Kind: report.Text},
			report.Column{Title: "Mangled Name", Key: "mangled", Kind: report.Text})
		t := &report.Table{Columns: cols, NameTitle: "Name"}
		for _, f := range fs {
			cells := append(funcCells(p, f, all),
				report.Cell{Text: p.Objects[p.Functions[f].Object].Path}, report.Cell{Text: p.Functions[f].Name})
			t.Rows = append(t.Rows, report.Row{ID: f + 1, Name: s.funcName(p, f), Cells: cells})
		}
		return s.table(t)
	}
	for _, f := range fs {
		fn := &p.Functions[f]
		mangled := ""
		if fn.Kind == analysis.FuncSymbol || fn.Kind == analysis.FuncPLT || fn.Kind == analysis.FuncInlined {
			if fn.Name != p.FuncName(f, s.style) {
				mangled = fn.Name
			}
		}
		s.printBlock(p, s.funcName(p, f), its, func(it item) int64 { return funcValue(p, f, it) }, []blockField{
			{label: "Size", value: strconv.FormatUint(fn.Size, 10), number: true},
			{label: "PC Address", value: address(p, f)},
			{label: "Load Object", value: p.Objects[fn.Object].Path},
			{label: "Mangled Name", value: mangled},
		})
	}
	return nil
}

// blockField is a labelled value of a summary block; a number is aligned with the metric values.
type blockField struct {
	label, value string
	number       bool
}

// printBlock prints a summary block: the name, then the value and percentage of each item, then
// the fields, with their labels right-aligned.
func (s *session) printBlock(p *analysis.Profile, name string, its []item, value func(item) int64, fields []blockField) {
	ms := s.ms
	var labels []string
	for _, fd := range fields {
		labels = append(labels, fd.label)
	}
	for _, it := range its {
		labels = append(labels, it.title(ms))
	}
	lw := 0
	for _, l := range labels {
		lw = max(lw, len(l))
	}
	s.printf("%s\n", name)
	vals := make([]string, len(its))
	vw := 0
	for j, it := range its {
		vals[j] = report.FormatSeconds(value(it))
		if it.derived != nil {
			vals[j] = strconv.FormatFloat(float64(value(it))/ratioScale, 'f', 3, 64)
		} else if !ms[it.metric].Time {
			vals[j] = strconv.FormatInt(value(it), 10)
		} else if strings.HasSuffix(vals[j], ".") {
			vals[j] += "   "
		}
		vw = max(vw, len(vals[j]))
	}
	for j, it := range its {
		pc := percent(value(it), p.Total[it.metric])
		ps := fmt.Sprintf("%5.1f%%", pc)
		if pc == 0 {
			ps = "  0. %"
		}
		s.printf("\t%*s: %*s (%s)\n", lw, it.title(ms), vw, vals[j], ps)
	}
	for _, fd := range fields {
		if fd.number {
			s.printf("\t%*s: %*s\n", lw, fd.label, vw, fd.value)
			continue
		}
		s.printf("%s\n", strings.TrimRight(fmt.Sprintf("\t%*s: %s", lw, fd.label, fd.value), " "))
	}
	s.printf("\n")
}

// attrCells are the cells of attributed values v for items its, as percentages of base.
func attrCells(v []int64, base []int64, its []item) []report.Cell {
	cells := make([]report.Cell, len(its))
	for j, it := range its {
		cells[j] = report.Cell{Value: it.of(v), Pct: percent(it.of(v), base[it.metric])}
	}
	return cells
}

// sortAttributed orders callers or callees by the callers-callees sort metric, largest first, then by name.
func (s *session) sortAttributed(p *analysis.Profile, as []analysis.Attributed) {
	it := s.callerSort()
	sort.SliceStable(as, func(i, j int) bool {
		if it.kind == itemMetric {
			if a, b := it.of(as[i].Value), it.of(as[j].Value); a != b {
				return a > b
			}
		}
		return s.funcName(p, as[i].Func) < s.funcName(p, as[j].Func)
	})
}

func (s *session) callerTitle() string {
	return "Callers and callees sorted by metric: " + s.callerSort().title(s.ms)
}

func (s *session) callersCallees(_ []string) error {
	if s.comparing() {
		return s.compareCallers()
	}
	p, err := s.profile()
	if err != nil {
		return err
	}
	its := shown(s.callers())
	fs := append([]int{0}, s.sortedFunctions(p)...)
	fs = fs[:s.limited(len(fs))]
	if s.text() {
		s.printf("%s\n%s\n\n", s.sortTitle(), s.callerTitle())
	}
	for _, f := range fs {
		cc, err := p.CallersCallees([]int{f})
		if err != nil {
			return err
		}
		s.sortAttributed(p, cc.Callers)
		s.sortAttributed(p, cc.Callees)
		t := &report.Table{Columns: s.columns(its), NameTitle: "Name"}
		for _, a := range cc.Callers {
			t.Rows = append(t.Rows, report.Row{ID: a.Func + 1, Name: s.funcName(p, a.Func), Section: sectionIf(!s.text(), "Callers"), Cells: attrCells(a.Value, cc.Inclusive, its)})
		}
		t.Rows = append(t.Rows, report.Row{ID: f + 1, Name: s.funcName(p, f), Mark: "*", Section: sectionIf(!s.text(), "Function"), Cells: attrCells(cc.Exclusive, cc.Inclusive, its)})
		for _, a := range cc.Callees {
			t.Rows = append(t.Rows, report.Row{ID: a.Func + 1, Name: s.funcName(p, a.Func), Section: sectionIf(!s.text(), "Callees"), Cells: attrCells(a.Value, cc.Inclusive, its)})
		}
		if err := s.table(t); err != nil {
			return err
		}
	}
	return nil
}

func sectionIf(ok bool, name string) string {
	if ok {
		return name
	}
	return ""
}

func (s *session) csingle(args []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	f, err := s.findFunction(p, "csingle", args)
	if err != nil {
		return err
	}
	return s.fragmentView(p, []int{f})
}

func (s *session) cprepend(args []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	f, err := s.findFunction(p, "cprepend", args)
	if err != nil {
		return err
	}
	return s.fragmentView(p, append([]int{f}, s.fragment...))
}

func (s *session) cappend(args []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	f, err := s.findFunction(p, "cappend", args)
	if err != nil {
		return err
	}
	return s.fragmentView(p, append(append([]int(nil), s.fragment...), f))
}

func (s *session) crmfirst(_ []string) error {
	if len(s.fragment) < 2 {
		return usagef("crmfirst: the call-stack fragment has %d function(s); it needs two to remove one", len(s.fragment))
	}
	return s.fragmentView(s.prof, s.fragment[1:])
}

func (s *session) crmlast(_ []string) error {
	if len(s.fragment) < 2 {
		return usagef("crmlast: the call-stack fragment has %d function(s); it needs two to remove one", len(s.fragment))
	}
	return s.fragmentView(s.prof, s.fragment[:len(s.fragment)-1])
}

// fragmentView makes frag the call-stack fragment and prints its callers-callees. An invalid
// fragment leaves the current one as it was.
func (s *session) fragmentView(p *analysis.Profile, frag []int) error {
	cc, err := p.CallersCallees(frag)
	if err != nil {
		return usagef("%v", err)
	}
	s.fragment = cc.Fragment
	s.sortAttributed(p, cc.Callers)
	s.sortAttributed(p, cc.Callees)
	its := shown(s.callers())
	t := &report.Table{Title: []string{s.callerTitle()}, Columns: s.columns(its), NameTitle: "Name"}
	for _, a := range cc.Callers {
		t.Rows = append(t.Rows, report.Row{ID: a.Func + 1, Name: s.funcName(p, a.Func), Section: "Callers", Cells: attrCells(a.Value, cc.Inclusive, its)})
	}
	for i, f := range cc.Fragment {
		cells := make([]report.Cell, len(its))
		for j := range cells {
			cells[j].Blank = true
		}
		if i == len(cc.Fragment)-1 {
			cells = attrCells(cc.Exclusive, cc.Inclusive, its)
		}
		t.Rows = append(t.Rows, report.Row{ID: f + 1, Name: s.funcName(p, f), Section: "Stack Fragment", Cells: cells})
	}
	for _, a := range cc.Callees {
		t.Rows = append(t.Rows, report.Row{ID: a.Func + 1, Name: s.funcName(p, a.Func), Section: "Callees", Cells: attrCells(a.Value, cc.Inclusive, its)})
	}
	return s.table(t)
}

func (s *session) calltree(_ []string) error {
	if s.comparing() {
		return s.compareCalltree()
	}
	p, err := s.profile()
	if err != nil {
		return err
	}
	tr := p.CallTree()
	its := shown(s.callers())
	sortIt := s.callerSort()
	t := &report.Table{Title: []string{"Functions Call Tree. Metric: " + sortIt.title(s.ms)},
		Columns: s.columns(its), NameTitle: "Name", Tree: true}
	// Calls below tthresh% of the total in every shown metric are left out with everything they
	// call: a real profile's tree has millions of nodes.
	var mins []int64 // by metric; 0: no bound
	if s.tthresh > 0 {
		mins = make([]int64, len(p.Total))
		for _, it := range its {
			if it.kind == itemMetric && p.Total[it.metric] > 0 {
				mins[it.metric] = max(1, int64(math.Ceil(s.tthresh/100*float64(p.Total[it.metric]))))
			}
		}
	}
	small := func(n int) bool {
		if mins == nil {
			return false
		}
		v := tr.Inclusive(n)
		for m, lo := range mins {
			if lo > 0 && v[m] >= lo {
				return false
			}
		}
		return true
	}
	var cut int
	stack := []int{0}
	for len(stack) > 0 && (s.limit == 0 || len(t.Rows) < s.limit) {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		t.Rows = append(t.Rows, report.Row{ID: tr.Func(n) + 1, Name: s.funcName(p, tr.Func(n)), Depth: tr.Depth(n),
			Cells: attrCells(tr.Inclusive(n), p.Total, its)})
		kids := make([]int, 0, len(tr.Children(n)))
		for _, c := range tr.Children(n) {
			if small(int(c)) {
				cut++
				continue
			}
			kids = append(kids, int(c))
		}
		sort.SliceStable(kids, func(i, j int) bool {
			a, b := kids[i], kids[j]
			if sortIt.kind == itemMetric {
				if va, vb := tr.Inclusive(a)[sortIt.metric], tr.Inclusive(b)[sortIt.metric]; va != vb {
					return va > vb
				}
			}
			return s.funcName(p, tr.Func(a)) < s.funcName(p, tr.Func(b))
		})
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	if err := s.table(t); err != nil || cut == 0 || !s.text() {
		return err
	}
	s.printf("%d calls below %g%% of the total in every metric shown are not shown, nor what they call (tthresh 0 shows all)\n",
		cut, s.tthresh)
	return nil
}

// objectValue is what item it shows for load object o.
func objectValue(p *analysis.Profile, o int, it item) int64 {
	if it.flavor == inclusive {
		return it.of(p.ObjectInclusive(o))
	}
	return it.of(p.ObjectExclusive(o))
}

func (s *session) lobjects(_ []string) error {
	if s.comparing() {
		return s.compareObjects()
	}
	p, err := s.profile()
	if err != nil {
		return err
	}
	var its []item
	for _, it := range shown(s.metrics) {
		if it.kind == itemMetric {
			its = append(its, it)
		}
	}
	sortIt := s.sortItem
	order := make([]int, 0, len(p.Objects)-1)
	for o := 1; o < len(p.Objects); o++ {
		order = append(order, o)
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if sortIt.kind == itemMetric {
			if va, vb := objectValue(p, a, sortIt), objectValue(p, b, sortIt); va != vb {
				return va > vb
			}
		}
		return p.Objects[a].Name < p.Objects[b].Name
	})
	title := "Load Objects sorted by metric: " + sortIt.title(s.ms)
	if sortIt.kind != itemMetric {
		title = "Load Objects sorted by metric: Name"
	}
	t := &report.Table{Title: []string{title}, Columns: s.columns(its), NameTitle: "Name"}
	rows := append([]int{0}, order...)
	for _, o := range rows[:s.limited(len(rows))] {
		cells := make([]report.Cell, len(its))
		for j, it := range its {
			v := objectValue(p, o, it)
			cells[j] = report.Cell{Value: v, Pct: percent(v, p.Total[it.metric])}
		}
		t.Rows = append(t.Rows, report.Row{Name: p.Objects[o].Name, Cells: cells})
	}
	return s.table(t)
}

// objectNote says what is wrong with a load object's symbols, if anything.
func objectNote(o analysis.Object) string {
	if o.Kind == "" && strings.HasPrefix(o.Path, "/") || o.Path == analysis.KernelPath && o.Kind == "" {
		return "no symbols: functions are shown as <static>"
	}
	return ""
}

func (s *session) objects(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if !s.text() {
		return s.objectTable(p)
	}
	n := s.limited(len(p.Objects) - 1)
	for _, o := range p.Objects[1 : 1+n] {
		line := fmt.Sprintf(" %s (%s)", o.Name, o.Path)
		if note := objectNote(o); note != "" {
			line += " -- " + note
		}
		s.printf("%s\n", line)
	}
	s.printf("\n")
	return nil
}

func (s *session) objectTable(p *analysis.Profile) error {
	t := &report.Table{Columns: []report.Column{
		{Title: "Index", Key: "index", Kind: report.Text},
		{Title: "Load Object", Key: "object", Kind: report.Text, Left: true},
		{Title: "Path", Key: "path", Kind: report.Text, Left: true},
		{Title: "Note", Key: "note", Kind: report.Text, Left: true},
	}}
	n := s.limited(len(p.Objects) - 1)
	for i, o := range p.Objects[1 : 1+n] {
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{{Text: strconv.Itoa(i + 1)}, {Text: o.Name}, {Text: o.Path}, {Text: objectNote(o)}}})
	}
	return s.table(t)
}

func (s *session) objectList(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	if !s.text() {
		return s.objectTable(p)
	}
	nw, iw := len("Load Object"), len("Index")
	for _, o := range p.Objects[1:] {
		nw = max(nw, len(o.Name))
	}
	s.printf("%-4s %-*s %-*s %s\n", "Sel", nw, "Load Object", iw, "Index", "Path")
	s.printf("%s %s %s %s\n", strings.Repeat("=", 4), strings.Repeat("=", nw), strings.Repeat("=", iw), strings.Repeat("=", max(4, longestPath(p))))
	n := s.limited(len(p.Objects) - 1)
	for i, o := range p.Objects[1 : 1+n] {
		sel := "show"
		switch s.objVis.of(o.Path) {
		case analysis.Hide:
			sel = "hide"
		case analysis.API:
			sel = "api"
		}
		s.printf("%-4s %-*s %-*d %s\n", sel, nw, o.Name, iw, i+1, o.Path)
	}
	s.printf("\n")
	return nil
}

func longestPath(p *analysis.Profile) int {
	w := 0
	for _, o := range p.Objects[1:] {
		w = max(w, len(o.Path))
	}
	return w
}
