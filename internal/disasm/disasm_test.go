package disasm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// one decodes code at addr and requires a single instruction.
func one(t *testing.T, code []byte, addr uint64, sym func(uint64) (string, bool)) Inst {
	t.Helper()
	insts := Decode(code, addr, sym)
	if len(insts) != 1 {
		t.Fatalf("% x: %d instructions: %+v", code, len(insts), insts)
	}
	return insts[0]
}

func TestVEXRIPRelative(t *testing.T) {
	table := func(a uint64) (string, bool) {
		if a >= 0x2200 && a < 0x2300 {
			return fmt.Sprintf("table+%#x", a-0x2200), true
		}
		return "", false
	}
	for _, c := range []struct {
		code   []byte
		text   string
		memRef uint64
	}{
		// vmovsd 0x1234(%rip),%xmm0: the end of the instruction is 0x1008.
		{[]byte{0xc5, 0xfb, 0x10, 0x05, 0x34, 0x12, 0, 0}, "vmovsd 0x1234(%rip),%xmm0        # 0x223c <table+0x3c>", 0x223c},
		// A negative displacement.
		{[]byte{0xc5, 0xfb, 0x10, 0x05, 0x00, 0xff, 0xff, 0xff}, "vmovsd -0x100(%rip),%xmm0        # 0xf08", 0xf08},
		// Three-byte VEX.
		{[]byte{0xc4, 0xe2, 0x79, 0x18, 0x05, 0x34, 0x12, 0, 0}, "vbroadcastss 0x1234(%rip),%xmm0        # 0x223d <table+0x3d>", 0x223d},
		// An immediate after the displacement: RIP-relative to the end of the immediate.
		{[]byte{0xc4, 0xe3, 0x79, 0x0f, 0x05, 0x10, 0, 0, 0, 0x08}, "vpalignr $0x8,0x10(%rip),%xmm0,%xmm0        # 0x101a", 0x101a},
		// EVEX.
		{[]byte{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 0x01, 0, 0, 0}, "vmovups 0x1(%rip),%zmm0        # 0x100b", 0x100b},
		// SIB without base or index stays absolute.
		{[]byte{0xc5, 0xfb, 0x10, 0x04, 0x25, 0x34, 0x12, 0, 0}, "vmovsd 0x1234,%xmm0", 0},
		// Legacy SSE was always right; it must stay so.
		{[]byte{0x66, 0x0f, 0x6f, 0x05, 0x34, 0x12, 0, 0}, "movdqa 0x1234(%rip),%xmm0        # 0x223c <table+0x3c>", 0x223c},
	} {
		in := one(t, c.code, 0x1000, table)
		if in.Text != c.text || in.MemRef != c.memRef || in.Len != len(c.code) {
			t.Errorf("% x: %q MemRef %#x Len %d, want %q %#x %d", c.code, in.Text, in.MemRef, in.Len, c.text, c.memRef, len(c.code))
		}
	}
	// The library's own answer, for the record.
	raw, err := x86asm.Decode([]byte{0xc5, 0xfb, 0x10, 0x05, 0x34, 0x12, 0, 0}, 64)
	if err == nil {
		if s := x86asm.GNUSyntax(raw, 0x1000, nil); s != "vmovsd 0x1234,%xmm0" {
			t.Logf("x/arch now decodes VEX RIP-relative operands as %q: fixRIPRelative may be unneeded", s)
		}
	}
}

