package unwind

import (
	"bufio"
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readelfRow is one row of `readelf --debug-dump=frames-interp`.
type readelfRow struct {
	loc  uint64
	cfa  string
	regs map[string]string
}

// readelfRows runs readelf -wF on path, skipping the test when readelf is missing.
func readelfRows(t *testing.T, path string) []readelfRow {
	t.Helper()
	re, err := exec.LookPath("readelf")
	if err != nil {
		t.Skip("readelf (binutils) is not installed: no reference to compare with")
	}
	// readelf exits 1 after warnings (a missing separate debug file) but still prints the rows.
	out, err := exec.Command(re, "-wF", path).Output()
	if len(out) == 0 {
		t.Fatalf("readelf -wF %s: %v", path, err)
	}
	var rows []readelfRow
	var cols []string
	inFDE := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "LOC" && f[1] == "CFA" && inFDE:
			cols = f[2:]
		case len(f) >= 4 && (f[3] == "FDE" || f[3] == "CIE"):
			cols, inFDE = nil, f[3] == "FDE"
		case cols != nil && len(f) == len(cols)+2:
			loc, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				continue
			}
			r := readelfRow{loc: loc, cfa: f[1], regs: map[string]string{}}
			for i, c := range cols {
				r.regs[c] = f[i+2]
			}
			rows = append(rows, r)
		default:
			if len(f) == 0 {
				cols = nil
			}
		}
	}
	return rows
}

// readelfNames maps readelf's register names to DWARF numbers.
var readelfNames = map[string]int{"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
	"r8": 8, "r9": 9, "r10": 10, "r11": 11, "r12": 12, "r13": 13, "r14": 14, "r15": 15, "ra": 16, "rip": 16}

// formatRule writes a rule the way readelf -wF does.
func formatRule(r Rule) string {
	switch r.Kind {
	case RuleSameValue, RuleUndefined:
		return "u" // readelf shows both an untouched and an undefined register as u
	case RuleOffset:
		return "c" + strconv.FormatInt(r.Offset, 10)
	case RuleValOffset:
		return "v" + strconv.FormatInt(r.Offset, 10)
	case RuleRegister:
		return regName(r.Reg)
	case RuleExpression:
		return "exp"
	case RuleValExpression:
		return "vexp"
	}
	return "?"
}

// crossCheck compares every row readelf prints for path with Table.Row.
func crossCheck(t *testing.T, path string) int {
	t.Helper()
	rows := readelfRows(t, path)
	tab, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, want := range rows {
		r, err := tab.Row(want.loc)
		if err != nil {
			t.Errorf("%s: Row(%#x): %v", path, want.loc, err)
			bad++
		} else {
			cfa := "exp"
			if r.CFA.Kind == RuleRegister {
				cfa = regName(r.CFA.Reg) + "+" + strconv.FormatInt(r.CFA.Offset, 10)
				if r.CFA.Offset < 0 {
					cfa = regName(r.CFA.Reg) + strconv.FormatInt(r.CFA.Offset, 10)
				}
			}
			mismatch := cfa != want.cfa
			for name, w := range want.regs {
				n, ok := readelfNames[name]
				if !ok {
					continue
				}
				got := formatRule(r.Regs[n])
				if w == "s" && r.Regs[n].Kind == RuleSameValue {
					got = "s"
				}
				if strings.HasPrefix(w, "c+") {
					w = "c" + w[2:]
				}
				if got != w {
					mismatch = true
				}
			}
			if mismatch {
				t.Errorf("%s: Row(%#x) = CFA %s regs %v; readelf says CFA %s regs %v", path, want.loc, cfa, r.Regs, want.cfa, want.regs)
				bad++
			}
		}
		if bad > 10 {
			t.Fatal("too many mismatches")
		}
	}
	return len(rows)
}

func TestRowsMatchReadelf(t *testing.T) {
	paths := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", program(t, "qsort"),
		program(t, "gospin")} // a Go binary: .debug_frame only, compressed
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s: %v; skipped", p, err)
			continue
		}
		n := crossCheck(t, p)
		if n < 10 {
			t.Errorf("%s: readelf printed only %d rows", p, n)
		}
		t.Logf("%s: %d rows agree with readelf", p, n)
	}
}

