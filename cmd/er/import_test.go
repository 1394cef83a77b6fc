package main

import (
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// perfReport holds what perf report says of a perf.data file, per symbol: the samples whose leaf it
// is (--no-children), and the samples of which it is on the stack (--children), and their periods.
type perfReport struct {
	self, children map[string]int64
	samples        int64
	period         int64 // ns, all samples
}

// needPerf skips when perf cannot record here, saying why.
func needPerf(t *testing.T) {
	t.Helper()
	needCollect(t)
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed")
	}
}

// perfRecord runs perf record with args, writing out.
func perfRecord(t *testing.T, out string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("perf", append([]string{"record", "-q", "-o", out}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("perf record %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// readPerfReport runs perf report on file: its sample counts per symbol, exclusive and inclusive.
func readPerfReport(t *testing.T, file string) perfReport {
	t.Helper()
	r := perfReport{self: map[string]int64{}, children: map[string]int64{}}
	run := func(args ...string) []string {
		out, err := exec.Command("perf", append([]string{"report", "-i", file, "--stdio", "-q", "-g", "none"}, args...)...).Output()
		if err != nil {
			t.Fatalf("perf report %s: %v", strings.Join(args, " "), err)
		}
		return strings.Split(string(out), "\n")
	}
	// "           201     201000000  [.] E"
	for _, line := range run("--no-children", "-F", "sample,period,sym") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		n, err1 := strconv.ParseInt(f[0], 10, 64)
		p, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("perf report line %q", line)
		}
		name := perfName(strings.Join(f[3:], " "))
		r.self[name] += n
		r.samples += n
		r.period += p
	}
	// "    70.45%    13.87%            99      99000000  [.] C": the inclusive share of all samples.
	for _, line := range run("--children", "-F", "overhead_children,overhead,sample,period,sym") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			t.Fatalf("perf report line %q", line)
		}
		r.children[perfName(strings.Join(f[5:], " "))] += int64(math.Round(pct / 100 * float64(r.samples)))
	}
	return r
}

// perfName is a symbol as er names it: perf shows glibc's default version (clock_gettime@@GLIBC_2.17)
// and marks inlined frames, er shows the plain name.
func perfName(s string) string {
	s = strings.TrimSuffix(s, " (inlined)")
	if i := strings.Index(s, "@@"); i > 0 {
		s = s[:i]
	}
	return s
}

// TestImportPerf: a program recorded by perf record -g (frame pointers) and --call-graph dwarf, imported:
// er print -functions shows each of its functions with the samples perf report counts, exclusive and
// inclusive, and the total of all samples exactly.
func TestImportPerf(t *testing.T) {
	needPerf(t)
	bin := cprog(t, "seed002")
	funcs := []string{"main", "A", "B", "C", "E", "F", "G", "calibrate"}
	// zstd: perf record -z, with ring buffers of 8 pages so that perf writes many COMPRESSED records
	// and some records straddle two of them.
	for _, mode := range []struct {
		name string
		args []string
	}{{"fp", []string{"-g"}}, {"dwarf", []string{"--call-graph", "dwarf"}}, {"zstd", []string{"-g", "-z", "-m", "8"}}} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "perf.data")
			args := append([]string{"-e", "cpu-clock", "-F", "1000"}, mode.args...)
			perfRecord(t, data, []string{"ER_TEST_UNIT=0.02"}, append(args, "--", bin)...)
			exp := filepath.Join(dir, "imported.er")
			r := er(t, "", nil, "import", "-o", exp, data)
			if r.code != 0 {
				t.Fatalf("er import: exit %d\n%s", r.code, r.stderr)
			}
			t.Logf("%s%s", r.stdout, r.stderr)
			rep := readPerfReport(t, data)
			d := openExp(t, exp)
			if int64(d.ClockTable().Len()) != rep.samples {
				t.Errorf("%d clock samples imported, perf report counts %d", d.ClockTable().Len(), rep.samples)
			}
			excl, incl := functionTimes(t, exp)
			// A sample's period is 1 ms at -F 1000 (the clock's period is exact): er print's seconds
			// are samples / 1000.
			total := int64(math.Round(excl["<Total>"] * 1e9))
			if total != rep.period {
				t.Errorf("<Total> %d ns, perf report's event count %d ns", total, rep.period)
			}
			t.Logf("total: %d samples, %d ns (er print %.9f s)", rep.samples, rep.period, excl["<Total>"])
			for _, f := range funcs {
				e, i := int64(math.Round(excl[f]*1000)), int64(math.Round(incl[f]*1000))
				t.Logf("%-9s exclusive %4d (perf %4d), inclusive %4d (perf %4d)", f, e, rep.self[f], i, rep.children[f])
				if e != rep.self[f] || i != rep.children[f] {
					t.Errorf("%s: er print %d exclusive and %d inclusive samples, perf report %d and %d", f, e, i, rep.self[f], rep.children[f])
				}
			}
			// The other symbols, the kernel's and the libraries': where both name them, the same counts.
			for name, n := range rep.self {
				if e, ok := excl[name]; ok && int64(math.Round(e*1000)) != n {
					t.Logf("%s: er %d, perf %d exclusive samples", name, int64(math.Round(e*1000)), n)
				}
			}
		})
	}
}

