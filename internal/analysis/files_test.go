package analysis

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"er/internal/archive"
	"er/internal/compact"
	"er/internal/debuginfo"
	"er/internal/experiment"
)

// buildC compiles testdata/src with gcc and the flags into a temporary directory.
func buildC(t *testing.T, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("gcc not installed: %v", err)
	}
	exe := filepath.Join(t.TempDir(), strings.TrimSuffix(src, ".c"))
	args := append(append([]string{}, flags...), "-o", exe, filepath.Join("testdata", src))
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return exe
}

func TestSameFile(t *testing.T) {
	exe := buildC(t, "inline.c", "-O1", "-g", "-Wl,--build-id=0x0123456789abcdef")
	a, err := archive.Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	if a.BuildID != "0123456789abcdef" {
		t.Fatalf("build id %q", a.BuildID)
	}
	if err := SameFile(exe, a); err != nil {
		t.Errorf("same file: %v", err)
	}
	other := *a
	other.BuildID = "ffff"
	if err := SameFile(exe, &other); err == nil || !strings.Contains(err.Error(), "has changed since the experiment (build id 0123456789abcdef, was ffff)") {
		t.Errorf("another build id: %v", err)
	}
	// Without a build id: size and modification time.
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("not elf"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(plain)
	na := &experiment.Archive{Path: plain, Size: st.Size(), Mtime: st.ModTime().UnixNano()}
	if err := SameFile(plain, na); err != nil {
		t.Errorf("same size and time: %v", err)
	}
	if err := os.Chtimes(plain, time.Now(), st.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := SameFile(plain, na); err == nil || !strings.Contains(err.Error(), "has changed") {
		t.Errorf("touched file: %v", err)
	}
	if err := SameFile(filepath.Join(t.TempDir(), "gone"), na); err == nil || !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	if err := SameFile(plain, nil); err == nil {
		t.Error("no archive accepted")
	}
	if _, err := OpenObjectFile(exe, &other); err == nil {
		t.Error("OpenObjectFile accepted another build")
	}
}

func TestOpenObjectFile(t *testing.T) {
	exe := buildC(t, "inline.c", "-O1", "-g")
	a, err := archive.Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	of, err := OpenObjectFile(exe, a)
	if err != nil {
		t.Fatal(err)
	}
	if of.Debug == nil || of.Code == nil || of.Path != exe {
		t.Fatalf("%+v", of)
	}
	sym := symbolNamed(t, a, "caller1")
	code, err := of.Code(sym.Addr, sym.Addr+sym.Size)
	if err != nil || len(code) != int(sym.Size) {
		t.Fatalf("code of caller1: %d bytes, %v", len(code), err)
	}
	if in, err := x86asm.Decode(code, 64); err != nil || in.Len == 0 {
		t.Errorf("first instruction of caller1: %v %v", in, err)
	}
	if _, err := of.Code(0x7fffffff0000, 0x7fffffff0010); err == nil {
		t.Error("code outside every segment")
	}
	if _, err := of.Code(10, 5); err == nil {
		t.Error("empty range accepted")
	}
	stripped := buildC(t, "inline.c", "-O1")
	sa, err := archive.Build(stripped)
	if err != nil {
		t.Fatal(err)
	}
	of, err = OpenObjectFile(stripped, sa)
	if err != nil || of.Debug != nil || of.Code == nil {
		t.Errorf("without DWARF: %+v, %v", of, err)
	}
}

func symbolNamed(t *testing.T, a *experiment.Archive, name string) experiment.Symbol {
	t.Helper()
	for _, s := range a.Symbols {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no symbol %s", name)
	return experiment.Symbol{}
}

// TestRealInlinedFunction analyses synthetic samples at real addresses of a program built by gcc:
// hot(), inlined into caller1 and caller2, is a function of its own with its callers, its lines and
// the call instructions of main; the file as rebuilt differently gives no lines, with a warning.
func TestRealInlinedFunction(t *testing.T) {
	exe := buildC(t, "inline.c", "-O1", "-g")
	a, err := archive.Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	info, err := debuginfo.Open(exe)
	if err != nil || !info.HasDWARF {
		t.Fatalf("debug information of %s: %v", exe, err)
	}
	// In caller1 and caller2, an address on hot's line 7 (the loop body).
	lineAddr := func(fn string, line int) uint64 {
		s := symbolNamed(t, a, fn)
		for _, r := range info.Rows(s.Addr, s.Addr+s.Size) {
			if r.Line == line {
				return r.Lo
			}
		}
		t.Fatalf("no line %d in %s", line, fn)
		return 0
	}
	// In main, the return addresses of its calls of caller1 and caller2.
	main := symbolNamed(t, a, "main")
	mainCode, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	off, ok := vaddrToOffset(a, main.Addr)
	if !ok {
		t.Fatal("main is in no segment")
	}
	ret := map[string]uint64{}
	var calls []uint64
	for pc, code := main.Addr, mainCode[off:off+main.Size]; len(code) > 0; {
		in, err := x86asm.Decode(code, 64)
		if err != nil {
			t.Fatalf("decoding main at %#x: %v", pc, err)
		}
		if in.Op == x86asm.CALL {
			if rel, ok := in.Args[0].(x86asm.Rel); ok {
				target := pc + uint64(in.Len) + uint64(int64(rel))
				for _, fn := range []string{"caller1", "caller2"} {
					if symbolNamed(t, a, fn).Addr == target {
						ret[fn] = pc + uint64(in.Len)
						calls = append(calls, pc)
					}
				}
			}
		}
		pc += uint64(in.Len)
		code = code[in.Len:]
	}
	if len(ret) != 2 {
		t.Fatalf("calls in main: %v", ret)
	}
	const base = 0x555555554000
	d := &experiment.Data{
		Dir:      "real.1.er",
		Log:      experiment.Log{Pid: 7},
		Mappings: []experiment.Mapping{{Pid: 7, Start: base, End: base + 0x10000, Path: exe, UnloadTime: -1}},
		Archives: map[string]*experiment.Archive{exe: a},
		Stacks: []experiment.Stack{nil,
			{base + lineAddr("caller1", 7), base + ret["caller1"]},
			{base + lineAddr("caller2", 7), base + ret["caller2"]},
			{base + symbolNamed(t, a, "caller2").Addr, base + ret["caller2"]},
		},
	}
	for i, period := range []int64{20, 30, 5} {
		d.AddClock([]experiment.ClockSample{{Pid: 7, Tid: 7, Mode: experiment.ModeUser, Period: period, Stack: uint32(i + 1)}})
	}
	p, err := Analyze([]*experiment.Data{d}, Options{OpenFile: OpenObjectFile})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings %q", p.Warnings)
	}
	hot := fn(t, p, "hot")
	if p.Functions[hot].Kind != FuncInlined || p.Exclusive(hot)[0] != 50 {
		t.Errorf("hot: %+v exclusive %v", p.Functions[hot], p.Exclusive(hot))
	}
	cc, _ := p.CallersCallees([]int{hot})
	if got := attrString(p, cc.Callers); got != "caller1=20 caller2=30" {
		t.Errorf("callers of hot: %s", got)
	}
	checkIdentities(t, p)
	checkLinesPCs(t, p)
	src, _ := filepath.Abs(filepath.Join("testdata", "inline.c"))
	if e, i, ok := p.Lines().FileLine(src, 7); !ok || e[0] != 50 || i[0] != 50 {
		t.Errorf("%s:7: %v %v %v (files %q)", src, e, i, ok, p.Lines().Files())
	}
	if _, i, ok := p.Lines().FileLine(src, 16); !ok || i[0] != 20 {
		t.Errorf("main's call of caller1 (line 16): %v", i)
	}
	pt := p.PCs()
	m := fn(t, p, "main")
	for k, incl := range []int64{20, 35} {
		if i := pt.Find(p.Functions[m].Object, m, calls[k]); i < 0 || pt.Inclusive(i)[0] != incl {
			t.Errorf("call instruction %#x: %d", calls[k], i)
		}
	}
	if p.ObjectFile(p.Functions[m].Object) == nil {
		t.Error("no object file")
	}

	// The program rebuilt: no lines or inlined functions, and a warning.
	a2 := *a
	a2.BuildID = "00" + a.BuildID
	d.Archives[exe] = &a2
	p, err = Analyze([]*experiment.Data{d}, Options{OpenFile: OpenObjectFile})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.FindFunctions("hot")) != 0 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "has changed since the experiment") {
		t.Errorf("rebuilt: hot %v, warnings %q", p.FindFunctions("hot"), p.Warnings)
	}
	for i, l := range p.Lines().Lines {
		if l.File != "" {
			t.Errorf("rebuilt: line %+v %v", l, p.Lines().Exclusive(i))
		}
	}
	if p.ObjectFile(p.Functions[fn(t, p, "main")].Object) != nil {
		t.Error("rebuilt: object file")
	}
}

