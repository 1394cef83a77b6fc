// Package report renders er_print's tables as aligned text, delimiter-separated values (CSV) or JSON.
package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind says how a column's cells are formatted.
type Kind uint8

// Column kinds.
const (
	Time  Kind = iota // Cell.Value is nanoseconds, shown as seconds with 3 decimals
	Count             // Cell.Value is a count, shown as an integer
	Text              // Cell.Text is shown as is, right-aligned
	Ratio             // Cell.Value is a ratio in thousandths (a derived metric: CPI), shown with 3 decimals
)

// Column is one column of a table. A Time or Count column has a value part, a percent part, or both.
type Column struct {
	Title   string // header words, wrapped to the column's width: "Excl. Total CPU"
	Unit    string // unit line under the title: "sec."; "" for none
	Key     string // machine name for CSV and JSON: "e.totalcpu"
	Kind    Kind
	Value   bool // show the value
	Percent bool // show the percentage (Time and Count only)
	Left    bool // left-align a Text column's cells
}

// Cell is one value of a row.
type Cell struct {
	Value int64   // Time and Count columns
	Pct   float64 // percent, 0 to 100; NaN prints nothing
	Text  string  // Text columns
	Blank bool    // print nothing in this cell
}

// Row is one line of a table: its cells, in column order, then its name.
type Row struct {
	Cells   []Cell
	Name    string
	Mark    string // one character printed before the name: "*" marks the selected function; "" for none
	Section string // group this row belongs to ("Callers", "Stack Fragment", "Callees"); "" for none
	Depth   int    // depth in a tree table; 0 is the root
	// ID links the row to what it shows, for programs (the web GUI): a function's index in the
	// profile plus 1; 0 for none. It is never printed.
	ID   int
	Flag string // in a table with FlagWidth, printed before the row's cells: "##" marks a hot line
	// Line is an annotated source row's line number, for programs (JSON's "line"); 0 for none. It is
	// never printed as such (the text shows it in the name, CSV in a column).
	Line int
}

// Table is a titled table of rows. The name column comes last.
type Table struct {
	Title     []string // lines printed above the table in text mode
	Columns   []Column
	NameTitle string // header of the name column; "" when the table has no name column
	Tree      bool   // rows are a tree in depth-first order: names are drawn with branches
	// FlagWidth, when not 0, starts every line of the text (headers too) with a gutter of that
	// many characters and a space, holding the row's Flag; CSV and JSON get a "flag" field.
	FlagWidth int
	Rows      []Row
}

// Mode is an output format.
type Mode struct {
	Kind  ModeKind
	Delim rune // field separator of Delimited; ',' for csv
}

// ModeKind names an output format.
type ModeKind uint8

// Output formats.
const (
	TextMode      ModeKind = iota // aligned columns for people
	DelimitedMode                 // one record per row, fields separated by Delim, quoted as CSV
	JSONMode                      // one JSON object per table (JSONTable), on one line
)

// ParseMode reads er_print's printmode argument: "text", "csv", "json", "tsv", or a single
// character used as the field separator.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "text":
		return Mode{Kind: TextMode}, nil
	case "csv":
		return Mode{Kind: DelimitedMode, Delim: ','}, nil
	case "tsv":
		return Mode{Kind: DelimitedMode, Delim: '\t'}, nil
	case "json":
		return Mode{Kind: JSONMode}, nil
	}
	r := []rune(s)
	if len(r) == 1 && r[0] != '"' && r[0] != '\n' && r[0] != '\r' && r[0] != 0xFFFD {
		return Mode{Kind: DelimitedMode, Delim: r[0]}, nil
	}
	return Mode{}, fmt.Errorf("printmode %q: want text, csv, tsv, json or a single delimiter character", s)
}

// String is the printmode argument that selects m.
func (m Mode) String() string {
	switch m.Kind {
	case TextMode:
		return "text"
	case JSONMode:
		return "json"
	}
	switch m.Delim {
	case ',':
		return "csv"
	case '\t':
		return "tsv"
	}
	return string(m.Delim)
}

// Write renders t in mode m.
func Write(w io.Writer, t *Table, m Mode) error {
	if err := t.check(); err != nil {
		return err
	}
	switch m.Kind {
	case DelimitedMode:
		return writeDelimited(w, t, m.Delim)
	case JSONMode:
		return writeJSON(w, t)
	}
	return writeText(w, t)
}

