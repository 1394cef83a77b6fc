package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"er/internal/experiment"
)

// csvRows runs er print in CSV mode with the metric list metrics and the commands cmds, and
// returns each row's values by its last field (the name); a row of a callers-callees section is
// keyed "section/name".
func csvRows(t *testing.T, exp, metrics string, cmds ...string) map[string][]float64 {
	t.Helper()
	args := append([]string{"print", "-printmode", "csv", "-metrics", metrics + ":name"}, cmds...)
	r := er(t, "", nil, append(args, exp)...)
	if r.code != 0 {
		t.Fatalf("er %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	rows := map[string][]float64{}
	n := len(strings.Split(metrics, ":"))
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Split(line, ",")
		if len(f) < n+1 || strings.HasSuffix(line, ",name") || f[0] == "#view" {
			continue
		}
		key := strings.Join(f[n:], ",")
		if len(f) > n+1 && (f[n] == "Callers" || f[n] == "Callees" || f[n] == "Stack Fragment") {
			key = f[n] + "/" + strings.Join(f[n+1:], ",")
		}
		vals := make([]float64, n)
		for i := range vals {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				t.Fatalf("CSV line %q: %v", line, err)
			}
			vals[i] = v
		}
		rows[key] = vals
	}
	return rows
}

// expectations parses the lines "expect NAME key value key value ..." a test program prints.
func expectations(t *testing.T, out string) map[string]map[string]float64 {
	t.Helper()
	m := map[string]map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "expect" || len(f)%2 != 0 {
			continue
		}
		kv := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			kv[f[i]] = v
		}
		m[f[1]] = kv
	}
	if len(m) == 0 {
		t.Fatalf("the program printed no expectations:\n%s", out)
	}
	return m
}

// leakStacks parses er print -leaks: each leak's bytes, instances and frames (function names).
type leak struct {
	instances, bytes int
	frames           []string
}

func leakStacks(t *testing.T, exp string) []leak {
	t.Helper()
	r := er(t, "", nil, "print", "-leaks", exp)
	if r.code != 0 {
		t.Fatalf("er print -leaks: exit %d\n%s", r.code, r.stderr)
	}
	head := regexp.MustCompile(`^Leak #\d+, Instances = (\d+), Bytes Leaked = (\d+)$`)
	var out []leak
	for _, line := range strings.Split(r.stdout, "\n") {
		if m := head.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			b, _ := strconv.Atoi(m[2])
			out = append(out, leak{instances: n, bytes: b})
			continue
		}
		if strings.HasPrefix(line, "  ") && len(out) > 0 {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " + ")
			out[len(out)-1].frames = append(out[len(out)-1].frames, name)
		}
	}
	return out
}

