package debuginfo

import (
	"bytes"
	"debug/elf"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// variant is one way to build testdata/inline.c.
type variant struct {
	name    string
	flags   []string
	version int                            // DWARF version of the units
	post    func(t *testing.T, exe string) // after building; may skip
	check   func(t *testing.T, exe string, ef *elf.File)
}

var variants = []variant{
	{name: "dwarf5", flags: []string{"-O2", "-g"}, version: 5},
	{name: "dwarf4", flags: []string{"-O2", "-gdwarf-4"}, version: 4},
	{name: "zlib", flags: []string{"-O2", "-g", "-gz=zlib"}, version: 5, check: compressedSection(elf.COMPRESS_ZLIB)},
	{name: "zlib-gnu", flags: []string{"-O2", "-gdwarf-4", "-gz=zlib-gnu"}, version: 4, check: func(t *testing.T, _ string, ef *elf.File) {
		if ef.Section(".zdebug_info") == nil {
			t.Fatal("no .zdebug_info section")
		}
	}},
	{name: "zstd", flags: []string{"-O2", "-g"}, version: 5, post: func(t *testing.T, exe string) {
		if b, err := exec.Command("objcopy", "--compress-debug-sections=zstd", exe).CombinedOutput(); err != nil {
			t.Skipf("objcopy cannot compress with zstd: %v: %s", err, b)
		}
	}, check: compressedSection(elf.COMPRESS_ZSTD)},
}

// compressedSection checks that .debug_info of exe is SHF_COMPRESSED with type ct.
func compressedSection(ct elf.CompressionType) func(*testing.T, string, *elf.File) {
	return func(t *testing.T, exe string, ef *elf.File) {
		t.Helper()
		s := ef.Section(".debug_info")
		if s == nil || s.Flags&elf.SHF_COMPRESSED == 0 {
			t.Fatal(".debug_info is not SHF_COMPRESSED")
		}
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		// The first word of the Elf64_Chdr is the compression type.
		if got := elf.CompressionType(ef.ByteOrder.Uint32(b[s.Offset:])); got != ct {
			t.Fatalf("compression type %v, want %v", got, ct)
		}
	}
}

// inlineExe builds testdata/inline.c as variant v.
func inlineExe(t *testing.T, v variant) string {
	t.Helper()
	exe := build(t, "", "inline", "gcc", "inline.c", v.flags...)
	if v.post != nil {
		v.post(t, exe)
	}
	if v.check != nil {
		ef, err := elf.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		defer ef.Close()
		v.check(t, exe, ef)
	}
	return exe
}

func TestInlineFrames(t *testing.T) {
	marks := markers(t, "inline.c")
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			exe := inlineExe(t, v)
			in := open(t, exe)
			if !in.HasDWARF || in.Via != "embedded" || in.Source != exe {
				t.Fatalf("HasDWARF %v, Via %q, Source %q (%s)", in.HasDWARF, in.Via, in.Source, in.Note)
			}
			checkInline(t, in, exe, marks)
			in.mu.Lock()
			for _, u := range in.units {
				if strings.HasSuffix(u.name, "inline.c") && u.version != v.version {
					t.Errorf("unit %s has DWARF %d, want %d", u.name, u.version, v.version)
				}
			}
			in.mu.Unlock()
			if err := in.Err(); err != nil {
				t.Errorf("Err: %v", err)
			}
		})
	}
}

