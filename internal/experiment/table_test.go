package experiment

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"er/internal/events"
)

var toySchema = &events.Schema{Name: "toy", File: "toytrace", Columns: []events.Column{
	{Name: "units", Title: "Toy units", Unit: "units", Type: events.U32}, {Name: "fd", Title: "a descriptor", Type: events.I32},
}}

// writeToy writes an experiment with a stack and the rows of the toy table.
func writeToy(t *testing.T, rows []events.Row) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t.er")
	w, err := Create(dir, Log{FormatVersion: FormatVersion, Pid: 7})
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.Stack(Stack{0x1000, 0x2000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		r.Stack = id
		if err := w.Row(toySchema, r); err != nil {
			t.Fatal(err)
		}
	}
	w.UpdateLog(func(l *Log) { l.EndTime = 100 })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTableRoundTrip: an event table written row by row reads back whole, in time order, with its
// schema from log.xml's descriptor; an experiment without one has none.
func TestTableRoundTrip(t *testing.T) {
	rows := []events.Row{
		{Time: 30, Count: 1, Pid: 7, Tid: 8, CPU: -1, Cols: []int64{3, -1}},
		{Time: 10, Dur: 5, Count: 4, Pid: 7, Tid: 7, CPU: 1, Cols: []int64{1 << 31, 2}},
	}
	dir := writeToy(t, rows)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Log.Tables) != 1 || !reflect.DeepEqual(d.Log.Tables[0], toySchema) {
		t.Fatalf("log tables %+v, want %+v", d.Log.Tables, toySchema)
	}
	tb := d.Tables["toy"]
	if tb.Len() != 2 || tb.Events() != 5 {
		t.Fatalf("table %+v", tb)
	}
	for i, want := range []events.Row{rows[1], rows[0]} {
		want.Stack = 1
		if got := tb.Row(i); !reflect.DeepEqual(got, want) {
			t.Errorf("row %d: %+v, want %+v", i, got, want)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<dataDescriptor file="toytrace" kind="table" name="toy" version="` + FormatVersion + `" recordSize="48">`,
		`<field name="stack" type="u32" offset="36"`,
		`<field name="units" type="u32" offset="40" description="Toy units" unit="units"></field>`,
		`<field name="fd" type="i32" offset="44" description="a descriptor"></field>`,
	} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("log.xml lacks %s:\n%s", want, log)
		}
	}
	empty := writeToy(t, nil)
	if d, err := Open(empty); err != nil || len(d.Tables) != 0 || len(d.Log.Tables) != 0 {
		t.Errorf("no rows: tables %v, %v, %v", d.Tables, d.Log.Tables, err)
	}
}

// TestTableErrors: a descriptor that does not give the schema's layout, and a row that names a
// stack the stacks file does not have, are errors that name the file and what is wrong.
func TestTableErrors(t *testing.T) {
	dir := writeToy(t, []events.Row{{Time: 1, Count: 1}})
	logFile := filepath.Join(dir, LogFile)
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`name="fd" type="i32" offset="44"`, `name="fd" type="i32" offset="48"`, "column fd at offset 48; its layout puts it at 44"},
		{`name="fd" type="i32"`, `name="fd" type="u8[4]"`, `column "fd" has type "u8[4]"`},
		{`name="units" type="u32"`, `name="tid" type="u32"`, `two columns (or a column and a header field) named "tid"`},
		{`name="count" type="i64"`, `name="count" type="u64"`, "field 3 is count u64 at offset 16; want the header's count i64 at 16"},
		{`name="toy" version="` + FormatVersion + `" recordSize="48"`, `name="toy" version="` + FormatVersion + `" recordSize="56"`, "record size 56; its columns make 48"},
		{`file="toytrace"`, `file="../toytrace"`, `file name "../toytrace"`},
		{`file="toytrace"`, `file="profile.clock"`, `a file of another`},
		{`file="toytrace"`, `file="iotrace"`, `a file of another`},
		{`name="toy" version`, `name="io" version`, `event table "io" (file "toytrace"): a second table of that name`},
		{`name="fd" type="i32"`, `name="fd" type="str"`, "column fd is a string; a table file holds only integers"},
	} {
		bad := strings.Replace(string(log), c.from, c.to, 1)
		if bad == string(log) {
			t.Fatalf("no %q in log.xml", c.from)
		}
		if err := os.WriteFile(logFile, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), LogFile) {
			t.Errorf("%s → %s: %v; want an error of log.xml with %q", c.from, c.to, err, c.want)
		} else {
			asFormatError(t, err)
		}
	}
	if err := os.WriteFile(logFile, log, 0o644); err != nil {
		t.Fatal(err)
	}
	// A stack id past the stacks file's.
	b, err := os.ReadFile(filepath.Join(dir, "toytrace"))
	if err != nil {
		t.Fatal(err)
	}
	rec := fileHeaderSize + blockHeaderSize
	le.PutUint32(b[rec+36:], 9)
	sealBlock(b[fileHeaderSize:], 1)
	if err := os.WriteFile(filepath.Join(dir, "toytrace"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "toytrace") || !strings.Contains(err.Error(), "event 1 has stack id 9, but the stacks file has only 2 stacks") {
		t.Errorf("stack id 9: %v", err)
	}
}

// toyFileBytes renders rows as a table file of toySchema.
func toyFileBytes(rows []events.Row) []byte {
	offs, size := toySchema.Offsets()
	b := appendFileHeaderOf(nil, kindTable, uint32(size))
	if len(rows) == 0 { // the writer writes no empty block
		return b
	}
	blk := make([]byte, blockHeaderSize)
	for _, r := range rows {
		blk = events.AppendRecord(blk, offs, size, toySchema, r)
	}
	sealBlock(blk, uint32(len(rows)))
	return append(b, blk...)
}

func FuzzReadTable(f *testing.F) {
	good := toyFileBytes([]events.Row{{Time: 1, Count: 1, Cols: []int64{2, -3}}, {Time: 2, Count: 5, CPU: -1, Stack: 2}})
	bad := toyFileBytes([]events.Row{{Time: 1, Count: 0}, {Time: 2, Count: 1, CPU: -2}, {Dur: -1, Count: 1}})
	fuzzSeeds(f, good, bad, appendFileHeaderOf(nil, kindTable, 48), claimBlock(kindTable, 0xffffff00))
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, _, err := readTable("toytrace", bytes.NewReader(b), int64(len(b)), toySchema, 3)
		if err != nil {
			asFormatError(t, err)
			return
		}
		var rows []events.Row
		for i := range tb.Len() {
			rows = append(rows, tb.Row(i))
		}
		again := toyFileBytes(rows)
		tb2, warn, err := readTable("toytrace", bytes.NewReader(again), int64(len(again)), toySchema, 3)
		if err != nil || warn != "" || !reflect.DeepEqual(tb.Time, tb2.Time) || !reflect.DeepEqual(tb.Cols, tb2.Cols) {
			t.Fatalf("round trip: %v %q", err, warn)
		}
	})
}

// TestAppendTable: a table added to a finished experiment reads back; a second of the same name,
// and a row whose stack the experiment does not have, are refused.
func TestAppendTable(t *testing.T) {
	dir := writeToy(t, nil)
	rows := []events.Row{{Time: 2, Count: 1, Stack: 1, Cols: []int64{5, 6}}, {Time: 1, Count: 2, CPU: -1}}
	if err := AppendTable(dir, toySchema, rows); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tb := d.Tables["toy"]; tb.Len() != 2 || !reflect.DeepEqual(tb.Row(1), rows[0]) || d.Log.Pid != 7 || d.Log.EndTime != 100 {
		t.Errorf("table %+v, log %+v", tb, d.Log)
	}
	if err := AppendTable(dir, toySchema, nil); err == nil || !strings.Contains(err.Error(), "a second table of that name") {
		t.Errorf("a second toy table: %v", err)
	}
	named := &events.Schema{Name: "named", File: "namedtrace", Columns: []events.Column{{Name: "file", Type: events.Str}}}
	if err := AppendTable(dir, named, nil); err == nil || !strings.Contains(err.Error(), "column file is a string") {
		t.Errorf("a table of a string column: %v", err)
	}
	other := &events.Schema{Name: "other", File: "othertrace"}
	if err := AppendTable(dir, other, []events.Row{{Count: 1, Stack: 2}}); err == nil || !strings.Contains(err.Error(), "has stack id 2; the experiment has 2 stacks") {
		t.Errorf("stack 2 of 2: %v", err)
	}
}
