package collect

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAuxvValue(t *testing.T) {
	vec := func(pairs ...uint64) []byte {
		b := make([]byte, 8*len(pairs))
		for i, v := range pairs {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	for _, tc := range []struct {
		auxv        []byte
		nonzero, ok bool
	}{
		{vec(6, 4096, atSecure, 1, 0, 0), true, true},
		{vec(6, 4096, atSecure, 0, 0, 0), false, true},
		{vec(6, 4096, 0, 0, atSecure, 1), false, false}, // after AT_NULL
		{vec(6, 4096), false, false},
		{vec(atSecure, 1)[:12], false, false}, // cut short
		{nil, false, false},
	} {
		if nonzero, ok := auxvValue(tc.auxv, atSecure); nonzero != tc.nonzero || ok != tc.ok {
			t.Errorf("auxvValue(%x) = %v, %v; want %v, %v", tc.auxv, nonzero, ok, tc.nonzero, tc.ok)
		}
	}
	// This process's own: not secure.
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		t.Skip(err)
	}
	if nonzero, ok := auxvValue(b, atSecure); !ok || nonzero {
		t.Errorf("this test's own AT_SECURE: %v, %v; want 0, present", nonzero, ok)
	}
}

func TestStaticELF(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dyn := filepath.Join(dir, "dyn")
	if out, err := exec.Command("gcc", "-o", dyn, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if staticELF(dyn) {
		t.Error("a dynamically linked program is said to be static")
	}
	if staticELF(src) || staticELF(filepath.Join(dir, "none")) {
		t.Error("a file that is not ELF, or none, is said to be a static program")
	}
	st := filepath.Join(dir, "static")
	if out, err := exec.Command("gcc", "-static", "-o", st, src).CombinedOutput(); err != nil {
		t.Skipf("no static libc: %v\n%s", err, out)
	}
	if !staticELF(st) {
		t.Error("a statically linked program is not said to be static")
	}
}

func TestLibraryMissingReason(t *testing.T) {
	for _, tc := range []struct {
		f    execFacts
		want string
	}{
		{execFacts{secure: true, secureKnown: true, preloadKnown: true}, "set-user-ID, set-group-ID or file-capabilities program: the dynamic loader"},
		{execFacts{secureKnown: true, preloadKnown: true}, "its environment did not preload the collector library"},
		{execFacts{secureKnown: true, preload: true, preloadKnown: true}, "it ended before the library started"},
		{execFacts{}, "its environment did not preload the collector library (the process that ran it cleared LD_PRELOAD or the environment), or it ended"},
		{execFacts{exe: "/nonexistent/prog"}, "or it ended before the library started"},
	} {
		if got := libraryMissingReason(tc.f); !strings.Contains(got, tc.want) {
			t.Errorf("libraryMissingReason(%+v) = %q, want %q in it", tc.f, got, tc.want)
		}
	}
}

func TestReadExecFacts(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	cmd.Env = append(os.Environ(), "LD_PRELOAD=/nonexistent/"+LibraryName)
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := uint32(cmd.Process.Pid)
	// Start returns when exec has passed its point of no return, maybe before the new image's
	// auxiliary vector is set up: the facts are unknown until then.
	var f execFacts
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if f = readExecFacts(pid, "sleep", "/elsewhere/"+LibraryName); f.secureKnown || time.Now().After(deadline) {
			break
		}
		if f.preloadKnown {
			t.Fatalf("facts known in part: %+v", f)
		}
	}
	if !f.secureKnown || f.secure || !f.preloadKnown || !f.preload || !strings.HasSuffix(f.exe, "sleep") {
		t.Errorf("facts of sleep with the library preloaded: %+v", f)
	}
	if f := readExecFacts(pid, "sleep", "/elsewhere/libother.so"); f.preload || !f.preloadKnown {
		t.Errorf("facts of sleep with another library preloaded: %+v", f)
	}
	if f := readExecFacts(pid, "other", "/elsewhere/"+LibraryName); f.secureKnown || f.preloadKnown {
		t.Errorf("facts read for another program than the one exec started: %+v", f)
	}
}
