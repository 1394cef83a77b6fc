package archive

import (
	"strings"
	"testing"

	"er/internal/experiment"
)

func TestFileOffsetToVaddr(t *testing.T) {
	a := &experiment.Archive{Segments: []experiment.Segment{
		{Vaddr: 0, Offset: 0, Filesz: 0x628, Memsz: 0x628},
		{Vaddr: 0x1000, Offset: 0x1000, Filesz: 0x1b5, Memsz: 0x1b5},
		{Vaddr: 0x3db8, Offset: 0x2db8, Filesz: 0x258, Memsz: 0x260},
		{Vaddr: 0x401000, Offset: 0x1000, Filesz: 0, Memsz: 0x100}, // bss only: no file bytes
	}}
	cases := []struct {
		off, vaddr uint64
		ok         bool
	}{
		{0x10, 0x10, true},
		{0x1070, 0x1070, true},
		{0x11b4, 0x11b4, true},
		{0x11b5, 0, false},
		{0x2db8, 0x3db8, true},
		{0x300f, 0x400f, true},
		{0x3010, 0, false},
		{0x800, 0, false},
	}
	for _, c := range cases {
		if v, ok := FileOffsetToVaddr(a, c.off); v != c.vaddr || ok != c.ok {
			t.Errorf("FileOffsetToVaddr(%#x) = %#x, %v; want %#x, %v", c.off, v, ok, c.vaddr, c.ok)
		}
	}
	if _, ok := FileOffsetToVaddr(&experiment.Archive{}, 0); ok {
		t.Error("an archive without segments converted an offset")
	}
}

func TestSymbolAt(t *testing.T) {
	a := &experiment.Archive{Symbols: []experiment.Symbol{
		{Name: "a", Addr: 0x1000, Size: 0x10},
		{Name: "b", Addr: 0x1020, Size: 0},
		{Name: "c", Addr: 0x1040, Size: 0x20},
		{Name: "d", Addr: 0x2000, Size: 0},
	}}
	cases := []struct {
		vaddr uint64
		name  string // "" for not found
	}{
		{0xfff, ""},
		{0x1000, "a"},
		{0x100f, "a"},
		{0x1010, ""},
		{0x1020, "b"},
		{0x103f, "b"},
		{0x1040, "c"},
		{0x105f, "c"},
		{0x1060, ""},
		{0x2000, "d"},
		{0xffffffff, "d"},
	}
	for _, c := range cases {
		s, ok := SymbolAt(a, c.vaddr)
		if ok != (c.name != "") || s.Name != c.name {
			t.Errorf("SymbolAt(%#x) = %q, %v; want %q", c.vaddr, s.Name, ok, c.name)
		}
	}
	if _, ok := SymbolAt(&experiment.Archive{}, 0x1000); ok {
		t.Error("found a symbol in an empty archive")
	}
}

// TestUsedSymbols: the symbols that hold an address, those of no size (or too small) sized to reach
// the last of theirs, in address order; an address in no symbol keeps none.
func TestUsedSymbols(t *testing.T) {
	a := &experiment.Archive{Symbols: []experiment.Symbol{
		{Name: "a", Addr: 0x1000, Size: 0x100}, {Name: "b", Addr: 0x1100, Size: 0x100}, {Name: "c", Addr: 0x1200}, {Name: "d", Addr: 0x1300, Size: 0x10},
	}}
	got := UsedSymbols(a, []uint64{0x1250, 0x1010, 0x1220, 0x1305, 0x5000})
	if len(got) != 3 || got[0].Name != "a" || got[0].Size != 0x100 || got[1].Name != "c" || got[1].Size != 0x51 ||
		got[2].Name != "d" || got[2].Size != 0x10 {
		t.Errorf("UsedSymbols = %+v, want a, c sized to hold 0x1250, d", got)
	}
}

func TestKeptSymbols(t *testing.T) {
	syms := []experiment.Symbol{
		{Addr: 0x10, Size: 0x10, Name: "a"},
		{Addr: 0x20, Size: 0, Name: "b"}, // to the next symbol
		{Addr: 0x20, Size: 0, Name: "b_alias"},
		{Addr: 0x40, Size: 0x8, Name: "c"},
		{Addr: 0x60, Size: 0x10, Name: "d", Kind: experiment.SymPLT},
		{Addr: 0x70, Size: 0x10, Name: "d"},
		{Addr: 0x80, Size: 0x10, Name: "d"},
		{Addr: 0x100, Size: 0x10, Name: "e"},
	}
	q := []uint64{0x25, 0x50}
	kept := KeptSymbols(syms, q, []uint64{0x105}, []string{"d", "nothere"})
	var names []string
	for _, s := range kept {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), "b b_alias c d d d e"; got != want {
		t.Fatalf("kept %q, want %q", got, want)
	}
	// The lookups of q answer as in the whole table.
	full, small := &experiment.Archive{Symbols: syms}, &experiment.Archive{Symbols: kept}
	for _, addr := range q {
		w, wok := SymbolAt(full, addr)
		g, gok := SymbolAt(small, addr)
		if w != g || wok != gok {
			t.Errorf("SymbolAt(%#x) = %v %v, want %v %v", addr, g, gok, w, wok)
		}
	}
	if kept[3].Kind != experiment.SymPLT || kept[4].Addr != 0x70 || kept[5].Addr != 0x80 {
		t.Errorf("the first function named d is not the one kept: %+v", kept[4])
	}
}
