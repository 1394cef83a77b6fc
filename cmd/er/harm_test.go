package main

// First, do no harm: a target run under er collect behaves as it does alone (its files, its output,
// its exit status), whatever it does to descriptors, signals or the disk, and what er records of it
// is complete or says what it lost.

import (
	"bytes"
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
	for _, mode := range []string{"closeloop", "close_range", "closefrom", "dup2", "dup3", "fcntl"} {
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
