package archive

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"er/internal/experiment"
)

func TestAddFDEFunctions(t *testing.T) {
	syms := []experiment.Symbol{
		{Name: "exported", Addr: 0x1000, Size: 0x100},
		{Name: "sizeless", Addr: 0x3000},
	}
	rs := [][2]uint64{
		{0x0f00, 0x0f80}, // before every symbol
		{0x1000, 0x1100}, // the exported function itself
		{0x1080, 0x10a0}, // inside it (a nested entry)
		{0x1200, 0x1300}, // in the gap after it: a stripped local function
		{0x3000, 0x3010}, // the sizeless symbol
		{0x3100, 0x3200}, // after a sizeless symbol: a function of its own
	}
	got := addFDEFunctions(syms, rs, "libx.so.1")
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
		if s.Kind == experiment.SymFDE && s.Size == 0 {
			t.Errorf("%s has no size", s.Name)
		}
	}
	want := []string{"libx.so.1+0xf00", "exported", "libx.so.1+0x1200", "sizeless", "libx.so.1+0x3100"}
	if !slices.Equal(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
}

func TestMergeSymbols(t *testing.T) {
	own := []experiment.Symbol{{Name: "malloc", Addr: 0x100, Size: 8}, {Name: "f@plt", Addr: 0x50, Kind: experiment.SymPLT}}
	slices.SortFunc(own, func(a, b experiment.Symbol) int { return int(a.Addr) - int(b.Addr) })
	dbg := []experiment.Symbol{{Name: "__libc_malloc", Addr: 0x100, Size: 32}, {Name: "local_helper", Addr: 0x200, Size: 16}}
	got := mergeSymbols(own, dbg)
	if len(got) != 3 || got[0].Name != "f@plt" || got[1].Name != "malloc" || got[1].Size != 32 || got[2].Name != "local_helper" {
		t.Errorf("mergeSymbols = %+v", got)
	}
}

