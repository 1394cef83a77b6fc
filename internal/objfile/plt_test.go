package objfile

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"er/internal/experiment"
)

// callTargets scans the body of function fn in ef for E8 rel32 calls and
// returns their targets. Bytes that merely look like a call give targets
// outside the PLT, which the caller ignores.
func callTargets(t *testing.T, ef *elf.File, fn string) []uint64 {
	t.Helper()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var sym elf.Symbol
	for _, s := range syms {
		if s.Name == fn {
			sym = s
		}
	}
	text := ef.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	body := data[sym.Value-text.Addr : sym.Value-text.Addr+sym.Size]
	var out []uint64
	for i := 0; i+5 <= len(body); i++ {
		if body[i] == 0xe8 {
			rel := int32(binary.LittleEndian.Uint32(body[i+1:]))
			out = append(out, sym.Value+uint64(i+5)+uint64(int64(rel)))
		}
	}
	return out
}

func TestPLT(t *testing.T) {
	for _, v := range []struct {
		name    string
		flags   []string
		section string // where the calls must land
	}{
		{"pie", []string{"-O2"}, ".plt"},
		{"nopie", []string{"-O2", "-no-pie"}, ".plt"},
		{"now", []string{"-O2", "-Wl,-z,now"}, ".plt"},
		{"ibt", []string{"-O2", "-fcf-protection", "-Wl,-z,now", "-Wl,-z,ibtplt"}, ".plt.sec"},
		{"ibt-lazy", []string{"-O2", "-fcf-protection", "-Wl,-z,ibtplt"}, ".plt.sec"},
	} {
		t.Run(v.name, func(t *testing.T) {
			exe := buildC(t, "gcc", "prog.c", v.flags...)
			syms, err := openT(t, exe).Symbols()
			if err != nil {
				t.Fatal(err)
			}
			ef, err := elf.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			sec := ef.Section(v.section)
			if sec == nil {
				t.Fatalf("no %s section", v.section)
			}
			byAddr := map[uint64]experiment.Symbol{}
			for _, s := range syms {
				byAddr[s.Addr] = s
			}
			seen := map[string]bool{}
			for _, target := range callTargets(t, ef, "main") {
				if target < sec.Addr || target >= sec.Addr+sec.Size {
					continue
				}
				s, ok := byAddr[target]
				if !ok || s.Kind != experiment.SymPLT {
					t.Errorf("call to %#x in %s: no PLT symbol there (%+v)", target, v.section, s)
					continue
				}
				seen[s.Name] = true
			}
			for _, n := range []string{"puts@plt", "strlen@plt", "qsort@plt"} {
				if !seen[n] {
					t.Errorf("main calls no %s; calls seen: %v", n, seen)
				}
			}
			if plt0, ok := byAddr[ef.Section(".plt").Addr]; !ok || plt0.Name != "<plt>" {
				t.Errorf("start of .plt: %+v, want <plt>", plt0)
			}
			if cxa := ef.Section(".plt.got"); cxa != nil && byAddr[cxa.Addr].Name != "__cxa_finalize@plt" {
				t.Errorf("start of .plt.got: %+v, want __cxa_finalize@plt", byAddr[cxa.Addr])
			}
			crossCheckObjdump(t, exe, byAddr)
		})
	}
}

// crossCheckObjdump compares the PLT names with objdump's, when objdump is
// installed: every "ADDR <f@plt>:" label must be our symbol at ADDR.
func crossCheckObjdump(t *testing.T, exe string, byAddr map[uint64]experiment.Symbol) {
	t.Helper()
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Log("objdump not installed; no cross-check")
		return
	}
	out, err := exec.Command("objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", exe).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	label := regexp.MustCompile(`^([0-9a-f]+) <([^>+]+@plt)>:$`)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := label.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		addr, _ := strconv.ParseUint(m[1], 16, 64)
		n++
		if got := byAddr[addr].Name; got != m[2] {
			t.Errorf("at %#x objdump says %s, we say %q", addr, m[2], got)
		}
	}
	if n == 0 {
		t.Error("objdump shows no @plt labels")
	}
}

func TestPLTStatic(t *testing.T) {
	exe := buildC(t, "gcc", "prog.c", "-O2", "-static")
	syms, err := openT(t, exe).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	plt := ef.Section(".plt")
	if plt == nil {
		t.Skip("this static link has no .plt")
	}
	// IRELATIVE stubs (8 bytes each) are named after the ifunc at the
	// relocation's addend, e.g. strlen@plt.
	n := 0
	for _, s := range syms {
		if s.Addr >= plt.Addr && s.Addr < plt.Addr+plt.Size {
			n++
			if s.Kind != experiment.SymPLT || s.Size != 8 {
				t.Errorf("%+v in a static .plt, want an 8-byte PLT symbol", s)
			}
		}
	}
	if uint64(n) != plt.Size/8 {
		t.Errorf("%d PLT symbols in a %d-byte static .plt, want %d", n, plt.Size, plt.Size/8)
	}
	names := map[string]bool{}
	for _, s := range syms {
		names[s.Name] = true
	}
	if !names["strlen@plt"] {
		t.Error("no strlen@plt in a static binary calling strlen")
	}
}

func TestDecodeStub(t *testing.T) {
	cases := []struct {
		b     []byte
		addr  uint64
		kind  int
		value uint64
	}{
		{[]byte{0xff, 0x35, 0x8a, 0x2f, 0, 0, 0xff, 0x25}, 0x1020, stubHeader, 0},
		{[]byte{0xff, 0x25, 0x8a, 0x2f, 0, 0, 0x68, 0, 0, 0, 0}, 0x1030, stubJump, 0x3fc0},
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa, 0xff, 0x25, 0x46, 0x2f, 0, 0}, 0x1070, stubJump, 0x3fc0},
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xf5, 0xff, 0xff, 0xff}, 0x1000, stubJump, 0x1000},
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa, 0x68, 2, 0, 0, 0, 0xe9}, 0x1050, stubPush, 2},
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa, 0xff, 0x25}, 0, stubUnknown, 0},
		{nil, 0, stubUnknown, 0},
		{[]byte{0x90, 0x90}, 0, stubUnknown, 0},
	}
	for _, c := range cases {
		if k, v := decodeStub(c.b, c.addr); k != c.kind || v != c.value {
			t.Errorf("decodeStub(% x, %#x) = %d, %#x; want %d, %#x", c.b, c.addr, k, v, c.kind, c.value)
		}
	}
}
