package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sigIgnored runs a shell that ignores SIGHUP, SIGUSR1 and SIGPIPE (as nohup or a shell's trap "" does)
// and then execs argv, and returns its output.
func sigIgnored(t *testing.T, argv ...string) string {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `trap '' HUP USR1 PIPE; exec "$@"`, "sh"}, argv...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s%s", argv, err, out.String(), errb.String())
	}
	return out.String()
}

// sigIgnMasks returns the SigIgn masks of /proc/PID/status lines in out.
func sigIgnMasks(t *testing.T, out string) []uint64 {
	t.Helper()
	var masks []uint64
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:\t"); ok {
			m, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			masks = append(masks, m)
		}
	}
	return masks
}

// TestIgnoredSignalsInherited: the signals er's parent left ignored are ignored in the target and its
// descendants, as exec passes them on without er (Go starts its children with the default action for
// every signal its runtime handles), under each kind of collection; and a SIGHUP that er was started
// to ignore (nohup er collect) does not stop the collection.
func TestIgnoredSignalsInherited(t *testing.T) {
	needCollect(t)
	// The shell prints its own mask, then a child's: the founder and a forked descendant.
	script := `grep SigIgn /proc/self/status; grep SigIgn /proc/self/status`
	// The masks hold what the test's own parent ignores too (make leaves glibc's signals 32 and 33
	// ignored for its commands); the three are what the shell adds.
	const three = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGUSR1-1) | 1<<(syscall.SIGPIPE-1)
	alone := sigIgnMasks(t, sigIgnored(t, "sh", "-c", script))
	if len(alone) != 2 || alone[0]&three != three || alone[1]&three != three {
		t.Fatalf("without er the shell and its child ignore %#x, want SIGHUP, SIGUSR1 and SIGPIPE among them", alone)
	}
	for _, mode := range [][]string{nil, {"-H", "on"}, {"-p", "off", "-s", "on"}, {"-y", "USR1,r"}} {
		t.Run(strings.Join(append([]string{"mode"}, mode...), ""), func(t *testing.T) {
			exp := filepath.Join(t.TempDir(), "test.1.er")
			args := append([]string{erBin, "collect", "-o", exp}, mode...)
			out := sigIgnored(t, append(args, "sh", "-c", script)...)
			got := sigIgnMasks(t, out)
			want := slices.Clone(alone)
			if len(mode) > 0 && mode[0] == "-y" {
				// -y USR1 takes SIGUSR1 for er's pause signal: the library handles it in the target.
				for i := range want {
					want[i] &^= 1 << (syscall.SIGUSR1 - 1)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("under er collect %v the target and its child ignore %#x, want %#x as without er\n(all of it: %s)", mode, got, want, out)
			}
		})
	}
	t.Run("nohup", func(t *testing.T) {
		exp := filepath.Join(t.TempDir(), "test.1.er")
		cmd := exec.Command("sh", "-c", `trap '' HUP; exec "$@"`, "sh", erBin, "collect", "-o", exp, "sh", "-c", "sleep 1; echo done")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGHUP)
		err := cmd.Wait()
		if err != nil || !strings.Contains(out.String(), "done") || !strings.Contains(errb.String(), "written") {
			t.Errorf("er collect started with SIGHUP ignored, sent SIGHUP: %v; the target printed %q; er said %q", err, out.String(), errb.String())
		}
	})
}
