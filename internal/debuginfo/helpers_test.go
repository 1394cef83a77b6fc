package debuginfo

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// build compiles testdata/src with compiler and flags into dir (a new
// temporary directory when ""), as a file named out, and returns its path.
// It skips the test when the compiler is missing.
func build(t testing.TB, dir, out, compiler, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("%s not installed: %v", compiler, err)
	}
	if dir == "" {
		dir = t.TempDir()
	}
	srcPath, err := filepath.Abs(filepath.Join("testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, out)
	args := append(append([]string{}, flags...), "-o", p, srcPath)
	if b, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
	return p
}

// run runs a command, failing the test when it fails.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

// markers maps the NAME of each "MARK NAME" comment in testdata/src to its line.
func markers(t testing.TB, src string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]int)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		if _, after, ok := strings.Cut(sc.Text(), "MARK "); ok {
			m[strings.Fields(after)[0]] = n
		}
	}
	return m
}

// symbols maps the names of the function symbols of the ELF file at path to them.
func symbols(t testing.TB, path string) map[string]elf.Symbol {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]elf.Symbol)
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			m[s.Name] = s
		}
	}
	return m
}

// sym returns the symbol name of the ELF file at path.
func sym(t testing.TB, path, name string) elf.Symbol {
	t.Helper()
	s, ok := symbols(t, path)[name]
	if !ok {
		t.Fatalf("%s: no symbol %s", path, name)
	}
	return s
}

// open opens path with the given debug directories, failing the test on error.
func open(t testing.TB, path string, dirs ...string) *Info {
	t.Helper()
	in, err := OpenWith(path, dirs)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// a2lFrame is one frame as addr2line prints it.
type a2lFrame struct {
	fn   string
	file string
	line int
}

// addr2line runs addr2line -a -f -i on pcs and returns the frames of each,
// innermost first. It skips the test when addr2line is missing.
func addr2line(t testing.TB, path string, pcs []uint64) map[uint64][]a2lFrame {
	t.Helper()
	if _, err := exec.LookPath("addr2line"); err != nil {
		t.Skipf("addr2line not installed: %v", err)
	}
	args := []string{"-a", "-f", "-i", "-e", path}
	for _, pc := range pcs {
		args = append(args, "0x"+strconv.FormatUint(pc, 16))
	}
	out, err := exec.Command("addr2line", args...).Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	res := make(map[uint64][]a2lFrame)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var cur uint64
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "0x") {
			v, err := strconv.ParseUint(l[2:], 16, 64)
			if err != nil {
				t.Fatalf("addr2line output %q: %v", l, err)
			}
			cur = v
			continue
		}
		if i+1 >= len(lines) {
			t.Fatalf("addr2line output ends after %q", l)
		}
		loc := lines[i+1]
		i++
		if j := strings.Index(loc, " (discriminator"); j >= 0 {
			loc = loc[:j]
		}
		file, ls := loc, ""
		if k := strings.LastIndexByte(loc, ':'); k >= 0 {
			file, ls = loc[:k], loc[k+1:]
		}
		n, _ := strconv.Atoi(ls)
		res[cur] = append(res[cur], a2lFrame{fn: l, file: file, line: n})
	}
	return res
}
