package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrippedFunctions: a stripped program's three static functions doing 5, 3 and 2 units are three
// functions, named by the program and their start address and found by their call frame entries,
// each with the CPU time it measured itself (issue 12, acceptance 1). Before, all of the program was
// one "<static>" function.
func TestStrippedFunctions(t *testing.T) {
	needCollect(t)
	stripTool, err := exec.LookPath("strip")
	if err != nil {
		t.Skip("strip (binutils) is not installed")
	}
	full := cprog(t, "stripped")
	bin := filepath.Join(t.TempDir(), "stripped")
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(stripTool, bin).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, out)
	}
	// The addresses of the functions, from the unstripped copy.
	f, err := elf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	exp, r := collectExp(t, []string{"ER_TEST_UNIT=0.025"}, "-p", "hi", bin)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	// Inclusive: the program's thread CPU clock counts the kernel's work done while each function
	// ran (its clock_gettime calls, and being preempted on a busy machine).
	excl, incl := functionTimes(t, exp)
	for _, fn := range []string{"five", "three", "two"} {
		name := fmt.Sprintf("stripped+0x%x", addr[fn])
		got, want := incl[name], m[fn]
		t.Logf("%s (%s): %.4f s, measured %.4f s (%.1f%%)", name, fn, got, want, 100*got/want)
		if want < 0.1 || abs(got-want) > 0.05*want {
			t.Errorf("%s (%s): %.4f s inclusive, the program measured %.4f s", name, fn, got, want)
		}
	}
	// None of the program's own is "<static>" (the loader's local functions, where the threads wait as
	// the program starts, are: README, "Not done yet").
	for name := range excl {
		if strings.HasPrefix(name, "<static>") && strings.HasSuffix(name, "(<stripped>)") {
			t.Errorf("a <static> function of the program remains: %s", name)
			// (Once in a CI run, at 0x10a2: the return address of _start's call of __libc_start_main,
			// as a leaf, just past _start's FDE. Which events, and their stacks:)
			r := er(t, "", nil, "print", "-header", "-calltree", exp)
			lines := strings.Split(r.stdout, "\n")
			t.Logf("er print -header -calltree:\n%s", strings.Join(lines[:min(len(lines), 150)], "\n"))
		}
	}
}
