package main

import (
	"crypto/rand"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"er/internal/collect"
	"er/internal/experiment"
)

// metricTable runs er print in CSV mode with metrics and the view args (csvTable), and returns each
// row's values by name and metric; functions of one name in two objects add up.
func metricTable(t *testing.T, exp, metrics string, args ...string) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	for _, row := range csvTable(t, exp, append([]string{"-metrics", metrics}, args...)...) {
		vals := out[row["name"]]
		if vals == nil {
			vals = map[string]float64{}
			out[row["name"]] = vals
		}
		for k, cell := range row {
			if k == "name" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				t.Fatalf("%s's %s %q: %v", row["name"], k, cell, err)
			}
			vals[k] += v
		}
	}
	return out
}

// microstatesFiles makes the microstates program's inputs in dir: a file of 64 MiB of random bytes,
// and a shared object of n functions, each on a page of its own; both written to the disk, so that
// their pages can be evicted from the page cache.
func microstatesFiles(t *testing.T, dir string, n int) (data, lib string) {
	t.Helper()
	data = filepath.Join(dir, "data.bin")
	b := make([]byte, 64<<20)
	_, _ = rand.Read(b)
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var src strings.Builder
	for i := range n {
		fmt.Fprintf(&src, "__attribute__((aligned(4096))) int f%d(int x) { return x + %d; }\n", i, i)
	}
	c := filepath.Join(dir, "textlib.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lib = filepath.Join(dir, "textlib.so")
	if out, err := exec.Command("gcc", "-O1", "-shared", "-fPIC", "-o", lib, c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if f, err := os.Open(lib); err == nil {
		_ = f.Sync()
		f.Close()
	}
	return data, lib
}

// TestMicrostatesPhases: a program whose main thread goes through one thread state after another,
// each phase in a function of its own that times itself (CLOCK_MONOTONIC and the thread's CPU clock),
// with threads of its own for the lock, condition-variable and Wait CPU phases. Each phase's metric at
// its function is within 5% of the time the phase measured: Total CPU of a spin (mostly User CPU) and
// of system calls (mostly System CPU), Other Wait of nanosleep and of a SIGSTOP, User Lock of a contended mutex and of a condition
// variable, Data and Text Page Fault (with the Wait CPU between a fault's read and the thread's
// return) of major faults, Wait CPU of 4 spinning threads on 2 CPUs. Each thread's Total Thread Time
// is within 1% of the life it measured (from just before its creator's pthread_create: on a busy
// machine a new thread may wait for a CPU before its first instruction), and Total Thread Time is the
// sum of the others exactly.
func TestMicrostatesPhases(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "microstates")
	dir := t.TempDir()
	data, lib := microstatesFiles(t, dir, 256)
	// At -p on: a sample that spans two phases of the main thread goes to the second; the CPU phases
	// last a second, of which a sample is 1%.
	exp, r := collectExp(t, nil, prog, data, lib, "256")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	d := openExp(t, exp)
	if v, _ := d.Log.Setting(experiment.SettingMicrostates); v != "on" {
		t.Fatalf("log.xml's %s is %q, want on", experiment.SettingMicrostates, v)
	}
	if d.Log.KernelStacks {
		h := er(t, "", nil, "print", "-header", exp)
		for _, want := range []string{"Microstates: Wait CPU, User Lock", "Off-CPU stacks: sampled as threads leave a CPU"} {
			if !strings.Contains(h.stdout, want) {
				t.Errorf("er print -header does not say %q:\n%s", want, h.stdout)
			}
		}
	}
	metrics := "i.totalcpu:i.user:i.system:i.wait:i.ulock:i.text:i.data:i.owait:i.total"
	fn := metricTable(t, exp, metrics, "-functions")
	off := func(phase string) float64 { return m[phase+" wall"] - m[phase+" cpu"] }
	check := func(what string, got, want float64) bool {
		t.Helper()
		t.Logf("%-40s er %.4f s, measured %.4f s (%+.1f%%)", what, got, want, 100*(got-want)/want)
		if abs(got-want) > 0.05*want {
			t.Errorf("%s: er %.4f s, the program measured %.4f s: not within 5%%", what, got, want)
			return false
		}
		return true
	}
	// The program's clocks measure CPU time, not its user and system parts; those are the samples'
	// modes, so a spin is mostly User CPU (beside two CPU hogs some 5% of its samples come in the
	// kernel, at the interrupts and switches that preempt it) and reading /dev/zero mostly System.
	check("phase_spin: Total CPU", fn["phase_spin"]["i.totalcpu"], m["phase_spin cpu"])
	t.Logf("phase_spin: User CPU %.4f s, System CPU %.4f s", fn["phase_spin"]["i.user"], fn["phase_spin"]["i.system"])
	if user := fn["phase_spin"]["i.user"]; user < 0.9*m["phase_spin cpu"] {
		t.Errorf("phase_spin: User CPU %.4f s of %.4f s of CPU: a spin is the user's", user, m["phase_spin cpu"])
	}
	check("phase_syscalls: Total CPU", fn["phase_syscalls"]["i.totalcpu"], m["phase_syscalls cpu"])
	if sys := fn["phase_syscalls"]["i.system"]; sys < 0.5*m["phase_syscalls cpu"] {
		t.Errorf("phase_syscalls: System CPU %.4f s of %.4f s of CPU: reading /dev/zero is mostly the kernel's", sys, m["phase_syscalls cpu"])
	}
	// A sleep ends with a wait for a CPU after the wakeup (Wait CPU, from the thread's schedstat), on a
	// busy machine not negligible: each sleep phase's state and Wait CPU add up to its time off a CPU,
	// and of its time asleep (not runnable) the state has nearly all.
	for _, ph := range []struct{ name, metric, title string }{
		{"phase_sleep", "i.owait", "Other Wait"}, {"phase_mutex", "i.ulock", "User Lock"}, {"phase_cond", "i.ulock", "User Lock"},
		{"phase_stopped", "i.owait", "Other Wait"}, {"phase_datafault", "i.data", "Data Page Fault"}, {"phase_textfault", "i.text", "Text Page Fault"},
	} {
		if strings.HasSuffix(ph.name, "fault") && m[ph.name+" majflt"] == 0 {
			t.Errorf("%s had no major fault: its file's pages were not evicted (a file system without a disk?)", ph.name)
			continue
		}
		row := fn[ph.name]
		if !check(ph.name+": "+ph.title+" and Wait CPU", row[ph.metric]+row["i.wait"], off(ph.name)) {
			// Where its time went: its callees, and the threads.
			r := er(t, "", nil, "print", "-metrics", "i.total:i.totalcpu:i.wait:i.ulock:i.owait", "-csingle", ph.name, "-thread_list", exp)
			t.Logf("%s's callees:\n%s%s", ph.name, r.stdout, r.stderr)
		}
		if asleep := row["i.ulock"] + row["i.text"] + row["i.data"] + row["i.owait"]; row[ph.metric] < 0.85*asleep {
			t.Errorf("%s: %s %.4f s of %.4f s asleep (User Lock %.4f, Text %.4f, Data %.4f, Other Wait %.4f)", ph.name, ph.title,
				row[ph.metric], asleep, row["i.ulock"], row["i.text"], row["i.data"], row["i.owait"])
		}
	}
	// The waits for a CPU after wakeups, as the program measured them: from the waker's clock reading
	// before its write to the return of the read, which holds the woken thread's own CPU time from its
	// arrival on the CPU to that return (the switch back in, which its CPU clock counts), so the waits
	// proper are at least that sum less the phase's CPU time and at most the sum; with the time it was
	// preempted between its reads, Wait CPU; the rest of its time off a CPU asleep, Other Wait.
	wake := fn["phase_wakeup"]
	hi := m["phase_wakeup wakewait"] + m["phase_wakeup preempted"]
	lo := hi - m["phase_wakeup cpu"]
	bracket := func(what string, got, lo, hi float64) {
		t.Helper()
		t.Logf("%-40s er %.4f s, measured %.4f to %.4f s", what, got, lo, hi)
		if got < 0.95*lo || got > 1.05*hi {
			t.Errorf("%s: er %.4f s, the program measured %.4f to %.4f s: not within 5%%", what, got, lo, hi)
		}
	}
	bracket("phase_wakeup: Wait CPU", wake["i.wait"], lo, hi)
	bracket("phase_wakeup: Other Wait", wake["i.owait"], off("phase_wakeup")-hi, off("phase_wakeup")-lo)
	var spinWait, spinCPU float64
	for k, v := range m {
		if strings.HasPrefix(k, "spinner ") && strings.HasSuffix(k, " wall") {
			cpu := m[strings.TrimSuffix(k, " wall")+" cpu"]
			spinWait += v - cpu
			spinCPU += cpu
		}
	}
	check("spinner: Wait CPU", fn["spinner"]["i.wait"], spinWait)
	check("spinner: Total CPU", fn["spinner"]["i.totalcpu"], spinCPU)

	checkLives(t, d, m, 10)
	tot := fn["<Total>"]
	sum := tot["i.totalcpu"] + tot["i.wait"] + tot["i.ulock"] + tot["i.text"] + tot["i.data"] + tot["i.owait"]
	if abs(sum-tot["i.total"]) > 1e-8 {
		t.Errorf("<Total>: Total Thread Time %.9f s, the states add up to %.9f s", tot["i.total"], sum)
	}
	if t.Failed() { // what er said of the collection (lost records?)
		h := er(t, "", nil, "print", "-header", "-statistics", exp)
		t.Logf("er print -header -statistics:\n%s%s", h.stdout, h.stderr)
	}
}

// checkLives checks each thread's Total Thread Time (er print's thread list of the founder's
// experiment d, less the process's exit) against the life it measured ("life TID wall W" in m, and
// "joined TID W" where its creator joined it), and that n threads said theirs. (er print's, not the
// sum of the thread's events: the views weight its CPU samples to the kernel's count of its CPU time,
// and its events can hold CPU time its samples did not pay back to the count.)
func checkLives(t *testing.T, d *experiment.Data, m map[string]float64, n int) {
	t.Helper()
	life := map[uint32]float64{}
	r := er(t, "", nil, "print", "-printmode", "csv", "-thread_list", d.Dir)
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if r.code != 0 || err != nil || len(rows) < 2 || strings.Join(rows[0], ",") != "exp,sel,pid,thread,tid,events,totalcpu,%totalcpu,total" {
		t.Fatalf("er print -thread_list: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	for _, row := range rows[1:] {
		if row[0] != "1" {
			continue
		}
		tid, _ := strconv.Atoi(row[4])
		life[uint32(tid)], _ = strconv.ParseFloat(row[8], 64)
	}
	// (Not <Process exit>: the process's CPU time after its threads' events ended, its teardown, which
	// the thread list gives the main thread.)
	for _, cs := range d.ClockSamples() {
		if c := &cs; d.ProcessExit(c) {
			life[c.Tid] -= float64(c.Period) / 1e9
		}
	}
	threads := 0
	for k, v := range m {
		f := strings.Fields(k)
		if len(f) != 3 || f[0] != "life" || f[2] != "wall" {
			continue
		}
		tid, _ := strconv.Atoi(f[1])
		threads++
		got := life[uint32(tid)]
		// Its life as it measured it ends at its last line; the thread's exit comes after (on a busy
		// machine it may wait for a CPU on its way out), and before its creator's join returned
		// ("joined TID W", where printed): within 1% of that bracket.
		upper := v
		if j, ok := m["joined "+f[1]]; ok {
			upper = max(j, v)
		}
		t.Logf("thread %d: Total Thread Time %.4f s, life %.4f s (joined at %.4f s)", tid, got, v, upper)
		if got < v-0.01*v || got > upper+0.01*v {
			t.Errorf("thread %d: Total Thread Time %.4f s, it measured a life of %.4f s (its join returned at %.4f s): not within 1%%", tid, got, v, upper)
			// Where its time went, by function.
			r := er(t, "", nil, "print", "-filters", fmt.Sprintf("LWPID==%d", tid), "-metrics", "i.total:i.totalcpu:i.wait:i.ulock:i.owait:e.total",
				"-sort", "e.total", "-limit", "25", "-functions", d.Dir)
			t.Logf("thread %d's functions:\n%s%s", tid, r.stdout, r.stderr)
		}
	}
	if threads != n {
		t.Errorf("%d threads printed their lives, want %d", threads, n)
	}
}

// TestMicrostatesThreads: with microstates each clock sample stands for the CPU time its thread ran
// since its previous one, from the context switches, and a thread's last partial interval is credited
// at its exit: 8 threads that spin on 2 CPUs for 0.5 s of their own CPU time each, at -p on and -p hi,
// show in er print's thread list within 1% of what each thread's own CPU clock measured (the main
// thread, whose exit's teardown of the process comes after its last reading, at least that), and the
// statistics' Total CPU Time is <Total>'s.
func TestMicrostatesThreads(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "cpubound")
	for _, clock := range []string{"on", "hi"} {
		t.Run("p="+clock, func(t *testing.T) {
			exp, r := collectExp(t, nil, "-p", clock, prog, "8", "0.5")
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			want := map[string]float64{}
			for k, v := range measured(t, r.stdout) {
				if tid, ok := strings.CutPrefix(k, "threadcpu "); ok {
					want[tid] = v
				}
			}
			if len(want) != 9 {
				t.Fatalf("%d threads printed their CPU time, want 9:\n%s", len(want), r.stdout)
			}
			var listed, lives float64
			for _, row := range csvTable(t, exp, "-thread_list") {
				got, err := strconv.ParseFloat(row["totalcpu"], 64)
				if err != nil {
					t.Fatalf("thread list row %v: %v", row, err)
				}
				life, err := strconv.ParseFloat(row["total"], 64)
				if err != nil {
					t.Fatalf("thread list row %v: no Total Thread Time: %v", row, err)
				}
				if life < got {
					t.Errorf("thread %s: Total Thread Time %.4f s below its CPU time %.4f s", row["tid"], life, got)
				}
				listed += got
				lives += life
				w, ok := want[row["tid"]]
				if !ok {
					t.Errorf("thread %s listed with %.4f s: the program has no such thread", row["tid"], got)
					continue
				}
				delete(want, row["tid"])
				t.Logf("thread %s: er %.4f s, its clock %.4f s (%+.2f%%)", row["tid"], got, w, 100*(got-w)/max(w, 1e-9))
				if row["tid"] == row["pid"] {
					// The main thread read its clock before it printed, and then its exit tore the
					// process down (some 10 ms of the kernel's, which er counts): at least its clock.
					if got < w-0.0005 {
						t.Errorf("main thread %s: er %.4f s, less than its own clock's %.4f s", row["tid"], got, w)
					}
					continue
				}
				if abs(got-w) > 0.01*w+0.0005 {
					t.Errorf("thread %s: er %.4f s, its own clock %.4f s: not within 1%%", row["tid"], got, w)
				}
			}
			for tid, w := range want {
				t.Errorf("thread %s (%.4f s by its clock) is not in the thread list", tid, w)
			}
			st := er(t, "", nil, "print", "-statistics", exp)
			var stat float64
			for _, line := range strings.Split(st.stdout, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Total CPU Time (sec.):"); ok {
					stat, _ = strconv.ParseFloat(strings.Fields(v)[0], 64)
				}
			}
			totals := metricTable(t, exp, "i.totalcpu:i.total", "-functions")["<Total>"]
			tot := totals["i.totalcpu"]
			if abs(stat-tot) > 0.0005 || abs(listed-tot) > 0.0005 {
				t.Errorf("statistics' Total CPU Time %.3f s, <Total> %.4f s, the thread list's sum %.4f s: want them equal", stat, tot, listed)
			}
			if abs(lives-totals["i.total"]) > 0.0001 {
				t.Errorf("the thread list's Total Thread Times add up to %.4f s, <Total>'s is %.4f s", lives, totals["i.total"])
			}
		})
	}
}

