package main

// The collector library's life beside er collect: a target whose descendants outlive er (a daemon),
// drop their privileges, chroot, or are made by a clone system call of their own; -L and -t with the
// library's trace files; descendants that are not followed. After er exits the experiment does not
// change, no process of the target holds a file of it, and the processes started after that run
// as without er.

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"er/internal/experiment"
)

// snapshot describes every file under dir: its path, type, size and the hash of its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
		case fi.IsDir():
			out[rel] = "directory"
		default:
			out[rel] = fi.Mode().Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return out
}

// sameSnapshot fails unless the experiment is now as it was when er exited.
func sameSnapshot(t *testing.T, before, after map[string]string, when string) {
	t.Helper()
	var diff []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: new (%s)", k, v))
		} else if w != v {
			diff = append(diff, fmt.Sprintf("%s: %s, was %s", k, v, w))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, k+": gone")
		}
	}
	slices.Sort(diff)
	if len(diff) > 0 {
		t.Errorf("the experiment changed after er exited (%s): %d files:\n%s", when, len(diff), strings.Join(diff[:min(len(diff), 12)], "\n"))
	}
}

// holders lists what the processes pids hold of the experiment exp: mappings and descriptors of its files.
func holders(pids []int, exp string) []string {
	var out []string
	for _, pid := range pids {
		maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		for _, line := range strings.Split(string(maps), "\n") {
			if strings.Contains(line, exp) {
				out = append(out, fmt.Sprintf("process %d maps %s", pid, line))
			}
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, exp) {
				out = append(out, fmt.Sprintf("process %d holds descriptor %s: %s", pid, fd.Name(), l))
			}
		}
	}
	return out
}

// waitUntil polls cond; it fails after a minute (a target that is stuck, not a slow one).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// daemonRound is the last round the daemon of testdata/daemon.c started, 0 before the first.
func daemonRound(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "round"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// daemonOutcome is what a daemon run under er collect left.
type daemonOutcome struct {
	exp, dir string
	stderr   string
	stopped  int // the round the daemon had started when er exited
}

// runDaemon runs testdata/daemon under er collect with env and args (a round every 20 ms), waits for
// its round 5, stops er with sig (0: er ends by itself, where it follows no descendant), and
// checks what is left after er exited: the experiment does not change while the daemon runs 3 more
// rounds, the daemon holds no file of it, and its workers of the rounds after the one in progress
// run without er: no LD_PRELOAD, no ER_* variable but the user's, and (exec'd ones) no collector
// library.
func runDaemon(t *testing.T, env, args []string, sig syscall.Signal) daemonOutcome {
	t.Helper()
	prog := cprog(t, "daemon")
	dir := t.TempDir()
	o := daemonOutcome{exp: filepath.Join(t.TempDir(), "test.1.er"), dir: dir}
	errFile := filepath.Join(t.TempDir(), "stderr")
	ef, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	// Files, not pipes: the daemon inherits them and outlives er.
	of, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer of.Close()
	cmd := exec.Command(erBin, append(append([]string{"collect", "-o", o.exp}, args...), prog, dir, "20", "100000")...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = of, ef
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		waitUntil(t, "the daemon to stop", func() bool { return len(processesWith(dir)) == 0 })
	})
	waitUntil(t, "the daemon's round 5", func() bool { return daemonRound(dir) >= 5 })
	if sig != 0 {
		_ = cmd.Process.Signal(sig)
	}
	_ = cmd.Wait()
	o.stopped = daemonRound(dir)
	if sig == syscall.SIGKILL {
		// Told nothing, each instance finds er gone at its first record 10 ms or more after its last
		// look: the daemon's records of up to 10 ms after er's death may be written. After its next
		// round, nothing.
		waitUntil(t, "the daemon's next round", func() bool { return daemonRound(dir) > o.stopped })
		o.stopped = daemonRound(dir)
	}
	b, _ := os.ReadFile(errFile)
	o.stderr = string(b)
	if _, err := os.Stat(filepath.Join(o.exp, "log.xml")); err != nil {
		t.Fatalf("er collect wrote no experiment: %v\n%s", err, o.stderr)
	}
	before := snapshot(t, o.exp)
	waitUntil(t, "3 more rounds of the daemon", func() bool { return daemonRound(dir) >= o.stopped+3 })
	sameSnapshot(t, before, snapshot(t, o.exp), fmt.Sprintf("the daemon went from round %d to %d", o.stopped, daemonRound(dir)))
	if h := holders(processesWith(dir), o.exp); len(h) > 0 {
		t.Errorf("after er exited, the target still holds files of the experiment:\n%s", strings.Join(h, "\n"))
	}
	for r := o.stopped + 2; r <= o.stopped+3; r++ {
		var w []byte
		waitUntil(t, fmt.Sprintf("worker %d", r), func() bool {
			w, err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker.%d", r)))
			return err == nil
		})
		got := string(w)
		// The ER_* variables of the user's own (ER_CLOCK_SOURCE, the test's own) stay, as without er.
		var user, vars []string
		for _, e := range append(os.Environ(), env...) {
			if k, _, _ := strings.Cut(e, "="); strings.HasPrefix(k, "ER_") && !slices.Contains(user, k) {
				user = append(user, k)
			}
		}
		for _, line := range strings.Split(got, "\n") {
			if v, ok := strings.CutPrefix(line, "er_vars"); ok {
				vars = strings.Fields(v)
			}
		}
		slices.Sort(user)
		slices.Sort(vars)
		clean := strings.Contains(got, "preload no\n") && slices.Equal(vars, user)
		if strings.Contains(got, "how exec") {
			clean = clean && strings.Contains(got, "library no\n")
		}
		if !clean {
			t.Errorf("worker %d, started after er exited (at round %d), does not run as without er:\n%s", r, o.stopped, got)
		}
	}
	return o
}

