package objfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/experiment"
)

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ks(name string, addr, size uint64) experiment.Symbol {
	return experiment.Symbol{Name: name, Addr: addr, Size: size, Kind: experiment.SymKernel}
}

func TestKallsymsFile(t *testing.T) {
	p := writeTemp(t, `ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 t helper
ffffffff81000180 D some_data
ffffffff81000040 T start_kernel
ffffffff81000200 W weak_fn
ffffffff81000300 T _etext
ffffffffc0000000 t mod_fn	[mymod]
ffffffffc0000020 t mod_fn2	[mymod]
ffffffffc0000050 d mod_data	[mymod]
ffffffffc0001000 T other_fn	[other]
`)
	got, err := Kallsyms(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []experiment.Symbol{
		ks("_stext", 0xffffffff81000000, 0x40),
		ks("start_kernel", 0xffffffff81000040, 0xc0),
		ks("helper", 0xffffffff81000100, 0x80),
		ks("weak_fn", 0xffffffff81000200, 0x100),
		ks("_etext", 0xffffffff81000300, 0),
		ks("mod_fn [mymod]", 0xffffffffc0000000, 0x20),
		ks("mod_fn2 [mymod]", 0xffffffffc0000020, 0x30),
		ks("other_fn [other]", 0xffffffffc0001000, 0),
	}
	if len(got) != len(want) {
		t.Fatalf("got %d symbols %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("symbol %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestKallsymsErrors(t *testing.T) {
	hidden := writeTemp(t, "0000000000000000 T _stext\n0000000000000000 t foo\n")
	if _, err := Kallsyms(hidden); !errors.Is(err, ErrNoKernelAddresses) {
		t.Errorf("all-zero kallsyms: err = %v, want ErrNoKernelAddresses", err)
	}
	bad := writeTemp(t, "ffffffff81000000 T ok\nzzzz T bad\n")
	if _, err := Kallsyms(bad); err == nil || !strings.Contains(err.Error(), bad+":2: bad address") {
		t.Errorf("bad address: err = %v, want one naming %s:2", err, bad)
	}
	short := writeTemp(t, "ffffffff81000000 T\n")
	if _, err := Kallsyms(short); err == nil || !strings.Contains(err.Error(), "malformed kallsyms line") {
		t.Errorf("short line: err = %v", err)
	}
}

func TestKallsymsProc(t *testing.T) {
	syms, err := Kallsyms("/proc/kallsyms")
	if errors.Is(err, ErrNoKernelAddresses) || os.Geteuid() != 0 {
		t.Skipf("kernel addresses not readable here (euid %d): %v", os.Geteuid(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(syms) < 1000 {
		t.Fatalf("only %d kernel text symbols", len(syms))
	}
	found := false
	for i, s := range syms {
		if i > 0 && syms[i-1].Addr >= s.Addr {
			t.Fatalf("not sorted/deduplicated at %d: %+v then %+v", i, syms[i-1], s)
		}
		if s.Name == "schedule" {
			found = true
			if s.Addr < experiment.KernelBase || s.Size == 0 || s.Size > 1<<16 {
				t.Errorf("schedule = %+v, want a kernel address and a plausible size", s)
			}
		}
	}
	if !found {
		t.Error("no schedule symbol")
	}
}

func TestSplitKernelName(t *testing.T) {
	for _, c := range [][3]string{
		{"schedule", "schedule", ""},
		{"mod_fn [mymod]", "mod_fn", "mymod"},
		{"odd[", "odd[", ""},
	} {
		if fn, mod := SplitKernelName(c[0]); fn != c[1] || mod != c[2] {
			t.Errorf("SplitKernelName(%q) = %q, %q; want %q, %q", c[0], fn, mod, c[1], c[2])
		}
	}
}