// TestHeapTracing: every function's allocations, bytes, leaks and bytes leaked are exactly what
// testdata/heap.c counted, realloc makes no false leak, and each leak's stack is complete and right.
func TestHeapTracing(t *testing.T) {
	needCollect(t)
	builds := []struct{ name, bin string }{
		{"frame-pointers", cprog(t, "heap")},
		{"O2", cbuild(t, "heap", "-O2", "-g", "-pthread")},
	}
	if _, err := exec.LookPath("g++"); err == nil {
		bin := filepath.Join(t.TempDir(), "heapcpp")
		src := filepath.Join("..", "..", "testdata", "heapcpp.cc")
		if out, err := exec.Command("g++", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("g++: %v\n%s", err, out)
		}
		builds = append(builds, struct{ name, bin string }{"C++", bin})
	} else {
		t.Log("g++ is not installed: C++ new and delete are not tested")
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			exp, r := collectExp(t, nil, "-p", "off", "-H", "on", b.bin)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			want := expectations(t, r.stdout)
			got := csvRows(t, exp, "i+heapalloccnt:i+heapallocbytes:i+heapleakcnt:i+heapleakbytes", "-functions")
			for fn, w := range want {
				g := got[fn]
				if g == nil {
					g = got[fn+"()"] // a C++ function
				}
				if g == nil {
					t.Errorf("%s: not in the function list", fn)
					continue
				}
				if g[0] != w["allocs"] || g[1] != w["bytes"] || g[2] != w["leaks"] || g[3] != w["leaked"] {
					t.Errorf("%s: allocations %v, bytes %v, leaks %v, bytes leaked %v; the program counted %v, %v, %v, %v",
						fn, g[0], g[1], g[2], g[3], w["allocs"], w["bytes"], w["leaks"], w["leaked"])
				}
			}
			leaks := leakStacks(t, exp)
			if b.name == "C++" {
				if len(leaks) != 2 || strings.Join(leaks[0].frames[:3], " ") != "malloc operator new(unsigned long) cpp_leak()" {
					t.Errorf("C++ leaks %+v: want 2, from operator new in cpp_leak()", leaks)
				}
				return
			}
			find := func(bytes int) *leak {
				for i := range leaks {
					if leaks[i].bytes == bytes {
						return &leaks[i]
					}
				}
				return nil
			}
			for _, c := range []struct {
				bytes, instances int
				top              []string
			}{
				{3000, 3, []string{"malloc", "leak_direct", "main"}},
				{4000, 1, []string{"realloc", "grow_leak", "main"}},
				{4096, 1, []string{"mmap", "mapped", "main"}},
				{14, 2, []string{"malloc", "in_thread", "start_thread"}},
				{100, 1, []string{"calloc", "zeroed", "main"}},
			} {
				l := find(c.bytes)
				if l == nil {
					t.Errorf("no leak of %d bytes in %+v", c.bytes, leaks)
					continue
				}
				if l.instances != c.instances || len(l.frames) < len(c.top) || strings.Join(l.frames[:len(c.top)], " ") != strings.Join(c.top, " ") {
					t.Errorf("leak of %d bytes: %d instances, stack %q; want %d under %q", c.bytes, l.instances, l.frames, c.instances, c.top)
				}
			}
			for _, l := range leaks {
				if n := len(l.frames); n == 0 || (l.frames[n-1] != "_start" && l.frames[n-1] != "clone3" && l.frames[n-1] != "clone") {
					t.Errorf("leak of %d bytes: the stack %q does not reach _start or clone3", l.bytes, l.frames)
				}
			}
		})
	}
}

// TestSyncTracing: the waits testdata/syncprog.c timed itself are found, within 5%, at the right
// callers; pthread_join, condition, semaphore and barrier waits are captured.
func TestSyncTracing(t *testing.T) {
	needCollect(t)
	bin := cprog(t, "syncprog")
	for _, mode := range []string{"all", "on"} {
		t.Run("s="+mode, func(t *testing.T) {
			exp, r := collectExp(t, nil, "-p", "off", "-s", mode, bin)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			m := map[string][2]float64{}
			for _, line := range strings.Split(r.stdout, "\n") {
				f := strings.Fields(line)
				if len(f) == 4 && f[0] == "waited" {
					s, _ := strconv.ParseFloat(f[2], 64)
					n, _ := strconv.ParseFloat(f[3], 64)
					m[f[1]] = [2]float64{s, n}
				}
			}
			rows := csvRows(t, exp, "e.sync:e+syncn", "-csingle", "pthread_mutex_lock")
			for _, c := range []struct{ key, measured string }{
				{"Callers/lock_a", "lock_a"}, {"Callers/lock_b", "lock_b"},
			} {
				got, want := rows[c.key], m[c.measured]
				t.Logf("%s: %.6f s in %v waits; the program measured %.6f s in %v", c.key, got[0], got[1], want[0], want[1])
				if got == nil || abs(got[0]-want[0]) > 0.05*want[0] || got[1] != want[1] {
					t.Errorf("%s waited %v; the program measured %v", c.key, got, want)
				}
			}
			funcs := csvRows(t, exp, "i.sync:i+syncn", "-functions")
			for _, c := range []struct{ fn, measured string }{
				{"join_wait", "join_wait"}, {"pthread_cond_wait", "cond_wait"}, {"sem_wait", "sem_wait"},
			} {
				got, want := funcs[c.fn], m[c.measured]
				t.Logf("%s: %.6f s; the program measured %.6f s", c.fn, got[0], want[0])
				if got == nil || abs(got[0]-want[0]) > 0.05*want[0] || got[1] < want[1] {
					t.Errorf("%s waited %v; the program measured %v", c.fn, got, want)
				}
			}
			bar := csvRows(t, exp, "e.sync:e+syncn", "-csingle", "pthread_barrier_wait")["Callers/others"]
			if want := m["barrier_wait"]; bar == nil || abs(bar[0]-want[0]) > 0.05*want[0] {
				t.Errorf("barrier wait from others: %v; the program measured %v", bar, want)
			}
			d := openExp(t, exp)
			thresh := -1.0
			for _, s := range d.Log.Settings {
				if s.Name == "sync_threshold_ns" {
					thresh, _ = strconv.ParseFloat(s.Value, 64)
				}
			}
			t.Logf("threshold %.0f ns", thresh)
			if mode == "all" && thresh != 0 || mode == "on" && (thresh <= 0 || thresh > 1e6) {
				t.Errorf("-s %s: threshold %v ns", mode, thresh)
			}
		})
	}
}

