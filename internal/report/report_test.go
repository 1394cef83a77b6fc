package report

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func sampleTable() *Table {
	return &Table{
		Title: []string{"Functions sorted by metric: Exclusive Total CPU Time"},
		Columns: []Column{
			{Title: "Excl. Total CPU", Unit: "sec.", Key: "e.totalcpu", Kind: Time, Value: true, Percent: true},
			{Title: "Incl. Total CPU", Unit: "sec.", Key: "i.totalcpu", Kind: Time, Value: true, Percent: true},
		},
		NameTitle: "Name",
		Rows: []Row{
			{Name: "<Total>", Cells: []Cell{{Value: 60e6, Pct: 100}, {Value: 60e6, Pct: 100}}},
			{Name: "F", Cells: []Cell{{Value: 20e6, Pct: 100.0 / 3}, {Value: 40e6, Pct: 200.0 / 3}}},
			{Name: "main", Cells: []Cell{{Value: 0, Pct: 0}, {Value: 12345678901, Pct: 100}}},
		},
	}
}

func TestTextTable(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, sampleTable(), Mode{Kind: TextMode}); err != nil {
		t.Fatal(err)
	}
	want := `Functions sorted by metric: Exclusive Total CPU Time

Excl. Total   Incl. Total     Name
CPU           CPU
 sec.      %    sec.      %
0.060 100.00   0.060 100.00   <Total>
0.020  33.33   0.040  66.67   F
0.      0.    12.346 100.00   main
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTextSectionsAndMark(t *testing.T) {
	tb := &Table{
		Columns:   []Column{{Title: "Attr. Total CPU", Unit: "sec.", Key: "a.totalcpu", Kind: Time, Value: true, Percent: true}},
		NameTitle: "Name",
		Rows: []Row{
			{Name: "B", Section: "Callers", Cells: []Cell{{Value: 30e6, Pct: 60}}},
			{Name: "C", Section: "Stack Fragment", Mark: "*", Cells: []Cell{{Value: 0, Pct: 0}}},
			{Name: "A", Section: "Stack Fragment", Cells: []Cell{{Blank: true}}},
			{Name: "F", Section: "Callees", Cells: []Cell{{Value: 40e6, Pct: 80}}},
		},
	}
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: TextMode}); err != nil {
		t.Fatal(err)
	}
	want := `Attr. Total    Name
CPU
 sec.      %
============== Callers
0.030  60.00   B

============== Stack Fragment
0.      0.    *C
               A

============== Callees
0.040  80.00   F
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTreePrefixes(t *testing.T) {
	depths := []int{0, 1, 2, 3, 2, 1, 2}
	tb := &Table{Tree: true, NameTitle: "Name"}
	for i, d := range depths {
		tb.Rows = append(tb.Rows, Row{Name: string(rune('a' + i)), Depth: d})
	}
	got := treePrefixes(tb)
	want := []string{"+-", "  +-", "  | +-", "  | | +-", "  | +-", "  +-", "    +-"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("prefixes %q, want %q", got, want)
	}
}

