package experiment

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"er/internal/events"
)

// Event tables in files (docs/experiment-format.md, "Event tables"): each table is a binary file
// of kind table whose records are laid out as its schema says (events.Schema.Offsets), and log.xml
// describes it with a dataDescriptor of kind "table" that names the schema and lists the header's
// fields and the declared columns.

// table returns d's table of schema s, made empty where d has none.
func (d *Data) table(s *events.Schema) *events.Table {
	t := d.Tables[s.Name]
	if t == nil {
		t = events.New(s)
		if d.Tables == nil {
			d.Tables = map[string]*events.Table{}
		}
		d.Tables[s.Name] = t
	}
	return t
}

// tableDescriptor renders schema s as log.xml's descriptor of its file.
func tableDescriptor(s *events.Schema) xmlDescriptor {
	offs, size := s.Offsets()
	x := xmlDescriptor{File: s.File, Kind: kindTable.String(), Name: s.Name, Version: FormatVersion, RecordSize: uint32(size)}
	for _, h := range events.Header {
		x.Fields = append(x.Fields, xmlField{Name: h.Name, Type: h.Type.String(), Offset: h.Offset, Desc: qstr(headerDesc[h.Name])})
	}
	for j, c := range s.Columns {
		x.Fields = append(x.Fields, xmlField{Name: c.Name, Type: c.Type.String(), Offset: offs[j], Desc: qstr(c.Title), Unit: qstr(c.Unit)})
	}
	return x
}

var headerDesc = map[string]string{
	"time":  "ns since the start of the experiment",
	"dur":   "ns the event lasted; 0 for none",
	"count": "calls or samples the row stands for: 1, more for a summed site",
	"pid":   "process id",
	"tid":   "thread id",
	"cpu":   "CPU the event was taken on; -1 when not recorded",
	"stack": "stack id: record number in the stacks file, from 1; 0 is the empty stack",
}

// tableSchema reads the schema of a table's descriptor x, checking that its layout is the one its
// columns give (the header's fields first, each where the format puts it).
func tableSchema(name string, x xmlDescriptor) (*events.Schema, error) {
	s := &events.Schema{Name: x.Name, File: x.File}
	bad := func(format string, args ...any) error {
		return formatErrorf(name, -1, hintLog, "the descriptor of event table %q (file %q): %s", x.Name, x.File, fmt.Sprintf(format, args...))
	}
	if len(x.Fields) < len(events.Header) {
		return nil, bad("%d fields; the header alone has %d", len(x.Fields), len(events.Header))
	}
	for i, h := range events.Header {
		if f := x.Fields[i]; f.Name != h.Name || f.Type != h.Type.String() || f.Offset != h.Offset {
			return nil, bad("field %d is %s %s at offset %d; want the header's %s %s at %d", i+1, f.Name, f.Type, f.Offset, h.Name, h.Type, h.Offset)
		}
	}
	for _, f := range x.Fields[len(events.Header):] {
		t, ok := events.ParseType(f.Type)
		if !ok {
			return nil, bad("column %q has type %q; want one of u8, u16, u32, u64, i32, i64", f.Name, f.Type)
		}
		s.Columns = append(s.Columns, events.Column{Name: f.Name, Title: string(f.Desc), Unit: string(f.Unit), Type: t})
	}
	if err := s.CheckFile(); err != nil {
		return nil, bad("%v", err)
	}
	offs, size := s.Offsets()
	for j, f := range x.Fields[len(events.Header):] {
		if f.Offset != offs[j] {
			return nil, bad("column %s at offset %d; its layout puts it at %d", f.Name, f.Offset, offs[j])
		}
	}
	if x.RecordSize != uint32(size) {
		return nil, bad("record size %d; its columns make %d", x.RecordSize, size)
	}
	if size > events.MaxRecordSize {
		return nil, bad("record size %d; at most %d", size, events.MaxRecordSize)
	}
	return s, nil
}

// checkTables checks that the tables of a log have distinct names and files, none a file of the
// format's own.
func checkTables(name string, ts []*events.Schema) error {
	names, files := map[string]bool{ClockSchema.Name: true, HeapSchema.Name: true, SyncSchema.Name: true, CounterSchema.Name: true, IOSchema.Name: true}, map[string]bool{} // the built-in kinds' tables too
	for _, f := range append([]string{LogFile, MapFile, OverviewFile, ClockFile, OffCPUFile, CountersFile, StacksFile, NotesFile}, TraceFiles...) {
		files[f] = true
	}
	for _, s := range ts {
		if names[s.Name] || files[s.File] {
			return formatErrorf(name, -1, hintLog, "event table %q (file %q): a second table of that name, or a file of another", s.Name, s.File)
		}
		names[s.Name], files[s.File] = true, true
	}
	return nil
}