func TestFixes(t *testing.T) {
	for _, c := range []struct {
		code  []byte
		texts []string
	}{
		// x86asm keeps 32-bit displacements unsigned.
		{[]byte{0x48, 0x89, 0x8d, 0x08, 0xfb, 0xff, 0xff}, []string{"mov    %rcx,-0x4f8(%rbp)"}},
		{[]byte{0x48, 0x8d, 0x05, 0x00, 0xff, 0xff, 0xff}, []string{"lea    -0x100(%rip),%rax        # 0xf07"}},
		// moffs64 is not sign-extended.
		{[]byte{0xa1, 0, 0, 0, 0x80, 0, 0, 0, 0}, []string{"movabs 0x80000000,%eax"}},
		{[]byte{0x48, 0xb8, 0xf8, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xf7, 0xff}, []string{"movabs $-0x8000000004008,%rax"}},
		// x86asm counts a ModRM byte in vzeroupper.
		{[]byte{0xc5, 0xf8, 0x77, 0xc3}, []string{"vzeroupper", "ret"}},
		{[]byte{0xc5, 0xf8, 0x77}, []string{"vzeroupper"}},
		{[]byte{0xc4, 0xe1, 0x7c, 0x77, 0xc3}, []string{"vzeroall", "ret"}},
		// Instructions x86asm does not know.
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55}, []string{"endbr64", "push   %rbp"}},
		{[]byte{0x0f, 0x01, 0xee, 0x0f, 0x01, 0xef}, []string{"rdpkru", "wrpkru"}},
		{[]byte{0xf3, 0x0f, 0xc7, 0xf8, 0xf3, 0x41, 0x0f, 0xc7, 0xf9}, []string{"rdpid  %rax", "rdpid  %r9"}},
		{[]byte{0xf3, 0x48, 0x0f, 0x1e, 0xc8, 0xf3, 0x48, 0x0f, 0xae, 0xe8}, []string{"rdsspq %rax", "incsspq %rax"}},
		// A VEX payload byte 0x65 is not a %gs: override.
		{[]byte{0xc4, 0xe2, 0x65, 0x3b, 0x67, 0x61}, []string{"vpminud 0x61(%rdi),%ymm3,%ymm4"}},
		// objdump's spellings.
		{[]byte{0x48, 0x98, 0x48, 0x63, 0xf6, 0xc3}, []string{"cltq", "movslq %esi,%rsi", "ret"}},
		{[]byte{0x41, 0x8b, 0x04, 0x24, 0x8b, 0x04, 0x25, 0, 0, 0, 0}, []string{"mov    (%r12),%eax", "mov    0x0,%eax"}},
		{[]byte{0x0f, 0xb6, 0x04, 0x06}, []string{"movzbl (%rsi,%rax,1),%eax"}},
		{[]byte{0xc4, 0x62, 0xa0, 0xf5, 0xca}, []string{"bzhi   %r11,%rdx,%r9"}},
		{[]byte{0x3e, 0xff, 0xe0}, []string{"notrack jmp *%rax"}},
		{[]byte{0x62, 0xf1, 0x7f, 0xc9, 0x6f, 0x0f}, []string{"vmovdqu8 (%rdi),%zmm1{%k1}{z}"}},
	} {
		var got []string
		for _, in := range Decode(c.code, 0x1000, nil) {
			got = append(got, in.Text)
		}
		if strings.Join(got, "; ") != strings.Join(c.texts, "; ") {
			t.Errorf("% x: %q, want %q", c.code, got, c.texts)
		}
	}
}

