package main

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"er/internal/synth"
)

// functionMetrics returns, by function name, the values of the metrics of spec (an er print metric
// list) in er print -functions on exp, in the list's order.
func functionMetrics(t *testing.T, exp, spec string) map[string][]float64 {
	t.Helper()
	args := []string{"print", "-printmode", "csv", "-metrics", spec, "-limit", "0", "-functions", exp}
	r := er(t, "", nil, args...)
	if r.code != 0 {
		t.Fatalf("er %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	n := strings.Count(spec, ":") + 1
	out := map[string][]float64{}
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.SplitN(line, ",", n+1)
		if len(f) != n+1 || strings.HasSuffix(line, ",name") {
			continue
		}
		var vals []float64
		for _, s := range f[:n] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				vals = nil
				break
			}
			vals = append(vals, v)
		}
		if vals != nil {
			out[f[n]] = vals
		}
	}
	return out
}

// TestCounterFaultsAndSwitches: -h page-faults,1,context-switches,1 with -p on, on a program whose
// functions take known numbers of page faults (new pages of two mappings and of a malloc'd block) and
// context switches (400 sleeps of 1 us: most block), and count their own (getrusage RUSAGE_THREAD): each function's page
// faults and the sleeps' context switches as it counted them, exactly; the clock's CPU time of the spin
// within 3% of its thread CPU clock, as without counters (issue 15, acceptance 1).
func TestCounterFaultsAndSwitches(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "hwcprog")
	// A spin of 1 s: 100 samples at -p on, a sample 1% of it (of 0.5 s, a CI run once found +4.1%: two
	// samples' worth at its edges, beside 11 preemptions).
	exp, r := collectExp(t, nil, "-h", "page-faults,1,context-switches,1", "-p", "on", prog, "1")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	got := functionMetrics(t, exp, "e+page-faults:i+context-switches:i.totalcpu:i.user:i.system")
	if strings.Contains(r.stderr, "samples lost") {
		// The samples carry their threads' counts: what a lost sample stood for is counted at the next.
		t.Logf("er collect: %s", r.stderr)
	}
	for _, fn := range []string{"touch_big", "touch_small", "touch_heap"} {
		want := m["faults "+fn]
		if want < 400 {
			t.Fatalf("%s measured %v faults, want some hundreds: %q", fn, want, r.stdout)
		}
		t.Logf("%s: er %v page faults, measured %v", fn, got[fn], want)
		if len(got[fn]) == 0 || got[fn][0] != want {
			t.Errorf("%s: er %v page faults (exclusive), the function counted %v", fn, got[fn], want)
		}
	}
	if want := m["switches sleep_many"]; want < 300 || len(got["sleep_many"]) == 0 || got["sleep_many"][1] != want {
		t.Errorf("sleep_many: er %v context switches (inclusive), the function counted %v", got["sleep_many"], want)
	}
	want := m["cpu spin_work"]
	t.Logf("spin_work: er %v (faults, switches, CPU, User CPU, System CPU), its thread CPU clock %.4f s", got["spin_work"], want)
	if len(got["spin_work"]) == 0 || abs(got["spin_work"][2]-want) > 0.03*want {
		t.Errorf("spin_work: er %v s of CPU (inclusive), its thread CPU clock %.4f s", got["spin_work"], want)
	}
	// The statistics and the header name the counters.
	st := er(t, "", nil, "print", "-header", "-statistics", exp)
	for _, line := range []string{
		"Counter profiling: page-faults ('Page Faults'), interval 1 events, load-store events.",
		"Counter profiling: context-switches ('Context Switches'), interval 1 events.",
		"Page Faults (page-faults): ",
	} {
		if !strings.Contains(st.stdout, line) {
			t.Errorf("er print -header -statistics has no %q:\n%s", line, st.stdout)
		}
	}
}

