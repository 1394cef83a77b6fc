package objfile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildC compiles testdata/src with the given compiler and flags into a
// temporary directory and returns the binary's path. It skips the test when
// the compiler is missing.
func buildC(t *testing.T, compiler, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("%s not installed: %v", compiler, err)
	}
	out := filepath.Join(t.TempDir(), "prog")
	args := append(append([]string{}, flags...), "-o", out, filepath.Join("testdata", src))
	if b, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
	return out
}

func openT(t *testing.T, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe := buildC(t, "gcc", "prog.c", "-O2")
	full, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want string
	}{
		{write("text", []byte("#!/bin/sh\necho hi\n")), "not an ELF file (it does not start with ELF's magic number; what it holds is not shown)"},
		{write("empty", nil), "file too short (0 bytes) to be ELF"},
		{write("magic", full[:4]), "truncated ELF file"},
		{write("header", full[:100]), "truncated ELF file"},
		{write("class", append([]byte("\x7fELF\x09"), make([]byte, 64)...)), "malformed ELF: unknown ELF class"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
	}
	for _, c := range cases {
		f, err := Open(c.path)
		if err == nil {
			f.Close()
			t.Errorf("Open(%s) succeeded, want error containing %q", c.path, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Open(%s) = %v, want the path and %q", c.path, err, c.want)
		}
		// An error says nothing of what a file that is not ELF holds (issue 27, item 22: it quoted
		// its first bytes, those of /etc/shadow where a perf.data file named that).
		if msg := strings.TrimPrefix(err.Error(), "objfile: "+c.path); strings.Contains(msg, "23 21") || strings.Contains(msg, "#!") {
			t.Errorf("Open(%s) = %v: the error shows the file's bytes", c.path, err)
		}
	}
}

func TestBuildIDAndSegments(t *testing.T) {
	exe := buildC(t, "gcc", "prog.c", "-O2", "-Wl,--build-id=0x0123456789abcdef00")
	f := openT(t, exe)
	if got, want := f.BuildID(), "0123456789abcdef00"; got != want {
		t.Errorf("BuildID = %q, want %q", got, want)
	}
	// main's file offset, from the .text section header, must lie in a
	// segment mapping it to main's address.
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	main := symtabAddr(t, ef, "main")
	off := main - text.Addr + text.Offset
	found := false
	for _, s := range f.Segments() {
		if off >= s.Offset && off < s.Offset+s.Filesz {
			found = true
			if got := s.Vaddr + off - s.Offset; got != main {
				t.Errorf("segment %+v maps main's offset %#x to %#x, want %#x", s, off, got, main)
			}
		}
	}
	if !found {
		t.Errorf("no segment of %+v covers main's file offset %#x", f.Segments(), off)
	}

	none := openT(t, buildC(t, "gcc", "prog.c", "-O2", "-Wl,--build-id=none"))
	if got := none.BuildID(); got != "" {
		t.Errorf("BuildID without a build id = %q, want empty", got)
	}
}

func TestBuildIDFromNotes(t *testing.T) {
	note := func(name string, typ uint32, desc []byte) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, []uint32{uint32(len(name) + 1), uint32(len(desc)), typ})
		b.WriteString(name + "\x00")
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		b.Write(desc)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		return b.Bytes()
	}
	data := append(note("Linux", 3, []byte{9, 9}), note("GNU", 1, []byte{1, 2, 3})...)
	data = append(data, note("GNU", 3, []byte{0xde, 0xad, 0xbe, 0xef, 0x01})...)
	if got := BuildIDFromNotes(data, binary.LittleEndian, 4); got != "deadbeef01" {
		t.Errorf("BuildIDFromNotes = %q, want deadbeef01", got)
	}
	if got := BuildIDFromNotes(data[:len(data)-4], binary.LittleEndian, 4); got != "" {
		t.Errorf("BuildIDFromNotes on a truncated note = %q, want empty", got)
	}
}

// symtabAddr is the value of the named symbol in ef's .symtab.
func symtabAddr(t *testing.T, ef *elf.File, name string) uint64 {
	t.Helper()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no symbol %s in .symtab", name)
	return 0
}

func FuzzNewFile(f *testing.F) {
	if b, err := os.ReadFile("/bin/true"); err == nil {
		f.Add(b[:min(len(b), 8192)])
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "mini.elf")); err == nil {
		f.Add(b) // with a .gnu_debugdata
	}
	f.Add([]byte("\x7fELF\x02\x01\x01\x00"))
	f.Add([]byte("not elf"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := NewFile("fuzz", bytes.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		ef.BuildID()
		ef.Segments()
		if _, err := ef.Symbols(); err != nil && !strings.Contains(err.Error(), "fuzz") {
			t.Errorf("error %q does not name the file", err)
		}
		ef.DebugLink()
		mf, err := ef.MiniDebugInfo()
		if err != nil && !strings.Contains(err.Error(), "fuzz") {
			t.Errorf("error %q does not name the file", err)
		}
		if mf != nil {
			mf.Symbols()
		}
	})
}

func TestFDERanges(t *testing.T) {
	// Every defined function of a gcc-built program starts a call frame entry of its size.
	f := openT(t, buildC(t, "gcc", "prog.c", "-O2"))
	rs, err := f.FDERanges()
	if err != nil {
		t.Fatal(err)
	}
	starts := map[uint64]uint64{}
	for _, r := range rs {
		starts[r[0]] = r[1] - r[0]
	}
	syms, err := f.elf.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Size == 0 {
			continue
		}
		n++
		if size, ok := starts[s.Value]; !ok || size != s.Size {
			t.Errorf("%s at %#x (%d bytes): call frame entry of %d bytes (found %v)", s.Name, s.Value, s.Size, size, ok)
		}
	}
	if n < 2 {
		t.Errorf("only %d sized functions in the program", n)
	}
}
