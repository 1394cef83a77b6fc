package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// ompWork parses what testdata/ompprog.c measured of itself: each construct's work (ns of its
// threads' CPU clocks) by function and thread.
func ompWork(t *testing.T, out string) map[string]map[int]float64 {
	t.Helper()
	work := map[string]map[int]float64{}
	for _, line := range strings.Split(out, "\n") {
		// omp FUNCTION thread T work_ns W wait_ns X
		f := strings.Fields(line)
		if len(f) != 8 || f[0] != "omp" || f[2] != "thread" || f[4] != "work_ns" {
			continue
		}
		th, err1 := strconv.Atoi(f[3])
		ns, err2 := strconv.ParseFloat(f[5], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("ompprog printed %q", line)
		}
		if work[f[1]] == nil {
			work[f[1]] = map[int]float64{}
		}
		work[f[1]][th] += ns / 1e9
	}
	if len(work) != 8 {
		t.Fatalf("ompprog measured %d constructs, want main and 7:\n%s", len(work), out)
	}
	return work
}

// TestOpenMPMachineMode: an OpenMP program (gcc's libgomp, 2 threads, the passive wait policy, so
// that waiting costs little CPU) in machine mode, the raw stacks: each construct's outlined function
// (f._omp_fn.0) holds the work of both threads, the function that holds the region only the
// master's, and spin every thread's work, each within 5% of what the program measured with its
// threads' CPU clocks. This is the machine mode that issue 29's user mode is to leave unchanged.
func TestOpenMPMachineMode(t *testing.T) {
	needCollect(t)
	prog := cbuild(t, "ompprog", "-fopenmp", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline")
	// -p hi: a sample of 1 ms is 1% of the shortest part measured (0.1 s).
	exp, r := collectExp(t, []string{"OMP_NUM_THREADS=2", "OMP_WAIT_POLICY=passive"}, "-p", "hi", prog)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	work := ompWork(t, r.stdout)
	p := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-functions", exp)
	if p.code != 0 {
		t.Fatalf("er print: exit %d\n%s", p.code, p.stderr)
	}
	incl := functionRows(p.stdout, 1)
	check := func(name string, want float64) {
		t.Helper()
		got, err := strconv.ParseFloat(incl[name], 64)
		if err != nil {
			t.Errorf("%s: no inclusive time in er print's functions (%q)", name, incl[name])
			return
		}
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("%s: inclusive %.3f s, the program measured %.3f s (not within 5%%)", name, got, want)
		}
	}
	var all float64
	for fn, threads := range work {
		for _, ns := range threads {
			all += ns
		}
		if fn == "main" {
			continue
		}
		check(fn+"._omp_fn.0", threads[0]+threads[1])
		check(fn, threads[0])
	}
	check("spin", all)
	if t.Failed() {
		t.Logf("ompprog:\n%ser print:\n%s", r.stdout, p.stdout)
	}
}