// TestIOTracing: counts and bytes of reads, writes, other calls and errors per file are exactly
// what testdata/ioprog.c did, through POSIX and stdio calls.
func TestIOTracing(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	exp, r := collectExp(t, nil, "-p", "off", "-i", "on", cprog(t, "ioprog"), dir)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	want := expectations(t, r.stdout)
	got := csvRows(t, exp, "e+ioreadcnt:e+ioreadbytes:e+iowritecnt:e+iowritebytes:e+ioothercnt:e+ioerrorcnt", "-ioactivity")
	for file, w := range want {
		g := got[file]
		wv := []float64{w["reads"], w["rbytes"], w["writes"], w["wbytes"], w["other"], w["errors"]}
		if !slices.Equal(g, wv) {
			t.Errorf("%s: reads, bytes, writes, bytes, other, errors = %v; the program did %v", file, g, wv)
		}
	}
	// The program's report is one write of its length to stdout.
	stdout := 0.0
	for name, v := range got {
		if !strings.HasPrefix(name, dir) && name != "<Total>" {
			stdout += v[3]
		}
	}
	if stdout != float64(len(r.stdout)) {
		t.Errorf("bytes written outside %s: %v; the program wrote %d to stdout", dir, stdout, len(r.stdout))
	}
	// The functions that did it: posix_io calls write, stdio_io calls fprintf.
	funcs := csvRows(t, exp, "i+iowritecnt:i+ioreadcnt", "-functions")
	p, s := want[filepath.Join(dir, "posix.dat")], want[filepath.Join(dir, "stdio.txt")]
	if funcs["posix_io"] == nil || funcs["posix_io"][0] != p["writes"] || funcs["stdio_io"] == nil || funcs["stdio_io"][1] != s["reads"] {
		t.Errorf("posix_io %v, stdio_io %v; want %v writes and %v reads", funcs["posix_io"], funcs["stdio_io"], p["writes"], s["reads"])
	}
}