func TestBranches(t *testing.T) {
	syms := func(a uint64) (string, bool) {
		switch {
		case a == 0x2000:
			return "f", true
		case a > 0x2000 && a < 0x2100:
			return fmt.Sprintf("f+%#x", a-0x2000), true
		case a == 0x500:
			return "puts@plt", true
		}
		return "", false
	}
	for _, c := range []struct {
		code           []byte
		text           string
		target         uint64
		isCall, isJump bool
	}{
		{[]byte{0xe8, 0xfb, 0x0f, 0, 0}, "call   f", 0x2000, true, false},
		{[]byte{0xe8, 0x0d, 0x10, 0, 0}, "call   f+0x12", 0x2012, true, false},
		{[]byte{0xe8, 0xfb, 0xf4, 0xff, 0xff}, "call   puts@plt", 0x500, true, false},
		{[]byte{0xe8, 0xfb, 0x4f, 0, 0}, "call   0x6000", 0x6000, true, false},
		{[]byte{0xe9, 0xfb, 0x0f, 0, 0}, "jmp    f", 0x2000, false, true},
		{[]byte{0xeb, 0xfe}, "jmp    0x1000", 0x1000, false, true},
		{[]byte{0x75, 0x10}, "jne    0x1012", 0x1012, false, true},
		{[]byte{0x0f, 0x84, 0x0a, 0x10, 0, 0}, "je     f+0x10", 0x2010, false, true},
		{[]byte{0xe2, 0x02}, "loop   0x1004", 0x1004, false, true},
		{[]byte{0xff, 0xd0}, "call   *%rax", 0, true, false},
		{[]byte{0xff, 0x25, 0x10, 0, 0, 0}, "jmp    *0x10(%rip)        # 0x1016", 0, false, true},
		{[]byte{0xc3}, "ret", 0, false, false},
	} {
		in := one(t, c.code, 0x1000, syms)
		if in.Text != c.text || in.Target != c.target || in.IsCall != c.isCall || in.IsJump != c.isJump {
			t.Errorf("% x: %q target %#x call %v jump %v, want %q %#x %v %v", c.code, in.Text, in.Target, in.IsCall, in.IsJump, c.text, c.target, c.isCall, c.isJump)
		}
	}
	// Without a symbolizer, targets stay addresses.
	if in := one(t, []byte{0xe8, 0xfb, 0x0f, 0, 0}, 0x1000, nil); in.Text != "call   0x2000" {
		t.Errorf("unsymbolized call: %q", in.Text)
	}
}

func TestBad(t *testing.T) {
	for _, c := range []struct {
		code  []byte
		texts []string
	}{
		{nil, nil},
		{[]byte{0x06}, []string{"(bad)"}}, // push %es: invalid in 64-bit mode
		{[]byte{0xe8, 0x01}, []string{"(bad)", "(bad)"}}, // truncated call
		{[]byte{0x06, 0x90}, []string{"(bad)", "nop"}},
	} {
		insts := Decode(c.code, 0x1000, nil)
		var got []string
		for i, in := range insts {
			got = append(got, in.Text)
			if in.Len != 1 || in.Addr != 0x1000+uint64(i) || len(in.Bytes) != 1 {
				t.Errorf("% x: %+v", c.code, in)
			}
		}
		if strings.Join(got, ";") != strings.Join(c.texts, ";") {
			t.Errorf("% x: %q, want %q", c.code, got, c.texts)
		}
	}
}

func TestIntel(t *testing.T) {
	for _, c := range []struct {
		code []byte
		text string
	}{
		{[]byte{0xc5, 0xfb, 0x10, 0x05, 0x34, 0x12, 0, 0}, "vmovsd xmm0, qword ptr [rip+0x1234]        # 0x223c"},
		{[]byte{0x48, 0x89, 0x8d, 0x08, 0xfb, 0xff, 0xff}, "mov    qword ptr [rbp-0x4f8], rcx"},
		{[]byte{0xf3, 0xab}, "rep stosd dword ptr [rdi]"},
		{[]byte{0xe8, 0xfb, 0x0f, 0, 0}, "call   f"},
	} {
		insts := DecodeSyntax(c.code, 0x1000, func(a uint64) (string, bool) { return "f", a == 0x2000 }, Intel)
		if len(insts) != 1 || insts[0].Text != c.text {
			t.Errorf("% x: %+v, want %q", c.code, insts, c.text)
		}
	}
}

