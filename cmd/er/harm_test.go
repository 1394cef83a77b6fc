package main

// First, do no harm: a target run under er collect behaves as it does alone (its files, its output,
// its exit status), whatever it does to descriptors, signals or the disk, and what er records of it
// is complete or says what it lost.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runPlain runs bin with args outside er and returns its standard output.
func runPlain(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	return out.String()
}

// sameFiles fails unless every file of dir a is in dir b with the same bytes, and b has no other.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	ea, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := os.ReadDir(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ea) != len(eb) {
		t.Errorf("%s has %d files, %s has %d", a, len(ea), b, len(eb))
	}
	for _, e := range ea {
		x, err := os.ReadFile(filepath.Join(a, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s: %d bytes under er, %d without: the target's file was changed", e.Name(), len(y), len(x))
		}
	}
}

// TestTargetDescriptors: a target that closes every descriptor from 3 up (a close loop, close_range,
// closefrom) or dup2s, dup3s or fcntl-dups its own files over descriptors 3 to 9 and then opens files
// of its own: under heap, sync and I/O tracing, and SIGPROF clock profiling, its files are byte for
// byte what it writes alone, and the heap trace has every allocation it counted.
func TestTargetDescriptors(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "fdgames")
	for _, mode := range []string{"closeloop", "close_range", "sys_close_range", "syscall_close_range", "closefrom", "dup2", "dup3", "fcntl"} {
		t.Run(mode, func(t *testing.T) {
			plain := t.TempDir()
			want := expectations(t, runPlain(t, prog, mode, plain))["work"]
			for _, variant := range []struct {
				name string
				env  []string
				args []string
			}{
				{"trace", nil, []string{"-p", "off", "-H", "on", "-s", "on", "-i", "on"}},
				{"sigprof", []string{"ER_CLOCK_SOURCE=sigprof"}, []string{"-p", "hi", "-H", "on"}},
			} {
				t.Run(variant.name, func(t *testing.T) {
					dir := t.TempDir()
					exp, r := collectExp(t, variant.env, append(variant.args, prog, mode, dir)...)
					if r.code != 0 {
						t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
					}
					sameFiles(t, plain, dir)
					got := csvRows(t, exp, "i+heapalloccnt:i+heapallocbytes:i+heapleakcnt:i+heapleakbytes", "-functions")["work"]
					if got == nil || got[0] != want["allocs"] || got[1] != want["bytes"] || got[2] != want["leaks"] || got[3] != want["leaked"] {
						t.Errorf("work: allocations, bytes, leaks, bytes leaked %v; the program counted %v", got, want)
					}
				})
			}
		})
	}
}

// tmpfs mounts a tmpfs of size bytes at a new directory and returns it; the test is skipped where
// mounting is not allowed (not root, no mount namespace of its own).
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v: %s): run as root to test a full disk", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// checksum returns the "checksum" line faultprog printed.
func checksum(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(line, "checksum "); ok {
			return c
		}
	}
	t.Fatalf("no checksum in the output:\n%s", out)
	return ""
}

// TestFullDisk: heap tracing into a 2 MB tmpfs fills it. The target runs on untouched (its output,
// its files and its exit status are those of a run alone), er says once that the disk is full, and
// the experiment reads, with its end recorded and a warning that says what was lost.
func TestFullDisk(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "faultprog")
	plain := t.TempDir()
	cmd := exec.Command(prog, plain, "3000", "2")
	out, err := cmd.Output()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("faultprog alone: %v (want exit status 7)\n%s", err, out)
	}
	want := checksum(t, string(out))
	for _, args := range [][]string{{"-p", "on", "-H", "on"}, {"-p", "hi", "-H", "on", "-s", "on", "-i", "on"}} {
		t.Run(strings.Join(args, ""), func(t *testing.T) {
			files := t.TempDir()
			exp := filepath.Join(tmpfs(t, 2<<20), strings.Join(args, "")+".er")
			r := er(t, "", nil, append(append([]string{"collect", "-o", exp}, args...), prog, files, "3000", "2")...)
			if r.code != 7 {
				t.Errorf("er collect exited %d, the target's status is 7\n%s", r.code, r.stderr)
			}
			if got := checksum(t, r.stdout); got != want {
				t.Errorf("checksum %s under er, %s alone", got, want)
			}
			sameFiles(t, plain, files)
			if n := strings.Count(strings.ToLower(r.stderr), "no space left"); n != 1 {
				t.Errorf("er collect said %d times that the disk is full; want once:\n%s", n, r.stderr)
			}
			h := er(t, "", nil, "print", "-header", exp)
			if h.code != 0 {
				t.Fatalf("er print -header: exit %d\n%s", h.code, h.stderr)
			}
			if !strings.Contains(h.stdout, "exit status 7") && !strings.Contains(h.stdout, "exited with status 7") {
				t.Errorf("the header does not record the target's exit status 7:\n%s", h.stdout)
			}
			if !strings.Contains(strings.ToLower(h.stdout+h.stderr), "no space left") {
				t.Errorf("er print -header does not say that recording stopped on a full disk:\n%s%s", h.stdout, h.stderr)
			}
			l := er(t, "", nil, "print", "-leaks", exp)
			if l.code != 0 || !strings.Contains(strings.ToLower(l.stderr+l.stdout), "heap") || !strings.Contains(strings.ToLower(l.stderr+l.stdout), "stopped") {
				t.Errorf("er print -leaks (exit %d) does not warn that the heap trace stopped early:\n%s%s", l.code, l.stdout, l.stderr)
			}
		})
	}
}