// TestDaemonAfterStop: a daemon (its founder exits at once) allocates and starts a worker every 20 ms.
// Once er collect is stopped (Ctrl-C: SIGINT; or killed), the daemon and its workers write nothing
// more into the experiment, hold none of its files, and the workers started after that get neither
// LD_PRELOAD nor ER_* variables. Before, the experiment grew after "experiment written" (workers
// forked after er's end made .proc/ again) and every worker had the library.
func TestDaemonAfterStop(t *testing.T) {
	needCollect(t)
	t.Run("SIGINT", func(t *testing.T) {
		o := runDaemon(t, nil, []string{"-H", "on"}, syscall.SIGINT)
		if _, err := os.Stat(filepath.Join(o.exp, ".proc")); err == nil {
			t.Errorf("er collect left .proc/ in the experiment")
		}
		readable(t, filepath.Join(o.exp, "_f1.er"), "still running when recording ended")
	})
	t.Run("SIGKILL", func(t *testing.T) {
		o := runDaemon(t, nil, []string{"-H", "on"}, syscall.SIGKILL)
		readable(t, o.exp, "did not end")
	})
}

// privdropRun runs testdata/privdrop MODE HOW under er collect -H on (as root), in an experiment
// that the user 65534 may reach, and returns the experiment, the child's subexperiment and er's
// result.
func privdropRun(t *testing.T, env, args []string, mode, how string, extra ...string) (exp, child string, r result) {
	t.Helper()
	prog := cprog(t, "privdrop")
	if err := os.Chmod(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	exp = filepath.Join(searchable(t), "test.1.er")
	r = er(t, "", env, append(append([]string{"collect", "-o", exp}, args...), append([]string{prog, mode, how}, extra...)...)...)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	child = filepath.Join(exp, "_f1.er")
	if how == "exec" && mode != "rawclone" && mode != "clone" {
		child = filepath.Join(exp, "_f1_x1.er")
	}
	return exp, child, r
}

// searchable returns a new directory that any user may search (not write).
func searchable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// heapOf returns the heap metrics of each function in experiment exp alone (allocations, bytes,
// leaks, bytes leaked).
func heapOf(t *testing.T, exp string) map[string][]float64 {
	t.Helper()
	return csvRows(t, exp, "i+heapalloccnt:i+heapallocbytes:i+heapleakcnt:i+heapleakbytes", "-en_desc", "off", "-functions")
}

// childExpectations checks that the founder has parent_leaks' blocks alone and none of child_leaks',
// and the child's experiment child_leaks' exactly, as privdrop counted them (byTotal: all of its
// blocks are child_leaks').
func childExpectations(t *testing.T, exp, child, out string, byTotal bool) {
	t.Helper()
	want := expectations(t, out)
	cmp := func(where string, got []float64, w map[string]float64) {
		if w == nil {
			if got != nil && got[0] != 0 {
				t.Errorf("%s: %v allocations of the child's, which are not its own", where, got)
			}
			return
		}
		if got == nil || got[0] != w["allocs"] || got[1] != w["bytes"] || got[2] != w["leaks"] || got[3] != w["leaked"] {
			t.Errorf("%s: allocations, bytes, leaks, bytes leaked %v; the program counted %v %v %v %v", where, got, w["allocs"], w["bytes"], w["leaks"], w["leaked"])
		}
	}
	founder, sub := heapOf(t, exp), heapOf(t, child)
	cmp("founder: parent_leaks", founder["parent_leaks"], want["parent_leaks"])
	cmp("founder: child_leaks", founder["child_leaks"], nil)
	cmp("founder: <Total>", founder["<Total>"], want["parent_leaks"])
	if byTotal {
		// (A child on a stack of the program's own, clone()'s: the library's unwinder does not know
		// that stack, and its stacks end there.)
		cmp(filepath.Base(child)+": <Total>", sub["<Total>"], want["child_leaks"])
		return
	}
	cmp(filepath.Base(child)+": child_leaks", sub["child_leaks"], want["child_leaks"])
}

// noWarnings fails when er print -header of exp has warnings.
func noWarnings(t *testing.T, exp string) {
	t.Helper()
	h := er(t, "", nil, "print", "-header", exp)
	if !strings.Contains(h.stdout, "No warnings") {
		t.Errorf("%s: warnings:\n%s%s", exp, h.stdout, h.stderr)
	}
}

// TestPrivilegeDropChild: a process that leaks, drops root's privileges with the C library's setuid,
// setresuid, seteuid or setreuid, and then forks (or forks and execs) a child that leaks 100 blocks:
// the child's subexperiment has all 100, with no warning. Before, it had no heap trace and the
// header said "No warnings" (its instance could not create its directory in root's .proc/), and an
// exec'd child was said to have "ended before the library started".
func TestPrivilegeDropChild(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: a privilege drop cannot be tested")
	}
	for _, mode := range []string{"setuid", "setresuid", "seteuid", "setreuid"} {
		for _, how := range []string{"fork", "exec"} {
			if mode == "seteuid" && how == "exec" {
				// An exec with an effective user other than the real one is a secure exec: the loader
				// ignores LD_PRELOAD and the kernel removes the perf events (TestSetIDChild's case).
				continue
			}
			t.Run(mode+"/"+how, func(t *testing.T) {
				exp, child, r := privdropRun(t, nil, []string{"-p", "on", "-H", "on"}, mode, how)
				childExpectations(t, exp, child, r.stdout, false)
				noWarnings(t, child)
			})
		}
	}
}

