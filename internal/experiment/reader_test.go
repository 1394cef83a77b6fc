package experiment

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"weak"
)

// writeExperiment writes a complete experiment and returns what Open should read.
func writeExperiment(t testing.TB) (string, *Data) {
	t.Helper()
	w, dir := newWriter(t)
	want := &Data{Dir: dir, Log: testLog(), Stacks: []Stack{nil}, Archives: map[string]*Archive{}, Notes: "a comment\n"}
	for _, st := range []Stack{{1, 2}, {3}, {KernelBase + 1, 4, 5}} {
		if _, err := w.Stack(st); err != nil {
			t.Fatal(err)
		}
		want.Stacks = append(want.Stacks, st)
	}
	for i, s := range testClockSamples(20) {
		s.Stack = uint32(i % 4)
		if err := w.Clock(s); err != nil {
			t.Fatal(err)
		}
		want.AppendClock(s)
	}
	for _, o := range testOverview() {
		w.Overview(o)
	}
	want.Overview = testOverview()
	for _, m := range testMappings() {
		w.AddMapping(m)
	}
	want.Mappings = testMappings()
	w.Notes("a comment")
	for _, a := range []*Archive{testArchive(), {Path: "[kernel]", Kind: "kernel"}} {
		if err := WriteArchive(dir, a); err != nil {
			t.Fatal(err)
		}
		want.Archives[a.Path] = a
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

func TestOpenRoundTrip(t *testing.T) {
	dir, want := writeExperiment(t)
	// Files Open must skip: a temporary file and a copy of a load object.
	os.WriteFile(filepath.Join(dir, ArchivesDir, ".x.ar.tmp"), []byte("junk"), 0o644)
	os.WriteFile(filepath.Join(dir, ArchivesDir, "libfoo.so"), []byte("junk"), 0o644)
	got, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for _, f := range []string{"Log", "Mappings", "Stacks", "Clock", "Overview", "Archives", "Notes", "Warnings"} {
			g, w := reflect.ValueOf(got).Elem().FieldByName(f).Interface(), reflect.ValueOf(want).Elem().FieldByName(f).Interface()
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s differs:\n got %+v\nwant %+v", f, g, w)
			}
		}
	}
}

