package erprint

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"er/internal/analysis"
	"er/internal/objfile"
	"er/internal/report"
)

// metricRow is a row of the line or instruction list: a name and its exclusive and inclusive
// metrics.
type metricRow struct {
	name       string
	excl, incl []int64
	address    string // PC address, "" when none
	obj, line  int    // for sorting by address: load object, then key (an address or a line)
	key        uint64
	file       string
	index      int // into the line or instruction table; -1 for <Total>
}

// rowValue is what item it shows for row r.
func rowValue(r *metricRow, it item) int64 {
	if it.kind != itemMetric {
		return 0
	}
	if it.flavor == inclusive {
		return it.of(r.incl)
	}
	return it.of(r.excl)
}

// rowCells are the cells of row r for items its, with percentages of the totals.
func rowCells(p *analysis.Profile, r *metricRow, its []item) []report.Cell {
	cells := make([]report.Cell, len(its))
	for j, it := range its {
		switch it.kind {
		case itemAddress:
			cells[j] = report.Cell{Text: r.address, Blank: r.address == ""}
		case itemSize:
			cells[j] = report.Cell{Blank: true}
		default:
			v := rowValue(r, it)
			cells[j] = report.Cell{Value: v, Pct: percent(v, p.Total[it.metric])}
		}
	}
	return cells
}

// sortRows orders rows by the sort item: metrics largest first; names, and addresses (load object,
// then address or file and line), in increasing order; ties by name.
func (s *session) sortRows(rows []metricRow) {
	it := s.sortItem
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		switch it.kind {
		case itemMetric:
			if va, vb := rowValue(a, it), rowValue(b, it); va != vb {
				return va > vb
			}
		case itemAddress:
			if a.obj != b.obj {
				return a.obj < b.obj
			}
			if a.file != b.file {
				return a.file < b.file
			}
			if a.key != b.key {
				return a.key < b.key
			}
		}
		return a.name < b.name
	})
}

// totalRow is the <Total> row of the line and instruction lists.
func totalRow(p *analysis.Profile) metricRow {
	return metricRow{name: analysis.TotalName, excl: p.Total, incl: p.Total, index: -1}
}

// lineRows are the rows of the line list, sorted, <Total> first, cut to the limit.
func (s *session) lineRows(p *analysis.Profile) []metricRow {
	lt := p.Lines()
	s.newWarnings()
	rows := make([]metricRow, 0, len(lt.Lines))
	for i, l := range lt.Lines {
		rows = append(rows, metricRow{name: s.lineName(p, l), excl: lt.Exclusive(i), incl: lt.Inclusive(i),
			obj: p.Functions[l.Func].Object, file: l.File, key: uint64(l.Line), index: i})
	}
	s.sortRows(rows)
	rows = append([]metricRow{totalRow(p)}, rows...)
	return rows[:s.limited(len(rows))]
}

// lineName names a line as er_print does: `f, line 14 in "prog.c"`, or
// `<Function: f, instructions without line numbers>`.
func (s *session) lineName(p *analysis.Profile, l analysis.SourceLine) string {
	if l.File == "" {
		return fmt.Sprintf("<Function: %s, instructions without line numbers>", s.funcName(p, l.Func))
	}
	return fmt.Sprintf("%s, line %d in \"%s\"", s.funcName(p, l.Func), l.Line, filepath.Base(l.File))
}

// pcRows are the rows of the instruction list, sorted, <Total> first, cut to the limit.
func (s *session) pcRows(p *analysis.Profile) []metricRow {
	pt := p.PCs()
	s.newWarnings()
	rows := make([]metricRow, 0, len(pt.PCs))
	for i, in := range pt.PCs {
		rows = append(rows, metricRow{name: s.pcName(p, in), excl: pt.Exclusive(i), incl: pt.Inclusive(i),
			address: fmt.Sprintf("%d:0x%08x", in.Object, in.Addr), obj: in.Object, key: in.Addr, index: i})
	}
	s.sortRows(rows)
	rows = append([]metricRow{totalRow(p)}, rows...)
	return rows[:s.limited(len(rows))]
}

