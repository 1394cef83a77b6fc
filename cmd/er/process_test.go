package main

// Descendant processes, attaching to a running process, and pause/resume by signal (issue 5).

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"er/internal/experiment"
)

// functionTimes runs er print on exp (with extra commands first, such as -en_desc off) and returns
// each function's exclusive and inclusive CPU seconds, <Total> included.
func functionTimes(t *testing.T, exp string, extra ...string) (excl, incl map[string]float64) {
	t.Helper()
	args := append([]string{"print"}, extra...)
	args = append(args, "-printmode", "csv", "-metrics", "e.totalcpu:i.totalcpu", "-limit", "0", "-functions", exp)
	r := er(t, "", nil, args...)
	if r.code != 0 {
		t.Fatalf("er %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	if r.stderr != "" {
		t.Logf("er print -functions %s warned:\n%s", exp, r.stderr) // shown where the test fails
	}
	excl, incl = map[string]float64{}, map[string]float64{}
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.SplitN(line, ",", 3)
		if len(f) != 3 || strings.HasSuffix(line, ",name") {
			continue
		}
		e, err1 := strconv.ParseFloat(f[0], 64)
		i, err2 := strconv.ParseFloat(f[1], 64)
		if err1 == nil && err2 == nil {
			excl[f[2]], incl[f[2]] = e, i
		}
	}
	return excl, incl
}

// rusages parses the "rusage PID SECONDS" lines of the test programs.
func rusages(t *testing.T, out string) map[uint32]float64 {
	t.Helper()
	m := map[uint32]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "rusage" {
			pid, err1 := strconv.Atoi(f[1])
			v, err2 := strconv.ParseFloat(f[2], 64)
			if err1 == nil && err2 == nil {
				m[uint32(pid)] = v
			}
		}
	}
	return m
}

// subexperiments lists the names of exp's subexperiments.
func subexperiments(t *testing.T, exp string) []string {
	t.Helper()
	dirs, err := experiment.Descendants(exp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(d))
	}
	return names
}

// TestDescendants: a program forks three children that run at once, the third execs another
// program. Each process gets its experiment, named by lineage, and its CPU is within 3% of its own
// getrusage (acceptance 1).
func TestDescendants(t *testing.T) {
	needCollect(t)
	tree, child := cprog(t, "forktree"), cprog(t, "spinchild")
	exp, r := collectExp(t, nil, "-p", "hi", tree, child, "0.4")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	got := subexperiments(t, exp)
	if want := []string{"_f1.er", "_f2.er", "_f3.er", "_f3_x1.er"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("subexperiments %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(exp, "_f1.er", experiment.ArchivesDir)); err == nil {
		t.Error("a subexperiment has an archives directory of its own")
	}
	ru := rusages(t, r.stdout)
	if len(ru) != 4 {
		t.Fatalf("expected 4 rusage lines, got %v from:\n%s", ru, r.stdout)
	}
	wantFunc := map[string]string{"": "parent_work", "_f1": "child_work", "_f2": "child_work", "_f3_x1": "spin_work"}
	var sum float64
	for _, name := range append([]string{""}, got...) {
		dir := exp
		if name != "" {
			dir = filepath.Join(exp, name)
		}
		d := openExp(t, dir)
		lineage := strings.TrimSuffix(name, ".er")
		if d.Log.Lineage != lineage {
			t.Errorf("%s: log.xml lineage %q, want %q", dir, d.Log.Lineage, lineage)
		}
		excl, incl := functionTimes(t, dir, "-en_desc", "off")
		total := excl["<Total>"]
		sum += total
		if lineage == "_f3" { // the child between fork and exec: no CPU of note
			if total > 0.02 {
				t.Errorf("_f3.er (before exec) has %.3f s", total)
			}
			continue
		}
		want, ok := ru[d.Log.Pid]
		if !ok {
			t.Errorf("%s: pid %d printed no rusage", dir, d.Log.Pid)
			continue
		}
		t.Logf("%-10s pid %d: recorded %.4f s, getrusage %.4f s (%.2f%%)", nameOr(lineage), d.Log.Pid, total, want, 100*total/want)
		if abs(total-want) > 0.03*want {
			t.Errorf("%s: recorded %.4f s is not within 3%% of its getrusage %.4f s", dir, total, want)
		}
		// The kernel's count, which weights the samples: when the kernel swapped the founder's and
		// a child's perf contexts, the founder showed the child's 0.8 s for its own 0.4 s. (A process
		// may have no count, when the kernel reported none that er could place: beside two CPU hogs,
		// _f1 in 1 run of 8; then its samples keep their own periods.)
		if c := float64(d.Log.CountedCPUNS) / 1e9; c > 0 && abs(c-want) > 0.03*want {
			t.Errorf("%s: counted %.4f s is not within 3%% of its getrusage %.4f s", dir, c, want)
		}
		if f := wantFunc[lineage]; incl[f] < 0.9*want {
			t.Errorf("%s: %s has %.4f s of %.4f s", dir, f, incl[f], want)
		}
	}
	// The founder loads with its descendants: metrics add up across processes.
	excl, _ := functionTimes(t, exp)
	if abs(excl["<Total>"]-sum) > 1e-3 {
		t.Errorf("founder with descendants: <Total> %.4f s, the experiments' sum %.4f s", excl["<Total>"], sum)
	}
	r = er(t, "", nil, "print", "-experiment_list", exp)
	for _, name := range got {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("experiment_list does not show %s:\n%s", name, r.stdout)
		}
	}
}

