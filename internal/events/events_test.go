package events

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

var testSchema = &Schema{Name: "toy", File: "toytrace", Columns: []Column{
	{Name: "op", Type: U8}, {Name: "fd", Type: I32}, {Name: "bytes", Unit: "bytes", Type: U64}, {Name: "tag", Type: U16},
}}

// TestOffsets: the columns follow the 40-byte header, each aligned to its size; the record is a
// multiple of 8 bytes.
func TestOffsets(t *testing.T) {
	offs, size := testSchema.Offsets()
	if want := []int{40, 44, 48, 56}; !reflect.DeepEqual(offs, want) || size != 64 {
		t.Errorf("offsets %v, size %d; want %v, 64", offs, size, want)
	}
	if offs, size := (&Schema{Name: "n", File: "n"}).Offsets(); offs != nil || size != HeaderSize {
		t.Errorf("no columns: offsets %v, size %d", offs, size)
	}
}

// TestRecordRoundTrip: every type keeps its values through a record, the signed ones their sign and
// a u64 its bits.
func TestRecordRoundTrip(t *testing.T) {
	offs, size := testSchema.Offsets()
	rows := []Row{
		{Time: 5, Dur: 7, Count: 1, Pid: 10, Tid: 11, CPU: -1, Stack: 3, Cols: []int64{255, -2, -1, 65535}},
		{Time: math.MaxInt64, Count: 9, Pid: math.MaxUint32, CPU: 1, Cols: []int64{1, math.MinInt32, math.MaxInt64, 7}},
	}
	var b []byte
	for _, r := range rows {
		b = AppendRecord(b, offs, size, testSchema, r)
	}
	if len(b) != 2*size {
		t.Fatalf("%d bytes for two records of %d", len(b), size)
	}
	tb := New(testSchema)
	for i := range rows {
		tb.DecodeRecord(b[i*size:], offs)
	}
	for i, r := range rows {
		if got := tb.Row(i); !reflect.DeepEqual(got, r) {
			t.Errorf("row %d: %+v, want %+v", i, got, r)
		}
	}
	if got := tb.Column("BYTES"); !reflect.DeepEqual(got.Values(), []int64{-1, math.MaxInt64}) || tb.Column("nosuch") != nil {
		t.Errorf("column bytes %v", got.Values())
	}
	if tb.Len() != 2 || tb.Events() != 10 {
		t.Errorf("%d rows of %d events; want 2 of 10", tb.Len(), tb.Events())
	}
}

// TestAddSort: rows added out of order sort by time, stably, with every column.
func TestAddSort(t *testing.T) {
	tb := New(testSchema)
	tb.Add(Row{Time: 3, Count: 1, Cols: []int64{1}})
	tb.Add(Row{Time: 1, Count: 1, Cols: []int64{2}})
	tb.Add(Row{Time: 3, Count: 1, Cols: []int64{3}})
	tb.Add(Row{Time: 2, Count: 1}) // columns left out are 0
	tb.SortByTime()
	if !reflect.DeepEqual(tb.Time, []int64{1, 2, 3, 3}) || !reflect.DeepEqual(tb.Cols[0].Values(), []int64{2, 0, 1, 3}) {
		t.Errorf("times %v, ops %v", tb.Time, tb.Cols[0].Values())
	}
}

func TestCheck(t *testing.T) {
	if err := testSchema.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    Schema
		want string
	}{
		{Schema{Name: "Toy", File: "f"}, `table name "Toy"`},
		{Schema{Name: "toy", File: "../f"}, `file name "../f"`},
		{Schema{Name: "toy", File: ".f"}, `file name ".f"`},
		{Schema{Name: "toy", File: "f", Columns: []Column{{Name: "time", Type: U8}}}, `named "time"`},
		{Schema{Name: "toy", File: "f", Columns: []Column{{Name: "a", Type: U8}, {Name: "a", Type: U16}}}, `named "a"`},
		{Schema{Name: "toy", File: "f", Columns: []Column{{Name: "a"}}}, "column a has no type"},
		{Schema{Name: "toy", File: "f", Columns: []Column{{Name: "a b", Type: U8}}}, `column name "a b"`},
		{Schema{Name: "toy", File: "f", Columns: make([]Column, MaxColumns+1)}, "columns; at most"},
	} {
		if err := c.s.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error with %q", c.s, err, c.want)
		}
	}
}