// Row records an event of the table of schema s, whose file is made at its first row (and log.xml
// then describes it). Its stack must come from Stack; s must be the same schema at every call.
func (w *Writer) Row(s *events.Schema, r events.Row) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	if r.Stack > w.nstacks {
		return fmt.Errorf("experiment: %s event with stack id %d; only %d stacks are interned", s.Name, r.Stack, w.nstacks)
	}
	t := w.tables[s]
	if t == nil {
		if err := s.CheckFile(); err != nil {
			return fmt.Errorf("experiment: %w", err)
		}
		if err := checkTables(LogFile, append(slices.Clip(w.log.Tables), s)); err != nil {
			return err
		}
		offs, size := s.Offsets()
		if size > events.MaxRecordSize {
			return fmt.Errorf("experiment: table %s: records of %d bytes; at most %d", s.Name, size, events.MaxRecordSize)
		}
		f, err := newDataFileOf(w.dir, s.File, kindTable, uint32(size))
		if err := w.fail(err); err != nil {
			return err
		}
		t = &tableFile{dataFile: f, offs: offs, size: size}
		if w.tables == nil {
			w.tables = map[*events.Schema]*tableFile{}
		}
		w.tables[s] = t
		w.tableOrder = append(w.tableOrder, t)
		w.log.Tables = append(w.log.Tables, s)
		w.logDirty = true
	}
	t.buf = events.AppendRecord(t.buf, t.offs, t.size, s, r)
	t.count++
	if t.full() {
		if err := w.fail(w.stacks.flush()); err != nil {
			return err
		}
		return w.fail(t.flush())
	}
	return nil
}

// tableFile is an event table's file being written.
type tableFile struct {
	*dataFile
	offs []int
	size int
}

// readTables reads the event tables that d's log describes, after its stacks.
func readTables(d *Data, dir string, present map[string]string) error {
	for _, s := range d.Log.Tables {
		var t *events.Table
		err := readData(filepath.Join(dir, s.File), present, func(name string, f *os.File, size int64) (w string, err error) {
			t, w, err = readTable(name, f, size, s, len(d.Stacks))
			return w, err
		})
		if err != nil {
			return err
		}
		if t == nil {
			t = events.New(s)
		}
		t.SortByTime()
		if d.Tables == nil {
			d.Tables = map[string]*events.Table{}
		}
		d.Tables[s.Name] = t
	}
	return nil
}

// readTable reads the table file of schema s, of size bytes.
func readTable(name string, r io.ReaderAt, size int64, s *events.Schema, nstacks int) (*events.Table, string, error) {
	offs, recSize := s.Offsets()
	br, err := newBlockReaderOf(name, r, size, kindTable, uint32(recSize), false)
	if err != nil {
		return nil, "", err
	}
	t := events.New(s)
	err = br.records(func(rec []byte, off, at int64) error {
		n := t.Len()
		t.DecodeRecord(rec, offs)
		switch {
		case int64(t.Stack[n]) >= int64(nstacks):
			return formatErrorf(name, at, hintBlock(name, off), "event %d has stack id %d, but the stacks file has only %d stacks", n+1, t.Stack[n], nstacks)
		case t.CountAt(n) < 1 || t.CountAt(n) > maxCounterVal:
			return formatErrorf(name, at, hintBlock(name, off), "event %d stands for %d events: 1 to %d", n+1, t.CountAt(n), int64(maxCounterVal))
		case t.DurAt(n) < 0 || t.DurAt(n) > maxCounterVal:
			return formatErrorf(name, at, hintBlock(name, off), "event %d lasts %d ns: 0 to %d", n+1, t.DurAt(n), int64(maxCounterVal))
		case t.CPUAt(n) < -1:
			return formatErrorf(name, at, hintBlock(name, off), "event %d was on CPU %d: -1 (none) or more", n+1, t.CPUAt(n))
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return t, br.warning, nil
}

// AppendTable adds the event table of schema s, with rows, to the finished experiment in dir: its
// file, and its descriptor in log.xml (rewritten atomically). The experiment must not have a table
// of that name or file, and the rows' stacks must be in its stacks file. It is for tools that add a
// kind's events to an experiment after collection (and the tests' collector stubs).
func AppendTable(dir string, s *events.Schema, rows []events.Row) error {
	d, err := Open(dir)
	if err != nil {
		return err
	}
	if err := s.CheckFile(); err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	if err := checkTables(filepath.Join(dir, LogFile), append(slices.Clip(d.Log.Tables), s)); err != nil {
		return err
	}
	offs, size := s.Offsets()
	if size > events.MaxRecordSize {
		return fmt.Errorf("experiment: table %s: records of %d bytes; at most %d", s.Name, size, events.MaxRecordSize)
	}
	for i, r := range rows {
		if int64(r.Stack) >= int64(len(d.Stacks)) {
			return fmt.Errorf("experiment: %s: %s event %d has stack id %d; the experiment has %d stacks", dir, s.Name, i+1, r.Stack, len(d.Stacks))
		}
	}
	f, err := newDataFileOf(dir, s.File, kindTable, uint32(size))
	if err != nil {
		return err
	}
	for _, r := range rows {
		f.buf = events.AppendRecord(f.buf, offs, size, s, r)
		f.count++
		if f.full() {
			if err := f.flush(); err != nil {
				f.f.Close()
				return err
			}
		}
	}
	if err := f.flush(); err != nil {
		f.f.Close()
		return err
	}
	if err := f.f.Close(); err != nil {
		return err
	}
	d.Log.Tables = append(d.Log.Tables, s)
	return writeFileAtomic(dir, LogFile, encodeLog(d.Log))
}
