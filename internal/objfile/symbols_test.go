package objfile

import (
	"debug/elf"
	"os"
	"sort"
	"testing"

	"er/internal/experiment"
)

// checkAgainstSymtab checks that every defined function of ef's table
// (.symtab or .dynsym) is in syms at its address, under one of the names
// aliased to that address, with a size at least as large.
func checkAgainstSymtab(t *testing.T, syms []experiment.Symbol, table []elf.Symbol) {
	t.Helper()
	if !sort.SliceIsSorted(syms, func(i, j int) bool { return syms[i].Addr < syms[j].Addr }) {
		t.Fatal("Symbols not sorted by address")
	}
	byAddr := make(map[uint64]experiment.Symbol)
	for i, s := range syms {
		if i > 0 && syms[i-1].Addr == s.Addr {
			t.Errorf("two symbols at %#x: %s and %s", s.Addr, syms[i-1].Name, s.Name)
		}
		byAddr[s.Addr] = s
	}
	aliases := make(map[uint64]map[string]bool)
	for _, s := range table {
		if aliases[s.Value] == nil {
			aliases[s.Value] = make(map[string]bool)
		}
		aliases[s.Value][s.Name] = true
	}
	n := 0
	for _, s := range table {
		typ := elf.ST_TYPE(s.Info)
		if typ != elf.STT_FUNC && typ != sttGNUIFunc || s.Section == elf.SHN_UNDEF || s.Value == 0 {
			continue
		}
		n++
		got, ok := byAddr[s.Value]
		switch {
		case !ok:
			t.Errorf("function %s at %#x missing", s.Name, s.Value)
		case !aliases[s.Value][got.Name]:
			t.Errorf("at %#x: got %s, not an alias of %s", s.Value, got.Name, s.Name)
		case got.Size < s.Size || got.Kind != experiment.SymFunc:
			t.Errorf("%s: got size %d kind %d, want size >= %d, SymFunc", s.Name, got.Size, got.Kind, s.Size)
		}
	}
	if n == 0 {
		t.Error("the symbol table has no defined functions to compare with")
	}
}

// named returns the symbol called name.
func named(t *testing.T, syms []experiment.Symbol, name string) experiment.Symbol {
	t.Helper()
	for _, s := range syms {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no symbol %q", name)
	return experiment.Symbol{}
}

func TestSymbolsMatchSymtab(t *testing.T) {
	for _, v := range []struct {
		name  string
		flags []string
	}{
		{"pie", []string{"-O2"}},
		{"nopie", []string{"-O2", "-no-pie"}},
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
			table, err := ef.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstSymtab(t, syms, table)
			for _, fn := range []string{"main", "compute", "cmp"} {
				if got, want := named(t, syms, fn).Addr, symtabAddr(t, ef, fn); got != want {
					t.Errorf("%s at %#x, want %#x", fn, got, want)
				}
			}
			if v.name == "nopie" && named(t, syms, "main").Addr < 0x400000 {
				t.Errorf("non-PIE main at %#x, want an absolute address >= 0x400000", named(t, syms, "main").Addr)
			}
		})
	}
}

func TestSymbolsStripped(t *testing.T) {
	full := buildC(t, "gcc", "prog.c", "-O2", "-rdynamic")
	stripped := buildC(t, "gcc", "prog.c", "-O2", "-rdynamic", "-s")
	ef, err := elf.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if _, err := ef.Symbols(); err != elf.ErrNoSymbols {
		t.Fatalf("the stripped binary has a .symtab (err %v)", err)
	}
	syms, err := openT(t, stripped).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstSymtab(t, syms, dyn)
	fullSyms, err := openT(t, full).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	// Exported functions keep their names and addresses; the static cmp is gone.
	for _, fn := range []string{"main", "compute", "puts@plt", "qsort@plt"} {
		if got, want := named(t, syms, fn), named(t, fullSyms, fn); got != want {
			t.Errorf("stripped %+v, unstripped %+v", got, want)
		}
	}
	for _, s := range syms {
		if s.Name == "cmp" {
			t.Errorf("static cmp found in a stripped binary at %#x", s.Addr)
		}
	}
}

