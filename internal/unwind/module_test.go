package unwind

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var osGetpid = os.Getpid

func TestParseMaps(t *testing.T) {
	maps := `55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/prog
55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/prog
7f0000000000-7f0000021000 rw-p 00000000 00:00 0
7f1000028000-7f10001bd000 r-xp 00028000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f2000000000-7f2000002000 r-xp 00000000 00:00 0 [vdso]
7f3000000000-7f3000001000 r-xp 00000000 08:01 7 /tmp/a file with spaces (deleted)
garbage line
zz-10 r-xp 0 0 0 /x
`
	got := ParseMaps([]byte(maps))
	if len(got) != 6 {
		t.Fatalf("ParseMaps found %d mappings, want 6: %+v", len(got), got)
	}
	want := []Mapping{
		{0x55d0c0a00000, 0x55d0c0a01000, 0, false, "/usr/bin/prog"},
		{0x55d0c0a01000, 0x55d0c0a02000, 0x1000, true, "/usr/bin/prog"},
		{0x7f0000000000, 0x7f0000021000, 0, false, ""},
		{0x7f1000028000, 0x7f10001bd000, 0x28000, true, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{0x7f2000000000, 0x7f2000002000, 0, true, "[vdso]"},
		{0x7f3000000000, 0x7f3000001000, 0, true, "/tmp/a file with spaces (deleted)"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSpace(t *testing.T) {
	var s Space
	s.Add(&Module{Start: 0x1000, End: 0x5000, Offset: 0, Path: "a"})
	s.Add(&Module{Start: 0x8000, End: 0x9000, Offset: 0x2000, Path: "b"})
	if m := s.Find(0x1000); m == nil || m.Path != "a" {
		t.Errorf("Find(0x1000) = %+v", m)
	}
	if m := s.Find(0x8fff); m == nil || m.Path != "b" {
		t.Errorf("Find(0x8fff) = %+v", m)
	}
	for _, pc := range []uint64{0, 0xfff, 0x5000, 0x7fff, 0x9000} {
		if m := s.Find(pc); m != nil {
			t.Errorf("Find(%#x) = %+v, want nil", pc, m)
		}
	}
	// A mapping in the middle of "a" splits it; the right part's offset moves with it.
	s.Add(&Module{Start: 0x2000, End: 0x3000, Offset: 0, Path: "c"})
	var desc []string
	for _, m := range s.Modules() {
		desc = append(desc, strings.Join([]string{m.Path, hex(m.Start), hex(m.End), hex(m.Offset)}, " "))
	}
	want := "a 0x1000 0x2000 0x0, c 0x2000 0x3000 0x0, a 0x3000 0x5000 0x2000, b 0x8000 0x9000 0x2000"
	if got := strings.Join(desc, ", "); got != want {
		t.Errorf("after the split: %s\nwant %s", got, want)
	}
	if m := s.Find(0x3000); m == nil || m.Path != "a" || m.Offset != 0x2000 {
		t.Errorf("Find(0x3000) = %+v", m)
	}
	s.Remove(0x0, 0x2800)
	if m := s.Find(0x2000); m != nil {
		t.Errorf("Find(0x2000) after Remove = %+v", m)
	}
	if m := s.Find(0x2800); m == nil || m.Path != "c" || m.Start != 0x2800 || m.Offset != 0x800 {
		t.Errorf("Find(0x2800) after Remove = %+v", m)
	}
	c := s.Clone()
	c.Remove(0, 1<<40)
	if len(c.Modules()) != 0 || len(s.Modules()) != 3 {
		t.Errorf("Clone shares its modules: clone %d, original %d", len(c.Modules()), len(s.Modules()))
	}
}

func hex(v uint64) string { return fmt.Sprintf("%#x", v) }

func TestCache(t *testing.T) {
	var c Cache
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err == nil {
		t1, err1 := c.Table(libc)
		t2, err2 := c.Table(libc)
		if err1 != nil || err2 != nil || t1 != t2 || t1.Name() != libc {
			t.Errorf("Table(libc) twice: %p %v, %p %v; want one table", t1, err1, t2, err2)
		}
	}
	for _, p := range []string{"[heap]", "", "//anon", "/nonexistent/lib.so"} {
		tab, err := c.Table(p)
		if tab != nil || err == nil {
			t.Errorf("Table(%q) = %v, %v; want an error", p, tab, err)
		}
		if _, err2 := c.Table(p); err2 != err {
			t.Errorf("Table(%q): the error was not cached", p)
		}
	}
	if _, err := c.TableFromImage("junk", []byte("not an ELF image")); err == nil || !strings.Contains(err.Error(), "junk") {
		t.Errorf("TableFromImage(junk) = %v, want an error naming it", err)
	}
	// Paths: every object asked for, loaded or not, once.
	got := c.Paths()
	slices.Sort(got)
	want := []string{"", "//anon", "/nonexistent/lib.so", "[heap]", "junk"}
	if _, err := os.Stat(libc); err == nil {
		want = append(want, libc)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Paths() = %q, want %q", got, want)
	}
}

func TestVDSO(t *testing.T) {
	var c Cache
	tab, err := c.Table("[vdso]")
	if err != nil {
		t.Skip(err)
	}
	a := loadElfSyms("[vdso]")
	if a == nil {
		t.Skip("cannot read the vdso's symbols")
	}
	data, _ := os.ReadFile("/proc/self/maps")
	var vdso *Mapping
	for _, m := range ParseMaps(data) {
		if m.Path == "[vdso]" {
			vdso = &m
		}
	}
	if vdso == nil {
		t.Skip("no [vdso] mapping")
	}
	m := NewModule(vdso.Start, vdso.End, vdso.Offset, "[vdso]", tab)
	if m.Table == nil || m.Bias != vdso.Start {
		t.Errorf("vdso module: table %v, bias %#x; want the mapping start %#x", m.Table != nil, m.Bias, vdso.Start)
	}
	checked := 0
	for _, s := range a.syms {
		if !strings.Contains(s.Name, "clock_gettime") {
			continue
		}
		r, err := tab.Row(s.Value)
		if err != nil {
			t.Errorf("vdso %s: %v", s.Name, err)
			continue
		}
		if r.CFA.Kind != RuleRegister || r.CFA.Reg != RegRSP || r.CFA.Offset != 8 || r.Regs[16].Offset != -8 {
			t.Errorf("vdso %s entry row: CFA %v RA %v", s.Name, r.CFA, r.Regs[16])
		}
		checked++
	}
	if checked == 0 {
		t.Error("no clock_gettime in the vdso's symbols")
	}
}

// TestLazyModule: a lazy module reads its table only when the unwinder first needs it, and then has
// the table and bias NewModule gives.
func TestLazyModule(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	maps, _ := os.ReadFile("/proc/self/maps")
	var text *Mapping
	for _, m := range ParseMaps(maps) {
		if m.Exec && m.Path == exe {
			text = &m
		}
	}
	if text == nil {
		t.Skipf("no executable mapping of %s", exe)
	}
	var c Cache
	m := NewLazyModule(text.Start, text.End, text.Offset, exe, &c)
	if m.Table != nil || len(c.tables) != 0 {
		t.Fatalf("a lazy module read its table when made: %v, %d tables", m.Table != nil, len(c.tables))
	}
	var s Space
	s.Add(m)
	if s.Find(text.Start) != m || len(c.tables) != 0 {
		t.Fatalf("finding a lazy module read its table: %d tables", len(c.tables))
	}
	tab, err := c.Table(exe)
	if err != nil {
		t.Fatal(err)
	}
	eager := NewModule(text.Start, text.End, text.Offset, exe, tab)
	if got := m.table(); got != tab || m.Bias != eager.Bias || m.Table == nil {
		t.Errorf("lazy module: table %p bias %#x; want %p, %#x", got, m.Bias, tab, eager.Bias)
	}
}