// TestObjdump compares instruction boundaries, call and jump targets and
// RIP-relative references with objdump -d on a real program (a
// cross-check only).
func TestObjdump(t *testing.T) {
	for _, gcc := range []string{"gcc", "objdump"} {
		if _, err := exec.LookPath(gcc); err != nil {
			t.Skipf("%s not installed", gcc)
		}
	}
	exe := filepath.Join(t.TempDir(), "prog")
	if b, err := exec.Command("gcc", "-O2", "-mavx2", "-o", exe, "testdata/prog.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	out, err := exec.Command("objdump", "-d", "-w", exe).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	type odInst struct {
		bytes  string
		text   string
		target uint64 // of "call 1030 <puts@plt>"
		ref    uint64 // of "# 4010 <x>"
	}
	want := make(map[uint64]odInst)
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\t([0-9a-f ]+)\t(.*)$`)
	branch := regexp.MustCompile(`^(?:bnd |notrack )?(call|j[a-z]+|loop[a-z]*)\s+([0-9a-f]+) <`)
	comment := regexp.MustCompile(`# ([0-9a-f]+)`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		a, _ := strconv.ParseUint(m[1], 16, 64)
		o := odInst{bytes: strings.Join(strings.Fields(m[2]), " "), text: m[3]}
		if b := branch.FindStringSubmatch(m[3]); b != nil {
			o.target, _ = strconv.ParseUint(b[2], 16, 64)
		}
		if c := comment.FindStringSubmatch(m[3]); c != nil {
			o.ref, _ = strconv.ParseUint(c[1], 16, 64)
		}
		want[a] = o
	}

	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Size != 0 {
			funcs = append(funcs, s)
		}
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Value < funcs[j].Value })
	symbolize := func(a uint64) (string, bool) {
		i := sort.Search(len(funcs), func(i int) bool { return funcs[i].Value > a }) - 1
		if i < 0 || a >= funcs[i].Value+funcs[i].Size {
			return "", false
		}
		if a == funcs[i].Value {
			return funcs[i].Name, true
		}
		return fmt.Sprintf("%s+%#x", funcs[i].Name, a-funcs[i].Value), true
	}
	var sawVEXRIP, sawCall bool
	for _, f := range funcs {
		code, err := Code(exe, f.Value, f.Value+f.Size)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range Decode(code, f.Value, symbolize) {
			o, ok := want[in.Addr]
			if !ok {
				t.Errorf("%s: instruction at %#x (%q) is not one for objdump", f.Name, in.Addr, in.Text)
				continue
			}
			if got := fmt.Sprintf("% x", in.Bytes); got != o.bytes {
				t.Errorf("%s %#x: bytes %s, objdump %s", f.Name, in.Addr, got, o.bytes)
			}
			if in.Target != o.target {
				t.Errorf("%s %#x: %q target %#x, objdump %q", f.Name, in.Addr, in.Text, in.Target, o.text)
			}
			if in.MemRef != o.ref && in.Target == 0 {
				t.Errorf("%s %#x: %q refers to %#x, objdump %q", f.Name, in.Addr, in.Text, in.MemRef, o.text)
			}
			if in.Target != 0 {
				if name, ok := symbolize(in.Target); ok && !strings.HasSuffix(in.Text, " "+name) {
					t.Errorf("%s %#x: %q does not name %s", f.Name, in.Addr, in.Text, name)
				}
				sawCall = sawCall || in.IsCall && f.Name == "main"
			}
			sawVEXRIP = sawVEXRIP || in.Bytes[0] == 0xc5 && in.MemRef != 0
		}
	}
	if !sawVEXRIP || !sawCall {
		t.Errorf("the program has no VEX RIP-relative instruction (%v) or no direct call in main (%v)", sawVEXRIP, sawCall)
	}
}

