package main

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sandboxed is what the heap of testdata/sandbox recorded, and what it said it did.
type sandboxed struct {
	exp    string
	r      result
	header string // er print -header of the experiment, its subexperiments' too
}

// runSandbox runs testdata/sandbox with args alone and under er collect -H on (with env and extra
// collect options), and checks that under er its output and exit status are those of the run alone
// and that the experiment reads.
func runSandbox(t *testing.T, env, opts []string, args ...string) sandboxed {
	t.Helper()
	prog := cprog(t, "sandbox")
	// (Where it drops root's privileges, the user it becomes runs it and writes in the experiment.)
	if err := os.Chmod(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	args = withSandbox(args, prog)
	alone := runAlone(t, prog, args...)
	exp := filepath.Join(searchable(t), "test.1.er")
	r := er(t, "", env, append(append(append([]string{"collect", "-o", exp}, opts...), "-H", "on", prog), args...)...)
	if r.code != alone.code {
		t.Errorf("er collect exited %d; the target alone exits %d\n%s", r.code, alone.code, r.stderr)
	}
	sameOutput(t, alone.stdout, r.stdout)
	h := readable(t, exp)
	for _, sub := range subexperiments(t, exp) {
		h += readable(t, filepath.Join(exp, sub))
	}
	return sandboxed{exp, r, h}
}

// withSandbox replaces the argument "SANDBOX" with the sandbox program's path.
func withSandbox(args []string, prog string) []string {
	out := append([]string{}, args...)
	for i, a := range out {
		if a == "SANDBOX" {
			out[i] = prog
		}
	}
	return out
}

// did parses the "did FUNC allocs N bytes B leaks L leaked LB" lines of a program: what it did that
// the library records only where it may.
func did(t *testing.T, out string) map[string]map[string]float64 {
	t.Helper()
	return expectations(t, strings.ReplaceAll(out, "did ", "expect "))
}

func (s sandboxed) says(t *testing.T, texts ...string) {
	t.Helper()
	for _, w := range texts {
		if !strings.Contains(s.header, w) {
			t.Errorf("the experiment does not say %q:\n%s", w, s.header)
		}
	}
}

// afterFilterAbsent: the heap of after_filter, which ran under a filter that denies the library,
// was not recorded, and before_filter's is exact.
func (s sandboxed) afterFilterAbsent(t *testing.T) {
	t.Helper()
	got := csvRows(t, s.exp, "i+heapalloccnt:i+heapallocbytes:i+heapleakcnt:i+heapleakbytes", "-functions")
	if g := got["after_filter"]; g != nil && g[0] != 0 {
		t.Errorf("after_filter's allocations were recorded under the filter: %v", g)
	}
	w := expectations(t, s.r.stdout)["before_filter"]
	if g := got["before_filter"]; g == nil || g[0] != w["allocs"] || g[1] != w["bytes"] || g[2] != w["leaks"] || g[3] != w["leaked"] {
		t.Errorf("before_filter: allocations, bytes, leaks, bytes leaked %v; the program counted %v", g, w)
	}
}

// TestSeccompFilters: a target that sandboxes itself with a seccomp filter that kills or fails the
// system calls the collector library makes runs as it does without er, under -H on: the library
// stops recording before the filter takes effect, and says which process, which call, what the
// filter does with it, and what is no longer recorded; its fork children and the images it execs,
// which inherit the filter, record nothing and say why (before: killed by SIGSYS at the library's
// first new block, or a false "no memory or descriptor for a new block").
func TestSeccompFilters(t *testing.T) {
	needCollect(t)
	stopped := "stopped recording in process"
	for _, c := range []struct {
		name string
		args []string
		says []string
	}{
		{"kill", []string{"tight", "kill", "prctl", "work", "20000"},
			[]string{"installed a seccomp filter that denies the collector library's system call mkdirat (SECCOMP_RET_KILL_PROCESS", stopped}},
		{"errno", []string{"tight", "errno", "seccomp", "work", "20000"},
			[]string{"(SECCOMP_RET_ERRNO: it fails with operation not permitted)", "heap tracing (-H) stopped in it", stopped}},
		{"strict", []string{"strict", "-", "seccomp", "quiet"},
			[]string{"strict mode, SECCOMP_MODE_STRICT", stopped}},
		{"fork", []string{"tight", "kill", "prctl", "fork", "20000"},
			[]string{"the collector library records nothing in process", "it runs under the seccomp filter that process"}},
		{"exec", []string{"tight", "kill", "prctl", "exec", "SANDBOX", "none", "-", "-", "work", "20000"},
			[]string{"the collector library records nothing in process", "so heap tracing (-H) is off in it"}},
		// By the arguments (openat with O_CREAT, fallocate of 64 KiB), with scratch memory, ALU and
		// JSET and JGT jumps.
		{"args", []string{"args", "kill", "seccomp", "work", "20000"},
			[]string{"denies the collector library's system call openat (SECCOMP_RET_ERRNO: it fails with permission denied)", stopped}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := runSandbox(t, nil, []string{"-p", "on"}, c.args...)
			s.says(t, c.says...)
			s.afterFilterAbsent(t)
			if strings.Count(s.r.stderr, "installed a seccomp filter") != 1 {
				t.Errorf("er collect's stderr does not say once that the target installed a seccomp filter:\n%s", s.r.stderr)
			}
		})
	}
}

