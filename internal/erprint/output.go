package erprint

import (
	"fmt"
	"io"
	"strings"

	"er/internal/report"
)

// Machine output. In printmode csv, tsv or json what one command prints (its tables, and any text
// such as the header's) is gathered while it runs and written when it ends, so that everything
// er print writes to one output is one document however many commands print:
//
//   - JSON: one array with an object per command that printed something, a line each:
//     {"view":"functions","args":[...],"tables":[...],"text":"..."}, each table with the fields of
//     the Analyzer's (report.JSONTable), text what the command printed besides its tables.
//   - CSV and TSV: tables, each a header record then a record per row. A lone table is plain CSV;
//     every later one follows an empty line and a record naming the command that printed it,
//     "#view,callers-callees" (its arguments in further fields). Text becomes a table of one
//     column, "text", a record per line.
//
// Warnings and errors go to standard error, never into the document.

// viewOut is what the running command has printed, in order.
type viewOut struct {
	name  string
	args  []string
	parts []viewPart
}

// viewPart is a table, or text when table is nil.
type viewPart struct {
	table *report.Table
	text  strings.Builder
}

func (v *viewOut) addText(s string) {
	if n := len(v.parts); n > 0 && v.parts[n-1].table == nil {
		v.parts[n-1].text.WriteString(s)
		return
	}
	v.parts = append(v.parts, viewPart{})
	v.parts[len(v.parts)-1].text.WriteString(s)
}

func (v *viewOut) addTable(t *report.Table) {
	v.parts = append(v.parts, viewPart{table: t})
}

// jsonView is one command's entry in the JSON document.
type jsonView struct {
	View   string              `json:"view"`
	Args   []string            `json:"args,omitempty"`
	Tables []*report.JSONTable `json:"tables"`
	Text   string              `json:"text,omitempty"`
}

// runView runs cmd, gathering what it prints when the output is for machines, and writes it.
func (s *session) runView(cmd *command, args []string) error {
	if s.capture != nil || s.text() || s.view != nil {
		return cmd.run(s, args)
	}
	s.view = &viewOut{name: cmd.name, args: args}
	err := cmd.run(s, args)
	v := s.view
	s.view = nil
	if werr := s.writeView(v); err == nil {
		err = werr
	}
	return err
}

// writeView writes what a command printed to the current output, in the current print mode.
func (s *session) writeView(v *viewOut) error {
	if len(v.parts) == 0 {
		return nil
	}
	switch s.mode.Kind {
	case report.JSONMode:
		e := jsonView{View: v.name, Args: v.args, Tables: []*report.JSONTable{}}
		var text strings.Builder
		for i := range v.parts {
			p := &v.parts[i]
			if p.table == nil {
				text.WriteString(p.text.String())
				continue
			}
			e.Tables = append(e.Tables, s.jsonTable(v.name, p.table))
		}
		e.Text = text.String()
		b, err := report.MarshalJSON(e)
		if err != nil {
			return err
		}
		sep := ","
		if s.doc == 0 {
			sep = "["
		}
		s.doc++
		_, err = fmt.Fprintf(s.out, "%s%s\n", sep, b)
		return err
	case report.DelimitedMode:
		for i := range v.parts {
			p := &v.parts[i]
			t := p.table
			if t == nil {
				t = textTable(p.text.String())
				if len(t.Rows) == 0 {
					continue
				}
			}
			if err := s.delimitedTable(v, t); err != nil {
				return err
			}
		}
		return nil
	}
	// The command switched to text: print as text.
	for i := range v.parts {
		p := &v.parts[i]
		if p.table == nil {
			io.WriteString(s.out, p.text.String())
			continue
		}
		if err := report.Write(s.out, p.table, s.mode); err != nil {
			return err
		}
		io.WriteString(s.out, "\n")
	}
	return nil
}

// delimitedTable writes one table of view v: after an empty line and a record naming the view
// when it is not the first table of the output.
func (s *session) delimitedTable(v *viewOut, t *report.Table) error {
	if s.doc > 0 {
		rec := append([]string{"#view", v.name}, v.args...)
		var b strings.Builder
		if err := writeRecord(&b, rec, s.mode.Delim); err != nil {
			return err
		}
		if _, err := io.WriteString(s.out, "\n"+b.String()); err != nil {
			return err
		}
	}
	s.doc++
	return report.Write(s.out, t, s.mode)
}

// writeRecord writes one delimited record, quoted as CSV.
func writeRecord(w io.Writer, rec []string, delim rune) error {
	cols := make([]report.Column, len(rec))
	for i, f := range rec {
		cols[i] = report.Column{Key: f, Kind: report.Text}
	}
	// A table of no rows is its header record alone.
	return report.Write(w, &report.Table{Columns: cols}, report.Mode{Kind: report.DelimitedMode, Delim: delim})
}

// textTable is text as a table of one column, "text", a row per line; empty lines are left out.
func textTable(text string) *report.Table {
	t := &report.Table{Columns: []report.Column{{Title: "Text", Key: "text", Kind: report.Text, Left: true}}}
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{{Text: l}}})
	}
	return t
}

// jsonTable is table t of view name as JSON gives it, with what the Analyzer adds to the same
// view: the function list's sort key (the source lines' numbers are the rows' own).
func (s *session) jsonTable(name string, t *report.Table) *report.JSONTable {
	jt := report.ToJSON(t)
	if name == "functions" {
		jt.Sort = s.sortKey()
	}
	return jt
}

// endDoc ends the document written to the current output: the JSON array is closed. When last is
// set (er print is ending) an output in JSON mode that got nothing gets an empty array.
func (s *session) endDoc(last bool) {
	if s.mode.Kind == report.JSONMode && (s.doc > 0 || last) {
		if s.doc == 0 {
			io.WriteString(s.out, "[")
		}
		io.WriteString(s.out, "]\n")
	}
	s.doc = 0
}

// finish ends the document and closes the output file.
func (s *session) finish() {
	s.endDoc(true)
	s.closeOut()
}

// sortKey is the key of the column the function list is sorted by ("e.totalcpu", "name").
func (s *session) sortKey() string {
	it := s.sortItem
	if it.kind != itemMetric {
		return it.spec(s.ms)
	}
	return string(it.flavor) + "." + s.ms[it.metric].Name
}
