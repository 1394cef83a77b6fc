package main

import "testing"

// TestGoSystemStack: a Go program's garbage collector runs on the system stack (runtime.systemstack
// switches to the thread's g0 stack), and its stacks go on through the switch to the goroutine's
// frames, as Go's own traceback does (issue 12). Before, they stopped at runtime.systemstack, cut off
// from the goroutine (here gcBgMarkWorker had 0.001 s inclusive of 1.0 s), or failed (10.9% of the
// stacks of a GC-heavy program that ran on the main thread ended in <Unwind-failed>).
func TestGoSystemStack(t *testing.T) {
	needCollect(t)
	prog := goProg(t, "gogc")
	exp, r := collectExp(t, nil, "-p", "hi", prog, "-cpu", "1")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	excl, incl := functionTimes(t, exp)
	total := excl["<Total>"]
	failed := incl["<Unwind-failed>"] + incl["<Truncated-stack>"]
	t.Logf("total %.3f s; incomplete stacks %.3f s (%.2f%%); gcBgMarkWorker %.3f s, systemstack %.3f s",
		total, failed, 100*failed/total, incl["runtime.gcBgMarkWorker"], incl["runtime.systemstack.abi0"])
	if failed > 0.01*total {
		t.Errorf("%.3f s of %.3f s (%.1f%%) in incomplete stacks, want at most 1%%", failed, total, 100*failed/total)
	}
	if incl["runtime.gcBgMarkWorker"] < 0.05*total || incl["runtime.systemstack.abi0"] < 0.05*total {
		t.Errorf("gcBgMarkWorker %.3f s, systemstack %.3f s inclusive of %.3f s: the GC's stacks do not reach the goroutine",
			incl["runtime.gcBgMarkWorker"], incl["runtime.systemstack.abi0"], total)
	}
}