// TestSeccompLifecycleCalls: a filter that denies one of the system calls the collector library makes
// to follow its instances' lives (whether er is still there: poll; a fork child's directory: mkdirat;
// a clone child's mark: madvise; an image's start: geteuid; a message: rt_sigpending; a privilege
// drop: fchownat; an image exec'd after one: pidfd_open; a chroot: stat) and allows the rest: the
// library stops recording before the filter is in force, says which call, and the target runs as
// without er. Before, the library's check did not know these calls: it let the filter in, and the
// library's own call killed the target (er collect exited 159; the target alone exits 7).
func TestSeccompLifecycleCalls(t *testing.T) {
	needCollect(t)
	type tc struct {
		call string
		args []string
	}
	cases := []tc{
		{"poll", []string{"deny-poll", "kill", "seccomp", "fork", "3000"}},
		{"mkdirat", []string{"deny-mkdirat", "kill", "prctl", "fork", "3000"}},
		{"madvise", []string{"deny-madvise", "kill", "seccomp", "exec", "SANDBOX", "none", "-", "-", "work", "3000"}},
		{"geteuid", []string{"deny-geteuid", "kill", "prctl", "exec", "SANDBOX", "none", "-", "-", "work", "3000"}},
		{"rt_sigpending", []string{"deny-rt_sigpending", "kill", "seccomp", "fork", "3000"}},
	}
	if os.Geteuid() == 0 {
		cases = append(cases,
			tc{"fchownat", []string{"deny-fchownat", "kill", "seccomp", "drop-fork", "3000"}},
			tc{"pidfd_open", []string{"deny-pidfd_open", "kill", "prctl", "drop-exec", "SANDBOX", "none", "-", "-", "work", "3000"}},
			tc{"stat", []string{"deny-stat", "kill", "seccomp", "chroot-fork", t.TempDir(), "3000"}})
	} else {
		t.Log("not root: the privilege drop's and chroot's calls are not tested")
	}
	for _, c := range cases {
		t.Run(c.call, func(t *testing.T) {
			s := runSandbox(t, nil, []string{"-p", "on"}, c.args...)
			s.says(t, "installed a seccomp filter that denies the collector library's system call "+c.call+" (SECCOMP_RET_KILL_PROCESS")
			s.afterFilterAbsent(t)
		})
	}
}