// checkInline checks the frames of the functions of inline.c in in, whose
// symbols are those of exe.
func checkInline(t *testing.T, in *Info, exe string, marks map[string]int) {
	t.Helper()
	src, _ := filepath.Abs("testdata/inline.c")
	inScale := func(f Frame) bool {
		return f.Func == "scale" && f.Inlined && f.File == src && f.Line >= marks["scale_body"] && f.Line <= marks["scale_return"]
	}
	// Each caller holds scale inlined, with the caller's call line as the
	// second frame.
	for _, c := range []struct {
		fn    string
		chain []string // the outer frames: function and mark of the line
	}{
		{"caller_a", []string{"caller_a", "call_a"}},
		{"caller_b", []string{"caller_b", "call_b"}},
		{"caller_c", []string{"twice_scaled", "twice_call", "caller_c", "call_c"}},
	} {
		s := sym(t, exe, c.fn)
		found := false
		for pc := s.Value; pc < s.Value+s.Size; pc++ {
			fr, ok := in.Frames(pc)
			if !ok || len(fr) != 1+len(c.chain)/2 || !inScale(fr[0]) {
				continue
			}
			good := true
			for i := 0; i < len(c.chain); i += 2 {
				f := fr[1+i/2]
				outer := i+2 == len(c.chain)
				line := marks[c.chain[i+1]]
				if c.chain[i] == "twice_scaled" {
					// Either call of scale in twice_scaled.
					if f.Line == marks["twice_call2"] {
						line = f.Line
					}
				}
				if f.Func != c.chain[i] || f.File != src || f.Line != line || f.Inlined == outer {
					good = false
				}
				if outer && f.Entry != s.Value {
					t.Errorf("%s: entry %#x, want %#x", c.fn, f.Entry, s.Value)
				}
			}
			if good {
				found = true
				break
			}
		}
		if !found {
			for pc := s.Value; pc < s.Value+s.Size; pc++ {
				fr, _ := in.Frames(pc)
				t.Logf("%#x: %+v", pc, fr)
			}
			t.Errorf("%s: no address with scale inlined at %v", c.fn, c.chain)
		}
	}
	// A plain static function: one frame, its range from DWARF matches the symbol.
	h := sym(t, exe, "helper")
	name, lo, hi, ok := in.FuncRange(h.Value + 1)
	if !ok || name != "helper" || lo != h.Value || hi != h.Value+h.Size {
		t.Errorf("FuncRange(helper+1) = %q [%#x,%#x) %v, want helper [%#x,%#x)", name, lo, hi, ok, h.Value, h.Value+h.Size)
	}
	fr, ok := in.Frames(h.Value)
	if !ok || len(fr) != 1 || fr[0].Func != "helper" || fr[0].Inlined || fr[0].Entry != h.Value || fr[0].File != src {
		t.Errorf("Frames(helper) = %+v %v", fr, ok)
	}
	helperLine := false
	for _, r := range in.Rows(h.Value, h.Value+h.Size) {
		helperLine = helperLine || r.Line == marks["helper_body"]
	}
	if !helperLine {
		t.Errorf("no row of helper at line %d: %+v", marks["helper_body"], in.Rows(h.Value, h.Value+h.Size))
	}
	// Line agrees with Frames, and no address outside code has a line.
	for _, fn := range []string{"caller_a", "caller_b", "caller_c", "helper", "main"} {
		s := sym(t, exe, fn)
		for pc := s.Value; pc < s.Value+s.Size; pc++ {
			fr, ok := in.Frames(pc)
			file, line, ok2 := in.Line(pc)
			if !ok || !ok2 || file != fr[0].File || line != fr[0].Line {
				t.Fatalf("%s %#x: Line = %s:%d %v, Frames = %+v %v", fn, pc, file, line, ok2, fr, ok)
			}
			if outer := fr[len(fr)-1]; outer.Func != fn || outer.Entry != s.Value {
				t.Errorf("%s %#x: outermost frame %+v", fn, pc, outer)
			}
		}
	}
	if _, ok := in.Frames(0); ok {
		t.Error("Frames(0) has line information")
	}
	if _, _, ok := in.Line(^uint64(0)); ok {
		t.Error("Line(^0) has line information")
	}
}