func TestTypes(t *testing.T) {
	for _, ty := range []Type{U8, U16, U32, U64, I32, I64} {
		if got, ok := ParseType(ty.String()); !ok || got != ty || ty.Size() == 0 {
			t.Errorf("%v: parsed %v %v, size %d", ty, got, ok, ty.Size())
		}
	}
	if _, ok := ParseType("u8[7]"); ok {
		t.Error("u8[7] parsed as a column type")
	}
}

// TestRowEdits: CopyRow, Truncate and Grow keep every column, typed as declared.
func TestRowEdits(t *testing.T) {
	tb := New(testSchema)
	for i := range 4 {
		tb.Add(Row{Time: int64(i), Count: 1, Cols: []int64{int64(250 + i), int64(-i), int64(i) << 40, int64(i)}})
	}
	tb.CopyRow(1, 3)
	tb.Truncate(2)
	tb.Grow(100)
	if tb.Len() != 2 || tb.Time[1] != 3 || !reflect.DeepEqual(tb.Row(1).Cols, []int64{253, -3, 3 << 40, 3}) || cap(tb.Cols[0].u8) < 102 {
		t.Errorf("rows %+v %+v", tb.Row(0), tb.Row(1))
	}
	tb.Cols[0].Set(0, 256+7) // cut to a byte
	if got := tb.Cols[0].At(0); got != 7 || tb.Cols[0].Len() != 2 {
		t.Errorf("u8 set to 263 reads %d", got)
	}
}

// TestDefaultColumns: Dur, Count and CPU take no memory while every row has the default (0, 1
// and -1), and are made with the rows so far at the first other value, by Add, AddHeader and
// DecodeRecord alike.
func TestDefaultColumns(t *testing.T) {
	tb := New(testSchema)
	tb.Add(Row{Time: 1, Count: 1, CPU: -1})
	tb.AddHeader(2, 0, 1, 0, 0, -1, 0)
	for j := range tb.Cols {
		tb.Cols[j].Append(0)
	}
	if tb.Dur != nil || tb.Count != nil || tb.CPU != nil || tb.DurAt(1) != 0 || tb.CountAt(1) != 1 || tb.CPUAt(1) != -1 || tb.Events() != 2 {
		t.Fatalf("defaults kept: dur %v, count %v, cpu %v", tb.Dur, tb.Count, tb.CPU)
	}
	tb.Add(Row{Time: 3, Dur: 5, Count: 4, CPU: 2})
	if !reflect.DeepEqual(tb.Dur, []int64{0, 0, 5}) || !reflect.DeepEqual(tb.Count, []int64{1, 1, 4}) ||
		!reflect.DeepEqual(tb.CPU, []int32{-1, -1, 2}) || tb.Events() != 6 {
		t.Errorf("dur %v, count %v, cpu %v", tb.Dur, tb.Count, tb.CPU)
	}
	tb.CopyRow(0, 2)
	tb.CopyRow(1, 0)
	tb.Truncate(2)
	if tb.Row(1).Dur != 5 || tb.Row(1).Count != 4 || tb.Row(1).CPU != 2 || tb.Len() != 2 {
		t.Errorf("rows %+v %+v", tb.Row(0), tb.Row(1))
	}
	offs, size := testSchema.Offsets()
	rec := AppendRecord(nil, offs, size, testSchema, Row{Time: 1, Count: 1, CPU: -1})
	rec = AppendRecord(rec, offs, size, testSchema, Row{Time: 2, Count: 1, CPU: 7})
	d := New(testSchema)
	d.DecodeRecord(rec, offs)
	if d.CPU != nil {
		t.Errorf("a record of CPU -1 made the column: %v", d.CPU)
	}
	d.DecodeRecord(rec[size:], offs)
	if !reflect.DeepEqual(d.CPU, []int32{-1, 7}) {
		t.Errorf("decoded CPUs %v, want [-1 7]", d.CPU)
	}
}

// TestAddHeader: a row added header first, then a value per column, is the row Add adds.
func TestAddHeader(t *testing.T) {
	a, b := New(testSchema), New(testSchema)
	r := Row{Time: 4, Dur: 2, Count: 3, Pid: 5, Tid: 6, CPU: 1, Stack: 7, Cols: []int64{8, -9, 10, 11}}
	a.Add(r)
	b.AddHeader(r.Time, r.Dur, r.Count, r.Pid, r.Tid, r.CPU, r.Stack)
	for j, v := range r.Cols {
		b.Cols[j].Append(v)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("AddHeader and Append: %+v; Add: %+v", b, a)
	}
}

