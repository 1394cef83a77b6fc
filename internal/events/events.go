// Package events holds event tables: one kind's events as a common header and the columns its schema declares, stored as a struct of arrays.
package events

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// A table's events share a header: when (Time, ns since the experiment's start), how long (Dur,
// ns; 0 for an event of no duration), how many calls or samples the row stands for (Count: 1 for
// one event, more for a summed site), of which process and thread, on which CPU (-1: not
// recorded), at which call stack (an id of the experiment's stack table). A kind's schema adds its
// own columns, each an integer of a declared type.

// Type is the type of a column's values in the table's file; in memory every value is an int64
// (a u64 keeps its bits).
type Type uint8

// Column types.
const (
	U8 Type = iota + 1
	U16
	U32
	U64
	I32
	I64
	// Str is a string: in memory, an index into the table's Strings (Intern, Str). Table files
	// hold no strings: a schema of a table file has no Str column (Schema.CheckFile).
	Str
)

var typeNames = [...]string{U8: "u8", U16: "u16", U32: "u32", U64: "u64", I32: "i32", I64: "i64", Str: "str"}

// String is the type's name in log.xml's field descriptors.
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("type %d", t)
}

// Size is the bytes a value of type t takes in a record.
func (t Type) Size() int {
	switch t {
	case U8:
		return 1
	case U16:
		return 2
	case U32, I32, Str:
		return 4
	case U64, I64:
		return 8
	}
	return 0
}

// ParseType returns the type log.xml names s; false for none of the column types.
func ParseType(s string) (Type, bool) {
	for t, n := range typeNames {
		if n != "" && n == s {
			return Type(t), true
		}
	}
	return 0, false
}

// Column is a column a schema declares beyond the header.
type Column struct {
	Name  string // in files and filters (case-insensitive there): lower-case letters, digits, '_'
	Title string // in describe and tables: "Toy units"
	Unit  string // of its values: "bytes", "ns", "" for a number or a code
	Type  Type
}

// Schema is a kind's table: its name (in log.xml and Data.Tables), the file that holds its
// records, and its declared columns in record order.
type Schema struct {
	Name    string
	File    string
	Columns []Column
}

// Limits of a schema, checked where one is read from a file.
const (
	MaxColumns    = 64
	MaxNameLen    = 32
	MaxRecordSize = 1024
)

// The header's fields in a record, each at its fixed offset (docs/experiment-format.md, "Event
// tables").
var Header = []struct {
	Name   string
	Type   Type
	Offset int
}{
	{"time", I64, 0}, {"dur", I64, 8}, {"count", I64, 16}, {"pid", U32, 24}, {"tid", U32, 28}, {"cpu", I32, 32}, {"stack", U32, 36},
}

// HeaderSize is the bytes of a record's header; the declared columns follow it.
const HeaderSize = 40

// Offsets returns each declared column's offset in a record, and the record's size: the columns
// follow the header in order, each aligned to its size, and the record is a multiple of 8 bytes.
func (s *Schema) Offsets() (offs []int, size int) {
	off := HeaderSize
	for _, c := range s.Columns {
		n := c.Type.Size()
		off = (off + n - 1) / n * n
		offs = append(offs, off)
		off += n
	}
	return offs, (off + 7) / 8 * 8
}