func TestCountAndTextColumns(t *testing.T) {
	tb := &Table{
		Columns: []Column{
			{Title: "TID", Key: "tid", Kind: Text},
			{Title: "Samples", Key: "samples", Kind: Count, Value: true},
			{Title: "Path", Key: "path", Kind: Text, Left: true},
		},
		Rows: []Row{
			{Cells: []Cell{{Text: "101"}, {Value: 7}, {Text: "/a"}}},
			{Cells: []Cell{{Text: "12345678"}, {Value: 12000}, {Text: "/bin/b"}}},
		},
	}
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: TextMode}); err != nil {
		t.Fatal(err)
	}
	want := "TID       Samples  Path\n     101        7  /a\n12345678    12000  /bin/b\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestDelimited(t *testing.T) {
	tb := sampleTable()
	tb.Rows[2].Name = `odd, "name"`
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: DelimitedMode, Delim: ','}); err != nil {
		t.Fatal(err)
	}
	want := `e.totalcpu,e.%totalcpu,i.totalcpu,i.%totalcpu,name
0.060000000,100.00,0.060000000,100.00,<Total>
0.020000000,33.33,0.040000000,66.67,F
0.000000000,0.00,12.345678901,100.00,"odd, ""name"""
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestJSON(t *testing.T) {
	tb := sampleTable()
	tb.Rows[1].Cells[1].Pct = math.NaN()
	tb.Rows[1].ID = 8
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: JSONMode}); err != nil {
		t.Fatal(err)
	}
	var got JSONTable
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, b.String())
	}
	if len(got.Rows) != 3 || got.Rows[1].Name != "F" || got.Rows[1].Cells[1].V != 40e6 || got.Matched != 3 {
		t.Fatalf("bad JSON rows: %+v", got.Rows)
	}
	if got.Rows[1].Cells[1].P != -1 || got.Rows[1].Cells[0].P != 100.0/3 {
		t.Errorf("a NaN percent should be -1, others as they are: %+v", got.Rows[1].Cells)
	}
	if got.Rows[2].Cells[1].V != 12345678901 {
		t.Errorf("value %v", got.Rows[2].Cells[1].V)
	}
	if got.Rows[0].ID != -1 || got.Rows[1].ID != 7 {
		t.Errorf("row ids %d, %d; want -1 (none) and 7 (function 7)", got.Rows[0].ID, got.Rows[1].ID)
	}
	want := []JSONColumn{{Key: "e.totalcpu", Title: "Excl. Total CPU", Unit: "sec.", Kind: "time", Value: true, Pct: true},
		{Key: "i.totalcpu", Title: "Incl. Total CPU", Unit: "sec.", Kind: "time", Value: true, Pct: true}}
	if !slices.Equal(got.Columns, want) || got.NameTitle != "Name" {
		t.Errorf("columns %+v, name %q", got.Columns, got.NameTitle)
	}
	// The field names, in order.
	if !strings.HasPrefix(b.String(), `{"title":["Functions sorted by metric: Exclusive Total CPU Time"],"columns":[{"key":"e.totalcpu","title":"Excl. Total CPU","unit":"sec.","kind":"time","value":true,"pct":true},`) ||
		!strings.Contains(b.String(), `{"id":7,"name":"F","cells":[{"v":20000000,"p":33.333333333333336},{"v":40000000,"p":-1}]}`) ||
		!strings.HasSuffix(b.String(), `],"matched":3}`+"\n") {
		t.Errorf("JSON:\n%s", b.String())
	}
}

func TestRowCellCountChecked(t *testing.T) {
	tb := sampleTable()
	tb.Rows[1].Cells = tb.Rows[1].Cells[:1]
	err := Write(&bytes.Buffer{}, tb, Mode{})
	if err == nil || !strings.Contains(err.Error(), `row 1 ("F") has 1 cells for 2 columns`) {
		t.Errorf("err = %v", err)
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"text", "csv", "tsv", "json", ";"} {
		m, err := ParseMode(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if m.String() != s {
			t.Errorf("ParseMode(%q).String() = %q", s, m.String())
		}
	}
	for _, s := range []string{"", "html", `"`, "ab"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted", s)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{FormatSeconds(0), "0."},
		{FormatSeconds(1), "0.000"},
		{FormatSeconds(1500000), "0.002"},
		{FormatSeconds(-2e9), "-2.000"},
		{FormatPercent(0), "0."},
		{FormatPercent(99.999), "100.00"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q want %q", c.got, c.want)
		}
	}
	if got := wrapWords("Excl. Total CPU", 12); strings.Join(got, "/") != "Excl. Total/CPU" {
		t.Errorf("wrap %q", got)
	}
	if got := wrapWords("Instructions", 3); strings.Join(got, "/") != "Instructions" {
		t.Errorf("wrap %q", got)
	}
}

func TestFlags(t *testing.T) {
	tb := &Table{
		Columns:   []Column{{Title: "Excl. Total CPU", Unit: "sec.", Key: "e.totalcpu", Kind: Time, Value: true, Percent: true}},
		NameTitle: "Source",
		FlagWidth: 2,
		Rows: []Row{
			{Name: "   1. int x;", Cells: []Cell{{Blank: true}}},
			{Name: "   2. x++;", Flag: "##", Cells: []Cell{{Value: 30e6, Pct: 60}}},
			{Name: "   3. x--;", Cells: []Cell{{Value: 0, Pct: 0}}},
		},
	}
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: TextMode}); err != nil {
		t.Fatal(err)
	}
	want := `   Excl. Total    Source
   CPU
    sec.      %
                     1. int x;
## 0.030  60.00      2. x++;
   0.      0.        3. x--;
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := Write(&b, tb, Mode{Kind: DelimitedMode, Delim: ','}); err != nil {
		t.Fatal(err)
	}
	if want := "e.totalcpu,e.%totalcpu,flag,name\n,,,\"   1. int x;\"\n0.030000000,60.00,##,\"   2. x++;\"\n0.000000000,0.00,,\"   3. x--;\"\n"; b.String() != want {
		t.Errorf("csv:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := Write(&b, tb, Mode{Kind: JSONMode}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `{"id":-1,"name":"   2. x++;","flag":"##","cells":[{"v":30000000,"p":60}]}`) {
		t.Errorf("json: %s", b.String())
	}
}

// TestBlankColumn: a value column whose cells are all blank is still a value column: its header has
// no percent sign.
func TestBlankColumn(t *testing.T) {
	tb := &Table{
		Columns: []Column{
			{Title: "Excl. Total CPU", Unit: "sec.", Key: "e.totalcpu", Kind: Time, Value: true, Percent: true},
			{Title: "Size", Key: "size", Kind: Count, Value: true},
		},
		NameTitle: "Name",
		Rows:      []Row{{Name: "f", Cells: []Cell{{Value: 1e7, Pct: 50}, {Blank: true}}}},
	}
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: TextMode}); err != nil {
		t.Fatal(err)
	}
	want := `Excl. Total   Size   Name