// TestWindows: parts read side by side into windows of a table, some with fewer rows than room,
// are joined in order, every column with them.
func TestWindows(t *testing.T) {
	tb := New(testSchema)
	tb.Add(Row{Time: 1, Count: 1, Cols: []int64{1, 1, 1, 1}})
	tb.Durs()
	parts, join := tb.Windows([]int{3, 2})
	parts[0].Add(Row{Time: 10, Dur: 5, Count: 1, Pid: 7, Cols: []int64{2, -2, 2, 2}})
	parts[1].Add(Row{Time: 20, Dur: 6, Count: 1, Pid: 8, Cols: []int64{3, -3, 3, 3}})
	parts[1].Add(Row{Time: 21, Count: 2, Pid: 9, CPU: 3, Cols: []int64{4, -4, 4, 4}}) // a count and a CPU: made in the part
	join()
	if !reflect.DeepEqual(tb.CPU, []int32{0, 0, 0, 3}) {
		t.Errorf("joined CPUs %v", tb.CPU)
	}
	if tb.Len() != 4 || !reflect.DeepEqual(tb.Time, []int64{1, 10, 20, 21}) || !reflect.DeepEqual(tb.Dur, []int64{0, 5, 6, 0}) ||
		!reflect.DeepEqual(tb.Count, []int64{1, 1, 1, 2}) || !reflect.DeepEqual(tb.Cols[1].Values(), []int64{1, -2, -3, -4}) ||
		!reflect.DeepEqual(tb.Pid, []uint32{0, 7, 8, 9}) {
		t.Errorf("joined: %+v", tb)
	}
}

// TestSortByTime: rows in time order, rows of one time in their order, every column with them.
func TestSortByTime(t *testing.T) {
	tb := New(testSchema)
	for i, at := range []int64{5, 1, 5, 0, 1} {
		tb.Add(Row{Time: at, Count: int64(i + 1), Tid: uint32(i), Cols: []int64{int64(i), 0, 0, 0}})
	}
	tb.SortByTime()
	if !reflect.DeepEqual(tb.Time, []int64{0, 1, 1, 5, 5}) || !reflect.DeepEqual(tb.Tid, []uint32{3, 1, 4, 0, 2}) ||
		!reflect.DeepEqual(tb.Count, []int64{4, 2, 5, 1, 3}) || !reflect.DeepEqual(tb.Cols[0].Values(), []int64{3, 1, 4, 0, 2}) {
		t.Errorf("sorted: %+v", tb)
	}
}

var strSchema = &Schema{Name: "named", File: "namedtrace", Columns: []Column{{Name: "fd", Type: I32}, {Name: "file", Type: Str}}}

// TestStrings: a Str column's values are indexes of the table's strings, each string once, "" the
// 0; they survive a sort, windows read side by side (each with strings of its own) and a row copied
// from another table.
func TestStrings(t *testing.T) {
	tb := New(strSchema)
	if a, b, e := tb.Intern("/a"), tb.InternBytes([]byte("/b")), tb.Intern(""); a != 1 || b != 2 || e != 0 || tb.Intern("/a") != 1 {
		t.Fatalf("interned /a %d, /b %d, \"\" %d; want 1, 2, 0", a, b, e)
	}
	tb.Add(Row{Time: 5, Cols: []int64{3, tb.Intern("/b")}})
	tb.Add(Row{Time: 1, Cols: []int64{4, tb.Intern("/a")}})
	parts, join := tb.Windows([]int{2, 1})
	parts[0].Add(Row{Time: 7, Cols: []int64{5, parts[0].Intern("/c")}})
	parts[0].Add(Row{Time: 8, Cols: []int64{6, parts[0].Intern("/a")}})
	parts[1].Add(Row{Time: 9, Cols: []int64{7, parts[1].Intern("/c")}})
	parts[1].Add(Row{Time: 0}) // no string: ""
	join()
	tb.SortByTime()
	var got []string
	for i := range tb.Len() {
		got = append(got, tb.Str(1, i))
	}
	if want := []string{"", "/a", "/b", "/c", "/a", "/c"}; !reflect.DeepEqual(got, want) || len(tb.Strings) != 4 {
		t.Errorf("strings %q from %q; want %q, 4 strings", got, tb.Strings, want)
	}
	o := New(strSchema)
	o.Intern("/z")
	o.AddFrom(tb, 3)
	if o.Str(1, 0) != "/c" || o.Cols[0].At(0) != 5 || o.Time[0] != 7 {
		t.Errorf("copied row: %+v", o.Row(0))
	}
	if err := strSchema.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := strSchema.CheckFile(); err == nil || !strings.Contains(err.Error(), "column file is a string") {
		t.Errorf("CheckFile of a string column: %v", err)
	}
}
