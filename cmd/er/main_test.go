package main

// End-to-end tests: they build er and the C programs of ../../testdata with gcc, run `er collect` on them
// with real perf events, and check what `er print` and the experiment reader report against what the
// programs measured themselves.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"er/internal/experiment"
	"er/internal/perfevent"
)

var (
	erBin   string // the er binary under test
	workDir string // where the C programs are built
	buildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "er-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	erBin = filepath.Join(dir, "er")
	if out, err := exec.Command("go", "build", "-o", erBin, ".").CombinedOutput(); err != nil {
		buildErr = fmt.Errorf("go build: %v\n%s", err, out)
	}
	for _, l := range []string{"collect", "er_print"} {
		_ = os.Symlink("er", filepath.Join(dir, l))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needCollect skips when this machine cannot run the end-to-end tests, saying why.
func needCollect(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the test programs cannot be built")
	}
	if c := perfevent.Probe(); c.NumCPU == 0 {
		t.Skip("perf events are not available here")
	}
	if _, err := perfevent.Paranoid(); err != nil {
		t.Skipf("perf events are not available: %v", err)
	}
}

// cprog builds testdata/NAME.c with the given extra flags (once per flag set) and returns the binary.
func cprog(t testing.TB, name string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(workDir, name+strings.ReplaceAll(strings.Join(flags, ""), " ", ""))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	args := append([]string{"-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls",
		"-pthread", "-Wall", "-o", bin, filepath.Join("..", "..", "testdata", name+".c")}, flags...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

type result struct {
	stdout, stderr string
	code           int
}

// er runs the er binary with args and the given stdin and environment additions.
func er(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(erBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("er %s: %v", strings.Join(args, " "), err)
	}
	return result{out.String(), errb.String(), code}
}

// collectExp runs er collect -o into a fresh directory and returns the experiment path and result.
func collectExp(t *testing.T, env []string, args ...string) (string, result) {
	t.Helper()
	exp := filepath.Join(t.TempDir(), "test.1.er")
	r := er(t, "", env, append([]string{"collect", "-o", exp}, args...)...)
	return exp, r
}

// measured parses "KEY NAME VALUE" and "KEY VALUE" lines that a test program prints.
func measured(t *testing.T, out string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		m[strings.Join(f[:len(f)-1], " ")] = v
	}
	return m
}

func openExp(t *testing.T, dir string) *experiment.Data {
	t.Helper()
	d, err := experiment.Open(dir)
	if err != nil {
		t.Fatalf("experiment.Open(%s): %v", dir, err)
	}
	return d
}

func recordedCPU(d *experiment.Data) float64 {
	var ns int64
	for _, s := range d.Clock {
		ns += s.Period
	}
	return float64(ns) / 1e9
}

func TestUsageShowsMachine(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	r := er(t, "", nil, "collect")
	if r.code != 0 || !strings.Contains(r.stdout, "Usage: er collect") || !strings.Contains(r.stdout, "perf_event_paranoid") ||
		!strings.Contains(r.stdout, "hardware counters") {
		t.Errorf("er collect with no arguments: code %d, output:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = er(t, "", nil, "collect", "-p", "fast", "x")
	if r.code != 2 || !strings.Contains(r.stderr, `-p "fast"`) {
		t.Errorf("bad -p: code %d, stderr %q", r.code, r.stderr)
	}
}

func TestMissingTarget(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	r := er(t, "", nil, "collect", "-o", filepath.Join(dir, "x.er"), "/nonexistent/prog")
	if r.code != 127 || !strings.Contains(r.stderr, "/nonexistent/prog") {
		t.Errorf("nonexistent target: code %d, stderr %q", r.code, r.stderr)
	}
	noexec := filepath.Join(dir, "noexec")
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	r = er(t, "", nil, "collect", "-o", filepath.Join(dir, "y.er"), noexec)
	if r.code != 127 || !strings.Contains(r.stderr, "not executable") {
		t.Errorf("non-executable target: code %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.er")); err == nil {
		t.Error("an experiment was left for a target that could not start")
	}
}

func TestExitCodeAndStdio(t *testing.T) {
	needCollect(t)
	behave := cprog(t, "behave")
	_, r := collectExp(t, nil, behave, "exit", "7")
	if r.code != 7 {
		t.Errorf("target exit 7: er exited %d (stderr %q)", r.code, r.stderr)
	}
	cmd := exec.Command(erBin, "collect", "-o", filepath.Join(t.TempDir(), "e.er"), behave, "echo", "a b", "")
	cmd.Stdin = strings.NewReader("some input\nmore\n")
	cmd.Env = append(os.Environ(), "ER_TEST_VAR=kept")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("echo: %v (stderr %q)", err, errb.String())
	}
	if out.String() != "some input\nmore\n" {
		t.Errorf("stdout through er collect = %q, want the input back", out.String())
	}
	for _, want := range []string{"arg 1 echo\n", "arg 2 a b\n", "arg 3 \n", "env kept\n"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
}

func TestSegfaultingTarget(t *testing.T) {
	needCollect(t)
	exp, r := collectExp(t, nil, cprog(t, "behave"), "segv")
	if r.code != 128+int(syscall.SIGSEGV) {
		t.Errorf("segfault: er exited %d, want %d (stderr %q)", r.code, 128+int(syscall.SIGSEGV), r.stderr)
	}
	d := openExp(t, exp)
	if cpu := recordedCPU(d); cpu < 0.2 || cpu > 0.4 {
		t.Errorf("recorded %.3f s of CPU before the segfault, want about 0.3", cpu)
	}
	if d.Log.ExitSignal != int(syscall.SIGSEGV) {
		t.Errorf("log.xml exit signal %d, want %d", d.Log.ExitSignal, syscall.SIGSEGV)
	}
}

func TestSignalForwarded(t *testing.T) {
	needCollect(t)
	cmd := exec.Command(erBin, "collect", "-o", filepath.Join(t.TempDir(), "s.er"), cprog(t, "behave"), "signal")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	if line, _ := rd.ReadString('\n'); line != "ready\n" {
		t.Fatalf("target said %q, want ready", line)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	line, _ := rd.ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Errorf("er collect: %v", err)
	}
	if line != "Terminated\n" {
		t.Errorf("the target saw %q, want Terminated (SIGTERM forwarded)", line)
	}
}

// waitForSamples polls a live experiment until it holds at least min seconds of CPU.
func waitForSamples(t *testing.T, exp string, min float64) *experiment.Data {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if d, err := experiment.Open(exp); err == nil && recordedCPU(d) >= min {
			return d
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never held %.2f s of samples", exp, min)
	return nil
}

func TestKilledTarget(t *testing.T) {
	needCollect(t)
	exp := filepath.Join(t.TempDir(), "k.er")
	cmd := exec.Command(erBin, "collect", "-o", exp, cprog(t, "behave"), "spin", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := waitForSamples(t, exp, 0.5)
	syscall.Kill(int(d.Log.Pid), syscall.SIGKILL)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Errorf("target killed by SIGKILL: er collect returned %v, want exit %d", err, 128+int(syscall.SIGKILL))
	}
	d = openExp(t, exp)
	if cpu := recordedCPU(d); cpu < 0.5 {
		t.Errorf("recorded %.3f s of CPU, want at least the 0.5 s seen before the kill", cpu)
	}
	if !d.Log.Exited || d.Log.ExitSignal != int(syscall.SIGKILL) {
		t.Errorf("log.xml: exited %v signal %d, want SIGKILL", d.Log.Exited, d.Log.ExitSignal)
	}
}

func TestKilledCollector(t *testing.T) {
	needCollect(t)
	exp := filepath.Join(t.TempDir(), "c.er")
	cmd := exec.Command(erBin, "collect", "-o", exp, cprog(t, "behave"), "spin", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := waitForSamples(t, exp, 0.5)
	cmd.Process.Kill()
	cmd.Wait()
	syscall.Kill(int(d.Log.Pid), syscall.SIGKILL)
	d = openExp(t, exp)
	if cpu := recordedCPU(d); cpu < 0.5 {
		t.Errorf("after the collector was killed, the experiment holds %.3f s of CPU, want at least 0.5", cpu)
	}
	r := er(t, "", nil, "print", "-functions", exp)
	if r.code != 0 || !strings.Contains(r.stdout, "spin_for") {
		t.Errorf("er print on the experiment of a killed collector: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestAccuracy checks the recorded CPU against the target's own getrusage, single- and multi-threaded,
// at -p on and -p hi.
func TestAccuracy(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "cpubound")
	for _, tc := range []struct {
		clock   string
		threads int
		secs    string
	}{
		{"on", 1, "2"}, {"hi", 1, "2"}, {"on", 8, "0.5"}, {"hi", 8, "0.5"},
	} {
		t.Run(fmt.Sprintf("p=%s/threads=%d", tc.clock, tc.threads), func(t *testing.T) {
			exp, r := collectExp(t, nil, "-p", tc.clock, prog, strconv.Itoa(tc.threads), tc.secs)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			want := measured(t, r.stdout)["rusage"]
			d := openExp(t, exp)
			got := recordedCPU(d)
			t.Logf("recorded %.4f s, getrusage %.4f s: %.2f%%", got, want, 100*got/want)
			if got < want*0.97 || got > want*1.03 {
				t.Errorf("recorded CPU %.4f s is not within 3%% of getrusage %.4f s (%.2f%%)", got, want, 100*got/want)
			}
			tids := map[uint32]bool{}
			for _, s := range d.Clock {
				tids[s.Tid] = true
			}
			if wantT := tc.threads + map[bool]int{true: 1, false: 0}[tc.threads > 1]; len(tids) < tc.threads || len(tids) > wantT {
				t.Errorf("samples from %d threads, want %d workers", len(tids), tc.threads)
			}
		})
	}
}