// TestSeparateDebugSymbols: a stripped program whose debug file is installed by build id (as
// Debian's -dbgsym packages and libc6-dbg install theirs) has its local functions named; without
// the debug file they are named by their call frame entries.
func TestSeparateDebugSymbols(t *testing.T) {
	for _, tool := range []string{"gcc", "objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "local.c")
	code := "static __attribute__((noinline)) int helper(int x) { return x * 3 + 1; }\n" +
		"int main(int argc, char **argv) { (void)argv; return helper(argc); }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "local")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("gcc", "-O1", "-g", "-Wl,--build-id=0xfeedfacecafe01", "-o", exe, src)
	dbgDir := filepath.Join(dir, "debug")
	if err := os.MkdirAll(filepath.Join(dbgDir, ".build-id", "fe"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("objcopy", "--only-keep-debug", exe, filepath.Join(dbgDir, ".build-id", "fe", "edfacecafe01.debug"))
	run("strip", exe)
	names := func() map[string]experiment.Symbol {
		a, err := Build(exe)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]experiment.Symbol{}
		for _, s := range a.Symbols {
			m[s.Name] = s
		}
		return m
	}
	saved := debugDirs
	defer func() { debugDirs = saved }()
	debugDirs = []string{filepath.Join(dir, "none")}
	without := names()
	debugDirs = []string{dbgDir}
	with := names()
	h, ok := with["helper"]
	if !ok || h.Kind != experiment.SymFunc || with["main"].Kind != experiment.SymFunc {
		t.Fatalf("with the debug file: no helper or main symbol in %v", with)
	}
	// Without it, helper and main are functions by their call frame entries, at the same addresses.
	for _, fn := range []string{"helper", "main"} {
		want := with[fn]
		name := "local+0x" + strconv.FormatUint(want.Addr, 16)
		got, ok := without[name]
		if !ok || got.Kind != experiment.SymFDE || got.Addr != want.Addr || got.Size == 0 {
			t.Errorf("without the debug file: %s (%s) is %+v", name, fn, got)
		}
	}
}

// splitLocal builds a program with a static function helper, without a build id, and returns its
// directory and path; the test is skipped without the tools.
func splitLocal(t *testing.T, tools ...string) (dir, exe string, run func(name string, args ...string)) {
	t.Helper()
	for _, tool := range append([]string{"gcc"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	dir = t.TempDir()
	src := filepath.Join(dir, "local.c")
	code := "static __attribute__((noinline)) int helper(int x) { return x * 3 + 1; }\n" +
		"int main(int argc, char **argv) { (void)argv; return helper(argc); }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	run = func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	exe = filepath.Join(dir, "local")
	run("gcc", "-O1", "-g", "-Wl,--build-id=none", "-o", exe, src)
	return dir, exe, run
}

// symbolsOf returns the symbols archive.Build gives the object at path, by name.
func symbolsOf(t *testing.T, path string) map[string]experiment.Symbol {
	t.Helper()
	a, err := Build(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]experiment.Symbol{}
	for _, s := range a.Symbols {
		m[s.Name] = s
	}
	return m
}

// TestDebugLinkSymbols: a stripped program without a build id whose .gnu_debuglink names its debug
// file has its local functions named from that file's .symtab, wherever GDB would find it: beside
// the program, in its .debug/ directory, or under a global debug directory followed by the
// program's directory. A file of that name whose CRC-32 differs is not used.
func TestDebugLinkSymbols(t *testing.T) {
	dir, exe, run := splitLocal(t, "objcopy", "strip")
	want := symbolsOf(t, exe)["helper"]
	if want.Addr == 0 {
		t.Fatal("no helper in the unstripped program")
	}
	run("objcopy", "--only-keep-debug", "local", "local.debug")
	run("strip", "--strip-all", "local")
	run("objcopy", "--add-gnu-debuglink=local.debug", "local")
	global := t.TempDir()
	saved := debugDirs
	defer func() { debugDirs = saved }()
	debugDirs = []string{global}

	debug := filepath.Join(dir, "local.debug")
	fde := "local+0x" + strconv.FormatUint(want.Addr, 16)
	check := func(where string, named bool) {
		t.Helper()
		syms := symbolsOf(t, exe)
		h, ok := syms["helper"]
		if named && (!ok || h.Addr != want.Addr || h.Kind != experiment.SymFunc) {
			t.Errorf("%s: helper is %+v, want at %#x", where, h, want.Addr)
		}
		if f, ok := syms[fde]; named == ok {
			t.Errorf("%s: %s is %+v", where, fde, f)
		}
	}
	check("beside", true)
	for _, p := range []string{filepath.Join(dir, ".debug", "local.debug"), filepath.Join(global, dir, "local.debug")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(debug, p); err != nil {
			t.Fatal(err)
		}
		check(p, true)
		if err := os.Rename(p, debug); err != nil {
			t.Fatal(err)
		}
	}
	// The same debug file with one byte more: another CRC.
	f, err := os.OpenFile(debug, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	check("wrong CRC", false)
}

// TestMiniDebugInfoSymbols: a stripped program whose only names are its MiniDebugInfo (made as
// Fedora's find-debuginfo makes it) has its local function named, not by its call frame entry.
func TestMiniDebugInfoSymbols(t *testing.T) {
	dir, exe, run := splitLocal(t, "objcopy", "strip", "xz")
	want := symbolsOf(t, exe)["helper"]
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("helper\nmain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("objcopy", "--only-keep-debug", "local", "mini")
	run("objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment", "--keep-symbols=keep", "mini", "mini.debug")
	run("xz", "-T1", "mini.debug")
	run("strip", "--strip-all", "local")
	saved := debugDirs
	defer func() { debugDirs = saved }()
	debugDirs = []string{t.TempDir()}
	if h, ok := symbolsOf(t, exe)["helper"]; ok {
		t.Fatalf("stripped: helper is %+v", h)
	}
	run("objcopy", "--add-section", ".gnu_debugdata=mini.debug.xz", "local")
	syms := symbolsOf(t, exe)
	if h := syms["helper"]; h.Addr != want.Addr || h.Kind != experiment.SymFunc || h.Size != want.Size {
		t.Errorf("helper is %+v, want %+v", h, want)
	}
	if m := syms["main"]; m.Kind != experiment.SymFunc {
		t.Errorf("main is %+v", m)
	}
}