// TestPrivilegeDropUnseen: privileges dropped by the system calls themselves, which the collector
// library does not see: the child's experiment and er's stderr say that the library could not start
// in it, why (permission denied), and as which user; the child exec'd after that, that the library
// could not start in its process before. Before, nothing was said of the forked child, and the
// exec'd one was said to have "ended before the library started".
func TestPrivilegeDropUnseen(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: a privilege drop cannot be tested")
	}
	for _, how := range []string{"fork", "exec"} {
		t.Run(how, func(t *testing.T) {
			_, child, r := privdropRun(t, nil, []string{"-p", "on", "-H", "on"}, "rawsetuid", how)
			want := []string{"could not start in process", "permission denied", "user nobody, 65534"}
			if how == "exec" {
				want = []string{"did not run in process", "could not start in process", "before it either (permission denied, as user nobody, 65534)"}
			}
			readable(t, child, want...)
			if !strings.Contains(r.stderr, filepath.Base(child)+": the collector library") {
				t.Errorf("er collect does not say it on stderr:\n%s", r.stderr)
			}
		})
	}
}

// jail makes a directory to chroot into: privdrop at /privdrop, and the libraries it needs at their
// paths.
func jail(t *testing.T, prog string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("ldd", prog).Output()
	if err != nil {
		t.Skipf("ldd %s: %v", prog, err)
	}
	files := [][2]string{{prog, "privdrop"}}
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				files = append(files, [2]string{f, strings.TrimPrefix(f, "/")})
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f[1])
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestChrootChild: a process that leaks, chroots into a directory that holds only itself and its
// libraries, and forks a child that leaks 100 blocks: the child's subexperiment has all 100. A child
// that execs the jail's copy of the program there cannot reach the experiment: it runs as without er
// (the loader does not complain of a missing LD_PRELOAD object), and its experiment says that the
// process chrooted. Before, the forked child recorded nothing, without a word.
func TestChrootChild(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: chroot cannot be tested")
	}
	j := jail(t, cprog(t, "privdrop"))
	t.Run("fork", func(t *testing.T) {
		exp, child, r := privdropRun(t, nil, []string{"-p", "on", "-H", "on"}, "chroot", "fork", j)
		childExpectations(t, exp, child, r.stdout, false)
		noWarnings(t, child)
	})
	t.Run("exec", func(t *testing.T) {
		_, child, r := privdropRun(t, nil, []string{"-p", "on", "-H", "on"}, "chroot", "exec", j)
		readable(t, child, "did not run in process", "chrooted at", "out of reach")
		if strings.Contains(r.stderr, "LD_PRELOAD") {
			t.Errorf("the loader complained of LD_PRELOAD in the jail:\n%s", r.stderr)
		}
	})
}

