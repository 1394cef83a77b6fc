package perfimport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"er/internal/erprint"
	"er/internal/perfabi"
	"er/internal/perfdata"
)

// importAndPrint imports the perf.data file at data into a new experiment and runs er print on it:
// an import either fails, leaving nothing, or writes an experiment that er print reads.
func importAndPrint(t *testing.T, data string) {
	dir := filepath.Join(t.TempDir(), "f.er")
	r, err := Import(data, dir)
	if err != nil {
		if _, serr := os.Stat(dir); !errors.Is(serr, fs.ErrNotExist) {
			t.Fatalf("a failed import (%v) left %s (%v)", err, dir, serr)
		}
		return
	}
	var out, errs bytes.Buffer
	code := erprint.Main([]string{"-header", "-functions", "-calltree", dir}, nil, &out, &errs)
	refused := code != 0
	for _, l := range strings.Split(errs.String(), "\n") {
		refused = refused || strings.HasPrefix(l, "er print: ") && !strings.HasPrefix(l, "er print: warning: ")
	}
	if refused {
		t.Fatalf("er import wrote %s (%+v), which er print refuses: exit %d\n%s", dir, r, code, errs.String())
	}
}

// FuzzImport: every perf.data file that er import accepts gives an experiment that er print reads
// (issue 27, item 11); every other is an error that leaves nothing behind.
func FuzzImport(f *testing.F) {
	// No separate debug files: reading libc's (the fixtures' libc is this machine's) takes most of
	// an import and print's time, and what er import writes does not depend on them.
	f.Setenv("ER_DEBUG_DIR", f.TempDir())
	for _, name := range []string{"fp.data", "pipe.data", "dwarf.data", "zstd.data", "zstdpipe.data"} {
		b, err := os.ReadFile(fixtures + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, c := range fuzzSeeds() {
		f.Add(c.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := perfdata.NewFile(bytes.NewReader(b), int64(len(b)), "fuzz.data"); err != nil {
			return // the reader's errors are perfdata's FuzzRead's
		}
		p := filepath.Join(t.TempDir(), "fuzz.data")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		importAndPrint(t, p)
	})
}

// fuzzSeeds are crafted streams: processes that fork and exec, mappings and samples.
func fuzzSeeds() []*craft {
	c := newCraft()
	c.comm(craftPid, "main")
	c.mmap(craftPid, 0x400000, 0x1000, 0, "/bin/true")
	c.sample(craftPid, 0x400010, 1000)
	fork := func(c *craft, pid, ppid uint32, tm uint64) {
		c.record(perfabi.RecordFork, 0, wordsOf(uint64(pid)|uint64(ppid)<<32, uint64(pid)|uint64(ppid)<<32, tm)...)
	}
	fork(c, craftPid+1, craftPid, 2000)
	c.sample(craftPid+1, 0x400020, 3000)
	exec := binary.LittleEndian.AppendUint32(nil, craftPid+1)
	exec = binary.LittleEndian.AppendUint32(exec, craftPid+1)
	c.record(perfabi.RecordComm, 1<<13, append(exec, "child\x00"...)...)
	c.sample(craftPid+1, 0x400030, 4000)
	c.record(perfabi.RecordExit, 0, wordsOf(uint64(craftPid+1)|uint64(craftPid)<<32, uint64(craftPid+1)|uint64(craftPid)<<32, 5000)...)
	c.record(perfdata.RecordFinishedRound, 0)
	// What issue 27 fixed: load objects that are not files to read, a mapping past the end of the
	// address space, times past 2^62 ns, CLOCK_DATA out of range, a stream cut inside a record.
	h := newCraft()
	h.comm(craftPid, "evil\x1b]0;title\x07")
	for i, p := range []string{"/dev/zero", "/proc/self/environ", "/etc/passwd", "/bin/sh"} {
		h.mmap(craftPid, uint64(0x400000+i*0x100000), 0x1000, 1<<40, p)
		h.sample(craftPid, uint64(0x400010+i*0x100000), uint64(1000+i))
	}
	h.mmap(craftPid, 0x500000, ^uint64(0)-0x1000, 0, "/x\x1b[2J")
	h.record(perfdata.RecordHeaderFeature, 0, wordsOf(perfdata.FeatClockData, 1, 1<<62+1e9, 1000)...)
	h.sample(craftPid, 0x500010, 1<<63)
	cut := &craft{b: bytes.Clone(h.b[:len(h.b)-20])}
	return []*craft{c, h, cut}
}

// TestImportPrintable: the files FuzzImport found whose experiments er print refused (issue 27,
// item 11): a mapping that runs past the end of the address space (map.xml: "start is above end")
// is cut there, with a warning; a CLOCK_DATA feature whose wall-clock time is out of range (log.xml:
// "start time 4611686019427388904 ns") is not used; a time past 2^62 ns (log.xml: "start perfNS -9223372036854775808
// ns", "end time 9223372036854775807 ns") is an error that names the record.
func TestImportPrintable(t *testing.T) {
	t.Setenv("ER_DEBUG_DIR", t.TempDir())
	tests := []struct {
		name  string
		build func(c *craft)
		err   string // the import's error; "" for none
		warn  string // one of its warnings
	}{
		{"past the end", func(c *craft) {
			c.mmap(craftPid, 0x400000, ^uint64(0)-0x1000, 0, "/nonexistent/a.so")
			c.sample(craftPid, 0x400010, 1000)
		}, "", "MMAP records that map past the end of the user address space (0xffff800000000000): 1, the first at offset 0xb0; their mappings are cut there (the file is damaged)"},
		{"clock data", func(c *craft) { // the wall-clock time of the start: the file's modification time less the run's
			c.record(perfdata.RecordHeaderFeature, 0, wordsOf(perfdata.FeatClockData, 1, 1<<62+1e9, 1000)...)
			c.sample(craftPid, 0x400010, 2000)
		}, "", ""},
		{"late start", func(c *craft) {
			c.sample(craftPid, 0x400010, 1<<63)
		}, "offset 0xb0: SAMPLE record: its time 9223372036854775808 ns is past 2^62 ns", ""},
		{"long span", func(c *craft) {
			c.sample(craftPid, 0x400010, 1)
			c.sample(craftPid, 0x400010, 1<<63-1)
		}, "offset 0xd8: SAMPLE record: its time 9223372036854775807 ns is past 2^62 ns", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCraft()
			c.comm(craftPid, "main")
			tc.build(c)
			data := c.write(t)
			r, err := Import(data, filepath.Join(t.TempDir(), "x.er"))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), data+": "+tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Error(err)
			case tc.err == "" && tc.warn != "" && !slices.Contains(r.Warnings, tc.warn):
				t.Errorf("warnings %q, want %q", r.Warnings, tc.warn)
			}
			importAndPrint(t, data)
		})
	}
}
