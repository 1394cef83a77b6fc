package main

// First, do no harm: a target run under er collect behaves as it does alone (its files, its output,
// its exit status), whatever it does to descriptors, signals or the disk, and what er records of it
// is complete or says what it lost.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