func TestSymbolsLibc(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s: %v", libc, err)
	}
	syms, err := openT(t, libc).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	dyn, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstSymtab(t, syms, dyn)
	want := map[string]uint64{}
	for _, s := range dyn {
		if (s.Name == "malloc" || s.Name == "qsort" || s.Name == "write") && !s.VersionIndex.IsHidden() {
			want[s.Name] = s.Value
		}
	}
	for name, addr := range want {
		if got := named(t, syms, name); got.Addr != addr || got.Size == 0 {
			t.Errorf("%s = %+v, want address %#x and a size", name, got, addr)
		}
	}
	if len(want) != 3 {
		t.Errorf("libc's .dynsym lacks some of malloc, qsort, write: %v", want)
	}
}

func TestSymbolsCXX(t *testing.T) {
	exe := buildC(t, "g++", "prog.cc", "-O1")
	syms, err := openT(t, exe).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	long := map[string]bool{}
	short := map[string]bool{}
	for _, s := range syms {
		long[Demangle(s.Name, NameLong)] = true
		short[Demangle(s.Name, NameShort)] = true
	}
	for _, n := range []string{"ns::plain(int, double)", "ns::Box<int>::get() const", "ns::Box<double>::get() const", "long ns::twice<long>(long)", "main"} {
		if !long[n] {
			t.Errorf("no symbol demangles to %q", n)
		}
	}
	for _, n := range []string{"ns::plain", "ns::Box::get", "ns::twice", "std::vector::_M_realloc_insert"} {
		if !short[n] {
			t.Errorf("no symbol demangles (short) to %q", n)
		}
	}
}

func TestBetterAlias(t *testing.T) {
	sym := func(name string, bind elf.SymBind) elf.Symbol {
		return elf.Symbol{Name: name, Info: elf.ST_INFO(bind, elf.STT_FUNC)}
	}
	cases := []struct{ a, b elf.Symbol }{
		{sym("malloc", elf.STB_GLOBAL), sym("__libc_malloc", elf.STB_GLOBAL)},
		{sym("write", elf.STB_WEAK), sym("__write", elf.STB_GLOBAL)},
		{sym("__x", elf.STB_GLOBAL), sym("x", elf.STB_LOCAL)},
		{sym("f", elf.STB_GLOBAL), sym("g", elf.STB_WEAK)},
		{sym("ab", elf.STB_GLOBAL), sym("abc", elf.STB_GLOBAL)},
		{sym("ab", elf.STB_GLOBAL), sym("ac", elf.STB_GLOBAL)},
	}
	for _, c := range cases {
		if !betterAlias(c.a, c.b) || betterAlias(c.b, c.a) {
			t.Errorf("want %s preferred over %s", c.a.Name, c.b.Name)
		}
	}
}

func TestPublicNamesAndDuplicates(t *testing.T) {
	fn := func(name string, bind elf.SymBind, addr uint64) elf.Symbol {
		return elf.Symbol{Name: name, Info: elf.ST_INFO(bind, elf.STT_FUNC), Section: 16, Value: addr, Size: 16}
	}
	file := func(name string) elf.Symbol {
		return elf.Symbol{Name: name, Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_FILE), Section: elf.SHN_ABS}
	}
	syms := []elf.Symbol{
		file("printf_fp.c"),
		fn("__GI___printf_fp_l.cold", elf.STB_LOCAL, 0x100),
		fn("__GI___printf_fp_l", elf.STB_LOCAL, 0x200),
		fn("__printf_fp_l", elf.STB_LOCAL, 0x200),
		file("a.c"),
		fn("init", elf.STB_LOCAL, 0x300),
		fn("twice", elf.STB_LOCAL, 0x400),
		fn("twice", elf.STB_LOCAL, 0x500),
		file("b.c"),
		fn("init", elf.STB_LOCAL, 0x600),
		fn("main", elf.STB_LOCAL, 0x700), // a local main beside the program's
		fn("main", elf.STB_GLOBAL, 0x800),
	}
	got := map[uint64]string{}
	for _, s := range functionSymbols(syms) {
		got[s.Addr] = s.Name
	}
	want := map[uint64]string{
		0x100: "__printf_fp_l.cold", 0x200: "__printf_fp_l",
		0x300: "init (a.c)", 0x600: "init (b.c)",
		0x400: "twice (a.c)@0x400", 0x500: "twice (a.c)@0x500",
		0x700: "main (b.c)", 0x800: "main",
	}
	for addr, name := range want {
		if got[addr] != name {
			t.Errorf("at %#x: %q, want %q", addr, got[addr], name)
		}
	}
}