// iostatValues runs er print -printmode csv -iostat and returns its statistics by section and name
// ("API/System calls: writes", "Kernel/Write system calls").
func iostatValues(t *testing.T, exp string) map[string]string {
	t.Helper()
	r := er(t, "", nil, "print", "-printmode", "csv", "-iostat", exp)
	if r.code != 0 {
		t.Fatalf("er print -iostat: exit %d\n%s", r.code, r.stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(recs) < 2 || !slices.Equal(recs[0], []string{"value", "section", "name"}) {
		t.Fatalf("iostat CSV: %v\n%s", err, r.stdout)
	}
	m := map[string]string{}
	for _, rec := range recs[1:] {
		m[rec[1]+"/"+rec[2]] = rec[0]
	}
	return m
}

// TestIOStdioSyscalls: iostat tells the stdio calls (fwrite, fputs, fprintf, fread, fopen, fclose)
// from those of the system-call wrappers (write, open, close), each counted exactly, and says how
// many read and write system calls the kernel counted: testdata/stdioprog.c's 30,000 stdio writes
// of 100 bytes through a 4096-byte buffer are 733 write system calls made inside libc (the last at
// exit), beside its 3,001 write calls. iostat showed one figure, "Total calls 33001", as if every
// call had been a system call.
func TestIOStdioSyscalls(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	exp, r := collectExp(t, nil, "-p", "off", "-i", "on", cprog(t, "stdioprog"), dir, "30000")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	want := expectations(t, r.stdout)
	got := iostatValues(t, exp)
	check := func(key string, w float64) {
		t.Helper()
		if g, err := strconv.ParseFloat(got[key], 64); err != nil || g != w {
			t.Errorf("%s = %q; the program made %v", key, got[key], w)
		}
	}
	for _, api := range []struct{ key, prefix string }{{"stdio", "stdio calls"}, {"syscalls", "System calls"}} {
		for _, k := range []string{"writes", "reads", "other"} {
			check("API/"+api.prefix+": "+k, want[api.key][k])
		}
	}
	k, sys := want["kernel"], want["syscalls"]
	check("Kernel writes/Write system calls", k["writes"])
	check("Kernel reads/Read system calls", k["reads"])
	check("Kernel writes/by the system calls above", sys["writes"])
	check("Kernel reads/by the system calls above", sys["reads"])
	check("Kernel writes/inside stdio and other code", k["writes"]-sys["writes"])
	check("Kernel reads/inside stdio and other code", k["reads"]-sys["reads"])
	// Text: the two interfaces and the kernel's count, said in words.
	text := er(t, "", nil, "print", "-iostat", exp).stdout
	for _, w := range []string{"Calls by Interface", "stdio calls: writes               30000", "System calls: writes              3001",
		"System Calls Counted by the Kernel", "Write system calls                3734", "  inside stdio and other code     733"} {
		if !strings.Contains(text, w) {
			t.Errorf("iostat lacks %q:\n%s", w, text)
		}
	}
}

// TestSigprofFallback: with perf events denied (forced here), clock profiling by SIGPROF passes
// the seed 002 example and records the CPU time within 5% of getrusage, for 1 and 8 threads.
func TestSigprofFallback(t *testing.T) {
	needCollect(t)
	env := []string{"ER_CLOCK_SOURCE=sigprof"}
	t.Run("seed002", func(t *testing.T) { checkSeed002(t, cprog(t, "seed002"), env) })
	prog := cprog(t, "cpubound")
	for _, threads := range []string{"1", "8"} {
		t.Run("threads="+threads, func(t *testing.T) {
			exp, r := collectExp(t, env, prog, threads, "1")
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			want := measured(t, r.stdout)["rusage"]
			d := openExp(t, exp)
			got := recordedCPU(d)
			t.Logf("recorded %.4f s, getrusage %.4f s: %.2f%%", got, want, 100*got/want)
			if got < want*0.95 || got > want*1.05 {
				t.Errorf("recorded CPU %.4f s is not within 5%% of getrusage %.4f s", got, want)
			}
			source := ""
			for _, s := range d.Log.Settings {
				if s.Name == "clock_source" {
					source = s.Value
				}
			}
			if source != "sigprof" {
				t.Errorf("clock_source %q, want sigprof", source)
			}
		})
	}
}

// TestOwnSigprofHandler: a target with its own SIGPROF handler and ITIMER_PROF timer gets its
// ticks, and each SIGPROF it sends itself exactly once, and keeps its handler, under SIGPROF clock
// profiling and under perf events. The ticks have a lower bound only: they follow the kernel's
// tick-sampled process time, which on a busy machine runs ahead of the CPU time the program reads
// (226 to 259 ticks for an expected 200 beside two CPU hogs, with perf events, where er does not
// touch SIGPROF); a SIGPROF passed on twice shows in the signals the program sends itself.
func TestOwnSigprofHandler(t *testing.T) {
	needCollect(t)
	prog := cbuild(t, "profhandler", "-O1", "-g")
	for _, source := range []string{"sigprof", "perf"} {
		t.Run(source, func(t *testing.T) {
			_, r := collectExp(t, []string{"ER_CLOCK_SOURCE=" + source}, prog)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			var ticks, about float64
			sent, got := -1, -2
			for _, line := range strings.Split(r.stdout, "\n") {
				if f := strings.Fields(line); len(f) == 5 && f[0] == "ticks" {
					ticks, _ = strconv.ParseFloat(f[1], 64)
					about, _ = strconv.ParseFloat(f[4], 64)
				}
				if f := strings.Fields(line); len(f) == 4 && f[0] == "sent" {
					sent, _ = strconv.Atoi(f[1])
					got, _ = strconv.Atoi(f[3])
				}
			}
			t.Logf("%v ticks of about %v; sent itself %d SIGPROF, got %d", ticks, about, sent, got)
			if about == 0 || ticks < 0.9*about {
				t.Errorf("the program's own timer ticked %v times, about %v expected:\n%s", ticks, about, r.stdout)
			}
			if sent != 50 || got != sent {
				t.Errorf("the program sent itself %d SIGPROF and got %d:\n%s", sent, got, r.stdout)
			}
			if !strings.Contains(r.stdout, "handler ok") {
				t.Errorf("the program's SIGPROF handler was replaced:\n%s", r.stdout)
			}
		})
	}
}

// TestTracingSystemPrograms: Debian's sort, gzip and python3 under -H on -s on -i on give the same
// output and exit code as without er.
func TestTracingSystemPrograms(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		b.WriteString(strconv.Itoa((i * 7919) % 20011))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"sort", "-n", in},
		{"sort", filepath.Join(dir, "missing")},
		{"gzip", "-c", in},
		{"python3", "-c", "import json, hashlib, threading\nt = threading.Thread(target=lambda: None); t.start(); t.join()\n" +
			"print(json.dumps({'n': sum(range(100000)), 'h': hashlib.sha256(b'er').hexdigest()}))"},
		{"python3", "-c", "import sys; print('bye'); sys.exit(3)"},
	} {
		// Debian's programs, not a wrapper earlier in $PATH (pyenv's python3 is a shell script).
		path := filepath.Join("/usr/bin", c[0])
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s is not installed; skipped", path)
			continue
		}
		t.Run(strings.Join(c, " "), func(t *testing.T) {
			plain := exec.Command(path, c[1:]...)
			var pout, perr bytes.Buffer
			plain.Stdout, plain.Stderr = &pout, &perr
			_ = plain.Run()
			code := plain.ProcessState.ExitCode()
			exp, r := collectExp(t, nil, append([]string{"-H", "on", "-s", "on", "-i", "on", path}, c[1:]...)...)
			if r.code != code || r.stdout != pout.String() {
				t.Errorf("under er: exit %d, %d bytes of output; without: exit %d, %d bytes", r.code, len(r.stdout), code, pout.Len())
			}
			if !strings.Contains(r.stderr, perr.String()) {
				t.Errorf("stderr under er %q lacks %q", r.stderr, perr.String())
			}
			d := openExp(t, exp)
			if d.IOTable().Len() == 0 || (c[0] != "gzip" && d.HeapTable().Len() == 0) {
				t.Errorf("%d I/O and %d heap events recorded", d.IOTable().Len(), d.HeapTable().Len())
			}
			t.Logf("%d heap, %d sync, %d I/O events", d.HeapTable().Len(), d.SyncTable().Len(), d.IOTable().Len())
		})
	}
}