// TestImportProcesses: a process tree recorded by perf: an experiment per process image (fork and
// exec), named as er collect names them, with each process's samples.
func TestImportProcesses(t *testing.T) {
	needPerf(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	perfRecord(t, data, nil, "-e", "cpu-clock", "-F", "1000", "-g", "--", cprog(t, "forktree"), cprog(t, "spinchild"), "0.05", "0.02")
	exp := filepath.Join(dir, "tree.er")
	if r := er(t, "", nil, "import", "-o", exp, data); r.code != 0 || !strings.Contains(r.stdout, "in 5 experiments") {
		t.Fatalf("er import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out, err := exec.Command("perf", "report", "-i", data, "--stdio", "-q", "-g", "none", "--sort", "pid", "-F", "sample,pid").Output()
	if err != nil {
		t.Fatal(err)
	}
	perfByPid := map[uint32]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			pid, _ := strconv.ParseUint(strings.SplitN(f[1], ":", 2)[0], 10, 32)
			perfByPid[uint32(pid)] += n
		}
	}
	erByPid := map[uint32]int64{}
	for _, sub := range []string{"", "_f1.er", "_f2.er", "_f3.er", "_f3_x1.er"} {
		d := openExp(t, filepath.Join(exp, sub))
		for _, s := range d.ClockSamples() {
			erByPid[s.Pid]++
		}
		t.Logf("%-10s pid %d %q: %d samples", nameOr(sub), d.Log.Pid, d.Log.Command, d.ClockTable().Len())
		// _f3 exec'd spinchild: its image was replaced; the others exited.
		if text := d.Log.ExitText(); (sub == "_f3.er") != strings.HasPrefix(text, "replaced by exec") {
			t.Errorf("%s: the target %s", nameOr(sub), text)
		}
	}
	if len(perfByPid) != 4 {
		t.Errorf("perf report shows %d processes, want 4: %v", len(perfByPid), perfByPid)
	}
	for pid, n := range perfByPid {
		if erByPid[pid] != n {
			t.Errorf("process %d: %d samples imported, perf report %d", pid, erByPid[pid], n)
		}
	}
}

// TestImportCounters: samples of another event than the CPU clocks (page-faults, one sample a fault)
// become counter data: er print shows the event's metric, with perf report's total and the
// faulting function's count.
func TestImportCounters(t *testing.T) {
	needPerf(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	perfRecord(t, data, nil, "-e", "page-faults", "-c", "1", "-g", "--", cprog(t, "faultloop"), "2")
	exp := filepath.Join(dir, "faults.er")
	r := er(t, "", nil, "import", "-o", exp, data)
	if r.code != 0 || !strings.Contains(r.stdout, "counter samples") || strings.Contains(r.stdout, "clock samples") {
		t.Fatalf("er import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rep := readPerfReport(t, data)
	p := er(t, "", nil, "print", "-printmode", "csv", "-metrics", "e.page-faults:i.page-faults", "-limit", "0", "-functions", exp)
	if p.code != 0 {
		t.Fatalf("er print: exit %d\n%s", p.code, p.stderr)
	}
	excl := map[string]int64{}
	for _, line := range strings.Split(p.stdout, "\n") {
		if f := strings.SplitN(line, ",", 3); len(f) == 3 {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				excl[f[2]] = n
			}
		}
	}
	// The program touches 8,000 new pages in touch(); the loader's faults come on top.
	if excl["<Total>"] != rep.period || excl["touch"] != rep.self["touch"] || excl["touch"] < 8000 {
		t.Errorf("er print: <Total> %d faults, touch %d; perf report %d and %d", excl["<Total>"], excl["touch"], rep.period, rep.self["touch"])
	}
	t.Logf("page faults: <Total> %d (perf %d), touch %d (perf %d)", excl["<Total>"], rep.period, excl["touch"], rep.self["touch"])
}