func nameOr(lineage string) string {
	if lineage == "" {
		return "founder"
	}
	return lineage
}

// TestWorkBeforeExec: a child that spins before it execs has samples in two images, and one count,
// which the kernel reports into the last: the two images together hold what the process used, once
// (make -j2's forked children sampled before their exec had that time twice, 103.7%; one sampled
// before and not after its exec lost the rest of its count). At -p on and -p hi.
func TestWorkBeforeExec(t *testing.T) {
	needCollect(t)
	tree, child := cprog(t, "forktree"), cprog(t, "spinchild")
	for _, rate := range []string{"on", "hi"} {
		exp, r := collectExp(t, nil, "-p", rate, tree, child, "0.1", "0.1")
		if r.code != 0 {
			t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
		}
		ru := rusages(t, r.stdout)
		before, beforeIncl := functionTimes(t, filepath.Join(exp, "_f3.er"))
		after, afterIncl := functionTimes(t, filepath.Join(exp, "_f3_x1.er"))
		pid := openExp(t, filepath.Join(exp, "_f3_x1.er")).Log.Pid
		want, ok := ru[pid]
		if !ok {
			t.Fatalf("process %d (the exec) printed no rusage:\n%s", pid, r.stdout)
		}
		got := before["<Total>"] + after["<Total>"]
		t.Logf("-p %s: before the exec %.4f s (child_work %.4f), after it %.4f s (spin_work %.4f): %.4f s; getrusage %.4f s (%.2f%%)",
			rate, before["<Total>"], beforeIncl["child_work"], after["<Total>"], afterIncl["spin_work"], got, want, 100*got/want)
		if abs(got-want) > 0.03*want {
			t.Errorf("-p %s: the two images hold %.4f s, the process used %.4f s", rate, got, want)
		}
		if beforeIncl["child_work"] < 0.06 {
			t.Errorf("-p %s: child_work before the exec %.4f s, want about 0.1 s", rate, beforeIncl["child_work"])
		}
		// The whole tree, once.
		total, _ := functionTimes(t, exp)
		var sum float64
		for _, v := range ru {
			sum += v
		}
		if abs(total["<Total>"]-sum) > 0.03*sum {
			t.Errorf("-p %s: the tree %.4f s, its processes' getrusage %.4f s (by pid: %v)", rate, total["<Total>"], sum, ru)
			explainTree(t, exp)
		}
	}
}

// TestFollowOptions: -F off records the founder only; -F =regexp only the descendants whose
// program name or lineage matches, with the lineage numbers of all.
func TestFollowOptions(t *testing.T) {
	needCollect(t)
	tree, child := cprog(t, "forktree"), cprog(t, "spinchild")
	for _, tc := range []struct {
		follow string
		want   []string
	}{
		{"off", nil},
		{"=spinchild", []string{"_f3_x1.er"}},
		{"=^_f2$", []string{"_f2.er"}},
	} {
		exp, r := collectExp(t, nil, "-F", tc.follow, tree, child, "0.1")
		if r.code != 0 {
			t.Fatalf("-F %s: exit %d\n%s", tc.follow, r.code, r.stderr)
		}
		if got := subexperiments(t, exp); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("-F %s: subexperiments %v, want %v", tc.follow, got, tc.want)
		}
	}
	if r := er(t, "", nil, "collect", "-F", "=(", "/bin/true"); r.code != 2 || !strings.Contains(r.stderr, "regular expression") {
		t.Errorf("-F =( : exit %d, %q", r.code, r.stderr)
	}
}