// TestCountersAlone: -h without -p records no clock data (as the manual says -h turns the default
// off), and a hardware counter this machine cannot count is refused before the target runs, saying why
// and what can be used instead.
func TestCountersAlone(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "hwcprog")
	exp, r := collectExp(t, nil, "-h", "minor-faults,1", prog, "0.05")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	d := openExp(t, exp)
	if d.ClockTable().Len() != 0 || d.CounterTable().Len() == 0 {
		t.Errorf("%d clock samples, %d counter samples; want none and some", d.ClockTable().Len(), d.CounterTable().Len())
	}
	m := measured(t, r.stdout)
	got := functionMetrics(t, exp, "e+minor-faults")
	if got["touch_small"] == nil || got["touch_small"][0] != m["faults touch_small"] {
		t.Errorf("touch_small: er %v minor faults, measured %v", got["touch_small"], m["faults touch_small"])
	}
	// The default archives (-a usedsrc) hold what the counters' stacks use: the program and its
	// source. Before, er archive took the stacks of clock, heap, sync and I/O events only, and
	// archived nothing here.
	objects, sources := indexed(t, exp)
	src, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "hwcprog.c"))
	if !contains(objects, prog) || !contains(sources, src) {
		t.Errorf("archives of a counters-only experiment: load objects %q, sources %q; want %s and %s among them", objects, sources, prog, src)
	}
	// cycles where this machine has no PMU (this VM; the lists say so): refused, no experiment.
	list := er(t, "", nil, "collect", "-h")
	if !strings.Contains(list.stdout, "Aliased HW counters available for profiling:\n  none: ") {
		t.Skip("this machine has hardware counters: the refusal of an unavailable one is not tested here")
	}
	r = er(t, "", nil, "collect", "-o", t.TempDir()+"/hw.er", "-h", "cycles", prog)
	if r.code == 0 || !strings.Contains(r.stderr, "-h cycles: hardware counter cycles ('CPU Cycles') cannot be counted: ") ||
		!strings.Contains(r.stderr, "software events (page-faults, context-switches, task-clock, ...) and tracepoints work") {
		t.Errorf("-h cycles without a PMU: exit %d, stderr %q", r.code, r.stderr)
	}
}

// csvFirstColumn returns, by the last (name) column, the first column's value of er print's CSV
// output of args; the names trimmed.
func csvFirstColumn(t *testing.T, args ...string) map[string]float64 {
	t.Helper()
	r := er(t, "", nil, append([]string{"print", "-printmode", "csv"}, args...)...)
	if r.code != 0 {
		t.Fatalf("er print %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(r.stdout, "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err == nil {
			out[strings.TrimSpace(strings.Trim(f[len(f)-1], `"`))] = v
		}
	}
	return out
}

// TestDataSpace: -h +page-faults,1 with heap tracing, on a program that writes into each page of two
// global arrays, of two members of an array of structs and of two heap blocks from two allocating
// functions, and counts the faults of each loop itself: data_objects gives each variable and each
// allocating function's blocks the faults the program counted, data_layout each member its own (the
// issue's tolerance is 1%; the counts in samples make them exact), memobj Vpage_4K one fault for each
// page the program touched (issue 15, acceptance 2).
func TestDataSpace(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "dataspace")
	exp, r := collectExp(t, nil, "-h", "+page-faults,1", "-H", "on", prog)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	objs := csvFirstColumn(t, "-data_objects", exp)
	for _, c := range []struct{ object, measured string }{
		{"big_a", "big_a"}, {"small_b", "small_b"}, {"<Heap: alloc_one>", "heap_one"}, {"<Heap: alloc_two>", "heap_two"},
	} {
		want := m["faults "+c.measured]
		if want < 100 {
			t.Fatalf("the program measured %v faults for %s: %q", want, c.measured, r.stdout)
		}
		t.Logf("%s: er %v faults, measured %v", c.object, objs[c.object], want)
		if got := objs[c.object]; abs(got-want) > 0.01*want {
			t.Errorf("data_objects %s: %v page faults, the program counted %v", c.object, got, want)
		}
	}
	if got, want := objs["recs"], m["faults recs.a"]+m["faults recs.b"]; got != want {
		t.Errorf("data_objects recs: %v page faults, the program counted %v in its members", got, want)
	}
	layout := csvFirstColumn(t, "-data_layout", exp)
	for _, member := range []string{"a", "b"} {
		want := m["faults recs."+member]
		t.Logf("struct rec member %s: er %v faults, measured %v", member, layout[member], want)
		if got := layout[member]; abs(got-want) > 0.01*want || want < 100 {
			t.Errorf("data_layout: struct rec's %s %v page faults, the program counted %v", member, got, want)
		}
	}
	if layout["{struct rec}"] != objs["recs"] {
		t.Errorf("data_layout {struct rec} %v, data_objects recs %v", layout["{struct rec}"], objs["recs"])
	}
	// The program's pages fault once each (a library's data page may fault twice: read, then copy
	// on write).
	pages := csvFirstColumn(t, "-memobj", "Vpage_4K", exp)
	once, touched := 0.0, 0.0
	for name, v := range pages {
		if name != "<Total>" && v == 1 {
			once++
		}
	}
	for _, k := range []string{"big_a", "small_b", "recs.a", "recs.b", "heap_one", "heap_two"} {
		touched += m["faults "+k]
	}
	if once < touched {
		t.Errorf("memobj Vpage_4K: %v pages with one fault; the program faulted on %v pages", once, touched)
	}
	if got := pages["<Total>"]; got != objs["<Total>"] {
		t.Errorf("memobj <Total> %v, data_objects <Total> %v", got, objs["<Total>"])
	}
	// Without a counter given with '+', the views say what to do.
	plain, _ := collectExp(t, nil, "-h", "page-faults,1", prog)
	p := er(t, "", nil, "print", "-data_objects", plain)
	if !strings.Contains(p.stdout, "no counter recorded data addresses; collect with -h +NAME") {
		t.Errorf("data_objects without addresses: %q", p.stdout)
	}
}