func TestRows(t *testing.T) {
	exe := inlineExe(t, variants[0])
	in := open(t, exe)
	s := sym(t, exe, "caller_a")
	lo, hi := s.Value, s.Value+s.Size
	rows := in.Rows(lo, hi)
	if len(rows) < 3 {
		t.Fatalf("Rows: %+v", rows)
	}
	if rows[0].Lo != lo || rows[len(rows)-1].Hi != hi {
		t.Errorf("rows span [%#x,%#x), want [%#x,%#x)", rows[0].Lo, rows[len(rows)-1].Hi, lo, hi)
	}
	stmt := false
	for i, r := range rows {
		if r.Lo >= r.Hi || i > 0 && r.Lo != rows[i-1].Hi {
			t.Errorf("row %d %+v does not follow %+v", i, r, rows[max(i-1, 0)])
		}
		for pc := r.Lo; pc < r.Hi; pc++ {
			if f, l, _ := in.Line(pc); f != r.File || l != r.Line {
				t.Errorf("Line(%#x) = %s:%d, row says %s:%d", pc, f, l, r.File, r.Line)
			}
		}
		stmt = stmt || r.IsStmt
	}
	if !stmt {
		t.Error("no row is a statement")
	}
	// Clipping.
	mid := in.Rows(lo+1, lo+2)
	if len(mid) != 1 || mid[0].Lo != lo+1 || mid[0].Hi != lo+2 {
		t.Errorf("Rows(lo+1, lo+2) = %+v", mid)
	}
	if r := in.Rows(0, 16); len(r) != 0 {
		t.Errorf("Rows(0,16) = %+v", r)
	}
}

// TestAddr2line compares Frames with addr2line -i at every row start of
// the program's functions (a cross-check only).
func TestAddr2line(t *testing.T) {
	for _, v := range variants[:2] {
		t.Run(v.name, func(t *testing.T) {
			exe := inlineExe(t, v)
			in := open(t, exe)
			var pcs []uint64
			for _, fn := range []string{"caller_a", "caller_b", "caller_c", "helper", "main"} {
				s := sym(t, exe, fn)
				for _, r := range in.Rows(s.Value, s.Value+s.Size) {
					pcs = append(pcs, r.Lo)
					if r.Hi-1 > r.Lo {
						pcs = append(pcs, r.Hi-1)
					}
				}
			}
			want := addr2line(t, exe, pcs)
			for _, pc := range pcs {
				fr, ok := in.Frames(pc)
				w := want[pc]
				if !ok || len(fr) != len(w) {
					t.Errorf("%#x: Frames %+v, addr2line %+v", pc, fr, w)
					continue
				}
				for i := range fr {
					if fr[i].Func != w[i].fn || fr[i].File != filepath.Clean(w[i].file) || fr[i].Line != w[i].line {
						t.Errorf("%#x frame %d: %+v, addr2line %+v", pc, i, fr[i], w[i])
					}
				}
			}
		})
	}
}

func TestCXX(t *testing.T) {
	exe := build(t, "", "tmpl", "g++", "tmpl.cc", "-O2", "-g")
	marks := markers(t, "tmpl.cc")
	src, _ := filepath.Abs("testdata/tmpl.cc")
	in := open(t, exe)
	syms := symbols(t, exe)
	// Template instances: the linkage name, as in the symbol table.
	for _, name := range []string{"_Z5twiceIiET_S0_", "_Z5twiceIdET_S0_"} {
		s, ok := syms[name]
		if !ok {
			t.Fatalf("no symbol %s", name)
		}
		fr, ok := in.Frames(s.Value)
		if !ok || fr[len(fr)-1].Func != name || fr[0].File != src || fr[0].Line != marks["twice_body"] && fr[0].Line != marks["twice_body"]-1 {
			t.Errorf("Frames(%s) = %+v %v", name, fr, ok)
		}
	}
	// The member function of a class template inlined into sum_acc, and the
	// lambda into apply.
	for _, c := range []struct{ caller, inlined, body, call string }{
		{"_Z7sum_accRKSt6vectorIlSaIlEE", "_ZN3AccIlE3addEl", "acc_add", "call_add"},
		// gcc gives the lambda's operator() no linkage name: it is
		// qualified by its scopes.
		{"_Z5applyi", "apply::{lambda}::operator()", "lambda_body", ""},
	} {
		s := syms[c.caller]
		found := false
		for pc := s.Value; pc < s.Value+s.Size && !found; pc++ {
			fr, ok := in.Frames(pc)
			if !ok || len(fr) != 2 || fr[0].Func != c.inlined || fr[0].Line != marks[c.body] || !fr[0].Inlined {
				continue
			}
			found = fr[1].Func == c.caller && !fr[1].Inlined && (c.call == "" || fr[1].Line == marks[c.call])
		}
		if !found {
			t.Errorf("%s: no address with %s inlined", c.caller, c.inlined)
		}
	}
	// main is split into a hot and a cold part (main.cold): one function
	// with two ranges.
	if cold, ok := syms["main.cold"]; ok {
		main := syms["main"]
		f, ok := in.Function(cold.Value)
		if !ok || f.Name != "main" || len(f.Ranges) < 2 || f.Lo != cold.Value || f.Entry != main.Value {
			t.Errorf("Function(main.cold) = %+v %v", f, ok)
		}
		if f.DeclFile != src || f.DeclLine == 0 {
			t.Errorf("main declared at %s:%d", f.DeclFile, f.DeclLine)
		}
	} else {
		t.Log("g++ made no main.cold")
	}
}