// TestRawCloneChild: a child made by a clone system call with SIGCHLD alone, or by glibc's clone()
// without CLONE_VM (no fork handler runs in either), leaks 100 blocks: they are in the child's
// subexperiment, none in the founder's. Before, the founder had them (the child wrote into its
// parent's blocks).
func TestRawCloneChild(t *testing.T) {
	needCollect(t)
	for _, mode := range []string{"rawclone", "clone"} {
		t.Run(mode, func(t *testing.T) {
			prog := cprog(t, "privdrop")
			exp, r := collectExp(t, nil, "-p", "on", "-H", "on", prog, mode, "fork")
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			childExpectations(t, exp, filepath.Join(exp, "_f1.er"), r.stdout, mode == "clone")
			noWarnings(t, filepath.Join(exp, "_f1.er"))
		})
	}
}

// TestSizeLimitTraces: -L 5 with heap tracing of a program that allocates 3,000,000 blocks (some
// 100 MB of trace): the library's trace files count, recording stops at the limit with its event and
// er's message, and the heap trace has fewer events than the program made and none after the stop.
// Before, the limit ignored the trace files: a 171 MB experiment, no warning. With the SIGPROF clock
// (no perf events) -t stops the library too; before, it did nothing.
func TestSizeLimitTraces(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "mallocbench")
	for _, c := range []struct {
		name      string
		env, args []string
		say       string
	}{
		{"-L", nil, []string{"-L", "5"}, "size limit of 5 MB reached"},
		{"-t sigprof", []string{"ER_CLOCK_SOURCE=sigprof"}, []string{"-t", "0.2"}, "duration limit of 200ms reached"},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp, r := collectExp(t, c.env, append(append([]string{"-H", "on"}, c.args...), prog, "3000000")...)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, c.say) {
				t.Errorf("er collect does not say %q:\n%s", c.say, r.stderr)
			}
			d, err := experiment.Open(exp)
			if err != nil {
				t.Fatal(err)
			}
			late := 0
			for _, e := range d.HeapEvents() {
				if e.Time > d.Log.StopTime {
					late++
				}
			}
			t.Logf("%d heap events recorded of 6,000,000, the stop at %.3f s", d.HeapTable().Len(), float64(d.Log.StopTime)/1e9)
			if d.Log.StopTime == 0 || d.HeapTable().Len() == 0 || d.HeapTable().Len() >= 6000000 || late > 0 {
				t.Errorf("%d heap events of the program's 6,000,000, %d of them after the stop at %d ns", d.HeapTable().Len(), late, d.Log.StopTime)
			}
		})
	}
}

