package erprint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"er/internal/analysis"
	"er/internal/report"
)

// The data-space views: the events of counters given with '+' (their data addresses) by data object,
// by the members of struct types, and by memory object (virtual page, cache line, address).

// dataSpace returns the profile's data-space view, or nil after saying why there is none.
func (s *session) dataSpace() (*analysis.Profile, *analysis.DataSpace, error) {
	p, err := s.profile()
	if err != nil {
		return nil, nil, err
	}
	if s.lacks(p, analysis.DataCounters) {
		return nil, nil, nil
	}
	ds := p.DataSpace()
	if len(ds.Metrics) == 0 {
		msg := "no counter recorded data addresses; collect with -h +NAME (a load or store counter, or page-faults)"
		if s.text() {
			s.printf("%s\n\n", msg)
		} else {
			fmt.Fprintf(s.stderr, "er print: %s\n", msg)
		}
		return nil, nil, nil
	}
	return p, ds, nil
}

// dataColumns are the columns of the data-space metrics: each one's value and percentage of the total.
func dataColumns(p *analysis.Profile, ds *analysis.DataSpace) []report.Column {
	var cols []report.Column
	for _, m := range ds.Metrics {
		mt := p.Metrics[m]
		c := report.Column{Title: "Excl. " + mt.Short, Key: "e." + mt.Name, Kind: report.Count, Value: true, Percent: true}
		if mt.Time {
			c.Kind, c.Unit = report.Time, "sec."
		}
		cols = append(cols, c)
	}
	return cols
}

// dataCells are a row's cells of the data-space metrics.
func dataCells(ds *analysis.DataSpace, vals []int64) []report.Cell {
	var cells []report.Cell
	for _, m := range ds.Metrics {
		cells = append(cells, report.Cell{Value: vals[m], Pct: percent(vals[m], ds.Total[m])})
	}
	return cells
}

// dataOrder sorts rows by the first data-space metric, the largest first, then by name.
func dataOrder(ds *analysis.DataSpace, vals func(i int) []int64, name func(i int) string) func(a, b int) int {
	m := ds.Metrics[0]
	return func(a, b int) int {
		va, vb := vals(a)[m], vals(b)[m]
		if va != vb {
			if va > vb {
				return -1
			}
			return 1
		}
		return strings.Compare(name(a), name(b))
	}
}

// dataObjects prints the data objects with the data-space metrics: variables, heap blocks by
// allocating function, and the addresses of neither.
func (s *session) dataObjects(_ []string) error {
	p, ds, err := s.dataSpace()
	if ds == nil {
		return err
	}
	order := make([]int, len(ds.Objects))
	for i := range order {
		order[i] = i
	}
	cmpf := dataOrder(ds, func(i int) []int64 { return ds.Objects[i].Values }, func(i int) string { return ds.Objects[i].Name })
	slices.SortStableFunc(order, cmpf)
	t := &report.Table{Title: []string{"Data Objects sorted by metric: Exclusive " + p.Metrics[ds.Metrics[0]].Title},
		Columns: dataColumns(p, ds), NameTitle: "Name"}
	t.Columns = append(t.Columns, report.Column{Title: "Type", Key: "type", Kind: report.Text, Left: true},
		report.Column{Title: "Size", Key: "size", Kind: report.Count, Value: true})
	t.Rows = append(t.Rows, report.Row{Name: analysis.TotalName, Cells: append(dataCells(ds, ds.Total), report.Cell{}, report.Cell{Blank: true})})
	for _, i := range order[:s.limited(len(order))] {
		o := &ds.Objects[i]
		t.Rows = append(t.Rows, report.Row{Name: o.Name, Cells: append(dataCells(ds, o.Values),
			report.Cell{Text: o.Type}, report.Cell{Value: int64(o.Size), Blank: o.Size == 0})})
	}
	return s.table(t)
}