func TestFiles(t *testing.T) {
	exe := inlineExe(t, variants[0])
	src, _ := filepath.Abs("testdata/inline.c")
	files := open(t, exe).Files()
	if !slices.Contains(files, src) {
		t.Errorf("Files() = %q, no %s", files, src)
	}
	for _, f := range files {
		if !filepath.IsAbs(f) {
			t.Errorf("Files(): %q is not absolute", f)
		}
	}
}

func TestNoDWARF(t *testing.T) {
	exe := build(t, "", "nodebug", "gcc", "inline.c", "-O2")
	in := open(t, exe, t.TempDir())
	if in.HasDWARF || in.Source != "" || in.Via != "" || !strings.Contains(in.Note, "no DWARF") {
		t.Errorf("HasDWARF %v, Source %q, Via %q, Note %q", in.HasDWARF, in.Source, in.Via, in.Note)
	}
	s := sym(t, exe, "caller_a")
	if fr, ok := in.Frames(s.Value); ok {
		t.Errorf("Frames without DWARF: %+v", fr)
	}
	if _, _, _, ok := in.FuncRange(s.Value); ok {
		t.Error("FuncRange without DWARF")
	}
	if r := in.Rows(s.Value, s.Value+s.Size); r != nil {
		t.Errorf("Rows without DWARF: %+v", r)
	}
	if f := in.Files(); f != nil {
		t.Errorf("Files without DWARF: %q", f)
	}
	if err := in.Err(); err != nil {
		t.Errorf("Err: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		notELF:                       "script: not an ELF file",
		filepath.Join(dir, "absent"): "no such file",
	} {
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) error %v, want %q", path, err, want)
		}
	}
	// Malformed DWARF: Info without lines, and Err says what.
	exe := inlineExe(t, variants[0])
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	abbrev := ef.Section(".debug_abbrev")
	info := ef.Section(".debug_info")
	ef.Close()
	for i := range abbrev.Size {
		b[abbrev.Offset+i] = 0xff
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, b, 0o755); err != nil {
		t.Fatal(err)
	}
	in := open(t, bad)
	s := sym(t, exe, "caller_a")
	if fr, ok := in.Frames(s.Value); ok && fr[0].Func != "" {
		t.Errorf("Frames with a broken .debug_abbrev: %+v", fr)
	}
	if err := in.Err(); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Err = %v, want an error naming %s", err, bad)
	}
	// A truncated .debug_info unit.
	b2, _ := os.ReadFile(exe)
	b2[info.Offset] = 0xf0 // unit length far past the section
	bad2 := filepath.Join(dir, "bad2")
	if err := os.WriteFile(bad2, b2, 0o755); err != nil {
		t.Fatal(err)
	}
	in = open(t, bad2)
	in.Frames(s.Value)
	if err := in.Err(); err == nil || !strings.Contains(err.Error(), "bad2: decoding dwarf section info at offset 0x") {
		t.Errorf("Err = %v, want the unit's offset", err)
	}
}