// pcName names an instruction as er_print does: "f + 0x0000001A, line 14 in "prog.c"", followed,
// for inlined code, by the inlined functions: " <-- hot prog.c:7".
func (s *session) pcName(p *analysis.Profile, in analysis.Instruction) string {
	fn := &p.Functions[in.Symbol]
	switch fn.Kind {
	case analysis.FuncUnknown, analysis.FuncPseudo, analysis.FuncPLTBind, analysis.FuncCollector, analysis.FuncTotal:
		return s.funcName(p, in.Symbol)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s + 0x%08X", s.funcName(p, in.Symbol), fn.Offset(in.Addr))
	n := len(in.Frames)
	if n == 0 {
		return b.String()
	}
	if out := in.Frames[n-1]; out.Line > 0 {
		fmt.Fprintf(&b, ", line %d in \"%s\"", out.Line, filepath.Base(out.File))
	}
	for k := n - 2; k >= 0; k-- {
		fr := in.Frames[k]
		fmt.Fprintf(&b, " <-- %s", objfile.Demangle(fr.Func, s.style))
		if fr.Line > 0 {
			fmt.Fprintf(&b, " %s:%d", filepath.Base(fr.File), fr.Line)
		}
	}
	return b.String()
}

func (s *session) listTitle(what string) string {
	return what + " sorted by metric: " + s.sortItem.title(s.ms)
}

func (s *session) lines(_ []string) error {
	if s.comparing() {
		return s.compareLines()
	}
	p, err := s.profile()
	if err != nil {
		return err
	}
	return s.printRows(p, s.listTitle("Lines"), s.lineRows(p))
}

func (s *session) pcs(_ []string) error {
	if s.comparing() {
		return s.comparePCs()
	}
	p, err := s.profile()
	if err != nil {
		return err
	}
	return s.printRows(p, s.listTitle("PCs"), s.pcRows(p))
}

// printRows prints rows as a table of the metric list's items.
func (s *session) printRows(p *analysis.Profile, title string, rows []metricRow) error {
	its := shown(s.metrics)
	t := &report.Table{Title: []string{title}, Columns: s.columns(its), NameTitle: "Name"}
	for i := range rows {
		t.Rows = append(t.Rows, report.Row{Name: rows[i].name, Cells: rowCells(p, &rows[i], its)})
	}
	return s.table(t)
}

func (s *session) lsummary(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	rows := s.lineRows(p)
	lt := p.Lines()
	fields := func(r *metricRow) []blockField {
		if r.index < 0 {
			return []blockField{{label: "Source File", value: "(unknown)"}, {label: "Line", value: "0", number: true},
				{label: "Load Object", value: analysis.TotalName}, {label: "Function", value: analysis.TotalName}}
		}
		l := lt.Lines[r.index]
		file := l.File
		if file == "" {
			file = "(unknown)"
		}
		return []blockField{
			{label: "Source File", value: file},
			{label: "Line", value: strconv.Itoa(l.Line), number: true},
			{label: "Load Object", value: p.Objects[p.Functions[l.Func].Object].Path},
			{label: "Function", value: s.funcName(p, l.Func)},
		}
	}
	return s.rowSummaries(p, s.listTitle("Lines"), rows, fields)
}

func (s *session) psummary(_ []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	rows := s.pcRows(p)
	pt := p.PCs()
	fields := func(r *metricRow) []blockField {
		if r.index < 0 {
			return []blockField{{label: "PC Address", value: "0:0x00000000"}, {label: "Source File", value: "(unknown)"},
				{label: "Line", value: "0", number: true}, {label: "Load Object", value: analysis.TotalName},
				{label: "Function", value: analysis.TotalName}}
		}
		in := pt.PCs[r.index]
		file, line := "(unknown)", 0
		if n := len(in.Frames); n > 0 && in.Frames[0].Line > 0 {
			file, line = in.Frames[0].File, in.Frames[0].Line
		}
		return []blockField{
			{label: "PC Address", value: r.address},
			{label: "Source File", value: file},
			{label: "Line", value: strconv.Itoa(line), number: true},
			{label: "Load Object", value: p.Objects[in.Object].Path},
			{label: "Function", value: s.funcName(p, in.Func)},
		}
	}
	return s.rowSummaries(p, s.listTitle("PCs"), rows, fields)
}

// rowSummaries prints a summary block per row, or, in CSV or JSON, one table of them.
func (s *session) rowSummaries(p *analysis.Profile, title string, rows []metricRow, fields func(*metricRow) []blockField) error {
	its := s.summaryItems()
	if !s.text() {
		cols := s.columns(its)
		if len(rows) > 0 {
			for _, fd := range fields(&rows[0]) {
				cols = append(cols, report.Column{Title: fd.label, Key: strings.ToLower(strings.ReplaceAll(fd.label, " ", "_")), Kind: report.Text})
			}
		}
		t := &report.Table{Columns: cols, NameTitle: "Name"}
		for i := range rows {
			cells := rowCells(p, &rows[i], its)
			for _, fd := range fields(&rows[i]) {
				cells = append(cells, report.Cell{Text: fd.value})
			}
			t.Rows = append(t.Rows, report.Row{Name: rows[i].name, Cells: cells})
		}
		return s.table(t)
	}
	s.printf("%s\n\n", title)
	for i := range rows {
		r := &rows[i]
		s.printBlock(p, r.name, its, func(it item) int64 { return rowValue(r, it) }, fields(r))
	}
	return nil
}