// goProg builds the Go program testdata/NAME (a main package with cgo) and returns the binary.
func goProg(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(workDir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := t.TempDir()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", name, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in testdata/%s: %v", name, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+name+"\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build testdata/%s: %v\n%s", name, err, out)
	}
	return bin
}

// TestCgoSigprof: the SIGPROF clock fallback profiles a Go program with cgo (goroutines in Go and C
// code, growing stacks) without harm, also while the program profiles itself with runtime/pprof; the
// CPU time recorded at -p hi (1 ms: a thread's last partial interval is lost, and a Go program has about
// 8 threads) is within 10% of what the program measured (each run is about 1 s of CPU).
func TestCgoSigprof(t *testing.T) {
	needCollect(t)
	prog := goProg(t, "cgospin")
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("pprof=%v", own), func(t *testing.T) {
			for i := range 3 {
				args := []string{prog, "-rounds", "2500"}
				pprofFile := filepath.Join(t.TempDir(), "own.pprof")
				if own {
					args = append(args, "-pprof", pprofFile)
				}
				exp, r := collectExp(t, []string{"ER_CLOCK_SOURCE=sigprof"}, append([]string{"-p", "hi"}, args...)...)
				if r.code != 0 || !strings.Contains(r.stdout, "done") {
					t.Fatalf("run %d: er collect: exit %d\n%s\n%s", i, r.code, r.stdout, lastLines(r.stderr, 30))
				}
				want := measured(t, r.stdout)["cpu"]
				got := recordedCPU(openExp(t, exp))
				t.Logf("run %d: recorded %.3f s of the %.3f s the program measured", i, got, want)
				if got < 0.9*want || got > 1.1*want {
					t.Errorf("run %d: recorded %.3f s, the program measured %.3f s", i, got, want)
				}
				if own {
					b, err := os.ReadFile(pprofFile)
					if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
						t.Errorf("run %d: the program's own profile is not a gzip'd pprof file (%d bytes, %v)", i, len(b), err)
					}
				}
			}
		})
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// heapExpectations checks er's heap metrics of each function the program counted ("expect FUNC
// allocs N bytes B leaks L leaked LB") against what it counted, exactly.
func heapExpectations(t *testing.T, exp, out string) {
	t.Helper()
	got := csvRows(t, exp, "i+heapalloccnt:i+heapallocbytes:i+heapleakcnt:i+heapleakbytes", "-functions")
	for fn, w := range expectations(t, out) {
		g := got[fn]
		if g == nil || g[0] != w["allocs"] || g[1] != w["bytes"] || g[2] != w["leaks"] || g[3] != w["leaked"] {
			t.Errorf("%s: allocations, bytes, leaks, bytes leaked %v; the program counted %v %v %v %v", fn, g, w["allocs"], w["bytes"], w["leaks"], w["leaked"])
		}
	}
}

// TestSignalHandlerHeap: malloc and free called in a signal handler, which interrupts the program
// while it is inside traced calls, are recorded, and in a handler nested in it: no false leak of the
// blocks the handler frees, every block it leaks is found, and the program sees its own handlers.
func TestSignalHandlerHeap(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "sigheap")
	for _, v := range []struct {
		name string
		env  []string
		args []string
	}{
		{"perf", nil, []string{"-p", "off", "-H", "on"}},
		{"sigprof", []string{"ER_CLOCK_SOURCE=sigprof"}, []string{"-p", "hi", "-H", "on"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			exp, r := collectExp(t, v.env, append(v.args, prog)...)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			heapExpectations(t, exp, r.stdout)
			if !strings.Contains(r.stdout, "handlers ok") {
				t.Errorf("sigaction did not give the program back its own handlers:\n%s", r.stdout)
			}
		})
	}
}