// descendantsCPU collects `rusagewrap args...` at -p hi with descendants followed and returns what er
// recorded for the whole tree and what rusagewrap's getrusage says its descendants and itself used.
func descendantsCPU(t *testing.T, dir string, args ...string) (recorded, used float64, exp string) {
	t.Helper()
	return descendantsCPUAt(t, "hi", dir, args...)
}

// descendantsCPUAt is descendantsCPU at clock profiling rate rate.
func descendantsCPUAt(t *testing.T, rate, dir string, args ...string) (recorded, used float64, exp string) {
	t.Helper()
	wrap := cprog(t, "rusagewrap")
	exp = filepath.Join(t.TempDir(), "test.1.er")
	cmd := exec.Command(erBin, append([]string{"collect", "-p", rate, "-o", exp, wrap}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("er collect %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	m := measured(t, string(out))
	excl, _ := functionTimes(t, exp)
	return excl["<Total>"], m["children-cpu"] + m["self-cpu"], exp
}

// TestFollowShell: er collect -F on bash -c '...' finds the CPU of every descendant (acceptance 2).
func TestFollowShell(t *testing.T) {
	needCollect(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	child := cprog(t, "spinchild")
	script := fmt.Sprintf("%s 0.3 & %s 0.4; %s 0.2 | cat; wait", child, child, child)
	rec, want, exp := descendantsCPU(t, t.TempDir(), bash, "-c", script)
	t.Logf("bash -c: recorded %.4f s for %d processes, getrusage of the tree %.4f s (%.2f%%)", rec, len(subexperiments(t, exp))+1, want, 100*rec/want)
	if abs(rec-want) > 0.03*want {
		t.Errorf("bash -c: recorded %.4f s is not within 3%% of the tree's getrusage %.4f s", rec, want)
	}
	// Inclusive: the children's CPU clocks, by which they spin, count the kernel's work done while
	// spin_work ran (0.845 s exclusive beside two CPU hogs, in 1 run).
	_, incl := functionTimes(t, exp)
	if incl["spin_work"] < 0.85 {
		t.Errorf("spin_work %.3f s inclusive, expected about 0.9 s", incl["spin_work"])
	}
}

// TestFollowMake: make -j2 on a small C project: the compilers', assemblers' and linker's CPU is
// all found (acceptance 2).
func TestFollowMake(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := followProject(t)
	// The processes' exits after their clock events stopped are <Process exit> (0.012 to 0.014 s
	// here, 4% to 8% of the tree, which the clock missed before: 91.8% to 94.1% at -p hi beside two
	// CPU hogs), and the counts of the processes that ended before their first sample <Unsampled>
	// (at -p on 0.03 s, 15%: 78% recorded before).
	var exp string
	for _, rate := range []string{"on", "hi"} {
		clean := exec.Command("sh", "-c", "rm -f *.o prog")
		clean.Dir = dir
		if out, err := clean.CombinedOutput(); err != nil {
			t.Fatalf("rm: %v\n%s", err, out)
		}
		var rec, want float64
		rec, want, exp = descendantsCPUAt(t, rate, dir, "make", "-s", "-j2")
		subs := subexperiments(t, exp)
		excl, _ := functionTimes(t, exp)
		t.Logf("make -j2 at -p %s: recorded %.4f s in %d processes, getrusage of the tree %.4f s (%.2f%%); <Process exit> %.4f s, <Unsampled> %.4f s",
			rate, rec, len(subs)+1, want, 100*rec/want, excl["<Process exit>"], excl["<Unsampled>"])
		if abs(rec-want) > 0.03*want {
			t.Errorf("make -j2 at -p %s: recorded %.4f s is not within 3%% of the tree's getrusage %.4f s", rate, rec, want)
			explainTree(t, exp)
		}
		// statistics gives the views' total: each sample weighted by its thread's count (it gave the
		// samples' own periods: a cc1 of 19 ms with one 10 ms sample showed 0.010 s there, 0.019 s in
		// the views).
		if st := totalCPUStat(t, exp); abs(st-rec) > 0.0015 {
			t.Errorf("make -j2 at -p %s: statistics' Total CPU Time %.3f s, <Total> %.4f s", rate, st, rec)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "prog")); err != nil {
		t.Errorf("make did not build the program: %v", err)
	}
	r := er(t, "", nil, "print", "-experiment_list", exp)
	if !strings.Contains(r.stdout, "cc1") {
		t.Errorf("experiment_list shows no cc1 process:\n%s", r.stdout)
	}
}

// followProject writes a small C project (main.c, f0.c to f5.c and its Makefile) into a new directory,
// and returns the directory.
func followProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var objs []string
	for i := 0; i < 6; i++ {
		src := fmt.Sprintf("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"+
			"struct s%d { int a[%d]; double d; };\n"+
			"int f%d(int n) { struct s%d x; memset(&x, 0, sizeof x); for (int i = 0; i < n; i++) x.a[i %% %d] += i * %d; return x.a[0]; }\n",
			i, 10+i, i, i, 10+i, i+1)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, fmt.Sprintf("f%d.o", i))
	}
	mainSrc := "int f0(int);\nint main(void) { return f0(3) & 0; }\n"
	mk := fmt.Sprintf("CFLAGS = -O2 -g\nprog: main.o %s\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) $(CFLAGS) -c -o $@ $<\n", strings.Join(objs, " "))
	if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(mainSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// totalCPUStat returns the Total CPU Time of the last section of er print -statistics on exp: all its
// experiments together.
func totalCPUStat(t *testing.T, exp string) float64 {
	t.Helper()
	r := er(t, "", nil, "print", "-statistics", exp)
	v := -1.0
	for _, line := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Total CPU Time (sec.):"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				v, _ = strconv.ParseFloat(f[0], 64)
			}
		}
	}
	if v < 0 {
		t.Fatalf("er print -statistics %s: no Total CPU Time (exit %d)\n%s%s", exp, r.code, r.stdout, r.stderr)
	}
	return v
}

// explainTree logs, for a failure, one line per experiment of exp's tree: its program, what it says of
// its CPU time, and its warnings: which process fell short, and whether its samples, its counts or
// the reading did.
func explainTree(t *testing.T, exp string) {
	t.Helper()
	r := er(t, "", nil, "print", "-header", "-statistics", exp)
	lines := map[string]*strings.Builder{}
	var order []string
	var cur *strings.Builder
	for _, line := range strings.Split(r.stdout, "\n") {
		l := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(l, "Experiment: "); ok {
			if lines[name] == nil {
				lines[name] = &strings.Builder{}
				order = append(order, name)
			}
			cur = lines[name]
			continue
		}
		if cur == nil || l == "No warnings" || l == "No errors" {
			continue
		}
		for _, key := range []string{"Target command", "Total CPU", "counted by the kernel", "without samples",
			"process exits", "Lost data", "Clock profile events", "warning", "lost"} {
			if strings.Contains(l, key) {
				cur.WriteString(" | " + l)
				break
			}
		}
	}
	var b strings.Builder
	for _, name := range order {
		b.WriteString(filepath.Base(name) + lines[name].String() + "\n")
	}
	t.Logf("er print -header -statistics (exit %d), in part:\n%s%s", r.code, b.String(), r.stderr)
}

// TestProcessExitTime: a process that frees 512 MiB at its exit spends CPU time there after the
// kernel stopped its clock events (recent kernels; 6.18 here): the experiment holds it as <Process exit>,
// so that <Total> is the process's getrusage, not the CPU time it had used before its exit.
func TestProcessExitTime(t *testing.T) {
	needCollect(t)
	rec, want, exp := descendantsCPU(t, t.TempDir(), cprog(t, "bigexit"), "512")
	excl, _ := functionTimes(t, exp)
	exit := excl["<Process exit>"]
	t.Logf("512 MiB: recorded %.4f s, getrusage %.4f s (%.2f%%), <Process exit> %.4f s", rec, want, 100*rec/want, exit)
	if abs(rec-want) > 0.01*want+0.002 {
		t.Errorf("recorded %.4f s is not within 1%% and 2 ms of the getrusage %.4f s", rec, want)
	}
	if exit < 0 || exit > 0.5*want {
		t.Errorf("<Process exit> %.4f s of %.4f s", exit, want)
	}
	r := er(t, "", nil, "print", "-statistics", exp)
	if exit > 0 && !strings.Contains(r.stdout, "CPU Time of process exits") {
		t.Errorf("statistics does not show the exits' CPU time:\n%s", r.stdout)
	}
}

// TestAttach: -P records a running CPU-bound program (two threads) for 2 s; the recorded CPU is
// within 3% of what the program used in that window, and the program runs on (acceptance 3).
func TestAttach(t *testing.T) {
	needCollect(t)
	bin := cprog(t, "cpulog")
	logf := filepath.Join(t.TempDir(), "cpu.log")
	target := exec.Command(bin, logf, "30")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = target.Process.Kill(); _ = target.Wait() }()
	time.Sleep(300 * time.Millisecond)
	// At -p hi: the program uses some 0.2 s in the 2 s, and what its threads run after their last
	// samples is not recorded (a period per CPU each); at -p on that is up to 20 ms, above the 3%.
	exp, r := collectExp(t, nil, "-p", "hi", "-P", strconv.Itoa(target.Process.Pid), "-t", "2")
	if r.code != 0 {
		t.Fatalf("er collect -P: exit %d\n%s", r.code, r.stderr)
	}
	time.Sleep(100 * time.Millisecond)
	if err := target.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the target did not survive the attach: %v", err)
	}
	d := openExp(t, exp)
	if !d.Log.Attached || d.Log.Pid != uint32(target.Process.Pid) {
		t.Errorf("log.xml: attached %v pid %d", d.Log.Attached, d.Log.Pid)
	}
	from, to := d.Log.StartPerfNS, d.Log.StartPerfNS+d.Log.EndTime
	used := cpuIn(t, logf, from, to)
	excl, _ := functionTimes(t, exp)
	rec := excl["<Total>"]
	t.Logf("attached for %.3f s: recorded %.4f s, the program used %.4f s in that window (%.2f%%); busy %.4f s",
		float64(to-from)/1e9, rec, used, 100*rec/used, excl["busy"])
	if abs(rec-used) > 0.03*used {
		t.Errorf("recorded %.4f s is not within 3%% of the %.4f s the program used while attached", rec, used)
	}
	threads := map[uint32]bool{}
	for _, s := range d.ClockSamples() {
		threads[s.Tid] = true
	}
	if len(threads) != 2 {
		t.Errorf("samples of %d threads, want 2", len(threads))
	}
}