// FuzzDecode decodes arbitrary bytes: never a panic, and the instructions
// tile the input.
func FuzzDecode(f *testing.F) {
	for _, s := range [][]byte{
		{0xc5, 0xfb, 0x10, 0x05, 0x34, 0x12, 0, 0},
		{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 0x01, 0, 0, 0},
		{0xf3, 0x48, 0x0f, 0x1e, 0xc8, 0xc5, 0xf8, 0x77},
		{0xe8, 0, 0, 0, 0, 0xff, 0x25, 1, 2, 3, 4, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0},
	} {
		f.Add(s, uint64(0x401000))
	}
	f.Fuzz(func(t *testing.T, code []byte, addr uint64) {
		sym := func(a uint64) (string, bool) { return "s", a%2 == 0 }
		for _, syntax := range []Syntax{GNU, Intel} {
			off := 0
			for _, in := range DecodeSyntax(code, addr, sym, syntax) {
				if in.Len < 1 || in.Addr != addr+uint64(off) || !bytes.Equal(in.Bytes, code[off:off+in.Len]) || in.Text == "" {
					t.Fatalf("bad instruction %+v at offset %d of % x", in, off, code)
				}
				off += in.Len
			}
			if off != len(code) {
				t.Fatalf("instructions cover %d of %d bytes", off, len(code))
			}
		}
	})
}

// TestObjdumpLibc compares instruction boundaries and direct targets with
// objdump -d over all of the C library's .text (hundreds of thousands of
// instructions: AVX2, AVX-512, CET), a cross-check only.
func TestObjdumpLibc(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump not installed")
	}
	ef, err := elf.Open(libc)
	if err != nil {
		t.Skipf("no %s: %v", libc, err)
	}
	text := ef.Section(".text")
	ef.Close()
	code, err := Code(libc, text.Addr, text.Addr+text.Size)
	if err != nil {
		t.Fatal(err)
	}
	mine := make(map[uint64]Inst)
	for _, in := range Decode(code, text.Addr, nil) {
		mine[in.Addr] = in
	}
	out, err := exec.Command("objdump", "-d", "-w", "--no-show-raw-insn", "-j", ".text", libc).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)
	branch := regexp.MustCompile(`^(?:bnd |notrack )?(call|j[a-z]+|loop[a-z]*)\s+([0-9a-f]+) <`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	n, bad := 0, 0
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n++
		a, _ := strconv.ParseUint(m[1], 16, 64)
		in, ok := mine[a]
		var target uint64
		if b := branch.FindStringSubmatch(m[2]); b != nil {
			target, _ = strconv.ParseUint(b[2], 16, 64)
		}
		if !ok || in.Target != target {
			if bad++; bad < 10 {
				t.Errorf("%#x: objdump %q, mine %+v", a, m[2], in)
			}
		}
	}
	if n < 10000 || len(mine) != n || bad > 0 {
		t.Errorf("objdump: %d instructions, mine %d, %d differ", n, len(mine), bad)
	}
}

// References lists every address Decode asks its symbolize to name.
func TestReferences(t *testing.T) {
	// call rel32; jmp rel8; lea 0x10(%rip),%rax; mov 0x20(%rip),%eax; ret; a bad byte.
	code := []byte{0xe8, 0x10, 0, 0, 0, 0xeb, 0x02, 0x48, 0x8d, 0x05, 0x10, 0, 0, 0, 0x8b, 0x05, 0x20, 0, 0, 0, 0xc3, 0x06}
	var asked []uint64
	Decode(code, 0x1000, func(a uint64) (string, bool) { asked = append(asked, a); return "f", true })
	got := References(code, 0x1000)
	if len(asked) == 0 || !slices.Equal(got, asked) {
		t.Errorf("References = %#x, Decode asked %#x", got, asked)
	}
}

// Starts finds the instructions Decode finds.
func TestStarts(t *testing.T) {
	code := []byte{0xe8, 0x10, 0, 0, 0, 0xeb, 0x02, 0x48, 0x8d, 0x05, 0x10, 0, 0, 0, 0x06, 0x0f, 0x0b, 0xc3, 0x66, 0x90}
	var want []uint64
	for _, in := range Decode(code, 0x1000, nil) {
		want = append(want, in.Addr)
	}
	if got := Starts(code, 0x1000); !slices.Equal(got, want) {
		t.Errorf("Starts = %#x, want %#x", got, want)
	}
}