// TestUnfollowedEnv: with -F off, and with the SIGPROF clock (er does not see descendants there),
// the founder's descendants run as without er: no LD_PRELOAD (the user's own stays), no variable of
// the collector library's, no library in the programs it runs. Before, they inherited LD_PRELOAD and
// the ER_* variables, and (the SIGPROF clock) profiled themselves for nothing.
func TestUnfollowedEnv(t *testing.T) {
	needCollect(t)
	script := `env | grep -E '^(LD_PRELOAD|ER_)' | sort; echo library $(grep -c libercollector /proc/self/maps)`
	for _, c := range []struct {
		name      string
		env, args []string
		want      string
	}{
		{"-F off", nil, []string{"-F", "off", "-H", "on"}, "library 0\n"},
		{"-F off, the user's LD_PRELOAD", []string{"LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6"}, []string{"-F", "off", "-H", "on"},
			"LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6\nlibrary 0\n"},
		{"sigprof", []string{"ER_CLOCK_SOURCE=sigprof"}, []string{"-p", "on"}, "ER_CLOCK_SOURCE=sigprof\nlibrary 0\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat("/lib/x86_64-linux-gnu/libm.so.6"); err != nil && strings.Contains(c.want, "libm") {
				t.Skip(err)
			}
			_, r := collectExp(t, c.env, append(c.args, "/bin/sh", "-c", script)...)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			if r.stdout != c.want {
				t.Errorf("a descendant's environment and mappings:\n%s\nwant:\n%s", r.stdout, c.want)
			}
		})
	}
}

// quietAfter checks, a while after er returned, that the experiment is as it was and that no
// process that ran there holds a file of it.
func quietAfter(t *testing.T, exp string, before map[string]string, dir string) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	sameSnapshot(t, before, snapshot(t, exp), "200 ms later")
	if h := holders(processesWith(dir), exp); len(h) > 0 {
		t.Errorf("after er exited, the target still holds files of the experiment:\n%s", strings.Join(h, "\n"))
	}
}

// TestMountNamespaceChild: a shell enters a mount namespace of its own and mounts an empty tmpfs
// over the directory of the experiment, then execs a program that leaks and forks a child that
// leaks 100 blocks: neither finds the experiment by its name, and both are recorded (through er's
// root in /proc), each with its own blocks. Before, neither had a trace.
func TestMountNamespaceChild(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: mount namespaces cannot be tested")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip(err)
	}
	prog := cprog(t, "privdrop")
	dir := t.TempDir()
	exp := filepath.Join(dir, "test.1.er")
	script := fmt.Sprintf("mount -t tmpfs none %s && exec %s none fork", dir, prog)
	r := er(t, "", nil, "collect", "-o", exp, "-p", "on", "-H", "on", "unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script)
	if r.code != 0 {
		if strings.Contains(r.stderr, "unshare failed") || strings.Contains(r.stdout+r.stderr, "mount:") {
			t.Skipf("no mount namespace here: %s", r.stderr)
		}
		t.Fatalf("er collect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	childExpectations(t, filepath.Join(exp, "_x1_x1.er"), filepath.Join(exp, "_x1_x1_f1.er"), r.stdout, false)
}