// TestSyntheticCountersPrint: er print on a synthetic experiment with cycles and instructions (issue 15,
// acceptance 4): the cycles as time equal the CPU time, e+cycles gives their events, and CPI and IPC are
// the ratios of the events, in every row of the function list; metric_list offers the derived metrics;
// without instructions, CPI is refused with what to collect.
func TestSyntheticCountersPrint(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "synth.er")
	if err := synth.Write(exp, synth.Spec{Samples: 5_000, Functions: 100, Threads: 2, Stacks: 200, Seed: 3,
		Duration: 5e9, Counters: true}); err != nil {
		t.Fatal(err)
	}
	got := functionMetrics(t, exp, "e.totalcpu:e.cycles:e+cycles:e+insts:e.cpi:e.ipc")
	if len(got) < 20 {
		t.Fatalf("%d functions", len(got))
	}
	for name, v := range got {
		cpu, cycT, cyc, insts, cpi, ipc := v[0], v[1], v[2], v[3], v[4], v[5]
		if cycT != cpu || math.Abs(cyc-cpu*synth.ClockHz) > 0.5 {
			t.Errorf("%s: CPU %.9f s, cycles %.9f s and %.0f events", name, cpu, cycT, cyc)
		}
		if insts > 0 && (math.Abs(cpi-cyc/insts) > 0.0005 || math.Abs(ipc-insts/cyc) > 0.0005) {
			t.Errorf("%s: %.0f cycles, %.0f instructions: CPI %.3f, IPC %.3f", name, cyc, insts, cpi, ipc)
		}
	}
	if tot := got["<Total>"]; tot[2] != 5000*24_016_800 {
		t.Errorf("<Total> %.0f cycles, want 5,000 samples of 24,016,800", tot[2])
	}
	r := er(t, "", nil, "print", "-metric_list", exp)
	if !strings.Contains(r.stdout, "cpi") || !strings.Contains(r.stdout, "Cycles Per Instruction") {
		t.Errorf("metric_list does not offer CPI:\n%s", r.stdout)
	}
	plain := filepath.Join(t.TempDir(), "plain.er")
	if err := synth.Write(plain, synth.Spec{Samples: 100, Functions: 20, Threads: 1, Stacks: 20, Seed: 3, Duration: 1e9}); err != nil {
		t.Fatal(err)
	}
	r = er(t, "", nil, "print", "-metrics", "e.cpi", "-functions", plain)
	if r.code == 0 || !strings.Contains(r.stderr, `needs counters cycles and insts (collect with -h cycles,insts)`) {
		t.Errorf("CPI without counters: exit %d, %q", r.code, r.stderr)
	}
}