func (t *Table) check() error {
	for i, r := range t.Rows {
		if len(r.Cells) != len(t.Columns) {
			return fmt.Errorf("report: row %d (%q) has %d cells for %d columns", i, r.Name, len(r.Cells), len(t.Columns))
		}
	}
	return nil
}

// FormatSeconds formats a nanosecond count as seconds with 3 decimals; zero is "0.".
func FormatSeconds(ns int64) string {
	if ns == 0 {
		return "0."
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64)
}

// FormatPercent formats a percentage with 2 decimals; zero is "0.".
func FormatPercent(p float64) string {
	if p == 0 {
		return "0."
	}
	return strconv.FormatFloat(p, 'f', 2, 64)
}

// valueText formats a cell of column c and says how many digits follow its decimal point.
func valueText(c Column, cell Cell) (s string, frac int) {
	switch c.Kind {
	case Time:
		return FormatSeconds(cell.Value), 3
	case Count:
		return strconv.FormatInt(cell.Value, 10), 0
	case Ratio:
		return FormatSeconds(cell.Value * 1e6), 3
	}
	return cell.Text, 0
}

func pctText(cell Cell) string {
	if math.IsNaN(cell.Pct) {
		return ""
	}
	return FormatPercent(cell.Pct)
}

// alignDecimal pads s on the right so that a bare "0." lines up with "0.123".
func alignDecimal(s string, frac int) string {
	if frac == 0 || !strings.HasSuffix(s, ".") {
		return s
	}
	return s + strings.Repeat(" ", frac)
}

type textCol struct {
	wv, wp int // widths of the value and percent parts (0 when not shown)
	width  int
	lines  []string
}

