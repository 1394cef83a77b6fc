package disasm

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildProg compiles testdata/prog.c, skipping the test without gcc.
func buildProg(t *testing.T, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("gcc not installed: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "prog")
	args := append(append([]string{}, flags...), "-o", exe, "testdata/prog.c")
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return exe
}

func TestCode(t *testing.T) {
	for _, flags := range [][]string{{"-O2"}, {"-O2", "-no-pie"}} {
		exe := buildProg(t, flags...)
		ef, err := elf.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		text := ef.Section(".text")
		want, err := text.Data()
		if err != nil {
			t.Fatal(err)
		}
		ef.Close()
		got, err := Code(exe, text.Addr, text.Addr+text.Size)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%v: Code(.text) = %d bytes, %v; want the %d bytes of the section", flags, len(got), err, len(want))
		}
		got, err = Code(exe, text.Addr+4, text.Addr+12)
		if err != nil || !bytes.Equal(got, want[4:12]) {
			t.Errorf("%v: Code(.text+4, +12) = % x %v, want % x", flags, got, err, want[4:12])
		}
	}
}

func TestCodeErrors(t *testing.T) {
	exe := buildProg(t, "-O2", "-g")
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	text := ef.Section(".text")
	ef.Close()
	dbg := filepath.Join(t.TempDir(), "prog.debug")
	if b, err := exec.Command("objcopy", "--only-keep-debug", exe, dbg).CombinedOutput(); err != nil {
		t.Skipf("objcopy: %v %s", err, b)
	}
	notELF := filepath.Join(t.TempDir(), "text")
	os.WriteFile(notELF, []byte("hello, world"), 0o644)
	for _, c := range []struct {
		path   string
		lo, hi uint64
		want   string
	}{
		{exe, 0x10, 0x10, "bad address range [0x10,0x10)"},
		{exe, 0, MaxCode + 1, "bad address range"},
		{exe, 0x7000_0000, 0x7000_0010, "no segment or section holds the bytes of [0x70000000,0x70000010)"},
		{dbg, text.Addr, text.Addr + 16, "only-keep-debug"},
		{notELF, 0, 16, "not an ELF file (it does not start with ELF's magic number; what it holds is not shown)"},
		{filepath.Join(t.TempDir(), "absent"), 0, 16, "no such file"},
	} {
		_, err := Code(c.path, c.lo, c.hi)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Code(%s, %#x, %#x) error %v, want %q", filepath.Base(c.path), c.lo, c.hi, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "68 65 6c 6c") { // the bytes of notELF (issue 27, item 22)
			t.Errorf("Code(%s): %v shows the file's bytes", filepath.Base(c.path), err)
		}
	}
}