func vaddrToOffset(a *experiment.Archive, vaddr uint64) (uint64, bool) {
	for _, s := range a.Segments {
		if vaddr >= s.Vaddr && vaddr < s.Vaddr+s.Filesz {
			return s.Offset + vaddr - s.Vaddr, true
		}
	}
	return 0, false
}

// TestWithArchivedCopies: a load object's file that is missing or changed is read from the copy in
// the experiment's archives (here a subexperiment's, in its founder), with a note saying so.
func TestWithArchivedCopies(t *testing.T) {
	exe := buildC(t, "inline.c", "-O1", "-g", "-Wl,--build-id=0x0123456789abcdef")
	a, err := archive.Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	founder := filepath.Join(t.TempDir(), "test.1.er")
	ix, err := archive.ReadIndex(founder)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := ix.Add(archive.KindObject, exe, a.BuildID, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Write(); err != nil {
		t.Fatal(err)
	}
	open := WithArchivedCopies(OpenObjectFile, []string{filepath.Join(founder, "_f1.er")})
	of, err := open(exe, a)
	if err != nil || of.Path != exe || of.Note != "" {
		t.Fatalf("the original: %+v, %v; want it, with no note", of, err)
	}
	if err := os.Rename(exe, exe+".old"); err != nil {
		t.Fatal(err)
	}
	of, err = open(exe, a)
	if err != nil || of.Path != ix.FilePath(c) || of.Debug == nil || of.Code == nil {
		t.Fatalf("the original missing: %+v, %v; want the copy %s with debug information and code", of, err, ix.FilePath(c))
	}
	if want := "using the archived copy of " + exe + ": the original is missing"; of.Note != want {
		t.Errorf("note %q, want %q", of.Note, want)
	}
	sym := symbolNamed(t, a, "caller1")
	if code, err := of.Code(sym.Addr, sym.Addr+sym.Size); err != nil || len(code) != int(sym.Size) {
		t.Errorf("code of caller1 from the copy: %d bytes, %v", len(code), err)
	}
	if err := os.WriteFile(exe, []byte("rebuilt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if of, err = open(exe, a); err != nil || !strings.HasSuffix(of.Note, ": the original changed") {
		t.Errorf("the original changed: %+v, %v; want the copy, noted", of, err)
	}
	// Another build, of which there is no copy: the original's error stands.
	other := *a
	other.BuildID = "ffff"
	if _, err := open(exe, &other); err == nil || !strings.Contains(err.Error(), "not an ELF file") {
		t.Errorf("no copy: %v, want the original's error", err)
	}
}

// TestOpenCompact: a load object's compact archive answers for the code and the lines it holds,
// as the object did, and WithArchivedCopies opens it where the original is missing and there is no
// whole copy; a compact archive of another file is refused.
func TestOpenCompact(t *testing.T) {
	exe := buildC(t, "inline.c", "-O1", "-g", "-Wl,--build-id=0x0123456789abcdef")
	a, err := archive.Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := OpenObjectFile(exe, a)
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolNamed(t, a, "caller1")
	lo, hi := sym.Addr, sym.Addr+sym.Size
	info := orig.Debug.(*debuginfo.Info)
	dbg, err := info.Extract([][2]uint64{{lo, hi}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	data, err := compact.Encode(&compact.Object{Path: exe, BuildID: a.BuildID, Size: a.Size, Mtime: a.Mtime,
		Chunks: compact.Chunks([][2]uint64{{lo, hi}}, a.Segments, orig.Code), Debug: dbg})
	if err != nil {
		t.Fatal(err)
	}
	founder := filepath.Join(t.TempDir(), "test.1.er")
	ix, _ := archive.ReadIndex(founder)
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := ix.AddCompact(exe, a.BuildID, a.Size, a.Mtime, fi, data, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Write(); err != nil {
		t.Fatal(err)
	}
	want, err := orig.Code(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(exe, exe+".old"); err != nil {
		t.Fatal(err)
	}
	of, err := WithArchivedCopies(OpenObjectFile, []string{founder})(exe, a)
	if err != nil || of.Path != ix.FilePath(c) || of.Debug == nil {
		t.Fatalf("the original missing: %+v, %v; want the compact archive %s", of, err, ix.FilePath(c))
	}
	if want := "using the archived copy of " + exe + ": the original is missing"; of.Note != want {
		t.Errorf("note %q, want %q", of.Note, want)
	}
	if got, err := of.Code(lo, hi); err != nil || !bytes.Equal(got, want) {
		t.Errorf("code of caller1: %d bytes, %v; want the original's %d", len(got), err, len(want))
	}
	if _, err := of.Code(hi, hi+16); err == nil {
		t.Error("code after caller1, which the compact archive does not hold: no error")
	}
	for pc := lo; pc < hi; pc++ {
		wf, wok := orig.Debug.Frames(pc)
		gf, gok := of.Debug.Frames(pc)
		if wok != gok || !reflect.DeepEqual(wf, gf) {
			t.Fatalf("Frames(%#x) = %v %v, want %v %v", pc, gf, gok, wf, wok)
		}
	}
	other := *a
	other.BuildID = "ffff"
	if _, err := OpenCompact(ix.FilePath(c), &other); err == nil || !strings.Contains(err.Error(), "another file") {
		t.Errorf("another build id: %v, want the compact archive refused", err)
	}
}

// TestSegmentReaderFIFO: code is read from a regular file only; a named pipe where the object was
// is refused at once with an error naming it, instead of hanging the open.
func TestSegmentReaderFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "libfifo.so")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	read := segmentReader(fifo, []experiment.Segment{{Vaddr: 0, Offset: 0, Filesz: 0x1000, Memsz: 0x1000}})
	b, err := read(0x10, 0x20)
	if want := fifo + ": not a regular file but a named pipe (FIFO)"; b != nil || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("read = %x, %v; want an error starting %q", b, err, want)
	}
}