// Col returns the index of the column named name (case-insensitive), -1 for none.
func (s *Schema) Col(name string) int {
	for i, c := range s.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// CheckFile is Check of a schema whose table is kept in a file: it has no Str column.
func (s *Schema) CheckFile() error {
	if err := s.Check(); err != nil {
		return err
	}
	for _, c := range s.Columns {
		if c.Type == Str {
			return fmt.Errorf("table %s: column %s is a string; a table file holds only integers", s.Name, c.Name)
		}
	}
	return nil
}

// Check says what is wrong with s, if anything: a name or file that is not a plain lower-case name,
// a column without a name or type, two columns of one name (or a header field's), too many columns.
func (s *Schema) Check() error {
	if !plainName(s.Name) {
		return fmt.Errorf("table name %q: want 1 to %d lower-case letters, digits and '_', starting with a letter", s.Name, MaxNameLen)
	}
	if !plainFile(s.File) {
		return fmt.Errorf("table %s: file name %q: want a plain name of letters, digits, '.', '_' and '-', not starting with '.'", s.Name, s.File)
	}
	if len(s.Columns) > MaxColumns {
		return fmt.Errorf("table %s: %d columns; at most %d", s.Name, len(s.Columns), MaxColumns)
	}
	seen := map[string]bool{}
	for _, h := range Header {
		seen[h.Name] = true
	}
	for _, c := range s.Columns {
		if !plainName(c.Name) {
			return fmt.Errorf("table %s: column name %q: want 1 to %d lower-case letters, digits and '_', starting with a letter", s.Name, c.Name, MaxNameLen)
		}
		if seen[c.Name] {
			return fmt.Errorf("table %s: two columns (or a column and a header field) named %q", s.Name, c.Name)
		}
		seen[c.Name] = true
		if c.Type.Size() == 0 {
			return fmt.Errorf("table %s: column %s has no type", s.Name, c.Name)
		}
	}
	return nil
}

func plainName(s string) bool {
	if s == "" || len(s) > MaxNameLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func plainFile(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Row is one event: its header and its declared columns' values, in schema order.
type Row struct {
	Time, Dur, Count int64
	Pid, Tid         uint32
	CPU              int32
	Stack            uint32
	Cols             []int64
}

// Table is a kind's events, a column each: the header's and the declared ones (Cols, in schema
// order). Its rows are in the order they were added (the reader adds them in time order). Dur,
// Count and CPU are nil while every row's is the default (0, 1 and -1): read them with DurAt,
// CountAt and CPUAt.
type Table struct {
	Schema           *Schema
	Time, Dur, Count []int64
	Pid, Tid         []uint32
	CPU              []int32
	Stack            []uint32
	Cols             []Col
	// Last is the time of the last event that rows summing several stand for (a row has its first
	// event's time); LastTime takes it with the rows' times.
	Last int64
	// Strings are the values of the Str columns, each once (Intern); Strings[0] is "".
	Strings []string
	strIdx  map[string]uint32
	// Side is a side table that the kind's reader keeps beside the rows (the size histograms of
	// summed I/O calls, one a row): the table's own methods leave it alone.
	Side any
}

// Intern returns the value of string s in a Str column of t: its index in t.Strings, added there
// at its first use.
func (t *Table) Intern(s string) int64 {
	if s == "" {
		return 0
	}
	if i, ok := t.strIdx[s]; ok {
		return int64(i)
	}
	return t.addString(s)
}

// InternBytes is Intern of string(b), which it copies only where it is new.
func (t *Table) InternBytes(b []byte) int64 {
	if len(b) == 0 {
		return 0
	}
	if i, ok := t.strIdx[string(b)]; ok {
		return int64(i)
	}
	return t.addString(string(b))
}

func (t *Table) addString(s string) int64 {
	if t.strIdx == nil {
		t.strIdx = map[string]uint32{}
		if len(t.Strings) == 0 {
			t.Strings = []string{""}
		}
		for i, v := range t.Strings[1:] {
			t.strIdx[v] = uint32(i + 1)
		}
	}
	if i, ok := t.strIdx[s]; ok {
		return int64(i)
	}
	i := uint32(len(t.Strings))
	t.Strings = append(t.Strings, s)
	t.strIdx[s] = i
	return int64(i)
}

// Str returns row i's string in Str column j.
func (t *Table) Str(j, i int) string {
	if k := t.Cols[j].At(i); k > 0 && k < int64(len(t.Strings)) {
		return t.Strings[k]
	}
	return ""
}

// LastTime is the time of the table's last event: its last row's, or Last.
func (t *Table) LastTime() int64 {
	if t == nil {
		return 0
	}
	last := t.Last
	for _, v := range t.Time {
		last = max(last, v)
	}
	return last
}

// New returns an empty table of schema s.
func New(s *Schema) *Table {
	t := &Table{Schema: s, Cols: make([]Col, len(s.Columns))}
	for j, c := range s.Columns {
		t.Cols[j].typ = c.Type
	}
	return t
}

// Len is the number of rows.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.Time)
}

// Events is the number of calls or samples the rows stand for: the sum of their counts.
func (t *Table) Events() int64 {
	if t == nil {
		return 0
	}
	if t.Count == nil {
		return int64(t.Len())
	}
	var n int64
	for _, c := range t.Count {
		n += c
	}
	return n
}

// DurAt is row i's duration.
func (t *Table) DurAt(i int) int64 {
	if t.Dur == nil {
		return 0
	}
	return t.Dur[i]
}

// CountAt is the number of events row i stands for.
func (t *Table) CountAt(i int) int64 {
	if t.Count == nil {
		return 1
	}
	return t.Count[i]
}

// CPUAt is the CPU of row i, -1 where it was not recorded.
func (t *Table) CPUAt(i int) int32 {
	if t.CPU == nil {
		return -1
	}
	return t.CPU[i]
}

// CPUs returns the CPUs, made (all -1) where they were not kept.
func (t *Table) CPUs() []int32 {
	if t.CPU == nil {
		t.CPU = make([]int32, t.Len(), cap(t.Time))
		for i := range t.CPU {
			t.CPU[i] = -1
		}
	}
	return t.CPU
}

// addCPU appends a row's CPU, keeping CPU nil while every row's is -1.
func (t *Table) addCPU(cpu int32) {
	if t.CPU != nil || cpu != -1 {
		t.CPU = append(t.CPUs(), cpu)
	}
}

// Durs returns the durations, made (all 0) where they were not kept.
func (t *Table) Durs() []int64 {
	if t.Dur == nil {
		t.Dur = make([]int64, t.Len(), cap(t.Time))
	}
	return t.Dur
}

// Counts returns the counts, made (all 1) where they were not kept.
func (t *Table) Counts() []int64 {
	if t.Count == nil {
		t.Count = make([]int64, t.Len(), cap(t.Time))
		for i := range t.Count {
			t.Count[i] = 1
		}
	}
	return t.Count
}

// addHeader appends a row's time, duration and count, keeping Dur and Count nil while they are
// the default.
func (t *Table) addHeader(time, dur, count int64) {
	if t.Dur != nil || dur != 0 {
		t.Dur = append(t.Durs(), dur)
	}
	if t.Count != nil || count != 1 {
		t.Count = append(t.Counts(), count)
	}
	t.Time = append(t.Time, time)
}

// Add appends r; its Cols must have one value per declared column (missing ones are 0).
func (t *Table) Add(r Row) {
	t.addCPU(r.CPU) // before the time: it counts the rows
	t.addHeader(r.Time, r.Dur, r.Count)
	t.Pid, t.Tid, t.Stack = append(t.Pid, r.Pid), append(t.Tid, r.Tid), append(t.Stack, r.Stack)
	for j := range t.Cols {
		var v int64
		if j < len(r.Cols) {
			v = r.Cols[j]
		}
		t.Cols[j].Append(v)
	}
}

// AddHeader appends a row's header alone: the caller appends a value to each declared column
// (Cols[j].Append) before the next row. It is Add without a Row's column slice, for readers of a
// million rows.
func (t *Table) AddHeader(time, dur, count int64, pid, tid uint32, cpu int32, stack uint32) {
	t.addCPU(cpu) // before the time: it counts the rows
	t.addHeader(time, dur, count)
	t.Pid, t.Tid, t.Stack = append(t.Pid, pid), append(t.Tid, tid), append(t.Stack, stack)
}

// Row returns row i.
func (t *Table) Row(i int) Row {
	r := Row{Time: t.Time[i], Dur: t.DurAt(i), Count: t.CountAt(i), Pid: t.Pid[i], Tid: t.Tid[i], CPU: t.CPUAt(i), Stack: t.Stack[i]}
	for j := range t.Cols {
		r.Cols = append(r.Cols, t.Cols[j].At(i))
	}
	return r
}

// Column returns the declared column named name (case-insensitive); nil for none.
func (t *Table) Column(name string) *Col {
	if t == nil {
		return nil
	}
	if j := t.Schema.Col(name); j >= 0 {
		return &t.Cols[j]
	}
	return nil
}

var le = binary.LittleEndian

// AppendRecord appends row r as a record of schema s (offs and size from s.Offsets).
func AppendRecord(b []byte, offs []int, size int, s *Schema, r Row) []byte {
	start := len(b)
	b = append(b, make([]byte, size)...)
	rec := b[start:]
	le.PutUint64(rec[0:], uint64(r.Time))
	le.PutUint64(rec[8:], uint64(r.Dur))
	le.PutUint64(rec[16:], uint64(r.Count))
	le.PutUint32(rec[24:], r.Pid)
	le.PutUint32(rec[28:], r.Tid)
	le.PutUint32(rec[32:], uint32(r.CPU))
	le.PutUint32(rec[36:], r.Stack)
	for j, c := range s.Columns {
		var v int64
		if j < len(r.Cols) {
			v = r.Cols[j]
		}
		put(rec[offs[j]:], c.Type, v)
	}
	return b
}

func put(b []byte, t Type, v int64) {
	switch t {
	case U8:
		b[0] = byte(v)
	case U16:
		le.PutUint16(b, uint16(v))
	case U32, I32, Str:
		le.PutUint32(b, uint32(v))
	case U64, I64:
		le.PutUint64(b, uint64(v))
	}
}

// Value decodes a value of type t at the start of b.
func Value(b []byte, t Type) int64 {
	switch t {
	case U8:
		return int64(b[0])
	case U16:
		return int64(le.Uint16(b))
	case U32, Str:
		return int64(le.Uint32(b))
	case I32:
		return int64(int32(le.Uint32(b)))
	case U64, I64:
		return int64(le.Uint64(b))
	}
	return 0
}

// DecodeRecord decodes the record rec (at least size bytes) of a file whose declared columns are
// at offs, and adds it to t.
func (t *Table) DecodeRecord(rec []byte, offs []int) {
	t.addCPU(int32(le.Uint32(rec[32:]))) // before the time: it counts the rows
	t.addHeader(int64(le.Uint64(rec[0:])), int64(le.Uint64(rec[8:])), int64(le.Uint64(rec[16:])))
	t.Pid = append(t.Pid, le.Uint32(rec[24:]))
	t.Tid = append(t.Tid, le.Uint32(rec[28:]))
	t.Stack = append(t.Stack, le.Uint32(rec[36:]))
	for j, c := range t.Schema.Columns {
		t.Cols[j].Append(Value(rec[offs[j]:], c.Type))
	}
}

// CopyRow copies row j over row i.
func (t *Table) CopyRow(i, j int) {
	t.Time[i] = t.Time[j]
	if t.Dur != nil {
		t.Dur[i] = t.Dur[j]
	}
	if t.Count != nil {
		t.Count[i] = t.Count[j]
	}
	if t.CPU != nil {
		t.CPU[i] = t.CPU[j]
	}
	t.Pid[i], t.Tid[i], t.Stack[i] = t.Pid[j], t.Tid[j], t.Stack[j]
	for k := range t.Cols {
		t.Cols[k].Set(i, t.Cols[k].At(j))
	}
}

// Truncate keeps the first n rows.
func (t *Table) Truncate(n int) {
	t.Time = t.Time[:n]
	if t.Dur != nil {
		t.Dur = t.Dur[:n]
	}
	if t.Count != nil {
		t.Count = t.Count[:n]
	}
	if t.CPU != nil {
		t.CPU = t.CPU[:n]
	}
	t.Pid, t.Tid, t.Stack = t.Pid[:n], t.Tid[:n], t.Stack[:n]
	for j := range t.Cols {
		t.Cols[j].truncate(n)
	}
}

// Grow makes room for n more rows in every column, allocating exactly that.
func (t *Table) Grow(n int) {
	t.Time = grow(t.Time, n)
	if t.Dur != nil {
		t.Dur = grow(t.Dur, n)
	}
	if t.Count != nil {
		t.Count = grow(t.Count, n)
	}
	if t.CPU != nil {
		t.CPU = grow(t.CPU, n)
	}
	t.Pid, t.Tid, t.Stack = grow(t.Pid, n), grow(t.Tid, n), grow(t.Stack, n)
	for j := range t.Cols {
		t.Cols[j].grow(n)
	}
}

func grow[S ~[]E, E any](s S, n int) S {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make(S, len(s), len(s)+n)
	copy(out, s)
	return out
}

// Col is a declared column's values, stored as its type is (a u8 column takes a byte a row).
type Col struct {
	typ Type
	u8  []uint8
	u16 []uint16
	u32 []uint32
	i32 []int32
	i64 []int64 // i64, and u64 by its bits
}

// Len is the number of values.
func (c *Col) Len() int {
	switch c.typ {
	case U8:
		return len(c.u8)
	case U16:
		return len(c.u16)
	case U32, Str:
		return len(c.u32)
	case I32:
		return len(c.i32)
	}
	return len(c.i64)
}

// At returns value i (a u64's bits as an int64).
func (c *Col) At(i int) int64 {
	switch c.typ {
	case U8:
		return int64(c.u8[i])
	case U16:
		return int64(c.u16[i])
	case U32, Str:
		return int64(c.u32[i])
	case I32:
		return int64(c.i32[i])
	}
	return c.i64[i]
}

// Set sets value i to v, cut to the column's type.
func (c *Col) Set(i int, v int64) {
	switch c.typ {
	case U8:
		c.u8[i] = uint8(v)
	case U16:
		c.u16[i] = uint16(v)
	case U32, Str:
		c.u32[i] = uint32(v)
	case I32:
		c.i32[i] = int32(v)
	default:
		c.i64[i] = v
	}
}

// Append adds v, cut to the column's type.
func (c *Col) Append(v int64) {
	switch c.typ {
	case U8:
		c.u8 = append(c.u8, uint8(v))
	case U16:
		c.u16 = append(c.u16, uint16(v))
	case U32, Str:
		c.u32 = append(c.u32, uint32(v))
	case I32:
		c.i32 = append(c.i32, int32(v))
	default:
		c.i64 = append(c.i64, v)
	}
}

// U8s, U16s, U32s, I32s and I64s return a column's values as it stores them, for loops over millions
// of rows: U32s a u32's or a str's, I64s an i64's or a u64's bits; nil for a column of another type.
func (c *Col) U8s() []uint8   { return c.u8 }
func (c *Col) U16s() []uint16 { return c.u16 }
func (c *Col) U32s() []uint32 { return c.u32 }
func (c *Col) I32s() []int32  { return c.i32 }
func (c *Col) I64s() []int64  { return c.i64 }

// Values returns all the values, widened.
func (c *Col) Values() []int64 {
	out := make([]int64, c.Len())
	for i := range out {
		out[i] = c.At(i)
	}
	return out
}

func (c *Col) truncate(n int) {
	switch c.typ {
	case U8:
		c.u8 = c.u8[:n]
	case U16:
		c.u16 = c.u16[:n]
	case U32, Str:
		c.u32 = c.u32[:n]
	case I32:
		c.i32 = c.i32[:n]
	default:
		c.i64 = c.i64[:n]
	}
}

func (c *Col) grow(n int) {
	switch c.typ {
	case U8:
		c.u8 = grow(c.u8, n)
	case U16:
		c.u16 = grow(c.u16, n)
	case U32, Str:
		c.u32 = grow(c.u32, n)
	case I32:
		c.i32 = grow(c.i32, n)
	default:
		c.i64 = grow(c.i64, n)
	}
}

// Windows makes room in t for the rows of several parts read side by side, counts[i] rows at most
// for part i, and returns a table for each part whose columns are windows of that room: rows added
// to part i go in place. The function returned appends the parts' rows to t in order, closing the
// gaps that parts with fewer rows left. Dur and Count are in the windows only where t keeps them
// (call Durs or Counts first where the parts will have other values than the defaults).
func (t *Table) Windows(counts []int) (parts []*Table, join func()) {
	total := 0
	for _, n := range counts {
		total += n
	}
	t.Grow(total)
	off := t.Len()
	win := func(n int) *Table {
		p := &Table{Schema: t.Schema, Cols: make([]Col, len(t.Cols))}
		p.Time = t.Time[off : off : off+n]
		if t.Dur != nil {
			p.Dur = t.Dur[off : off : off+n]
		}
		if t.Count != nil {
			p.Count = t.Count[off : off : off+n]
		}
		if t.CPU != nil {
			p.CPU = t.CPU[off : off : off+n]
		}
		p.Pid, p.Tid, p.Stack = t.Pid[off:off:off+n], t.Tid[off:off:off+n], t.Stack[off:off:off+n]
		for j := range t.Cols {
			p.Cols[j] = t.Cols[j].window(off, n)
		}
		return p
	}
	for _, n := range counts {
		parts = append(parts, win(n))
		off += n
	}
	return parts, func() {
		for _, p := range parts {
			t.internFrom(p)
			t.appendRows(p)
		}
	}
}

// internFrom makes the Str values of p's rows values of t: p's strings interned in t.
func (t *Table) internFrom(p *Table) {
	if len(p.Strings) == 0 {
		return
	}
	for j, c := range t.Schema.Columns {
		if c.Type != Str {
			continue
		}
		col := &p.Cols[j]
		for k, v := range col.u32 {
			col.u32[k] = uint32(t.Intern(p.Strings[v]))
		}
	}
}

// AddFrom appends row i of o, a table of t's schema (its strings interned in t).
func (t *Table) AddFrom(o *Table, i int) {
	r := o.Row(i)
	for j, c := range t.Schema.Columns {
		if c.Type == Str {
			r.Cols[j] = t.Intern(o.Str(j, i))
		}
	}
	t.Add(r)
}

// appendRows appends the rows of p, a table of t's schema.
func (t *Table) appendRows(p *Table) {
	if p.Dur != nil || t.Dur != nil {
		t.Dur = append(t.Durs(), p.Durs()...)
	}
	if p.Count != nil || t.Count != nil {
		t.Count = append(t.Counts(), p.Counts()...)
	}
	if p.CPU != nil || t.CPU != nil {
		t.CPU = append(t.CPUs(), p.CPUs()...)
	}
	t.Time = append(t.Time, p.Time...)
	t.Pid, t.Tid, t.Stack = append(t.Pid, p.Pid...), append(t.Tid, p.Tid...), append(t.Stack, p.Stack...)
	for j := range t.Cols {
		t.Cols[j].appendCol(&p.Cols[j])
	}
	t.Last = max(t.Last, p.Last)
}

// SortByTime puts the rows in time order, rows of one time in their order: a permutation, found
// once, gathered for each column into a scratch column and copied back (a swap of rows moves every
// column; a new copy of each column would be garbage of a million rows; a permutation followed in
// place reads the memory in no order at all, twice as slow).
func (t *Table) SortByTime() {
	if slices.IsSorted(t.Time) {
		return
	}
	idx := make([]int32, t.Len())
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(t.Time[a], t.Time[b]) })
	var sc scratch
	reorder(t.Time, idx, &sc.i64)
	if t.Dur != nil {
		reorder(t.Dur, idx, &sc.i64)
	}
	if t.Count != nil {
		reorder(t.Count, idx, &sc.i64)
	}
	reorder(t.Pid, idx, &sc.u32)
	reorder(t.Tid, idx, &sc.u32)
	if t.CPU != nil {
		reorder(t.CPU, idx, &sc.i32)
	}
	reorder(t.Stack, idx, &sc.u32)
	for j := range t.Cols {
		t.Cols[j].reorder(idx, &sc)
	}
}