// TestTracingStaticProgram: a statically linked program cannot load the collector library: er
// collect says so and exits non-zero.
func TestTracingStaticProgram(t *testing.T) {
	needCollect(t)
	bin := filepath.Join(t.TempDir(), "static")
	src := filepath.Join("..", "..", "testdata", "cpubound.c")
	if out, err := exec.Command("gcc", "-static", "-O1", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cannot link statically here: %v\n%s", err, out)
	}
	r := er(t, "", nil, "collect", "-o", filepath.Join(t.TempDir(), "s.er"), "-H", "on", bin, "1", "0.1")
	if r.code == 0 || !strings.Contains(r.stderr, "statically linked") || !strings.Contains(r.stderr, "-H") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestTracingCrash: a target that aborts keeps what the library wrote before.
func TestTracingCrash(t *testing.T) {
	needCollect(t)
	exp, r := collectExp(t, nil, "-p", "off", "-H", "on", "-i", "on", cprog(t, "heap"), "abort")
	if r.code != 128+6 {
		t.Fatalf("er collect: exit %d, want %d (SIGABRT)\n%s", r.code, 128+6, r.stderr)
	}
	d := openExp(t, exp)
	var leaked uint64
	for _, e := range d.HeapEvents() {
		if e.Op == experiment.HeapMalloc && e.Size == 1000 {
			leaked += e.Size
		}
	}
	if leaked != 3000 {
		t.Errorf("after the crash the experiment holds %d bytes of leak_direct's allocations, want 3000", leaked)
	}
	if l := leakStacks(t, exp); len(l) == 0 {
		t.Errorf("no leaks shown after the crash")
	}
}

// TestTracingFork: a threaded target that forks while its threads allocate, and whose children
// allocate and exec, runs to the end; the founder's events are recorded.
func TestTracingFork(t *testing.T) {
	needCollect(t)
	exp, r := collectExp(t, nil, "-H", "on", "-s", "on", "-i", "on", cprog(t, "heap"), "fork")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	d := openExp(t, exp)
	pids := map[uint32]int{}
	for _, e := range d.HeapEvents() {
		pids[e.Pid]++
	}
	if len(pids) != 1 || pids[d.Log.Pid] == 0 {
		t.Errorf("heap events by process %v; want the target's (%d) only", pids, d.Log.Pid)
	}
}

// TestTracingDlopen: code loaded with dlopen after the start is unwound through and named, even
// without clock profiling (no perf mappings): the library records the new object's mappings.
func TestTracingDlopen(t *testing.T) {
	needCollect(t)
	dir := t.TempDir()
	src := filepath.Join("..", "..", "testdata", "dlheap.c")
	plugin, prog := filepath.Join(dir, "libplugin.so"), filepath.Join(dir, "dlheap")
	for _, args := range [][]string{
		{"-O2", "-g", "-shared", "-fPIC", "-DPLUGIN", "-o", plugin, src},
		{"-O2", "-g", "-o", prog, src},
	} {
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	exp, r := collectExp(t, nil, "-p", "off", "-H", "on", prog, plugin)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	var found *leak
	leaks := leakStacks(t, exp)
	for i := range leaks {
		if leaks[i].bytes == 777 {
			found = &leaks[i]
		}
	}
	if found == nil || strings.Join(found.frames, " ") != "malloc plugin_alloc main __libc_start_call_main __libc_start_main _start" {
		t.Errorf("the plug-in's leak: %+v (all: %+v)", found, leaks)
	}
	// The archive step, which reads the trace's stacks and not its events, copied the plug-in that a
	// stack holds (mapped at the time the stack was written) and its source file.
	files, err := os.ReadFile(filepath.Join(exp, "archives", "files.xml"))
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(src)
	// The plug-in is archived whole (-a copy) or as its compact symbol and unwind sections (the
	// default); either way files.xml names it.
	if !strings.Contains(string(files), `<object path="`+plugin+`"`) && !strings.Contains(string(files), `<compact path="`+plugin+`"`) {
		t.Errorf("archives/files.xml lacks the plug-in %s:\n%s", plugin, files)
	}
	if want := `<source path="` + abs + `"`; !strings.Contains(string(files), want) {
		t.Errorf("archives/files.xml lacks %s:\n%s", want, files)
	}
}

// TestSummedViews: er print reads trace files summed as they are read where every command is a view
// of totals (heap replayed, synchronization and I/O per site); each such view shows what it shows
// from the events, read when a filter (one that keeps all) needs them.
func TestSummedViews(t *testing.T) {
	needCollect(t)
	progs := []struct {
		name string
		args []string
	}{
		{"ioprog", []string{cprog(t, "ioprog"), t.TempDir()}},
		{"syncprog", []string{cprog(t, "syncprog")}},
		{"heap", []string{cprog(t, "heap")}},
	}
	views := [][]string{{"-functions"}, {"-leaks"}, {"-allocs"}, {"-heapstat"}, {"-heap"}, {"-statistics"},
		{"-ioactivity", "-iodetail"}, {"-iocallstack"}, {"-iostat"}, {"-calltree"}, {"-callers-callees"},
		{"-experiment_list"}, {"-metrics", "i.sync:i+syncn:i.iowritetime:i+ioerrorcnt", "-functions"}}
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			exp, r := collectExp(t, nil, append([]string{"-p", "on", "-H", "on", "-s", "all", "-i", "on"}, p.args...)...)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			for _, v := range views {
				summed := er(t, "", nil, append(append([]string{"print"}, v...), exp)...)
				events := er(t, "", nil, append(append([]string{"print", "-filters", "1"}, v...), exp)...)
				got := strings.Replace(events.stdout, "Current filter: 1\n", "", 1)
				if summed.code != 0 || events.code != 0 || summed.stdout != got || summed.stderr != events.stderr {
					t.Errorf("%s: summed (exit %d):\n%s%s\nfrom the events (exit %d):\n%s%s", strings.Join(v, " "),
						summed.code, summed.stdout, summed.stderr, events.code, got, events.stderr)
				}
			}
		})
	}
}