func writeText(w io.Writer, t *Table) error {
	t = cleanTable(t)
	var b strings.Builder
	for _, l := range t.Title {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if len(t.Title) > 0 {
		b.WriteByte('\n')
	}
	cols := make([]textCol, len(t.Columns))
	cells := make([][][2]string, len(t.Rows))
	for i := range t.Rows {
		cells[i] = make([][2]string, len(t.Columns))
	}
	for j, c := range t.Columns {
		tc := &cols[j]
		showV := c.Value || c.Kind == Text
		showP := c.Percent && c.Kind != Text
		if showV {
			tc.wv = max(len(c.Unit), 1) // not 0, even when every cell is blank
		}
		if showP {
			tc.wp = len("100.00")
		}
		for i, r := range t.Rows {
			cell := r.Cells[j]
			if cell.Blank {
				continue
			}
			if showV {
				s, frac := valueText(c, cell)
				s = alignDecimal(s, frac)
				cells[i][j][0] = s
				tc.wv = max(tc.wv, len(s))
			}
			if showP {
				s := alignDecimal(pctText(cell), 2)
				cells[i][j][1] = s
				tc.wp = max(tc.wp, len(s))
			}
		}
		tc.width = tc.wv + tc.wp
		if tc.wv > 0 && tc.wp > 0 {
			tc.width++
		}
		tc.lines = wrapWords(c.Title, tc.width)
		for _, l := range tc.lines {
			tc.width = max(tc.width, len(l))
		}
		// A wide title widens the value part, keeping numbers right-aligned under it.
		if extra := tc.width - (tc.wv + tc.wp + btoi(tc.wv > 0 && tc.wp > 0)); extra > 0 {
			if tc.wv > 0 {
				tc.wv += extra
			} else {
				tc.wp += extra
			}
		}
	}
	nHeader := 1
	for _, tc := range cols {
		nHeader = max(nHeader, len(tc.lines))
	}
	hasUnit := false
	for _, c := range t.Columns {
		if c.Unit != "" || c.Percent {
			hasUnit = true
		}
	}
	metricWidth := 0
	for _, tc := range cols {
		metricWidth += tc.width + 2
	}
	line := func(flag string, parts []string, name string) {
		var l strings.Builder
		if t.FlagWidth > 0 {
			l.WriteString(pad(flag, t.FlagWidth, false))
			l.WriteByte(' ')
		}
		for j, p := range parts {
			l.WriteString(pad(p, cols[j].width, false))
			l.WriteString("  ")
		}
		if t.NameTitle != "" || name != "" {
			l.WriteString(name)
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	parts := make([]string, len(cols))
	for h := 0; h < nHeader; h++ {
		for j, tc := range cols {
			parts[j] = ""
			if h < len(tc.lines) {
				parts[j] = tc.lines[h]
			}
		}
		name := ""
		if h == 0 && t.NameTitle != "" {
			name = " " + t.NameTitle
		}
		line("", parts, name)
	}
	if hasUnit {
		for j, c := range t.Columns {
			tc := cols[j]
			s := ""
			if tc.wv > 0 {
				s = pad(c.Unit, tc.wv, true)
			}
			if tc.wp > 0 {
				if tc.wv > 0 {
					s += " "
				}
				s += pad("%", tc.wp, true)
			}
			parts[j] = s
		}
		line("", parts, "")
	}
	prefixes := treePrefixes(t)
	section := ""
	for i, r := range t.Rows {
		if r.Section != section {
			if section != "" {
				b.WriteByte('\n')
			}
			section = r.Section
			if section != "" {
				fmt.Fprintf(&b, "%s %s\n", strings.Repeat("=", max(metricWidth, 3)), section)
			}
		}
		for j, tc := range cols {
			s := ""
			if tc.wv > 0 {
				s = pad(cells[i][j][0], tc.wv, !t.Columns[j].Left)
			}
			if tc.wp > 0 {
				if tc.wv > 0 {
					s += " "
				}
				s += pad(cells[i][j][1], tc.wp, true)
			}
			parts[j] = s
		}
		mark := r.Mark
		if mark == "" {
			mark = " "
		}
		name := r.Name
		if prefixes != nil {
			name = prefixes[i] + name
		}
		line(r.Flag, parts, mark+name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cleanTable returns t, or a copy of it with the control characters of its texts escaped (Clean)
// when it has any, for text output.
func cleanTable(t *Table) *Table {
	dirty := func(s string) bool { return needsEscape([]byte(s), false) }
	found := dirty(t.NameTitle)
	for _, l := range t.Title {
		found = found || dirty(l)
	}
	for _, c := range t.Columns {
		found = found || dirty(c.Title) || dirty(c.Unit)
	}
	for _, r := range t.Rows {
		found = found || dirty(r.Name) || dirty(r.Mark) || dirty(r.Section) || dirty(r.Flag)
		for _, c := range r.Cells {
			found = found || dirty(c.Text)
		}
	}
	if !found {
		return t
	}
	c := *t
	c.NameTitle = Clean(t.NameTitle)
	c.Title = make([]string, len(t.Title))
	for i, l := range t.Title {
		c.Title[i] = Clean(l)
	}
	c.Columns = make([]Column, len(t.Columns))
	for i, col := range t.Columns {
		col.Title, col.Unit = Clean(col.Title), Clean(col.Unit)
		c.Columns[i] = col
	}
	c.Rows = make([]Row, len(t.Rows))
	for i, r := range t.Rows {
		r.Name, r.Mark, r.Section, r.Flag = Clean(r.Name), Clean(r.Mark), Clean(r.Section), Clean(r.Flag)
		if slicesHaveText(r.Cells) {
			cells := make([]Cell, len(r.Cells))
			for j, cell := range r.Cells {
				cell.Text = Clean(cell.Text)
				cells[j] = cell
			}
			r.Cells = cells
		}
		c.Rows[i] = r
	}
	return &c
}

func slicesHaveText(cells []Cell) bool {
	for _, c := range cells {
		if c.Text != "" {
			return true
		}
	}
	return false
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pad pads s with spaces to width n, on the left when right is set.
func pad(s string, n int, right bool) string {
	if len(s) >= n {
		return s
	}
	if right {
		return strings.Repeat(" ", n-len(s)) + s
	}
	return s + strings.Repeat(" ", n-len(s))
}

// wrapWords splits s into lines of at most width characters, breaking between words;
// a word longer than width gets a line of its own.
func wrapWords(s string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = w
		case len(cur)+1+len(w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// treeIndentCap is the most levels of branches drawn before a name in a tree table: deeper rows
// show their depth in brackets for the levels above. A recursion 100,000 deep would otherwise
// print 200,000 characters before each name.
const treeIndentCap = 32

// treePrefixes draws the branches of a tree table: "+-" before each name, with "| " for each
// ancestor that has a later sibling and "  " for one that has not. Nil when t is not a tree. A row
// deeper than treeIndentCap draws only the last treeIndentCap-1 levels above it, after "[depth] ".
func treePrefixes(t *Table) []string {
	if !t.Tree {
		return nil
	}
	n := len(t.Rows)
	out := make([]string, n)
	// open[d] says whether, below the current row, a row of depth d comes before any shallower row;
	// a level past its end is not open.
	var open []bool
	var p strings.Builder
	for i := n - 1; i >= 0; i-- {
		d := max(t.Rows[i].Depth, 0)
		p.Reset()
		from := 0
		if d > treeIndentCap {
			from = d - treeIndentCap + 1
			p.WriteByte('[')
			p.WriteString(strconv.Itoa(d))
			p.WriteString("] ")
		}
		for l := from; l < d; l++ {
			if l < len(open) && open[l] {
				p.WriteString("| ")
			} else {
				p.WriteString("  ")
			}
		}
		p.WriteString("+-")
		out[i] = p.String()
		// Rows above this one see it open at its depth and nothing deeper open: what was open
		// below it ends here.
		if d < len(open) {
			open = open[:d+1]
		} else {
			for len(open) <= d {
				open = append(open, false)
			}
		}
		open[d] = true
	}
	return out
}

func delimitedHeader(t *Table) []string {
	var h []string
	for _, c := range t.Columns {
		if c.Kind == Text {
			h = append(h, c.Key)
			continue
		}
		if c.Value {
			h = append(h, c.Key)
		}
		if c.Percent {
			h = append(h, percentKey(c.Key))
		}
	}
	if hasSections(t) {
		h = append(h, "section")
	}
	if t.Tree {
		h = append(h, "depth")
	}
	if t.FlagWidth > 0 {
		h = append(h, "flag")
	}
	if t.NameTitle != "" {
		h = append(h, "name")
	}
	return h
}

// percentKey turns "e.totalcpu" into "e.%totalcpu".
func percentKey(k string) string {
	if i := strings.IndexByte(k, '.'); i >= 0 {
		return k[:i+1] + "%" + k[i+1:]
	}
	return "%" + k
}

func hasSections(t *Table) bool {
	for _, r := range t.Rows {
		if r.Section != "" {
			return true
		}
	}
	return false
}

// exactValue formats a value for machines: seconds with all 9 decimals, or an integer.
func exactValue(c Column, cell Cell) string {
	switch c.Kind {
	case Time:
		return strconv.FormatFloat(float64(cell.Value)/1e9, 'f', 9, 64)
	case Count:
		return strconv.FormatInt(cell.Value, 10)
	case Ratio:
		return strconv.FormatFloat(float64(cell.Value)/1e3, 'f', 3, 64)
	}
	return cell.Text
}

func exactPct(cell Cell) string {
	if math.IsNaN(cell.Pct) {
		return ""
	}
	return strconv.FormatFloat(cell.Pct, 'f', 2, 64)
}

func writeDelimited(w io.Writer, t *Table, delim rune) error {
	cw := csv.NewWriter(w)
	cw.Comma = delim
	if err := cw.Write(delimitedHeader(t)); err != nil {
		return err
	}
	sections := hasSections(t)
	for _, r := range t.Rows {
		var rec []string
		for j, c := range t.Columns {
			cell := r.Cells[j]
			if c.Kind == Text {
				rec = append(rec, blankOr(cell, cell.Text))
				continue
			}
			if c.Value {
				rec = append(rec, blankOr(cell, exactValue(c, cell)))
			}
			if c.Percent {
				rec = append(rec, blankOr(cell, exactPct(cell)))
			}
		}
		if sections {
			rec = append(rec, r.Section)
		}
		if t.Tree {
			rec = append(rec, strconv.Itoa(r.Depth))
		}
		if t.FlagWidth > 0 {
			rec = append(rec, r.Flag)
		}
		if t.NameTitle != "" {
			rec = append(rec, r.Name)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func blankOr(c Cell, s string) string {
	if c.Blank {
		return ""
	}
	return s
}

// JSONTable is a table as JSON gives it: er print's printmode json and the Analyzer's API
// (internal/web) answer the same fields, so that a program reads both alike. Times are in
// nanoseconds and counts as they are, both in a cell's V; a cell's P is its percentage, -1 for none.
type JSONTable struct {
	Title     []string     `json:"title,omitempty"`
	Columns   []JSONColumn `json:"columns"`
	NameTitle string       `json:"nameTitle,omitempty"`
	Tree      bool         `json:"tree,omitempty"`
	Rows      []JSONRow    `json:"rows"`
	Matched   int          `json:"matched"`        // rows before a search and a limit cut them (the Analyzer's function list)
	Sort      string       `json:"sort,omitempty"` // the key of the column the rows are sorted by (the function list)
	Text      string       `json:"text,omitempty"` // what the command printed besides its tables
}

// JSONColumn is a column of a JSONTable.
type JSONColumn struct {
	Key   string `json:"key"`
	Title string `json:"title"`
	Unit  string `json:"unit,omitempty"`
	Kind  string `json:"kind"` // "time", "count", "text" or "ratio" (thousandths)
	Value bool   `json:"value"`
	Pct   bool   `json:"pct"`
	Left  bool   `json:"left,omitempty"`
}

// JSONRow is a row of a JSONTable: its cells in column order.
type JSONRow struct {
	ID      int        `json:"id"` // the function shown (an index into the profile's functions), or -1
	Name    string     `json:"name"`
	Section string     `json:"section,omitempty"`
	Mark    string     `json:"mark,omitempty"`
	Flag    string     `json:"flag,omitempty"`
	Depth   int        `json:"depth,omitempty"`
	Cells   []JSONCell `json:"cells"`
	Node    int        `json:"node,omitempty"` // the Analyzer's call tree: the node
	Kids    bool       `json:"kids,omitempty"` // the Analyzer's call tree: the node has children
	Line    int        `json:"line,omitempty"` // source: the line number
	Open    bool       `json:"open,omitempty"` // the Analyzer's call tree: the node's children follow it
}

// JSONCell is a value of a JSONRow: V raw (nanoseconds or a count), P percent (-1 for none), T
// text, B blank (nothing to show).
type JSONCell struct {
	V int64   `json:"v"`
	P float64 `json:"p"`
	T string  `json:"t,omitempty"`
	B bool    `json:"b,omitempty"`
}

// KindName is the name of a column kind in JSON: "time", "count" or "text".
func KindName(k Kind) string {
	switch k {
	case Time:
		return "time"
	case Count:
		return "count"
	case Ratio:
		return "ratio"
	}
	return "text"
}

// ToJSONColumn converts a column to the fields JSON gives it.
func ToJSONColumn(c Column) JSONColumn {
	return JSONColumn{Key: c.Key, Title: c.Title, Unit: c.Unit, Kind: KindName(c.Kind), Value: c.Value, Pct: c.Percent, Left: c.Left}
}

// ToJSON converts t to the fields JSON gives it.
func ToJSON(t *Table) *JSONTable {
	jt := &JSONTable{Title: t.Title, NameTitle: t.NameTitle, Tree: t.Tree, Columns: make([]JSONColumn, 0, len(t.Columns)),
		Rows: make([]JSONRow, 0, len(t.Rows)), Matched: len(t.Rows)}
	for _, c := range t.Columns {
		jt.Columns = append(jt.Columns, ToJSONColumn(c))
	}
	for _, r := range t.Rows {
		cells := make([]JSONCell, len(r.Cells))
		for i, c := range r.Cells {
			p := c.Pct
			if math.IsNaN(p) || math.IsInf(p, 0) {
				p = -1
			}
			cells[i] = JSONCell{V: c.Value, P: p, T: c.Text, B: c.Blank}
		}
		jt.Rows = append(jt.Rows, JSONRow{ID: r.ID - 1, Name: r.Name, Section: r.Section, Mark: r.Mark, Flag: r.Flag,
			Depth: r.Depth, Cells: cells, Line: r.Line})
	}
	return jt
}

// MarshalJSON encodes v as one line of JSON, with '<', '>' and '&' as they are and every control
// character escaped (DEL and C1 too).
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return escapeJSONControls(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

func writeJSON(w io.Writer, t *Table) error {
	b, err := MarshalJSON(ToJSON(t))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// escapeJSONControls escapes DEL and the C1 control characters, which encoding/json leaves raw
// (it escapes those below U+0020 itself), as \u007f to \u009f. In encoded JSON they can only stand
// inside strings, where the escape means the same character.
func escapeJSONControls(b []byte) []byte {
	if !needsEscape(b, true) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r >= 0x7f && r <= 0x9f {
			out = appendHex(out, `\u`, uint64(r), 4)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