// scratch holds a column's worth of each type for reorder.
type scratch struct {
	u8  []uint8
	u16 []uint16
	u32 []uint32
	i32 []int32
	i64 []int64
}

// reorder rearranges s so that s[i] is the old s[idx[i]], through *buf (made at its first use).
func reorder[E any](s []E, idx []int32, buf *[]E) {
	if *buf == nil {
		*buf = make([]E, len(s))
	}
	b := *buf
	for i, j := range idx {
		b[i] = s[j]
	}
	copy(s, b)
}

func (c *Col) window(off, n int) Col {
	w := Col{typ: c.typ}
	switch c.typ {
	case U8:
		w.u8 = c.u8[off : off : off+n]
	case U16:
		w.u16 = c.u16[off : off : off+n]
	case U32, Str:
		w.u32 = c.u32[off : off : off+n]
	case I32:
		w.i32 = c.i32[off : off : off+n]
	default:
		w.i64 = c.i64[off : off : off+n]
	}
	return w
}

func (c *Col) appendCol(o *Col) {
	switch c.typ {
	case U8:
		c.u8 = append(c.u8, o.u8...)
	case U16:
		c.u16 = append(c.u16, o.u16...)
	case U32, Str:
		c.u32 = append(c.u32, o.u32...)
	case I32:
		c.i32 = append(c.i32, o.i32...)
	default:
		c.i64 = append(c.i64, o.i64...)
	}
}

func (c *Col) reorder(idx []int32, sc *scratch) {
	switch c.typ {
	case U8:
		reorder(c.u8, idx, &sc.u8)
	case U16:
		reorder(c.u16, idx, &sc.u16)
	case U32, Str:
		reorder(c.u32, idx, &sc.u32)
	case I32:
		reorder(c.i32, idx, &sc.i32)
	default:
		reorder(c.i64, idx, &sc.i64)
	}
}
