package main

// Process trees counted once (issue 12): a parent's CPU, which wait4 gives with its waited-for
// children's, is not added to the children's again in statistics or overview, every process's
// kernel count is recorded (also of processes whose experiments closed before the end), and
// en_desc off reads the founder alone.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"er/internal/experiment"
)

// statSections parses er print -statistics: each section's title ("Experiment: DIR", "All N
// experiments") and its rows, key to value.
func statSections(out string) (titles []string, rows map[string]map[string]string) {
	rows = map[string]map[string]string{}
	cur := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Experiment: ") || strings.HasPrefix(line, "All "):
			cur = line
			titles = append(titles, cur)
			rows[cur] = map[string]string{}
		case cur != "" && strings.Contains(line, ": "):
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			rows[cur][k] = v
		}
	}
	return titles, rows
}

// firstNumber is the number a statistics value starts with ("3.756 (samples cover 98.0%)").
func firstNumber(t *testing.T, v string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.Fields(v + " ")[0], 64)
	if err != nil {
		t.Fatalf("statistics value %q: %v", v, err)
	}
	return f
}

var coverRE = regexp.MustCompile(`samples cover ([0-9.]+)%`)

// checkTreeStatistics checks er print's statistics and overview of the process-tree experiment exp
// against want, the CPU time of the whole tree that its founder, rusagewrap, measured with
// getrusage (itself and the descendants it waited for, as they waited for theirs).
func checkTreeStatistics(t *testing.T, exp string, want float64) {
	t.Helper()
	r := er(t, "", nil, "print", "-statistics", exp)
	if r.code != 0 {
		t.Fatalf("er print -statistics: exit %d\n%s", r.code, r.stderr)
	}
	titles, rows := statSections(r.stdout)
	all := rows[titles[len(titles)-1]]
	if !strings.HasPrefix(titles[len(titles)-1], "All ") {
		t.Fatalf("no aggregate section in:\n%s", r.stdout)
	}
	samples := firstNumber(t, all["Total CPU Time (sec.)"])
	counted := firstNumber(t, all["CPU Time counted by the kernel (sec.)"])
	process := firstNumber(t, all["User CPU"]) + firstNumber(t, all["System CPU"])
	t.Logf("getrusage of the tree %.3f s; er print -statistics: samples %.3f s (%.1f%%), counted %.3f s (%.1f%%), process times %.3f s (%.1f%%); %s",
		want, samples, 100*samples/want, counted, 100*counted/want, process, 100*process/want, all["CPU Time counted by the kernel (sec.)"])
	for _, c := range []struct {
		what string
		v    float64
	}{{"Total CPU Time (the samples)", samples}, {"CPU Time counted by the kernel", counted}, {"Process Times, User CPU + System CPU", process}} {
		if abs(c.v-want) > 0.05*want {
			t.Errorf("%s: %.3f s is not within 5%% of the %.3f s the processes used (getrusage)", c.what, c.v, want)
		}
	}
	if strings.Contains(all["CPU Time counted by the kernel (sec.)"], "without one") {
		t.Errorf("some processes have no kernel count: %s", all["CPU Time counted by the kernel (sec.)"])
		explainTree(t, exp)
	}

	// Every process with 0.1 s or more: its samples cover 90-110% of what the kernel counted.
	for _, title := range titles {
		row := rows[title]
		v, ok := row["CPU Time counted by the kernel (sec.)"]
		if !ok || firstNumber(t, v) < 0.1 {
			continue
		}
		m := coverRE.FindStringSubmatch(v)
		if m == nil {
			t.Errorf("%s: no coverage in %q", title, v)
			continue
		}
		if cover, _ := strconv.ParseFloat(m[1], 64); cover < 90 || cover > 110 {
			t.Errorf("%s: samples cover %.1f%% of the kernel's count (%s)", title, cover, v)
		}
	}

	// Each process's usage (what its experiments' sample points say, from its first point to its
	// last, over the images before and after its execs) is its kernel count, within the clock tick
	// that /proc counts in and 3% for the time the hypervisor took (which the count holds).
	dirs := []string{exp}
	subs, err := experiment.Descendants(exp)
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, subs...)
	usage, count := map[uint32]float64{}, map[uint32]float64{}
	final := map[uint32]experiment.OverviewSample{} // each process's last point
	finalDir := map[uint32]*experiment.Data{}       // and its experiment
	for _, dir := range dirs {
		d := openExp(t, dir)
		if len(d.Overview) == 0 {
			t.Errorf("%s: no sample points", dir)
			continue
		}
		first, last := d.Overview[0], d.Overview[len(d.Overview)-1]
		usage[d.Log.Pid] += float64(last.UserNS+last.SystemNS-first.UserNS-first.SystemNS) / 1e9
		count[d.Log.Pid] += float64(d.Log.CountedCPUNS) / 1e9
		if f, ok := final[d.Log.Pid]; !ok || last.Time > f.Time {
			final[d.Log.Pid] = last
			finalDir[d.Log.Pid] = d
		}
	}
	for pid, last := range final {
		if last.Label != "end" {
			d := finalDir[pid]
			var events []string
			for _, e := range d.Log.Events {
				events = append(events, fmt.Sprintf("%s %q", e.Kind, e.Text))
			}
			t.Errorf("process %d (%s, %v): its last sample point is %q, not its end; counted %d ns, threads %v; events:\n%s",
				pid, filepath.Base(d.Dir), d.Log.Command, last.Label, d.Log.CountedCPUNS, d.Log.ThreadCPU, strings.Join(events, "\n"))
		}
	}
	if n := firstNumber(t, all["Processes"]); int(n) != len(usage) {
		t.Errorf("statistics: %v processes, the experiments are of %d", n, len(usage))
	}
	for pid, u := range usage {
		if c := count[pid]; abs(u-c) > max(0.03*c, 0.025) {
			t.Errorf("process %d: its sample points say %.3f s, the kernel counted %.3f s", pid, u, c)
		}
	}

	// The founder's overview shows its own CPU, not its descendants' (make showed 11 s in its last
	// 0.63 s): rusagewrap itself uses a millisecond or two.
	r = er(t, "", nil, "print", "-printmode", "csv", "-overview", "1", exp)
	var founder float64
	for _, line := range strings.Split(r.stdout, "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) < 6 {
			continue
		}
		u, err1 := strconv.ParseFloat(f[4], 64)
		s, err2 := strconv.ParseFloat(f[5], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("overview line %q", line)
		}
		founder += u + s
	}
	if founder > 0.02 {
		t.Errorf("the founder's overview shows %.3f s of CPU for rusagewrap, which waits:\n%s", founder, r.stdout)
	}
}