// TestSigprofBlockedSignals: a target that blocks every signal in every thread (pthread_sigmask, as
// servers that wait for signals with sigwait do) is still profiled by the SIGPROF fallback: the CPU
// time recorded at -p hi is within 10% of what the program measured. Where it blocks them with the
// system call, which the library cannot see, er says that the samples are missing.
func TestSigprofBlockedSignals(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "faultprog")
	env := []string{"ER_CLOCK_SOURCE=sigprof"}
	t.Run("pthread_sigmask", func(t *testing.T) {
		exp, r := collectExp(t, env, "-p", "hi", prog, t.TempDir(), "3000", "2", "0", "blocksig")
		if r.code != 7 {
			t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
		}
		want := measured(t, r.stdout)["cpu"]
		got := recordedCPU(openExp(t, exp))
		t.Logf("recorded %.3f s of the %.3f s the program measured", got, want)
		if got < 0.9*want || got > 1.1*want {
			t.Errorf("recorded %.3f s, the program measured %.3f s", got, want)
		}
	})
	t.Run("rt_sigprocmask", func(t *testing.T) {
		exp, r := collectExp(t, env, "-p", "hi", prog, t.TempDir(), "3000", "2", "0", "rawblock")
		if r.code != 7 {
			t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "SIGPROF") {
			t.Errorf("er collect does not say that the target blocked the clock's signal:\n%s", r.stderr)
		}
		h := er(t, "", nil, "print", "-header", exp)
		if !strings.Contains(h.stdout, "SIGPROF") {
			t.Errorf("the experiment's header does not say that clock samples are missing:\n%s", h.stdout)
		}
	})
}

// TestSignalLongjmp: a program whose signal handler allocates and then siglongjmps out of itself,
// every round, in three threads: every allocation of the handler and of the rounds after the jumps
// is recorded, exactly.
func TestSignalLongjmp(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "faultprog")
	exp, r := collectExp(t, nil, "-p", "off", "-H", "on", prog, t.TempDir(), "400", "2", "0", "jump")
	if r.code != 7 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	heapExpectations(t, exp, r.stdout)
}

// TestTargetKilled: a target that dies of a signal: er exits with 128 + the signal, as a shell
// would report it, and says which signal killed it, as the experiment's header does.
func TestTargetKilled(t *testing.T) {
	needCollect(t)
	exp, r := collectExp(t, nil, "-H", "on", cprog(t, "heap"), "abort")
	if r.code != 128+6 || !strings.Contains(r.stderr, "killed by signal 6 (SIGABRT)") {
		t.Errorf("er collect: exit %d (want 134), and says:\n%s", r.code, r.stderr)
	}
	h := er(t, "", nil, "print", "-header", exp)
	if !strings.Contains(h.stdout, "Target terminated by signal 6 (SIGABRT)") {
		t.Errorf("the header does not name the signal:\n%s", h.stdout)
	}
}

// worldDir returns a new directory that any user may write in.
func worldDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), filepath.Dir(filepath.Dir(dir))} {
		_ = os.Chmod(p, 0o755)
	}
	return dir
}

// TestPrivilegeDrop: a daemon started as root drops its privileges (after it closed every descriptor,
// or dup2'd over them) before it works: the heap trace still has every allocation (close_range
// through glibc's syscall() too: before, it closed the library's descriptors as the system call
// does). Where it closed them with the close_range system call itself, the library cannot open its
// files again after the drop: it stops recording, and er print says so.
func TestPrivilegeDrop(t *testing.T) {
	needCollect(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: a privilege drop cannot be tested")
	}
	prog := cprog(t, "fdgames")
	if err := os.Chmod(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"none+setuid", "closeloop+setuid", "close_range+setuid", "syscall_close_range+setuid", "closefrom+setuid", "dup2+setuid"} {
		t.Run(mode, func(t *testing.T) {
			dir := worldDir(t)
			exp, r := collectExp(t, nil, "-p", "on", "-H", "on", prog, mode, dir)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			heapExpectations(t, exp, r.stdout)
		})
	}
	t.Run("sys_close_range+setuid", func(t *testing.T) {
		dir := worldDir(t)
		exp, r := collectExp(t, nil, "-p", "on", "-H", "on", prog, "sys_close_range+setuid", dir)
		if r.code != 0 {
			t.Fatalf("er collect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		readable(t, exp, "stopped recording", "permission denied")
	})
}