CPU
 sec.      %
0.010  50.00         f
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestControlCharactersEscaped: names, text cells and titles from an experiment may hold terminal
// escape sequences; text mode shows them as \x1b, \x07, \u009b and keeps the columns aligned, JSON
// escapes every control character (DEL and C1 too, which encoding/json leaves raw) and decodes to
// the original, CSV quotes fields as before.
func TestControlCharactersEscaped(t *testing.T) {
	evil := "evil\x1b[2J\x07name"
	tb := &Table{
		Title:     []string{"Functions of ./demo\x1b]0;pwned\x07"},
		Columns:   []Column{{Title: "Count", Key: "count", Kind: Count, Value: true}, {Title: "Where", Key: "where", Kind: Text, Left: true}},
		NameTitle: "Name",
		Rows: []Row{
			{Name: evil, Cells: []Cell{{Value: 1}, {Text: "a\x9bb\u009b\x7f"}}},
			{Name: "two\nlines\ttab\r", Cells: []Cell{{Value: 22}, {Text: "ok"}}},
		},
	}
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: TextMode}); err != nil {
		t.Fatal(err)
	}
	want := `Functions of ./demo\x1b]0;pwned\x07

Count  Where              Name
    1  a\x9bb\u009b\x7f   evil\x1b[2J\x07name
   22  ok                 two\nlines	tab\r
`
	if b.String() != want {
		t.Errorf("text: got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	if err := Write(&b, tb, Mode{Kind: JSONMode}); err != nil {
		t.Fatal(err)
	}
	for _, r := range b.String() {
		if r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f {
			t.Fatalf("JSON holds the raw character %U:\n%q", r, b.String())
		}
	}
	if !strings.Contains(b.String(), `"name":"evil\u001b[2J\u0007name"`) || !strings.Contains(b.String(), `"t":"a\ufffdb\u009b\u007f"`) {
		t.Errorf("JSON does not escape the names as expected:\n%s", b.String())
	}
	var jt struct {
		Rows []struct{ Name string } `json:"rows"`
	}
	if err := json.Unmarshal(b.Bytes(), &jt); err != nil {
		t.Fatal(err)
	}
	if len(jt.Rows) != 2 || jt.Rows[0].Name != evil {
		t.Errorf("JSON rows decode to %q, want the first named %q", jt.Rows, evil)
	}
}

// TestDeepTreeIndentation: the branches of a tree are drawn for at most treeIndentCap levels; a
// deeper row starts with its depth in brackets standing for the levels above those drawn, so a
// recursion 20,000 deep prints lines of bounded width (it printed 2 x depth characters before
// each name: 400 MB for 20,000 levels, 10 GB for 100,000).
func TestDeepTreeIndentation(t *testing.T) {
	const n = 20_000
	tb := &Table{Tree: true, NameTitle: "Name", Columns: []Column{{Title: "Count", Key: "n", Kind: Count, Value: true}}}
	for d := range n {
		tb.Rows = append(tb.Rows, Row{Name: "descend", Depth: d, Cells: []Cell{{Value: 1}}})
	}
	tb.Rows = append(tb.Rows, Row{Name: "bottom", Depth: n, Cells: []Cell{{Value: 1}}}, Row{Name: "side", Depth: 2, Cells: []Cell{{Value: 1}}})
	var b bytes.Buffer
	if err := Write(&b, tb, Mode{Kind: TextMode}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != n+3 {
		t.Fatalf("%d lines, want %d", len(lines), n+3)
	}
	const c = treeIndentCap
	sp := func(k int) string { return strings.Repeat("  ", k) }
	for i, want := range map[int]string{
		1:     "    1   +-descend",
		2:     "    1     +-descend",
		3:     "    1       +-descend",
		4:     "    1       | +-descend",
		c + 1: "    1       | " + sp(c-3) + "+-descend",
		c + 2: "    1   [" + strconv.Itoa(c+1) + "] | " + sp(c-2) + "+-descend",
		c + 3: "    1   [" + strconv.Itoa(c+2) + "] " + sp(c-1) + "+-descend",
		n:     "    1   [19999] " + sp(c-1) + "+-descend",
		n + 1: "    1   [20000] " + sp(c-1) + "+-bottom",
		n + 2: "    1       +-side",
	} {
		if lines[i] != want {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
	for i, l := range lines {
		if len(l) > len("    1   [20000] ")+2*treeIndentCap+len("descend") {
			t.Fatalf("line %d is %d bytes long", i, len(l))
		}
	}
}