// cpuIn reads cpulog's "THREAD MONOTONIC-NS THREAD-CPU-NS" lines and returns the CPU seconds its
// threads used between from and to, interpolating between each thread's lines.
func cpuIn(t *testing.T, file string, from, to int64) float64 {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ts, cs := map[string][]int64{}, map[string][]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		a, err1 := strconv.ParseInt(f[1], 10, 64)
		b, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			ts[f[0]], cs[f[0]] = append(ts[f[0]], a), append(cs[f[0]], b)
		}
	}
	if len(ts) != 2 {
		t.Fatalf("cpulog's log has lines of %d threads, want 2", len(ts))
	}
	var used float64
	for th := range ts {
		ts, cs := ts[th], cs[th]
		at := func(x int64) float64 {
			i := sort.Search(len(ts), func(i int) bool { return ts[i] >= x })
			if i == 0 || i == len(ts) {
				t.Fatalf("cpulog's log of thread %s does not cover time %d (%d..%d)", th, x, ts[0], ts[len(ts)-1])
			}
			f := float64(x-ts[i-1]) / float64(ts[i]-ts[i-1])
			return float64(cs[i-1]) + f*float64(cs[i]-cs[i-1])
		}
		used += (at(to) - at(from)) / 1e9
	}
	return used
}