// dataLayout prints each struct or union type whose members data addresses fell in, with the
// data-space metrics of the type and of each of its members, in offset order.
func (s *session) dataLayout(_ []string) error {
	p, ds, err := s.dataSpace()
	if ds == nil {
		return err
	}
	order := make([]int, len(ds.Layouts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, dataOrder(ds, func(i int) []int64 { return ds.Layouts[i].Values }, func(i int) string { return ds.Layouts[i].Type }))
	t := &report.Table{Title: []string{"Data Layout sorted by metric: Exclusive " + p.Metrics[ds.Metrics[0]].Title},
		Columns: dataColumns(p, ds), NameTitle: "Name"}
	t.Columns = append(t.Columns, report.Column{Title: "Offset", Key: "offset", Kind: report.Count, Value: true},
		report.Column{Title: "Size", Key: "size", Kind: report.Count, Value: true},
		report.Column{Title: "Type", Key: "type", Kind: report.Text, Left: true})
	t.Rows = append(t.Rows, report.Row{Name: analysis.TotalName, Cells: append(dataCells(ds, ds.Total),
		report.Cell{Blank: true}, report.Cell{Blank: true}, report.Cell{})})
	for _, i := range order[:s.limited(len(order))] {
		l := &ds.Layouts[i]
		t.Rows = append(t.Rows, report.Row{Name: "{" + l.Type + "}", Cells: append(dataCells(ds, l.Values),
			report.Cell{Blank: true}, report.Cell{Value: int64(l.Size)}, report.Cell{})})
		for _, m := range l.Members {
			name := m.Name
			if name == "" {
				name = "<anonymous>"
			}
			t.Rows = append(t.Rows, report.Row{Name: "  " + name, Cells: append(dataCells(ds, m.Values),
				report.Cell{Value: int64(m.Offset)}, report.Cell{Value: int64(m.Size)}, report.Cell{Text: m.Type})})
		}
	}
	return s.table(t)
}

// memObjectTypes are the memory objects memobj groups data addresses by: each address, and the
// aligned blocks of a cache line or a page that hold it.
var memObjectTypes = []struct {
	name  string
	size  uint64
	about string
}{
	{"Vaddress", 1, "virtual address"},
	{"Vline_32B", 32, "32-byte virtual cache line"},
	{"Vline_64B", 64, "64-byte virtual cache line"},
	{"Vpage_4K", 4 << 10, "4 KiB virtual page"},
	{"Vpage_2M", 2 << 20, "2 MiB virtual page (a huge page)"},
	{"Vpage_1G", 1 << 30, "1 GiB virtual page"},
}

// mobjList lists the memory object types.
func (s *session) mobjList(_ []string) error {
	t := &report.Table{Columns: []report.Column{{Title: "Name", Key: "name", Kind: report.Text, Left: true},
		{Title: "Bytes", Key: "bytes", Kind: report.Count, Value: true},
		{Title: "Description", Key: "description", Kind: report.Text, Left: true}}}
	if s.text() {
		t.Title = []string{"Memory object types (memobj TYPE):"}
	}
	for _, m := range memObjectTypes {
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{{Text: m.name}, {Value: int64(m.size)}, {Text: m.about}}})
	}
	return s.table(t)
}

// memObjects prints the memory objects of a type with the data-space metrics.
func (s *session) memObjects(args []string) error {
	var size uint64
	var names []string
	for _, m := range memObjectTypes {
		names = append(names, m.name)
		if strings.EqualFold(m.name, args[0]) {
			size = m.size
		}
	}
	if size == 0 {
		return usagef("memobj %q: unknown memory object type; the types: %s (mobj_list)", args[0], strings.Join(names, ", "))
	}
	p, ds, err := s.dataSpace()
	if ds == nil {
		return err
	}
	objs := ds.MemObjects(size)
	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, dataOrder(ds, func(i int) []int64 { return objs[i].Values }, func(i int) string { return fmt.Sprintf("%016x", objs[i].Addr) }))
	t := &report.Table{Title: []string{fmt.Sprintf("Memory Objects of type %s sorted by metric: Exclusive %s", args[0], p.Metrics[ds.Metrics[0]].Title)},
		Columns: dataColumns(p, ds), NameTitle: "Name"}
	t.Rows = append(t.Rows, report.Row{Name: analysis.TotalName, Cells: dataCells(ds, ds.Total)})
	for _, i := range order[:s.limited(len(order))] {
		t.Rows = append(t.Rows, report.Row{Name: "0x" + strconv.FormatUint(objs[i].Addr, 16), Cells: dataCells(ds, objs[i].Values)})
	}
	return s.table(t)
}