// TestMicrostatesUnprivileged: er collect run by an unprivileged user (nobody) on the phase program.
// Where perf_event_paranoid is 2 (Debian's default) the kernel gives such a user no sample in the
// kernel, so no context-switch sample: the experiment and er collect say that off-CPU time goes to where
// each thread last ran, and er reads the stacks of the waits that last (a millisecond or more) from
// outside: the single long waits (a mutex's, a condition variable's, a stop's) are at their functions
// within 5% all the same. (The nanosleep phase's 30 waits of 10 ms, as long as er's reads are apart,
// are not all read; those it misses go to where the thread last ran.) Every thread's Total Thread
// Time is still within 1% of its life. (At perf_event_paranoid 1 or below nobody records what root
// does.)
func TestMicrostatesUnprivileged(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("running er as another user needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the test's directory, then the one it gave
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// er, its collector library and the program, where nobody may run them.
	for _, f := range [][2]string{{erBin, "er"}, {filepath.Join(workDir, collect.LibraryName), collect.LibraryName},
		{cprog(t, "microstates"), "microstates"}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f[1]), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prog := filepath.Join(dir, "microstates")
	data, lib := microstatesFiles(t, dir, 64)
	exp := filepath.Join(dir, "test.1.er")
	cmd := exec.Command(filepath.Join(dir, "er"), "collect", "-o", exp, prog, data, lib, "64")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("er collect as nobody: %v\n%s", err, stderr.String())
	}
	paranoid, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	p, _ := strconv.Atoi(strings.TrimSpace(string(paranoid)))
	d := openExp(t, exp)
	if d.Log.KernelStacks == (p >= 2) {
		t.Errorf("perf_event_paranoid %d: kernel stacks recorded %v", p, d.Log.KernelStacks)
	}
	if p >= 2 && !strings.Contains(stderr.String(), "off-CPU intervals are attributed to where each thread last ran") &&
		!hasEvent(d, "warning", "off-CPU intervals are attributed to where each thread last ran") {
		t.Errorf("no word that the off-CPU stacks are where the threads last ran; er collect said:\n%s", stderr.String())
	}
	h := er(t, "", nil, "print", "-header", exp)
	if want := map[bool]string{true: "Off-CPU stacks: where each thread last ran", false: "Off-CPU stacks: sampled as threads leave a CPU"}[p >= 2]; !strings.Contains(h.stdout, want) {
		t.Errorf("er print -header does not say %q:\n%s", want, h.stdout)
	}
	m := measured(t, stdout.String())
	checkLives(t, d, m, 10)
	fn := metricTable(t, exp, "i.ulock:i.owait:i.wait", "-functions")
	off := func(phase string) float64 { return m[phase+" wall"] - m[phase+" cpu"] }
	for _, c := range []struct{ phase, metric string }{
		{"phase_mutex", "i.ulock"}, {"phase_cond", "i.ulock"}, {"phase_stopped", "i.owait"},
	} {
		// (With the wait for a CPU after the wakeup, Wait CPU.)
		got, want := fn[c.phase][c.metric]+fn[c.phase]["i.wait"], off(c.phase)
		t.Logf("%s %s and i.wait: er %.4f s, measured %.4f s", c.phase, c.metric, got, want)
		if abs(got-want) > 0.05*want {
			t.Errorf("%s: %s and i.wait %.4f s, the program measured %.4f s off the CPU: not within 5%%", c.phase, c.metric, got, want)
		}
	}
}