// TestTreeStatisticsShell: bash -c with children in the background, in a pipeline and in sequence.
func TestTreeStatisticsShell(t *testing.T) {
	needCollect(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	child := cprog(t, "spinchild")
	script := fmt.Sprintf("%s 0.5 & %s 0.4; %s 0.3 | cat; wait; %s 0.3", child, child, child, child)
	_, want, exp := descendantsCPU(t, t.TempDir(), bash, "-c", script)
	checkTreeStatistics(t, exp, want)
}

// TestTreeStatisticsMake: make -j2 on a C project whose compilations take a few tenths of a second
// each, some 25 processes.
func TestTreeStatisticsMake(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := makeProject(t, 4, 80)
	_, want, exp := descendantsCPU(t, dir, "make", "-s", "-j2")
	checkTreeStatistics(t, exp, want)
}

// makeProject writes a C project in a temporary directory: files source files of n functions
// each, a main.c and a Makefile that builds prog from them.
func makeProject(t *testing.T, files, n int) string {
	t.Helper()
	dir := t.TempDir()
	var objs []string
	for i := 0; i < files; i++ {
		var b strings.Builder
		for k := 0; k < n; k++ {
			fmt.Fprintf(&b, "int f%d_%d(int a, int b) { int s = 0; for (int k = 0; k < a; k++) { s += k * %d ^ (s >> 3); if (s %% 7 == b) s -= a; } return s + b * %d; }\n", i, k, k, k)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, fmt.Sprintf("f%d.o", i))
	}
	mk := fmt.Sprintf("prog: main.o %s\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n", strings.Join(objs, " "))
	if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEnDescOffLoadsFounder: er print -en_desc off reads the founder's experiment alone, not every
// subexperiment first: its views are the founder's, and it reads no more than the founder's files
// (a subexperiment made unreadable does not matter to it).
func TestEnDescOffLoadsFounder(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := makeProject(t, 2, 10)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	cmd := exec.Command(erBin, "collect", "-o", exp, "make", "-s", "-j2")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("er collect make: %v\n%s", err, out)
	}
	subs, err := experiment.Descendants(exp)
	if err != nil || len(subs) < 5 {
		t.Fatalf("subexperiments %v, %v", subs, err)
	}
	// A subexperiment whose clock data cannot be read: loading it fails with a warning.
	bad := filepath.Join(subs[len(subs)-1], experiment.ClockFile)
	if err := os.WriteFile(bad, []byte("not a clock file"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := er(t, "", nil, "print", "-en_desc", "off", "-experiment_list", exp)
	t.Logf("er print -en_desc off -experiment_list: %v", time.Since(start))
	if r.code != 0 || strings.Contains(r.stderr, "subexperiment") {
		t.Errorf("en_desc off: exit %d, stderr %q: it read the subexperiments", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "_f1") || !strings.Contains(r.stdout, "make") {
		t.Errorf("en_desc off lists:\n%s", r.stdout)
	}
	// =regexp reads only the logs of the subexperiments it leaves out.
	r = er(t, "", nil, "print", "-en_desc", "=cc1", "-experiment_list", exp)
	if r.code != 0 || strings.Contains(r.stderr, "subexperiment") || !strings.Contains(r.stdout, "cc1") || strings.Contains(r.stdout, " as ") {
		t.Errorf("en_desc =cc1: exit %d, stderr %q:\n%s", r.code, r.stderr, r.stdout)
	}
	// With every descendant, the damaged one is reported.
	r = er(t, "", nil, "print", "-experiment_list", exp)
	if !strings.Contains(r.stderr, filepath.Base(subs[len(subs)-1])) {
		t.Errorf("en_desc on: the damaged subexperiment is not reported: %q", r.stderr)
	}
}