func TestConcurrent(t *testing.T) {
	exe := inlineExe(t, variants[0])
	in := open(t, exe)
	s := sym(t, exe, "caller_c")
	want, _ := in.Frames(s.Value)
	in2 := open(t, exe)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pc := s.Value; pc < s.Value+s.Size; pc++ {
				in2.Frames(pc)
				in2.Rows(pc, pc+4)
			}
			if got, _ := in2.Frames(s.Value); !slices.Equal(got, want) {
				t.Errorf("Frames = %+v, want %+v", got, want)
			}
		}()
	}
	wg.Wait()
}

// TestSystemLibc reads the C library's separate debug file from
// /usr/lib/debug (libc6-dbg), when installed.
func TestSystemLibc(t *testing.T) {
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	ef, err := elf.Open(libc)
	if err != nil {
		t.Skipf("no %s: %v", libc, err)
	}
	id := buildID(ef)
	var memcpy elf.Symbol
	dyn, _ := ef.DynamicSymbols()
	for _, s := range dyn {
		if s.Name == "qsort" {
			memcpy = s
		}
	}
	ef.Close()
	dbg := filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(dbg); err != nil {
		t.Skipf("no separate debug file for %s (install libc6-dbg): %v", libc, err)
	}
	in, err := Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	if !in.HasDWARF || in.Via != "build-id" || in.Source != dbg {
		t.Fatalf("HasDWARF %v Via %q Source %q: %s", in.HasDWARF, in.Via, in.Source, in.Note)
	}
	fr, ok := in.Frames(memcpy.Value)
	if !ok || !strings.HasSuffix(fr[0].File, "/msort.c") {
		t.Errorf("Frames(qsort) = %+v %v", fr, ok)
	}
	name, lo, _, ok := in.FuncRange(memcpy.Value)
	if !ok || lo != memcpy.Value || name == "" {
		t.Errorf("FuncRange(qsort) = %q %#x %v", name, lo, ok)
	}
}

// exercise runs every query over the ranges the units claim.
func exercise(in *Info) {
	in.mu.Lock()
	in.listUnits()
	spans := slices.Clone(in.spans)
	in.mu.Unlock()
	for i, s := range spans {
		if i > 50 {
			break
		}
		in.Frames(s.lo)
		in.Frames(s.hi - 1)
		in.Line(s.lo + (s.hi-s.lo)/2)
		in.Function(s.lo)
		in.Rows(s.lo, min(s.hi, s.lo+4096))
	}
	in.Files()
	in.Err()
}

// FuzzOpen opens arbitrary bytes as an ELF file with debug information:
// never a panic.
func FuzzOpen(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	if _, err := exec.LookPath("gcc"); err == nil {
		for _, v := range variants[:4] {
			dir := f.TempDir()
			exe := build(f, dir, "prog", "gcc", "inline.c", v.flags...)
			if b, err := os.ReadFile(exe); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := openReader("fuzz", bytes.NewReader(b), nil)
		if err != nil {
			if in != nil {
				t.Fatal("error with an Info")
			}
			return
		}
		exercise(in)
	})
}

