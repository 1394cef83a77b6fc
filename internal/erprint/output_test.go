package erprint

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"er/internal/report"
)

// runOut runs er print with args on the test experiments and returns its stdout and stderr.
func runOut(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, strings.NewReader(""), &out, &errb, testEnv()); code != 0 {
		t.Fatalf("er print %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), errb.String()
}

// jsonDoc decodes er print's JSON output, failing unless it is exactly one JSON document: an
// array of views.
func jsonDoc(t *testing.T, out string) []jsonView {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(out))
	d.DisallowUnknownFields()
	var doc []jsonView
	if err := d.Decode(&doc); err != nil {
		t.Fatalf("not a JSON document: %v\n%s", err, out)
	}
	if _, err := d.Token(); err != io.EOF {
		t.Fatalf("more than one JSON document (%v):\n%s", err, out)
	}
	return doc
}

// csvTables reads er print's CSV output with encoding/csv and splits it into tables at the
// "#view" records: the view (its command and arguments) and the records of each, header first.
func csvTables(t *testing.T, out string, delim rune) (views [][]string, tables [][][]string) {
	t.Helper()
	r := csv.NewReader(strings.NewReader(out))
	r.Comma = delim
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, out)
	}
	for i, rec := range recs {
		if rec[0] == "#view" {
			views = append(views, rec[1:])
			tables = append(tables, nil)
			continue
		}
		if i == 0 {
			views, tables = [][]string{nil}, [][][]string{nil} // the first table has no #view record
		}
		tables[len(tables)-1] = append(tables[len(tables)-1], rec)
	}
	for i, tb := range tables {
		if len(tb) == 0 {
			t.Fatalf("table %d (%q) has no header:\n%s", i, views[i], out)
		}
		for _, rec := range tb[1:] {
			if len(rec) != len(tb[0]) {
				t.Fatalf("table %d (%q): record %q has %d fields, its header %d:\n%s", i, views[i], rec, len(rec), len(tb[0]), out)
			}
		}
	}
	return views, tables
}

// cell is the cell of column key in a row of table jt.
func cell(t *testing.T, jt *report.JSONTable, row int, key string) report.JSONCell {
	t.Helper()
	for j, c := range jt.Columns {
		if c.Key == key {
			return jt.Rows[row].Cells[j]
		}
	}
	t.Fatalf("no column %q in %+v", key, jt.Columns)
	return report.JSONCell{}
}

// multiViews are combinations of views, tables and text among them, with the views and the
// number of tables each gives.
var multiViews = []struct {
	args   []string
	views  []string
	tables []int
}{
	{[]string{"-functions", "-callers-callees", "demo.1.er"}, []string{"functions", "callers-callees"}, []int{1, 19}},
	{[]string{"-limit", "3", "-functions", "-header", "-statistics", "-overview", "-fsingle", "main", "demo.1.er"},
		[]string{"functions", "header", "statistics", "overview", "fsingle"}, []int{1, 0, 0, 1, 1}},
	{[]string{"-leaks", "-heapstat", "-metric_list", "-functions", "heap.1.er"}, []string{"leaks", "heapstat", "metric_list", "functions"}, []int{1, 1, 0, 1}},
	{[]string{"-iostat", "-ioactivity", "-iodetail", "-iocallstack", "-calltree", "-experiment_list", "io.1.er"},
		[]string{"iostat", "ioactivity", "iodetail", "iocallstack", "calltree", "experiment_list"}, []int{1, 1, 1, 1, 1, 1}},
	{[]string{"-thread_list", "-cpu_list", "-sample_list", "-lobjects", "-csingle", "compute", "-lines", "-pcs", "demo.1.er", "demo.2.er"},
		[]string{"thread_list", "cpu_list", "sample_list", "lobjects", "csingle", "lines", "pcs"}, []int{1, 1, 1, 1, 1, 1, 1}},
}

// TestJSONOneDocument: printmode json gives one JSON document whatever the commands: an array
// with an entry per command that printed, its tables and its text (the header, statistics), where
// the views were printed one after the other before.
func TestJSONOneDocument(t *testing.T) {
	for _, c := range multiViews {
		out, _ := runOut(t, append([]string{"-printmode", "json"}, c.args...)...)
		doc := jsonDoc(t, out)
		var views []string
		var tables []int
		for _, v := range doc {
			views = append(views, v.View)
			tables = append(tables, len(v.Tables))
			if len(v.Tables) == 0 && v.Text == "" {
				t.Errorf("%v: view %s is empty", c.args, v.View)
			}
		}
		if !slices.Equal(views, c.views) || !slices.Equal(tables, c.tables) {
			t.Errorf("%v: views %v with %v tables, want %v with %v", c.args, views, tables, c.views, c.tables)
		}
	}
	// The text of text views, the arguments, and a function list's exact values in nanoseconds.
	out, _ := runOut(t, "-printmode", "json", "-header", "-functions", "-fsingle", "main", "demo.1.er")
	doc := jsonDoc(t, out)
	if !strings.HasPrefix(doc[0].Text, "Experiment: demo.1.er\n") || len(doc[0].Tables) != 0 {
		t.Errorf("header: %+v", doc[0])
	}
	fl := doc[1].Tables[0]
	if fl.Rows[0].Name != "<Total>" || cell(t, fl, 0, "e.totalcpu").V != 1330931000 || fl.Sort != "e.totalcpu" || fl.Rows[1].Name != "compute" {
		t.Errorf("functions: %+v", fl.Rows[:2])
	}
	if !slices.Equal(doc[2].Args, []string{"main"}) {
		t.Errorf("fsingle's arguments %q", doc[2].Args)
	}
	// Entries are one a line.
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 4 || lines[3] != "]" {
		t.Errorf("%d lines:\n%s", len(lines), out)
	}
}

