package erprint

import (
	"strings"
	"testing"

	"er/internal/experiment"
)

// TestGoldenDisasm: annotated disassembly of functions, with the source interleaved when found,
// inlined code marked, calls named; a file's functions; CSV; errors.
func TestGoldenDisasm(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"disasm_caller1", []string{"-pathmap", "/src", ".", "-disasm", "caller1"}, exitOK},
		{"disasm_main_no_source", []string{"-dthresh", "50", "-disasm", "main"}, exitOK},
		{"disasm_file", []string{"-setpath", "testdata", "-disasm", "annotate.c"}, exitOK},
		{"disasm_csv", []string{"-printmode", "csv", "-pathmap", "/src", ".", "-disasm", "caller2"}, exitOK},
		{"disasm_inlined", []string{"-disasm", "hot"}, exitError},
		{"disasm_bad_threshold", []string{"-dthresh", "x"}, exitUsage},
	}
	for _, c := range cases {
		got, code := runAnnotate(t, c.args...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, got)
		}
		checkGolden(t, c.name, got)
	}
	// Without the load object's file, no code.
	got, code := runCase([]string{"-disasm", "compute", "demo.1.er"}, "")
	if code != exitError || !strings.Contains(got, "compute: no code: /home/user/demo/demo cannot be read") {
		t.Errorf("exit %d\n%s", code, got)
	}
}

func TestSymbolizer(t *testing.T) {
	s := newSession(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, annotateEnv())
	if err := s.load([]string{"annotate.1.er"}); err != nil {
		t.Fatal(err)
	}
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	o := p.Functions[fn(t, p, "main")].Object
	sym := s.symbolizer(p, o)
	a := p.ObjectArchive(o)
	var mainAddr uint64
	for _, x := range a.Symbols {
		if x.Name == "main" && x.Kind == experiment.SymFunc {
			mainAddr = x.Addr
		}
	}
	for addr, want := range map[uint64]string{mainAddr: "main", mainAddr + 0x1a: "main+0x1a", 0x10: "", 0x7fffffff: ""} {
		got, ok := sym(addr)
		if got != want || ok != (want != "") {
			t.Errorf("symbolize(%#x) = %q, %v; want %q", addr, got, ok, want)
		}
	}
}

// fn finds the only function named name.
func fn(t *testing.T, p interface{ FindFunctions(string) []int }, name string) int {
	t.Helper()
	fs := p.FindFunctions(name)
	if len(fs) != 1 {
		t.Fatalf("%d functions named %q", len(fs), name)
	}
	return fs[0]
}