// TestSeccompSealedAfterEr: a process that stopped recording for a seccomp filter that denies the
// library's system calls (here fstat, which glibc's own code does not make) outlives er collect,
// which is stopped meanwhile (SIGINT), and then allocates: it runs on as without er, and holds no
// file of the experiment once er has exited. Before, it was killed at its first allocation after
// er's end (the library ended its instance with system calls under the filter), and kept the
// experiment's directories open and its blocks mapped.
func TestSeccompSealedAfterEr(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "sandbox")
	args := func(dir string) []string { return []string{"deny-fstat", "kill", "seccomp", "daemon", dir, "3000"} }
	// Alone: told to go on at once.
	aloneDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(aloneDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	alone := runAlone(t, prog, args(aloneDir)...)
	waitUntil(t, "the daemon alone", func() bool { return len(processesWith(aloneDir)) == 0 })
	want, err := os.ReadFile(filepath.Join(aloneDir, "done"))
	if err != nil || alone.code != 7 {
		t.Fatalf("sandbox alone: exit %d, %v", alone.code, err)
	}

	dir := t.TempDir()
	exp := filepath.Join(t.TempDir(), "test.1.er")
	// Files, not pipes: the daemon inherits them and outlives er.
	of, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer of.Close()
	errFile := filepath.Join(t.TempDir(), "stderr")
	ef, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	cmd := exec.Command(erBin, append([]string{"collect", "-o", exp, "-p", "on", "-H", "on", prog}, args(dir)...)...)
	cmd.Stdout, cmd.Stderr = of, ef
	stderr := func() string { b, _ := os.ReadFile(errFile); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		waitUntil(t, "the daemon to stop", func() bool { return len(processesWith(dir)) == 0 })
	})
	waitUntil(t, "the founder's end", func() bool { return strings.Contains(stderr(), "the target exited") })
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	daemon := processesWith(dir)
	if h := holders(daemon, exp); len(h) > 0 {
		t.Errorf("after er exited, the process that installed the filter still holds files of the experiment:\n%s", strings.Join(h, "\n"))
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the daemon's end", func() bool { return len(processesWith(dir)) == 0 })
	got, err := os.ReadFile(filepath.Join(dir, "done"))
	if err != nil {
		t.Fatalf("the daemon %v, which installed the filter, did not finish its work after er collect exited: %v\ner collect's stderr:\n%s", daemon, err, stderr())
	}
	if string(got) != string(want) {
		t.Errorf("the daemon's work after er collect exited: %q; alone: %q", got, want)
	}
	readable(t, filepath.Join(exp, "_f1.er"), "denies the collector library's system call fstat")
}

// TestSeccompAllowed: a filter that allows what the library does (one that denies only acct, one by
// arguments that the library's calls do not have) leaves
// the recording on, in the process and in the image it execs (which finds the filter checked in the
// notes of the image before it).
func TestSeccompAllowed(t *testing.T) {
	needCollect(t)
	for _, filter := range []string{"deny-acct", "args-loose"} {
		s := runSandbox(t, nil, nil, filter, "kill", "seccomp", "work", "20000")
		s.says(t, "installed a seccomp filter that allows the collector library's system calls: recording goes on")
		heapExpectations(t, s.exp, strings.ReplaceAll(s.r.stdout, "did ", "expect "))
	}

	s := runSandbox(t, nil, nil, "deny-acct", "kill", "prctl", "exec", "SANDBOX", "none", "-", "-", "work", "3000")
	subs := subexperiments(t, s.exp)
	if len(subs) != 1 {
		t.Fatalf("subexperiments %v, want the exec's", subs)
	}
	// The exec'd image's output is the second half: its own before_filter and after_filter.
	out := s.r.stdout[strings.LastIndex(s.r.stdout, "expect before_filter"):]
	heapExpectations(t, filepath.Join(s.exp, subs[0]), strings.ReplaceAll(out, "did ", "expect "))
}

