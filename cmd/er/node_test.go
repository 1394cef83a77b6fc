package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"er/internal/experiment"
)

// TestNodePerfMap: a Node script run with --perf-basic-prof, whose functions time their own work
// (testdata/node/spin.js): its JavaScript functions are named from the perf map V8 wrote
// (/tmp/perf-PID.map), which er read into map.xml as dynamic functions, so that the experiment is
// read after the map is gone; each function's instances (V8's tiers: ~ interpreted, ^ baseline,
// * optimized) add up to what it measured within 5%; the code named by no one is under 2%.
func TestNodePerfMap(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs nodejs)")
	}
	// -p hi: a sample of 1 ms is 0.25% of the shorter function's 0.4 s. The measure is the
	// process's CPU (Node has no thread CPU clock before version 23): once the functions are
	// compiled, the JIT's and the GC's threads add little to it.
	script, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "node", "spin.js"))
	exp, stdout := nodeCollect(t, node, "--perf-basic-prof", "--interpreted-frames-native-stack", script)
	d := openExp(t, exp)
	perfMap := fmt.Sprintf("/tmp/perf-%d.map", d.Log.Pid)
	if _, err := os.Stat(perfMap); err != nil {
		t.Fatalf("node wrote no %s: %v", perfMap, err)
	}
	os.Remove(perfMap) // the experiment must not need it
	dyn := 0
	for _, m := range d.Mappings {
		if m.Path == experiment.DynamicPath {
			dyn++
		}
	}
	if dyn < 100 {
		t.Errorf("map.xml has %d dynamic functions, want V8's builtins and the script's functions (hundreds)", dyn)
	}
	want := measured(t, stdout)
	p := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-functions", exp)
	if p.code != 0 {
		t.Fatalf("er print: exit %d\n%s", p.code, p.stderr)
	}
	rows := javaRows(p.stdout)
	for _, fn := range []string{"alpha", "beta"} {
		tier := regexp.MustCompile(`^JS:[~^+*]` + fn + ` ` + regexp.QuoteMeta(script) + `:\d+:\d+$`)
		got, n := 0.0, 0
		for name, v := range rows {
			if tier.MatchString(name) {
				got += v
				n++
			}
		}
		w := want["js "+fn+" cpu_ns"] / 1e9
		if n == 0 || math.Abs(got-w) > 0.05*w {
			t.Errorf("%s: %d instances named, inclusive %.3f s; the script measured %.3f s (want within 5%%)", fn, n, got, w)
		}
	}
	unnamed := 0.0
	for name, v := range rows {
		if strings.HasPrefix(name, "<static>") || strings.HasPrefix(name, "<Unknown>") {
			unnamed += v
		}
	}
	if total := rows["<Total>"]; unnamed > 0.02*total {
		t.Errorf("unnamed code holds %.3f s of %.3f s (more than 2%%)", unnamed, total)
	}
	// leaf's callers (its optimized code, where V8 did not inline it) are alpha's instances.
	cc := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-csingle", "JS:*leaf "+script+":12:14", exp)
	callers, _, _ := strings.Cut(cc.stdout, "Stack Fragment")
	if !regexp.MustCompile(`(?m)^\s*[0-9.]+\s+JS:[~^+*]alpha `).MatchString(callers) {
		t.Errorf("JS:*leaf's callers do not list alpha:\n%s", cc.stdout)
	}
	if t.Failed() {
		t.Logf("spin.js:\n%ser print:\n%s", stdout, p.stdout)
	}
}

// TestNodeJitdump: with --perf-prof, V8 writes a jitdump file (jit-PID.dump, in its working
// directory) with each function's instructions; er writes them into the experiment's dyntext
// file, so the script's functions are named as with a perf map, within 5% of what they measured,
// and their optimized code disassembles, its samples on its instructions.
func TestNodeJitdump(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs nodejs)")
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "node", "spin.js"))
	exp, out := nodeCollect(t, node, "--perf-prof", "--interpreted-frames-native-stack", script)
	if _, err := os.Stat(filepath.Join(exp, experiment.DynTextFile)); err != nil {
		t.Fatalf("no dyntext: %v", err)
	}
	want := measured(t, out)
	p := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-functions", exp)
	rows := javaRows(p.stdout)
	for _, fn := range []string{"alpha", "beta"} {
		tier := regexp.MustCompile(`^JS:[~^+*]` + fn + ` ` + regexp.QuoteMeta(script) + `:\d+:\d+$`)
		got := 0.0
		for name, v := range rows {
			if tier.MatchString(name) {
				got += v
			}
		}
		if w := want["js "+fn+" cpu_ns"] / 1e9; math.Abs(got-w) > 0.05*w {
			t.Errorf("%s: inclusive %.3f s; the script measured %.3f s (want within 5%%)", fn, got, w)
		}
	}
	// beta's optimized code: its instances' instructions hold its exclusive time, every sample of
	// it (1 ms at -p hi); the hottest holds most of beta's time.
	name := "JS:*beta " + script + ":31:14"
	excl := javaRows(er(t, "", nil, "print", "-metrics", "e.totalcpu", "-functions", exp).stdout)[name]
	best, all := 0.0, 0.0
	for n := 1; n <= 4; n++ {
		d := er(t, "", nil, "print", "-metrics", "e.totalcpu", "-disasm", name, strconv.Itoa(n), exp)
		sum := 0.0
		for _, line := range strings.Split(d.stdout, "\n") {
			if m := regexp.MustCompile(`^(?:##)?\s+([0-9.]+)\s+\[\s*\?\]\s+[0-9a-f]+:`).FindStringSubmatch(line); m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				sum += v
			}
		}
		best, all = max(best, sum), all+sum
	}
	if w := want["js beta cpu_ns"] / 1e9; math.Abs(all-excl) > 0.002 || best < 0.8*w {
		t.Errorf("%s: its instructions hold %.3f s (the hottest instance's %.3f s), its exclusive time is %.3f s, beta measured %.3f s", name, all, best, excl, w)
	}
	if t.Failed() {
		t.Logf("spin.js:\n%ser print:\n%s", out, p.stdout)
	}
}

// nodeCollect runs er collect -p hi on node with args in a directory of its own (where V8 writes
// its jitdump and isolate logs), and returns the experiment and what the script printed.
func nodeCollect(t *testing.T, node string, args ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	exp := filepath.Join(dir, "test.1.er")
	cmd := exec.Command(erBin, append([]string{"collect", "-o", exp, "-p", "hi", node}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("er collect: %v\n%s%s", err, out, stderr.String())
	}
	return exp, string(out)
}