// TestLargeBinary measures Open and queries on the file named by
// $ER_DEBUGINFO_LARGE and compares Frames at random addresses of its
// functions with llvm-symbolizer when that is installed.
func TestLargeBinary(t *testing.T) {
	path := os.Getenv("ER_DEBUGINFO_LARGE")
	if path == "" {
		t.Skip("set ER_DEBUGINFO_LARGE to a large ELF file with DWARF")
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := ef.Symbols()
	dyn, _ := ef.DynamicSymbols()
	ef.Close()
	var funcs []elf.Symbol
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Size > 0 {
			funcs = append(funcs, s)
		}
	}
	if len(funcs) == 0 {
		t.Fatal("no function symbols")
	}
	start := time.Now()
	in, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	fr, ok := in.Frames(funcs[len(funcs)/2].Value)
	first := time.Now()
	t.Logf("%s: Open %v, first Frames %v (%v %v); %s", path, opened.Sub(start), first.Sub(opened), fr, ok, in.Note)
	rng := rand.New(rand.NewPCG(1, 2))
	seen := make(map[uint64]bool)
	var pcs []uint64
	for len(pcs) < 2000 {
		s := funcs[rng.IntN(len(funcs))]
		if pc := s.Value + rng.Uint64N(s.Size); !seen[pc] {
			seen[pc] = true
			pcs = append(pcs, pc)
		}
	}
	start = time.Now()
	for _, pc := range pcs {
		in.Frames(pc)
	}
	mid := time.Now()
	files := in.Files()
	t.Logf("2000 Frames at random: %v; then indexing the rest: %v (%d files); again: %v", mid.Sub(start), time.Since(mid), len(files), timeIt(func() {
		for _, pc := range pcs {
			in.Frames(pc)
		}
	}))
	if err := in.Err(); err != nil {
		t.Errorf("Err: %v", err)
	}
	want := llvmSymbolizer(t, path, pcs)
	if want == nil {
		return
	}
	// Names of outermost frames may differ: llvm-symbolizer takes them from
	// the symbol table (f.cold, f.constprop.0 for our f; one of several
	// functions folded into one body).
	bad, outer := 0, 0
	for i, pc := range pcs {
		fr, _ := in.Frames(pc)
		w := want[i]
		same := len(fr) == len(w) || len(fr) == 0 && len(w) == 1 && w[0].line == 0
		for k := 0; same && k < len(fr); k++ {
			same = fr[k].Line == w[k].line && fr[k].File == filepath.Clean(w[k].file)
			if same && fr[k].Func != w[k].fn && (k < len(fr)-1 || fr[k].Func != "") {
				same = k == len(fr)-1
				if outer++; outer <= 5 {
					t.Logf("%#x: outermost function %s, llvm-symbolizer %s", pc, fr[k].Func, w[k].fn)
				}
			}
		}
		if !same {
			if bad++; bad <= 10 {
				t.Logf("%#x: %+v\n\tllvm-symbolizer %+v", pc, fr, w)
			}
		}
	}
	t.Logf("%d of %d addresses differ from llvm-symbolizer; %d more only in the name of the outermost function", bad, len(pcs), outer)
	if bad > len(pcs)/100 {
		t.Errorf("%d of %d addresses differ from llvm-symbolizer", bad, len(pcs))
	}
}

func timeIt(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// llvmSymbolizer runs llvm-symbolizer on pcs and returns the frames of
// each, or nil when it is not installed.
func llvmSymbolizer(t *testing.T, path string, pcs []uint64) [][]a2lFrame {
	t.Helper()
	tool, err := exec.LookPath("llvm-symbolizer")
	if err != nil {
		m, _ := filepath.Glob("/usr/lib/llvm-*/bin/llvm-symbolizer")
		if len(m) == 0 {
			t.Log("no llvm-symbolizer to compare with")
			return nil
		}
		tool = m[len(m)-1]
	}
	args := []string{"--obj=" + path, "--no-demangle", "--inlining"}
	for _, pc := range pcs {
		args = append(args, "0x"+strconv.FormatUint(pc, 16))
	}
	out, err := exec.Command(tool, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var res [][]a2lFrame
	for _, block := range strings.Split(strings.TrimSpace(string(out)), "\n\n") {
		lines := strings.Split(block, "\n")
		var frames []a2lFrame
		for i := 0; i+1 < len(lines); i += 2 {
			loc := lines[i+1]
			// file:line:column
			parts := strings.Split(loc, ":")
			f := a2lFrame{fn: lines[i], file: loc}
			if len(parts) >= 3 {
				f.file = strings.Join(parts[:len(parts)-2], ":")
				f.line, _ = strconv.Atoi(parts[len(parts)-2])
			}
			frames = append(frames, f)
		}
		res = append(res, frames)
	}
	if len(res) != len(pcs) {
		t.Fatalf("%s: %d answers for %d addresses", tool, len(res), len(pcs))
	}
	return res
}

// BenchmarkOpenFrames opens a small program and asks for the frames of one
// address: the cost for each load object with samples.
func BenchmarkOpenFrames(b *testing.B) {
	exe := build(b, "", "inline", "gcc", "inline.c", "-O2", "-g")
	pc := sym(b, exe, "caller_c").Value
	for b.Loop() {
		in, err := Open(exe)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := in.Frames(pc); !ok {
			b.Fatal("no frames")
		}
	}
}
