package archive

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
	"er/internal/objfile"
)

func TestBuild(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("gcc not installed: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "hello")
	if out, err := exec.Command("gcc", "-O2", "-Wl,--build-id=0xfeedface01", "-o", exe, "testdata/hello.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	a, err := Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != exe || a.Kind != "elf" || a.Size != st.Size() || a.Mtime != st.ModTime().UnixNano() || a.BuildID != "feedface01" {
		t.Errorf("Build = {Path %s Kind %s Size %d Mtime %d BuildID %s}, want {%s elf %d %d feedface01}",
			a.Path, a.Kind, a.Size, a.Mtime, a.BuildID, exe, st.Size(), st.ModTime().UnixNano())
	}
	// Describe: the same archive without its symbols.
	d, err := Describe(exe)
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != a.Path || d.Kind != a.Kind || d.Size != a.Size || d.Mtime != a.Mtime || d.BuildID != a.BuildID ||
		!slices.Equal(d.Segments, a.Segments) || len(d.Symbols) != 0 || len(a.Segments) == 0 {
		t.Errorf("Describe = %+v; want Build's %+v without its symbols", d, *a)
	}
	if _, err := Describe(filepath.Join(t.TempDir(), "gone")); err == nil {
		t.Errorf("Describe of a missing file: no error")
	}
	// A PC inside work, as a file offset from .text's header, maps back to work.
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	text := ef.Section(".text")
	for _, want := range []string{"work", "main", "printf@plt"} {
		var addr uint64
		for _, s := range syms {
			if s.Name == want {
				addr = s.Value
			}
		}
		sec := text
		if want == "printf@plt" {
			for _, s := range a.Symbols {
				if s.Name == want {
					addr = s.Addr
				}
			}
			sec = ef.Section(".plt")
		}
		if addr == 0 {
			t.Fatalf("no %s in the binary", want)
		}
		off := addr + 3 - sec.Addr + sec.Offset
		vaddr, ok := FileOffsetToVaddr(a, off)
		if !ok || vaddr != addr+3 {
			t.Errorf("%s: FileOffsetToVaddr(%#x) = %#x, %v; want %#x", want, off, vaddr, ok, addr+3)
			continue
		}
		if s, ok := SymbolAt(a, vaddr); !ok || s.Name != want || s.Addr != addr {
			t.Errorf("SymbolAt(%#x) = %+v, %v; want %s at %#x", vaddr, s, ok, want, addr)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{text, "not an ELF file"},
	} {
		if _, err := Build(c.path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Build(%s) error = %v, want the path and %q", c.path, err, c.want)
		}
	}
}

func TestKernel(t *testing.T) {
	a, err := Kernel()
	if errors.Is(err, objfile.ErrNoKernelAddresses) {
		t.Skipf("kernel addresses hidden here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != "[kernel]" || a.Kind != "kernel" || len(a.Segments) != 0 {
		t.Errorf("Kernel = {%s %s %d segments}, want {[kernel] kernel 0 segments}", a.Path, a.Kind, len(a.Segments))
	}
	if _, err := os.ReadFile(kernelNotesPath); err == nil && len(a.BuildID) < 16 {
		t.Errorf("kernel BuildID = %q, want a hex id from %s", a.BuildID, kernelNotesPath)
	}
	var sched experiment.Symbol
	for _, s := range a.Symbols {
		if s.Name == "schedule" {
			sched = s
		}
	}
	if sched.Addr < experiment.KernelBase {
		t.Fatalf("schedule = %+v, want a kernel address", sched)
	}
	if s, ok := SymbolAt(a, sched.Addr+1); !ok || s != sched {
		t.Errorf("SymbolAt(schedule+1) = %+v, %v", s, ok)
	}
}

func TestKernelHidden(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(p, []byte("0000000000000000 T _stext\n0000000000000000 T schedule\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := kallsymsPath
	kallsymsPath = p
	defer func() { kallsymsPath = old }()
	a, err := Kernel()
	if !errors.Is(err, objfile.ErrNoKernelAddresses) || !strings.Contains(err.Error(), "kptr_restrict") {
		t.Errorf("err = %v, want ErrNoKernelAddresses mentioning kptr_restrict", err)
	}
	if a == nil || a.Kind != "kernel" || len(a.Symbols) != 0 {
		t.Errorf("archive = %+v, want a kernel archive with no symbols", a)
	}
}

func TestVDSO(t *testing.T) {
	a, err := VDSO()
	if errors.Is(err, errNoVDSO) {
		t.Skipf("this process has no vdso: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != "[vdso]" || a.Kind != "vdso" || a.Size < 4096 || len(a.Segments) == 0 {
		t.Errorf("VDSO = {%s %s size %d %d segments}", a.Path, a.Kind, a.Size, len(a.Segments))
	}
	var cg experiment.Symbol
	for _, s := range a.Symbols {
		if s.Name == "__vdso_clock_gettime" || s.Name == "clock_gettime" {
			cg = s
		}
	}
	if cg.Addr == 0 || cg.Size == 0 {
		t.Fatalf("no sized clock_gettime in the vdso: %+v", a.Symbols)
	}
	if s, ok := SymbolAt(a, cg.Addr+cg.Size-1); !ok || s != cg {
		t.Errorf("SymbolAt(last byte of clock_gettime) = %+v, %v", s, ok)
	}
}

func TestVDSORange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "55d0-55e0 r-xp 00000000 08:01 42 /bin/x\n7ffc1000-7ffc3000 r-xp 00000000 00:00 0 [vdso]\n")
	if lo, hi, err := vdsoRange(good); err != nil || lo != 0x7ffc1000 || hi != 0x7ffc3000 {
		t.Errorf("vdsoRange = %#x, %#x, %v", lo, hi, err)
	}
	if _, _, err := vdsoRange(write("none", "55d0-55e0 r-xp 00000000 08:01 42 /bin/x\n")); !errors.Is(err, errNoVDSO) {
		t.Errorf("no vdso: err = %v", err)
	}
	bad := write("bad", "zz-7ffc3000 r-xp 00000000 00:00 0 [vdso]\n")
	if _, _, err := vdsoRange(bad); err == nil || !strings.Contains(err.Error(), bad+":1: bad address range") {
		t.Errorf("bad range: err = %v", err)
	}
}

func TestVDSOImage(t *testing.T) {
	img, err := VDSOImage()
	if err != nil {
		t.Skipf("no vdso here: %v", err)
	}
	if len(img) < 4 || string(img[:4]) != "\x7fELF" {
		t.Errorf("the vdso image (%d bytes) does not start with the ELF magic", len(img))
	}
}
