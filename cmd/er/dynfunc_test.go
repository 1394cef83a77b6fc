package main

import (
	"math"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestCollectorFuncLoad: a program that generates code and names it with the collector API
// (testdata/jitgen.c: collector_func_load, then collector_func_unload and other code at the same
// address) is profiled with no option: er collect loads its library because the program calls the
// API. Each generated function holds the CPU time the program measured of it (thread CPU clock)
// within 5%, under its caller; its disassembly, from the instructions the library copied, shows its
// lines; and the program runs as well without er, where the calls do nothing.
func TestCollectorFuncLoad(t *testing.T) {
	prog := cprog(t, "jitgen")
	if out, err := exec.Command(prog, "0.05").CombinedOutput(); err != nil || !strings.Contains(string(out), "jit jit_other cpu_ns") {
		t.Fatalf("jitgen without er: %v\n%s", err, out)
	}
	// -p hi: a sample of 1 ms is 0.25% of the shorter function's 0.4 s.
	exp, r := collectExp(t, nil, "-p", "hi", prog)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	want := measured(t, r.stdout)
	p := er(t, "", nil, "print", "-metrics", "e.totalcpu", "-functions", exp)
	rows := javaRows(p.stdout)
	for _, fn := range []string{"jit_spin", "jit_other"} {
		w := want["jit "+fn+" cpu_ns"] / 1e9
		if got := rows[fn]; w == 0 || math.Abs(got-w) > 0.05*w {
			t.Errorf("%s: exclusive %.3f s, the program measured %.3f s (want within 5%%)", fn, got, w)
		}
	}
	cc := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-csingle", "jit_spin", exp)
	callers, _, _ := strings.Cut(cc.stdout, "Stack Fragment")
	if !regexp.MustCompile(`(?m)^\s*[0-9.]+\s+run\s*$`).MatchString(callers) {
		t.Errorf("jit_spin's callers do not list run:\n%s", cc.stdout)
	}
	// The disassembly, at the page's address in the process: the loop's instruction (offset 7), of
	// line 11, holds the samples; the object is the dynamic functions'.
	d := er(t, "", nil, "print", "-metrics", "e.totalcpu", "-disasm", "jit_spin", exp)
	if !strings.Contains(d.stdout, "<DYNAMIC_FUNCTIONS>") ||
		!regexp.MustCompile(`(?m)^##\s+[0-9.]+\s+\[\s*11\]\s+[0-9a-f]*007:\s+dec\s+%rax`).MatchString(d.stdout) {
		t.Errorf("jit_spin's disassembly has no hot dec %%rax of line 11:\n%s", d.stdout)
	}
	if t.Failed() {
		t.Logf("jitgen:\n%ser print:\n%s", r.stdout, p.stdout)
	}
}