// TestPauseResume: with -y, recording starts paused and the program's own signal resumes it
// before phase_b and pauses it after: only phase_b is recorded (acceptance 4).
func TestPauseResume(t *testing.T) {
	needCollect(t)
	bin := cprog(t, "sigphases")
	usr1 := strconv.Itoa(int(syscall.SIGUSR1))
	exp, r := collectExp(t, nil, "-p", "hi", "-y", "USR1", bin, "0.4", usr1)
	if r.code != 0 {
		t.Fatalf("er collect -y: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := measured(t, r.stdout)
	_, excl := functionTimes(t, exp) // inclusive: the phases' clock reads are theirs too
	t.Logf("-y USR1: phase_a %.4f s, phase_b %.4f s (it measured %.4f s), phase_c %.4f s; <Total> %.4f s",
		excl["phase_a"], excl["phase_b"], m["phase_b cpu"], excl["phase_c"], excl["<Total>"])
	if abs(excl["phase_b"]-m["phase_b cpu"]) > 0.05*m["phase_b cpu"] {
		t.Errorf("phase_b: recorded %.4f s, it measured %.4f s", excl["phase_b"], m["phase_b cpu"])
	}
	if excl["phase_a"]+excl["phase_c"] > 0.02*m["phase_b cpu"] {
		t.Errorf("paused phases were recorded: phase_a %.4f s, phase_c %.4f s", excl["phase_a"], excl["phase_c"])
	}
	d := openExp(t, exp)
	if !hasEvent(d, "resume", "") || !hasEvent(d, "pause", "") {
		t.Errorf("log.xml has no pause and resume events: %+v", d.Log.Events)
	}

	// ",r" starts recording: the first signal pauses (phase_b), the second resumes.
	exp, r = collectExp(t, nil, "-p", "hi", "-y", "USR1,r", bin, "0.3", usr1)
	if r.code != 0 {
		t.Fatalf("er collect -y USR1,r: exit %d\n%s", r.code, r.stderr)
	}
	m = measured(t, r.stdout)
	_, excl = functionTimes(t, exp)
	if excl["phase_b"] > 0.02*m["phase_b cpu"] || abs(excl["phase_a"]-m["phase_a cpu"]) > 0.05*m["phase_a cpu"] {
		t.Errorf("-y USR1,r: phase_a %.4f s (measured %.4f), phase_b %.4f s (paused)", excl["phase_a"], m["phase_a cpu"], excl["phase_b"])
	}
	// The paused phase's CPU time is in the threads' counts and in no sample, as meant: no warning of
	// CPU time lost to the samples (there was one, for phase_b's 0.3 s).
	if strings.Contains(r.stderr, "lost to the samples") {
		t.Errorf("-y USR1,r: a warning of CPU time lost to the samples:\n%s", r.stderr)
	}

	// -l: a sample point each time the program raises the signal.
	exp, r = collectExp(t, nil, "-l", "USR1", "-S", "off", bin, "0.1", usr1)
	if r.code != 0 {
		t.Fatalf("er collect -l: exit %d\n%s", r.code, r.stderr)
	}
	if n := signalPoints(t, exp); n != 2 {
		t.Errorf("-l USR1: %d signal sample points, want 2", n)
	}
}

// signalPoints counts the sample points of experiment exp that a signal took (-l).
func signalPoints(t *testing.T, exp string) int {
	t.Helper()
	n := 0
	for _, o := range openExp(t, exp).Overview {
		if strings.HasPrefix(o.Label, "signal") {
			n++
		}
	}
	return n
}

// TestCollectGroup: -g adds each experiment to a group file, named after the group; er print opens
// the group as the set of its experiments.
func TestCollectGroup(t *testing.T) {
	needCollect(t)
	bin := cprog(t, "spinchild")
	dir := t.TempDir()
	measured := 0.0 // the CPU the two runs measured themselves
	for i := 0; i < 2; i++ {
		// -p hi (1 ms): at 10 ms, a run of 0.1 s has 10 samples, and one landing in the start-up
		// code would already take 10% off spin_work.
		r := er(t, "", nil, "collect", "-d", dir, "-g", "runs.erg", "-F", "off", "-p", "hi", bin, "0.1")
		if r.code != 0 {
			t.Fatalf("er collect -g: exit %d\n%s", r.code, r.stderr)
		}
		for _, cpu := range rusages(t, r.stdout) {
			measured += cpu
		}
	}
	if measured < 0.2 {
		t.Fatalf("the two runs measured %.3f s of CPU, want at least 0.2 s", measured)
	}
	for _, name := range []string{"runs.1.er", "runs.2.er"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("experiment %s: %v", name, err)
		}
	}
	group := filepath.Join(dir, "runs.erg")
	r := er(t, "", nil, "print", "-experiment_list", group)
	if r.code != 0 || !strings.Contains(r.stdout, "runs.1.er") || !strings.Contains(r.stdout, "runs.2.er") {
		t.Fatalf("er print %s: exit %d\n%s%s", group, r.code, r.stdout, r.stderr)
	}
	_, incl := functionTimes(t, group)
	// Both runs count: spin_work within 10% of the CPU the two processes used (0.1 s each in
	// spin_work). Inclusive: spin_work reads the process CPU clock, a system call, and the kernel
	// functions below it hold a few percent of the time.
	if got := incl["spin_work"]; got < 0.9*0.2 || got > 1.1*measured {
		t.Errorf("the group's spin_work %.3f s, want 0.2 s of spinning within 10%% (the processes used %.3f s)", got, measured)
	} else {
		t.Logf("the group's spin_work %.3f s; the processes used %.3f s", got, measured)
	}
}