// TestSeccompUnderEr: er collect itself runs under a filter, which the target inherits and which
// the library cannot read. er runs the library's probe under it first: where the probe is killed
// (here at poll, which the library calls to see whether er is still there, and er's own Go code
// never calls: it uses ppoll), the target runs without the library, unharmed, and er says why;
// where the probe passes (a filter that denies ptrace: er starts the target without ptrace too),
// the library records all. Before, the probe did not make poll: it passed, and the library's first
// record killed the target.
func TestSeccompUnderEr(t *testing.T) {
	needCollect(t)
	sandbox := cprog(t, "sandbox")
	work := []string{sandbox, "none", "-", "-", "work", "3000"}
	alone := runAlone(t, sandbox, work[1:]...)
	under := func(filter, action string) (string, result) {
		exp := filepath.Join(t.TempDir(), "test.1.er")
		cmd := exec.Command(sandbox, append([]string{filter, action, "prctl", "exec", erBin, "collect", "-o", exp, "-p", "on", "-H", "on"}, work...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		if cmd.ProcessState == nil {
			t.Fatal("sandbox did not run")
		}
		// sandbox's own output comes first (its before_filter), then the target's.
		o := out.String()
		if i := strings.Index(o, "\n"); i >= 0 {
			o = o[i+1:]
		}
		return exp, result{o, errb.String(), cmd.ProcessState.ExitCode()}
	}

	exp, r := under("deny-poll", "kill")
	if r.code != alone.code {
		t.Fatalf("er collect under a filter that kills poll: exit %d, the target alone %d\n%s", r.code, alone.code, r.stderr)
	}
	sameOutput(t, alone.stdout, r.stdout)
	const why = "the collector library cannot run under them: they kill it at its system call poll"
	if !strings.Contains(r.stderr, why) {
		t.Errorf("er collect does not say %q:\n%s", why, r.stderr)
	}
	if h := readable(t, exp); !strings.Contains(h, why) || !strings.Contains(h, "heap tracing (-H) is off") {
		t.Errorf("the experiment does not say %q and what is off:\n%s", why, h)
	}

	exp, r = under("deny-ptrace", "errno")
	if r.code != alone.code {
		t.Fatalf("er collect under a filter that denies ptrace: exit %d, the target alone %d\n%s", r.code, alone.code, r.stderr)
	}
	sameOutput(t, alone.stdout, r.stdout)
	if h := readable(t, exp); !strings.Contains(h, "started without ptrace") {
		t.Errorf("the experiment does not say that the target started without ptrace:\n%s", h)
	}
	heapExpectations(t, exp, strings.ReplaceAll(r.stdout, "did ", "expect "))
	if _, err := os.Stat(exp); err != nil {
		t.Fatal(err)
	}
}

// TestFileSizeLimit: a target that lowers its own RLIMIT_FSIZE below the size of the library's
// trace files runs on: the library stops recording in it, where growing a file would send it
// SIGXFSZ, and says so (before: "er collect exited 153; the target alone exits 7").
func TestFileSizeLimit(t *testing.T) {
	needCollect(t)
	s := runSandbox(t, nil, []string{"-p", "on"}, "fsize", "-", "-", "work", "20000")
	s.says(t, "its trace files reached the process's file size limit (RLIMIT_FSIZE")
	got := csvRows(t, s.exp, "i+heapalloccnt:i+heapallocbytes:i+heapleakcnt:i+heapleakbytes", "-functions")
	w := expectations(t, s.r.stdout)["before_filter"]
	if g := got["before_filter"]; g == nil || g[0] != w["allocs"] || g[1] != w["bytes"] {
		t.Errorf("before_filter: allocations, bytes, leaks, bytes leaked %v; the program counted %v", g, w)
	}
	if g, d := got["after_filter"], did(t, s.r.stdout)["after_filter"]; g != nil && g[0] >= d["allocs"] {
		t.Errorf("after_filter: %v allocations recorded, all of them (%v), past the file size limit", g[0], d["allocs"])
	}
}

// faultSeccomp (TestFaults, make soak): the target sandboxes itself with a seccomp filter at a
// random point of its heap work, under every kind of recording: a filter that kills or fails what the
// library does, strict mode, or one that allows it; installed with prctl or seccomp(2); then it
// works on, forks, or execs. The target's output and exit status are those of a run without er, the
// experiment reads and says what it holds, and nothing changes in it after er exits.
func faultSeccomp(t *testing.T, rng *rand.Rand) {
	prog := cprog(t, "sandbox")
	n := strconv.Itoa(1000 + rng.IntN(30000))
	filter := pick(rng, []string{"tight", "kill"}, []string{"tight", "errno"}, []string{"args", "kill"}, []string{"strict", "-"},
		[]string{"deny-acct", "kill"}, []string{"args-loose", "kill"})
	how := pick(rng, "prctl", "seccomp")
	then := pick(rng, []string{"work", n}, []string{"fork", n}, []string{"exec", prog, "none", "-", "-", "work", n})
	if filter[0] == "strict" {
		then = []string{"quiet"}
	}
	args := append(append(filter, how), then...)
	o := collectOptions[rng.IntN(len(collectOptions))]
	t.Logf("sandbox %v; %v %v", args, o.env, o.args)
	alone := runAlone(t, prog, args...)
	exp, r := collectExp(t, o.env, append(append(o.args, prog), args...)...)
	if r.code != alone.code {
		t.Errorf("er collect exited %d; the target alone exits %d\n%s", r.code, alone.code, r.stderr)
	}
	sameOutput(t, alone.stdout, r.stdout)
	var says []string
	library := slicesContain(o.args, "-H") || slicesContain(o.args, "-s") || slicesContain(o.args, "-i") || len(o.env) > 0
	switch {
	case !library:
	case filter[0] == "deny-acct" || filter[0] == "args-loose":
		says = []string{"installed a seccomp filter that allows the collector library's system calls"}
	default:
		says = []string{"installed a seccomp filter that denies the collector library's system call", "stopped recording in process"}
	}
	readable(t, exp, says...)
	unchangedAfter(t, exp, prog)
}

// unchangedAfter fails if the experiment exp changes once er collect has exited and no process of
// prog is left.
func unchangedAfter(t *testing.T, exp, prog string) {
	t.Helper()
	before := treeState(t, exp)
	deadline := time.Now().Add(60 * time.Second)
	for len(processesWith(prog)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s %v still run 60 s after er collect exited", prog, processesWith(prog))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after := treeState(t, exp); after != before {
		t.Errorf("the experiment changed after er collect exited:\nthen:\n%s\nnow:\n%s", before, after)
	}
}

// treeState lists every file under dir with its size and modification time.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d\n", path, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSeccompTable: every system call the collector library makes itself (strace -k: the innermost
// frame in libercollector.so), in heap, synchronization and I/O tracing, across a privilege drop
// and exec, and in a daemon that outlives er's stop, is in the table the library checks a seccomp
// filter against (the library run as a program with ER_SECCOMP_TABLE=1 prints it): a call missing
// there is one that a filter passing the check kills the target at (before the table had
// lifecycle's calls: poll, mkdirat, madvise, geteuid, rt_sigpending among those seen here; with
// poll and geteuid taken out of the table, it fails for both).
// Calls that an interposer makes for the program (its vfork) are the program's.
func TestSeccompTable(t *testing.T) {
	needCollect(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	lib := filepath.Join(filepath.Dir(erBin), "libercollector.so")
	out, err := exec.Command(lib).Output()
	if err == nil {
		t.Fatalf("%s run without ER_SECCOMP_TABLE or ER_SECCOMP_PROBE exited 0: %s", lib, out)
	}
	cmd := exec.Command(lib)
	cmd.Env = append(os.Environ(), "ER_SECCOMP_TABLE=1")
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("ER_SECCOMP_TABLE=1 %s: %v\n%s", lib, err, out)
	}
	table := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) == 9 {
			table[f[0]] = true
		} else {
			t.Fatalf("table line %q: want NAME NUMBER NEED and six arguments", l)
		}
	}
	if len(table) < 30 {
		t.Fatalf("the library's table names %d system calls", len(table))
	}
	privdrop, dir := cprog(t, "privdrop"), searchable(t)
	if err := os.Chmod(filepath.Dir(privdrop), 0o755); err != nil {
		t.Fatal(err)
	}
	// strace is er's target, and traces the programs (not er, whose own calls would take it minutes to
	// unwind); -I never: a SIGINT that er passes on leaves it tracing.
	traced := func(exp string, opts []string, argv ...string) (trace string, cmd []string) {
		trace = filepath.Join(t.TempDir(), "trace")
		cmd = append(append([]string{erBin, "collect", "-o", filepath.Join(dir, exp)}, opts...), strace, "-ff", "-k", "-qq", "-I", "never", "-o", trace)
		return trace, append(cmd, argv...)
	}
	type run struct{ trace, what string }
	var runs []run
	for _, c := range []struct {
		exp  string
		opts []string
		argv []string
	}{
		{"h.er", []string{"-H", "on"}, []string{cprog(t, "heap")}},
		{"s.er", []string{"-s", "on"}, []string{cprog(t, "syncprog")}},
		{"i.er", []string{"-i", "on"}, []string{cprog(t, "ioprog"), t.TempDir()}},
		{"p.er", []string{"-H", "on", "-s", "on", "-i", "on"}, []string{privdrop, "setuid", "exec"}},
		{"d.er", []string{"-H", "on"}, []string{cprog(t, "daemon"), t.TempDir(), "20", "40"}},
	} {
		trace, argv := traced(c.exp, c.opts, c.argv...)
		if c.exp == "d.er" {
			// er stopped while the daemon runs on: its instances end without er.
			argv = append([]string{"sh", "-c", `"$@" & sleep 0.5; kill -INT $!; wait`, "sh"}, argv...)
		}
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil && c.exp != "d.er" {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		runs = append(runs, run{trace, filepath.Base(c.argv[0])})
	}
	frame := regexp.MustCompile(`^ > .*/libercollector\.so\((\w+)\+`)
	seen := map[string]int{}
	for _, r := range runs {
		files, _ := filepath.Glob(r.trace + ".*")
		if len(files) == 0 {
			t.Fatalf("%s: strace wrote no %s.*", r.what, r.trace)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			for i, l := range lines[:len(lines)-1] {
				call, _, ok := strings.Cut(l, "(")
				m := frame.FindStringSubmatch(lines[i+1])
				if !ok || m == nil || strings.ContainsAny(call, " <") {
					continue
				}
				if fn := strings.TrimLeft(m[1], "_"); fn == call {
					continue // an interposer making the program's call
				}
				seen[call]++
				if !table[call] {
					from := m[1]
					for k := i + 2; from == "er_sys" && k < len(lines) && strings.HasPrefix(lines[k], " > "); k++ {
						if m := frame.FindStringSubmatch(lines[k]); m != nil {
							from = m[1]
						}
					}
					t.Errorf("%s: the library calls %s (from %s), which its seccomp table does not have:\n%s", r.what, call, from, strings.Join(lines[i:min(i+6, len(lines))], "\n"))
					table[call] = true // said once
				}
			}
		}
	}
	t.Logf("the library's own system calls, by name: %v", seen)
	for _, want := range []string{"openat", "mmap", "poll", "mkdirat", "prlimit64"} {
		if seen[want] == 0 {
			t.Errorf("no %s seen from the library: is strace -k naming its frames? %v", want, seen)
		}
	}
}