func TestOpenKilledWriter(t *testing.T) {
	w, dir := newWriter(t)
	var want []ClockSample
	for round := range 3 {
		for i := range 100 {
			id, _ := w.Stack(Stack{uint64(i)})
			s := ClockSample{Time: int64(round*100 + i), Pid: 7, Stack: id}
			w.Clock(s)
			want = append(want, s)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// Records after the last Flush are lost with the process ...
	id, _ := w.Stack(Stack{999})
	w.Clock(ClockSample{Time: 999, Stack: id})
	// ... and it died in the middle of writing a block.
	blk := make([]byte, blockHeaderSize)
	for i := range 10 {
		blk = appendClock(blk, ClockSample{Time: int64(1000 + i)})
	}
	sealBlock(blk, 10)
	f, err := os.OpenFile(filepath.Join(dir, ClockFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(blk[:len(blk)/2])
	f.Close()
	off := fileSize(t, filepath.Join(dir, ClockFile)) - int64(len(blk)/2)

	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.ClockSamples(), want) {
		t.Errorf("read %d samples, want the %d flushed ones", d.ClockTable().Len(), len(want))
	}
	if len(d.Stacks) != 101 {
		t.Errorf("%d stacks, want 101", len(d.Stacks))
	}
	wantWarn := []string{"profile.clock: last block at offset " + strconv.FormatInt(off, 10) + " is incomplete (212 of 424 bytes); ignored"}
	if !reflect.DeepEqual(d.Warnings, wantWarn) {
		t.Errorf("warnings %q, want %q", d.Warnings, wantWarn)
	}
	if d.Log.Pid != 4242 {
		t.Errorf("log not read: %+v", d.Log)
	}
}

// A live experiment: nothing flushed yet.
func TestOpenLive(t *testing.T) {
	w, dir := newWriter(t)
	id, _ := w.Stack(Stack{1})
	w.Clock(ClockSample{Stack: id})
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != 0 || len(d.Stacks) != 1 || len(d.Warnings) != 0 || d.Log.Pid != 4242 {
		t.Errorf("live experiment: %d samples, %d stacks, warnings %q", d.ClockTable().Len(), len(d.Stacks), d.Warnings)
	}
}

func TestOpenMissingFiles(t *testing.T) {
	tests := []struct {
		name   string
		remove []string
		warn   []string
		err    string
	}{
		{"log", []string{LogFile}, []string{"log.xml: missing; the target, settings and events of the experiment are unknown"}, ""},
		{"map", []string{MapFile}, []string{"map.xml: missing; no load objects are known, so addresses cannot be named"}, ""},
		{"overview", []string{OverviewFile}, []string{"overview: missing; the experiment has no overview data"}, ""},
		{"log and overview", []string{LogFile, OverviewFile}, []string{"log.xml: missing; the target, settings and events of the experiment are unknown"}, ""},
		{"stacks", []string{StacksFile}, nil, "profile.clock: offset 88: sample 1 refers to stack 1, but the stack table has only stacks 0 to 0"},
		{"everything", []string{LogFile, MapFile, ClockFile, StacksFile, OverviewFile}, nil, "not an experiment: it has no log.xml and no data files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := writeExperiment(t)
			for _, name := range tt.remove {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Open(dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Warnings, tt.warn) {
				t.Errorf("warnings %q, want %q", d.Warnings, tt.warn)
			}
			if d.ClockTable().Len() != 20 {
				t.Errorf("%d samples, want 20", d.ClockTable().Len())
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.er")); !os.IsNotExist(err) {
		t.Errorf("missing directory: %v", err)
	}
	dir, _ := writeExperiment(t)
	if _, err := Open(filepath.Join(dir, LogFile)); err == nil || !strings.Contains(err.Error(), "not an experiment directory") {
		t.Errorf("a file: %v", err)
	}
}

func TestOpenCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		change func([]byte) []byte
		off    int64
		msg    string
	}{
		{"clock payload", ClockFile, func(b []byte) []byte { b[fileHeaderSize+blockHeaderSize+100] ^= 0x10; return b }, fileHeaderSize, "block payload checksum mismatch"},
		{"stacks magic", StacksFile, func(b []byte) []byte { b[3] = 'Z'; return b }, 0, `bad magic "ERDZTA\x00\x01"`},
		{"overview header", OverviewFile, func(b []byte) []byte { return b[:7] }, 0, "file header truncated (7 of 24 bytes)"},
		{"log syntax", LogFile, func(b []byte) []byte { return b[:200] }, 200, "line 5: unexpected EOF"},
		{"map syntax", MapFile, func(b []byte) []byte { return append(b[:150], "<<"...) }, 151, "line 4: attribute name without = in element"},
		{"archive", filepath.Join(ArchivesDir, ArchiveName("[kernel]")), func(b []byte) []byte { b[len(b)-1]++; return b }, fileHeaderSize, "block payload checksum mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := writeExperiment(t)
			file := filepath.Join(dir, tt.file)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, tt.change(b), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Open(dir)
			fe := asFormatError(t, err)
			if fe.File != file || fe.Offset != tt.off || !strings.Contains(fe.Msg, tt.msg) {
				t.Errorf("got %q, want %s, offset %d, %q", err, file, tt.off, tt.msg)
			}
			if !strings.Contains(err.Error(), file+": offset ") {
				t.Errorf("message %q does not name the file and offset", err)
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	w, dir := newWriter(b)
	for i := range 1000 {
		w.Stack(Stack{uint64(i), 2, 3})
	}
	const n = 1_000_000
	for i := range n {
		if err := w.Clock(ClockSample{Time: int64(i), Pid: 1, Tid: uint32(i % 8), Period: 1e7, Stack: uint32(1 + i%1000)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fileSize(b, filepath.Join(dir, ClockFile)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Open(dir)
		if err != nil || d.ClockTable().Len() != n {
			b.Fatalf("%v, %d samples", err, d.ClockTable().Len())
		}
	}
}

func TestFounderDir(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		{"/x/test.1.er/_f1.er", "/x/test.1.er"},
		{"/x/test.1.er/_f3_x1.er/", "/x/test.1.er"},
		{"/x/test.1.er/_f1.er/_f1_f2.er", "/x/test.1.er"},
		{"rel.er/_C1.er", "rel.er"},
		{"/x/mpi.er/M_r3.er", "/x/mpi.er"},
		{"/x/test.1.er", ""},
		{"/x/test.1.er/f1.er", ""},   // no leading _
		{"/x/dir/_f1.er", ""},        // the parent is no experiment
		{"/x/test.1.er/_f1.erx", ""}, // not .er
		{"_f1.er", ""},
	} {
		if got := FounderDir(c.dir); got != c.want {
			t.Errorf("FounderDir(%q) = %q, want %q", c.dir, got, c.want)
		}
	}
}

// TestOpenSubexperimentArchives: a subexperiment reads its own archives, then its founder's.
func TestOpenSubexperimentArchives(t *testing.T) {
	founder, _ := writeExperiment(t)
	sub := filepath.Join(founder, "_f1.er")
	w, err := Create(sub, testLog())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	own := &Archive{Path: "[kernel]", Kind: "kernel", BuildID: "sub"}
	if err := WriteArchive(sub, own); err != nil {
		t.Fatal(err)
	}
	d, err := Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Archives["[kernel]"]; a == nil || a.BuildID != "sub" {
		t.Errorf("[kernel] archive %+v, want the subexperiment's own (build id sub)", a)
	}
	if a, want := d.Archives[testArchive().Path], testArchive(); a == nil || a.BuildID != want.BuildID || len(a.Symbols) != len(want.Symbols) {
		t.Errorf("libc archive not read from the founder: %v", a)
	}
	if len(d.Warnings) != 0 {
		t.Errorf("warnings %q, want none", d.Warnings)
	}
	// A founder does not read its subexperiments' archives.
	fd, err := Open(founder)
	if err != nil {
		t.Fatal(err)
	}
	if a := fd.Archives["[kernel]"]; a == nil || a.BuildID != "" {
		t.Errorf("founder's [kernel] archive %+v, want its own", a)
	}
}

// specialFile replaces file with a file of another kind: "fifo" (a FIFO that a goroutine feeds
// the file's content, so that a reader that opens it for reading gets the content instead of
// hanging), "null" or "zero" (a symbolic link to /dev/null or /dev/zero).
func specialFile(t *testing.T, file, kind string) {
	t.Helper()
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	switch kind {
	case "null", "zero":
		if err := os.Symlink("/dev/"+kind, file); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := syscall.Mkfifo(file, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(file, os.O_WRONLY, 0) // blocks until a reader opens it
		if err != nil {
			return
		}
		f.Write(content)
		f.Close()
	}()
	t.Cleanup(func() {
		// Open the FIFO for reading, so that the feeding goroutine's open returns if nobody did.
		if r, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			r.Close()
		}
	})
}

// Every file of an experiment that is a FIFO or a device, not a regular file, is an error that
// names it: before, a FIFO hung Open (or, fed by a writer, was read as the file), /dev/null was an
// empty data file, and /dev/zero grew the reader's memory without end.
func TestOpenRefusesSpecialFiles(t *testing.T) {
	for _, name := range []string{LogFile, MapFile, NotesFile, ClockFile, StacksFile, OverviewFile,
		filepath.Join(ArchivesDir, ArchiveName("[kernel]")), HeapTraceFile, TraceStacksFile} {
		for _, kind := range []string{"fifo", "null", "zero"} {
			t.Run(strings.ReplaceAll(name, "/", "_")+"/"+kind, func(t *testing.T) {
				dir, _ := writeExperiment(t)
				for n, b := range map[string][]byte{
					HeapTraceFile:   traceFile(1, 42, 0, base, 4096, [][]byte{rec(recHeap, uint8(HeapFree), 8, base+300, uint64(0x1000))}),
					TraceStacksFile: traceFile(5, 42, 0, base, 4096, [][]byte{stackRec(1, 0x400100)}),
				} {
					if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				file := filepath.Join(dir, name)
				specialFile(t, file, kind)
				_, err := Open(dir)
				if err == nil {
					t.Fatalf("Open read the experiment with %s as %s; want an error naming it", kind, name)
				}
				if want := file + ": not a regular file but a "; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to say %q", err, want)
				}
			})
		}
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

// ReadLog reads the log alone, as Open reads it.
func TestReadLog(t *testing.T) {
	w, dir := newWriter(t)
	w.UpdateLog(func(l *Log) { l.Lineage, l.Command = "_f2_x1", []string{"/usr/bin/cc1", "-O2"} })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Lineage != "_f2_x1" || len(l.Command) != 2 || l.Command[0] != "/usr/bin/cc1" || !reflect.DeepEqual(l, d.Log) {
		t.Errorf("ReadLog = %+v, want Open's %+v", l, d.Log)
	}
	if _, err := ReadLog(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLog of a directory without log.xml: %v, want not exist", err)
	}
}

// TestArchivesShared: experiments that read the same archive file (subexperiments, from their
// founder's archives/) share one copy of it; a file rewritten since is read again; an archive no
// experiment holds any longer is dropped.
func TestArchivesShared(t *testing.T) {
	founder, _ := writeExperiment(t)
	var subs []*Data
	for _, name := range []string{"_f1.er", "_f2.er"} {
		w, err := Create(filepath.Join(founder, name), testLog())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		d, err := Open(filepath.Join(founder, name))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, d)
	}
	path := testArchive().Path
	a1, a2 := subs[0].Archives[path], subs[1].Archives[path]
	if a1 == nil || a1 != a2 {
		t.Fatalf("the two subexperiments hold %p and %p for the founder's archive of %s, want one shared copy", a1, a2, path)
	}
	// Rewritten (another build id): read again.
	changed := testArchive()
	changed.BuildID = "0123456789abcdef"
	if err := WriteArchive(founder, changed); err != nil {
		t.Fatal(err)
	}
	d, err := Open(filepath.Join(founder, "_f1.er"))
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Archives[path]; a == nil || a == a1 || a.BuildID != changed.BuildID {
		t.Errorf("after the file was rewritten: %+v, want the new content", a)
	}
	// Held by no experiment: dropped once collected, and read again.
	held := weak.Make(d.Archives[path])
	runtime.KeepAlive(subs)
	subs, a1, a2, d = nil, nil, nil, nil
	runtime.GC()
	if held.Value() != nil {
		t.Error("an archive no experiment holds was kept")
	}
	if d, err := Open(filepath.Join(founder, "_f2.er")); err != nil || d.Archives[path] == nil || d.Archives[path].BuildID != changed.BuildID {
		t.Errorf("read again: %v", err)
	}
}
