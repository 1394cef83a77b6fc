package main

// End-to-end tests of er print's selections and filters on real experiments.

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// csvTable runs er print -printmode csv with args on exp and returns the one table it prints, a map
// from column key to cell per row.
func csvTable(t *testing.T, exp string, args ...string) []map[string]string {
	t.Helper()
	all := append(append([]string{"print", "-printmode", "csv"}, args...), exp)
	r := er(t, "", nil, all...)
	if r.code != 0 {
		t.Fatalf("er %s: exit %d\n%s", strings.Join(all, " "), r.code, r.stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("er %s: %v\n%s", strings.Join(all, " "), err, r.stdout)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		if len(rec) != len(recs[0]) {
			t.Fatalf("er %s prints more than one table:\n%s", strings.Join(all, " "), r.stdout)
		}
		row := map[string]string{}
		for i, k := range recs[0] {
			row[k] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// ns reads seconds printed with 9 decimals as nanoseconds, exactly.
func ns(t *testing.T, s string) int64 {
	t.Helper()
	whole, frac, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if !ok || len(frac) != 9 || err != nil {
		t.Fatalf("%q is not seconds with 9 decimals", s)
	}
	return n
}

// functionCPU runs er print -functions with the selection commands sel and returns the total CPU time
// (ns) and each function's inclusive CPU time (ns).
func functionCPU(t *testing.T, exp string, sel ...string) (int64, map[string]int64) {
	t.Helper()
	rows := csvTable(t, exp, append(append([]string{}, sel...), "-metrics", "e.totalcpu:i.totalcpu", "-functions")...)
	incl := map[string]int64{}
	for _, r := range rows {
		incl[r["name"]] = ns(t, r["i.totalcpu"])
	}
	total, ok := incl["<Total>"]
	if !ok {
		t.Fatalf("no <Total> with %v", sel)
	}
	return total, incl
}

// TestSelectThreads profiles 4 threads that work 0.15, 0.3, 0.45 and 0.6 s in work_a to work_d:
// selecting one thread, by thread_select, lwp_select or a filter, gives its function with the CPU
// time the thread measured, and the threads add up to the whole, to the nanosecond; so do CPUs and
// samples, and selecting all of them gives the whole back.
func TestSelectThreads(t *testing.T) {
	needCollect(t)
	exp, r := collectExp(t, nil, "-p", "hi", "-S", "0.2", cprog(t, "fourthreads"))
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	total, _ := functionCPU(t, exp)
	t.Logf("<Total> %d ns", total)

	thread := map[int64]string{} // tid -> thread number
	var numbers []string
	for _, row := range csvTable(t, exp, "-thread_list") {
		tid, _ := strconv.ParseInt(row["tid"], 10, 64)
		thread[tid] = row["thread"]
		numbers = append(numbers, row["thread"])
	}
	var workers, sum int64
	for _, f := range []string{"work_a", "work_b", "work_c", "work_d"} {
		tid := int64(m["tid "+f])
		n, ok := thread[tid]
		if !ok {
			t.Fatalf("thread_list has no thread %d (%s): %v", tid, f, thread)
		}
		tot, incl := functionCPU(t, exp, "-thread_select", n)
		want := m["cpu "+f]
		got := float64(incl[f]) / 1e9
		if abs(got-want) > 0.05*want {
			t.Errorf("thread_select %s (%s): %s %.4f s, the thread measured %.4f s", n, f, f, got, want)
		}
		for _, g := range []string{"work_a", "work_b", "work_c", "work_d"} {
			if g != f && incl[g] != 0 {
				t.Errorf("thread_select %s (%s) shows %s", n, f, g)
			}
		}
		for _, sel := range [][]string{{"-lwp_select", strconv.FormatInt(tid, 10)}, {"-filters", "THRID==" + n},
			{"-filters", fmt.Sprintf("LWPID == %d", tid)}} {
			if tot2, _ := functionCPU(t, exp, sel...); tot2 != tot {
				t.Errorf("%s %s: <Total> %d ns, thread_select %s: %d ns", sel[0], sel[1], tot2, n, tot)
			}
		}
		t.Logf("%s: thread %s (tid %d): <Total> %d ns, %s %.4f s, measured %.4f s (%+.2f%%)", f, n, tid, tot, f, got, want, 100*(got-want)/want)
		workers += tot
	}
	for _, n := range numbers {
		tot, _ := functionCPU(t, exp, "-thread_select", n)
		sum += tot
	}
	t.Logf("4 workers: %d ns; all %d threads: %d ns; unfiltered <Total>: %d ns", workers, len(numbers), sum, total)
	if sum != total {
		t.Errorf("the threads add up to %d ns, <Total> is %d ns", sum, total)
	}
	if len(numbers) == 4 && workers != total {
		t.Errorf("the 4 threads add up to %d ns, <Total> is %d ns", workers, total)
	}

	// CPUs and samples partition the events too; "all" gives the whole back.
	for _, c := range []struct{ list, sel, key string }{{"-cpu_list", "-cpu_select", "cpu"}, {"-sample_list", "-sample_select", "sample"}} {
		var parts int64
		var ids []string
		for _, row := range csvTable(t, exp, c.list) {
			tot, _ := functionCPU(t, exp, c.sel, row[c.key])
			parts += tot
			ids = append(ids, row[c.key])
		}
		if parts != total {
			t.Errorf("%s %v add up to %d ns, <Total> is %d ns", c.sel, ids, parts, total)
		}
		t.Logf("%s: %d parts add up to %d ns", c.sel, len(ids), parts)
		if tot, _ := functionCPU(t, exp, c.sel, ids[0], c.sel, "all"); tot != total {
			t.Errorf("%s %s then all: %d ns, want %d", c.sel, ids[0], tot, total)
		}
	}
	for _, sel := range [][]string{{"-experiment_select", "all"}, {"-experiment_select", "1"}, {"-filters", "EXPID==1"},
		{"-thread_select", "1", "-thread_select", "all", "-filters", "none"}} {
		if tot, _ := functionCPU(t, exp, sel...); tot != total {
			t.Errorf("%v: %d ns, want %d", sel, tot, total)
		}
	}
}

// TestSelectPhases profiles a program whose phases A, B and C each run 0.6 s of CPU, with sample
// points every 0.2 s: the samples that lie within phase B's time show mostly phaseB.
func TestSelectPhases(t *testing.T) {
	needCollect(t)
	exp, r := collectExp(t, nil, "-p", "hi", "-S", "0.2", cprog(t, "phases"), "0.6")
	if r.code != 0 {
		t.Fatalf("er collect -S 0.2: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	d := openExp(t, exp)
	start := float64(d.Log.StartPerfNS) / 1e9 // the program's CLOCK_MONOTONIC times, from the experiment's start
	lo, hi := m["start phaseB"]-start, m["end phaseB"]-start
	var picked []string
	for _, row := range csvTable(t, exp, "-sample_list") {
		s, e := float64(ns(t, row["start"]))/1e9, float64(ns(t, row["end"]))/1e9
		if s >= lo && e <= hi {
			picked = append(picked, row["sample"])
		}
	}
	t.Logf("phase B from %.3f s to %.3f s: samples %v", lo, hi, picked)
	if len(picked) < 2 {
		t.Fatalf("fewer than 2 samples of 0.2 s within phase B (%.3f s to %.3f s)", lo, hi)
	}
	total, incl := functionCPU(t, exp, "-sample_select", strings.Join(picked, ","))
	frac := func(f string) float64 { return float64(incl[f]) / float64(total) }
	t.Logf("sample_select %s: <Total> %.3f s: phaseA %.1f%%, phaseB %.1f%%, phaseC %.1f%%", strings.Join(picked, ","),
		float64(total)/1e9, 100*frac("phaseA"), 100*frac("phaseB"), 100*frac("phaseC"))
	if frac("phaseB") < 0.95 || frac("phaseA")+frac("phaseC") > 0.02 {
		t.Errorf("the samples within phase B show phaseB %.1f%%, phaseA %.1f%%, phaseC %.1f%%", 100*frac("phaseB"), 100*frac("phaseA"), 100*frac("phaseC"))
	}
	// The same with a time filter on phase B's window.
	win := fmt.Sprintf("TSTAMP > %d && TSTAMP <= %d", int64(lo*1e9), int64(hi*1e9))
	wtotal, wincl := functionCPU(t, exp, "-filters", win)
	wb := float64(wincl["phaseB"]) / float64(wtotal)
	t.Logf("filters %s: <Total> %.3f s, phaseB %.1f%% (measured %.3f s)", win, float64(wtotal)/1e9, 100*wb, m["cpu phaseB"])
	if wb < 0.95 || abs(float64(wincl["phaseB"])/1e9-m["cpu phaseB"]) > 0.05*m["cpu phaseB"] {
		t.Errorf("filters on phase B's time: phaseB %.1f%%, %.4f s; it measured %.4f s", 100*wb, float64(wincl["phaseB"])/1e9, m["cpu phaseB"])
	}
}