// TestJSONDocumentEnds: commands that print nothing add nothing; no view at all is an empty
// array; switching the print mode or the output ends the document there, each output getting one
// document; an error ends it too, on what came before.
func TestJSONDocumentEnds(t *testing.T) {
	if out, _ := runOut(t, "-printmode", "json", "-limit", "3", "-sort", "i.totalcpu", "demo.1.er"); out != "[]\n" {
		t.Errorf("no view: %q", out)
	}
	out, _ := runOut(t, "-printmode", "json", "-limit", "2", "-functions", "-printmode", "text", "-functions", "-printmode", "json", "-functions", "demo.1.er")
	first, rest, _ := strings.Cut(out, "]\n")
	jsonDoc(t, first+"]\n")
	i := strings.Index(rest, "[")
	if i < 0 || !strings.Contains(rest[:i], "Functions sorted by metric") {
		t.Fatalf("text between two documents:\n%s", out)
	}
	jsonDoc(t, rest[i:])

	dir := t.TempDir()
	f1, f2 := filepath.Join(dir, "1.json"), filepath.Join(dir, "2.json")
	out, _ = runOut(t, "-printmode", "json", "-outfile", f1, "-functions", "-header", "-outfile", f2, "-statistics", "-outfile", "-", "-lobjects", "demo.1.er")
	for name, want := range map[string][]string{f1: {"functions", "header"}, f2: {"statistics"}, "stdout": {"lobjects"}} {
		text := out
		if name != "stdout" {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			text = string(b)
		}
		var views []string
		for _, v := range jsonDoc(t, text) {
			views = append(views, v.View)
		}
		if !slices.Equal(views, want) {
			t.Errorf("%s: views %v, want %v", name, views, want)
		}
	}

	var b, errb bytes.Buffer
	if code := run([]string{"-printmode", "json", "-functions", "-fsingle", "nosuch", "-header", "demo.1.er"}, strings.NewReader(""), &b, &errb, testEnv()); code != exitUsage {
		t.Errorf("exit %d", code)
	}
	if doc := jsonDoc(t, b.String()); len(doc) != 1 || doc[0].View != "functions" || !strings.Contains(errb.String(), "nosuch") {
		t.Errorf("after an error: %+v, stderr %q", doc, errb.String())
	}
}

// TestCSVOneStream: printmode csv (and tsv) gives tables that encoding/csv reads: a lone table
// is plain CSV, each later one follows an empty line and a "#view" record naming its command;
// text becomes a table of one column. The views were printed one after the other before, the
// header's text among the tables.
func TestCSVOneStream(t *testing.T) {
	for _, mode := range []struct {
		name  string
		delim rune
	}{{"csv", ','}, {"tsv", '\t'}, {";", ';'}} {
		for _, c := range multiViews {
			out, _ := runOut(t, append([]string{"-printmode", mode.name}, c.args...)...)
			views, tables := csvTables(t, out, mode.delim)
			var wantViews []string
			for i, v := range c.views {
				n := max(c.tables[i], 1) // a text view: one table of text
				for range n {
					wantViews = append(wantViews, v)
				}
			}
			var got []string
			for i, v := range views {
				if i == 0 {
					if v != nil {
						t.Errorf("%v: the first table is named %q", c.args, v)
					}
					got = append(got, wantViews[0])
					continue
				}
				got = append(got, v[0])
			}
			if !slices.Equal(got, wantViews) {
				t.Errorf("%s %v: tables of %v, want %v", mode.name, c.args, got, wantViews)
			}
			for i, tb := range tables {
				if len(tb) < 2 && got[i] != "experiment_list" {
					t.Errorf("%s %v: table %d (%s) has no rows", mode.name, c.args, i, got[i])
				}
			}
			if strings.Count(out, "\n\n") != len(tables)-1 {
				t.Errorf("%s %v: %d empty lines for %d tables:\n%s", mode.name, c.args, strings.Count(out, "\n\n"), len(tables), out)
			}
		}
	}
	// A lone table is plain CSV: one header and rows of its width.
	out, _ := runOut(t, "-printmode", "csv", "-functions", "demo.1.er")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 20 || recs[0][0] != "e.totalcpu" {
		t.Errorf("%v:\n%s", err, out)
	}
	// Text: a table of one column, "text", with the arguments on the #view record.
	out, _ = runOut(t, "-printmode", "csv", "-functions", "-header", "-fsingle", "main", "demo.1.er")
	views, tables := csvTables(t, out, ',')
	if len(tables) != 3 || !slices.Equal(views[1], []string{"header"}) || !slices.Equal(tables[1][0], []string{"text"}) ||
		tables[1][1][0] != "Experiment: demo.1.er" || !slices.Equal(views[2], []string{"fsingle", "main"}) {
		t.Errorf("views %q, header %q", views, tables[1])
	}
}