func TestHeaderAndIndexAgree(t *testing.T) {
	// libc's FDEs found through .eh_frame_hdr and through an index of .eh_frame are the same.
	const path = "/lib/x86_64-linux-gnu/libc.so.6"
	f, err := elf.Open(path)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	eh, hdr := f.Section(".eh_frame"), f.Section(".eh_frame_hdr")
	if eh == nil || hdr == nil {
		t.Skip("libc has no .eh_frame_hdr")
	}
	ehData, _ := eh.Data()
	hdrData, _ := hdr.Data()
	withHdr, err := newTable(path, ehData, eh.Addr, hdrData, hdr.Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	without, err := newTable(path, ehData, eh.Addr, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if withHdr.hdr == nil || withHdr.ehIdx != nil || without.ehIdx == nil {
		t.Fatal("the header table was not used, or the index not built")
	}
	if len(without.ehIdx) != len(withHdr.hdr)/8 {
		t.Errorf("index has %d FDEs, the header %d", len(without.ehIdx), len(withHdr.hdr)/8)
	}
	checked := 0
	for _, s := range without.ehIdx {
		for _, pc := range []uint64{s.lo, (s.lo + s.hi) / 2, s.hi - 1, s.hi} {
			_, f1, err1 := withHdr.find(pc)
			_, f2, err2 := without.find(pc)
			if (err1 == nil) != (err2 == nil) || err1 == nil && f1.off != f2.off {
				t.Fatalf("pc %#x: header finds FDE %#x (%v), index %#x (%v)", pc, f1.off, err1, f2.off, err2)
			}
			checked++
		}
	}
	t.Logf("%d FDEs, %d addresses agree", len(without.ehIdx), checked)
}

func TestGoBinary(t *testing.T) {
	exe := program(t, "gospin")
	tab, err := Load(exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.dbgIdx) < 100 || len(tab.eh.data) != 0 {
		t.Errorf("gospin: %d .debug_frame FDEs, %d bytes of .eh_frame; want many, none", len(tab.dbgIdx), len(tab.eh.data))
	}
	if len(tab.roots) != 5 || len(tab.switches) != 1 || !tab.isSwitch(tab.switches[0].lo) {
		t.Errorf("gospin: %d root functions and %d stack switches, want 5 (goexit, mstart, rt0_go, mcall, morestack) and 1 (systemstack)", len(tab.roots), len(tab.switches))
	}
	// At a function's entry the CFA is rsp+8 and the return address at CFA-8.
	f, _ := elf.Open(exe)
	defer f.Close()
	syms, _ := f.Symbols()
	found := false
	for _, s := range syms {
		if s.Name != "main.leaf" {
			continue
		}
		found = true
		r, err := tab.Row(s.Value)
		if err != nil {
			t.Fatal(err)
		}
		if r.CFA.Kind != RuleRegister || r.CFA.Reg != RegRSP || r.CFA.Offset != 8 || r.Regs[16].Kind != RuleOffset || r.Regs[16].Offset != -8 {
			t.Errorf("Row at main.leaf's entry = CFA %v RA %v", r.CFA, r.Regs[16])
		}
		if !tab.isRoot(tab.roots[0].lo) || tab.isRoot(s.Value) {
			t.Error("isRoot does not tell roots from other functions")
		}
	}
	if !found {
		t.Error("no symbol main.leaf in gospin")
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "not-elf")
	os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755)
	for _, p := range []string{filepath.Join(dir, "missing"), notELF} {
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(%s) = %v, want an error naming the file", p, err)
		}
	}
	// A file without CFI loads, and has no rows.
	tab, err := newTable("empty", nil, 0, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Row(0x1000); !errors.Is(err, ErrNoCFI) {
		t.Errorf("Row on an empty table: %v, want ErrNoCFI", err)
	}
}

func TestBias(t *testing.T) {
	tab := &Table{loads: []load{{vaddr: 0, off: 0, filesz: 0x1000}, {vaddr: 0x1000, off: 0x1000, filesz: 0x5000}, {vaddr: 0x8000, off: 0x6000, filesz: 0x100}}}
	for _, tt := range []struct {
		start, off, bias uint64
		ok               bool
	}{
		{0x555555555000, 0x1000, 0x555555554000, true},
		{0x7f0000002000, 0x6000, 0x7f0000002000 - 0x8000, true},
		{0x7f0000000000, 0x9000, 0, false},
	} {
		b, ok := tab.Bias(tt.start, tt.off)
		if b != tt.bias || ok != tt.ok {
			t.Errorf("Bias(%#x, %#x) = %#x, %v; want %#x, %v", tt.start, tt.off, b, ok, tt.bias, tt.ok)
		}
	}
}

// interpreter returns the path of the dynamic loader named by /bin/sh's PT_INTERP.
func interpreter(t *testing.T) string {
	t.Helper()
	f, err := elf.Open("/bin/sh")
	if err != nil {
		t.Skipf("no /bin/sh to find the dynamic loader: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return string(bytes.TrimRight(b, "\x00"))
		}
	}
	t.Skip("/bin/sh is static: no dynamic loader")
	return ""
}

func TestLoaderEntryStub(t *testing.T) {
	// A sample taken while ld.so relocates the program unwinds to the return address of the
	// call in ld.so's _start, which has no CFI and rbp 0: that is the outermost frame, not a
	// failure (it failed 2 runs in 8 of TestUnwindNoAlloc).
	ld := interpreter(t)
	tab, err := Load(ld)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(ld)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code := make([]byte, 8)
	if _, err := f.Section(".text").ReadAt(code, int64(f.Entry-f.Section(".text").Addr)); err != nil {
		t.Fatal(err)
	}
	// mov %rsp,%rdi; call rel32 (the x86-64 RTLD_START since glibc 2.3)
	if !bytes.Equal(code[:4], []byte{0x48, 0x89, 0xe7, 0xe8}) {
		t.Skipf("%s: entry code % x is not mov %%rsp,%%rdi; call", ld, code)
	}
	if _, err := tab.Row(f.Entry); !errors.Is(err, ErrNoCFI) {
		t.Skipf("%s: its entry point has CFI (%v): nothing to infer", ld, err)
	}
	ret := f.Entry + 8
	callee := ret + uint64(int64(int32(binary.LittleEndian.Uint32(code[4:]))))
	if !tab.isRoot(f.Entry) || !tab.isRoot(ret-1) || tab.isRoot(callee) {
		t.Errorf("isRoot: entry %v, call %v, callee %v; want true, true, false", tab.isRoot(f.Entry), tab.isRoot(ret-1), tab.isRoot(callee))
	}
	// The callee at its first instruction, called from _start: two frames, complete.
	const bias, sp = 0x7f0000000000, 0x7ffc00001000
	u := &Unwinder{Modules: func(pc uint64) *Module {
		return &Module{Start: bias, End: bias + 1<<30, Path: ld, Table: tab, Bias: bias}
	}}
	var r Regs
	r.Set(RegRIP, bias+callee)
	r.Set(RegRSP, sp)
	r.Set(RegRBP, 0)
	frames, st, why := u.Unwind(r, mapMemory{sp: bias + ret}, nil)
	if st != Complete || len(frames) != 2 || frames[1] != bias+ret {
		t.Errorf("Unwind from ld.so's _dl_start = %#x, %v (%s); want [callee, return into _start], complete", frames, st, why)
	}
}

// readelfFDEs lists the FDE ranges readelf prints for path, one per start (the longest), sorted.
func readelfFDEs(t *testing.T, path string) [][2]uint64 {
	t.Helper()
	re, err := exec.LookPath("readelf")
	if err != nil {
		t.Skip("readelf (binutils) is not installed: no reference to compare with")
	}
	out, _ := exec.Command(re, "--debug-dump=frames", path).Output()
	best := map[uint64]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		i := strings.Index(line, " FDE ")
		j := strings.Index(line, "pc=")
		if i < 0 || j < 0 {
			continue
		}
		lo, hi, ok := strings.Cut(line[j+3:], "..")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(strings.TrimSpace(hi), 16, 64)
		if err1 != nil || err2 != nil || h <= l {
			continue
		}
		best[l] = max(best[l], h)
	}
	var rs [][2]uint64
	for l, h := range best {
		rs = append(rs, [2]uint64{l, h})
	}
	slices.SortFunc(rs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return rs
}

func TestFunctionRangesMatchReadelf(t *testing.T) {
	// .eh_frame through .eh_frame_hdr (a distribution binary and libc), .debug_frame (Go).
	for _, path := range []string{"/usr/bin/gzip", "/lib/x86_64-linux-gnu/libc.so.6", program(t, "gospin")} {
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		tab, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tab.FunctionRanges()
		if err != nil {
			t.Fatal(err)
		}
		want := readelfFDEs(t, path)
		if len(want) < 10 || !slices.Equal(got, want) {
			t.Errorf("%s: %d FDE ranges, readelf %d (first %v, readelf %v)", path, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
		} else {
			t.Logf("%s: %d FDE ranges agree with readelf", path, len(got))
		}
	}
}
