package main

// Processes in which the collector library cannot record, and er collect's word for each: a Landlock
// ruleset that denies the library its files, a descriptor limit that leaves it no descriptor out of
// the program's way.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// needLandlock skips unless the kernel has Landlock: landlock_create_ruleset gives its ABI version
// (/sys/kernel/security/lsm lists it too, where securityfs is mounted).
func needLandlock(t *testing.T) {
	t.Helper()
	const versionFlag = 1 // LANDLOCK_CREATE_RULESET_VERSION
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, versionFlag)
	if e != 0 {
		t.Skipf("the kernel has no Landlock (landlock_create_ruleset: %v)", e)
	}
	t.Logf("Landlock ABI %d", v)
}

// privdropChild is the experiment of the process image that leaks child_leaks under privdrop HOW.
func privdropChild(exp, how string) string {
	switch how {
	case "exec":
		return filepath.Join(exp, "_f1_x1.er")
	case "execself":
		return filepath.Join(exp, "_x1.er")
	}
	return filepath.Join(exp, "_f1.er")
}

// unrecordedChild checks that the founder of a privdrop run has parent_leaks' blocks exactly, and
// that child_leaks' were recorded nowhere, as the program counted them.
func unrecordedChild(t *testing.T, exp, child, out string) {
	t.Helper()
	want := expectations(t, out)["parent_leaks"]
	founder, sub := heapOf(t, exp), heapOf(t, child)
	if g := founder["parent_leaks"]; g == nil || g[0] != want["allocs"] || g[1] != want["bytes"] || g[2] != want["leaks"] || g[3] != want["leaked"] {
		t.Errorf("founder: parent_leaks' allocations, bytes, leaks, bytes leaked %v; the program counted %v", g, want)
	}
	for where, g := range map[string][]float64{"founder": founder["child_leaks"], filepath.Base(child): sub["child_leaks"]} {
		if g != nil && g[0] != 0 {
			t.Errorf("%s: child_leaks has %v allocations, which the library could not have recorded", where, g)
		}
	}
}

// outputLines is a program's output without its "child PID" line, which differs from run to run.
func outputLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "child ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestLandlockChild: a process applies a Landlock ruleset that denies writing under the experiment's
// directory (all of it, or regular files only) and then leaks 10 blocks, and forks a child that leaks
// 100, or forks one that execs an image that leaks them, or execs that image itself. The process
// itself records on (its files are held from before the ruleset: Landlock checks opens and
// creations, not writes); the processes under its ruleset cannot create their files, even through
// the directory descriptor held from before: each is named, in its experiment and on stderr, with
// Landlock as the reason. Before: a forked child was said to fail with "permission denied" alone
// (Landlock unsaid), and where the ruleset let it make its directory, nothing was said of it at all
// ("No warnings"); an exec'd image "could not start ... before it either (permission denied, as
// user root, 0)", or "ended before the library started". A daemon that closes every descriptor
// from 3 up after its ruleset, with close_range through the C library's syscall() (landlock-close),
// keeps the library's, as glibc's close_range does: before, recording stopped in it ("permission
// denied": its files could not be opened again by their names) and its child was not said of at all.
func TestLandlockChild(t *testing.T) {
	needCollect(t)
	needLandlock(t)
	for _, mode := range []string{"landlock", "landlock-files", "landlock-close"} {
		for _, how := range []string{"fork", "exec", "execself"} {
			t.Run(mode+"/"+how, func(t *testing.T) {
				writable := t.TempDir() // where the ruleset lets it write: not the experiment
				exp, _, r := privdropRun(t, nil, []string{"-p", "on", "-H", "on"}, mode, how, writable)
				child := privdropChild(exp, how)
				unrecordedChild(t, exp, child, r.stdout)
				say := []string{"could not start in process", "restricted itself with a Landlock ruleset", "landlock_restrict_self"}
				if how != "fork" {
					say[0] = "did not run in process"
				}
				readable(t, child, say...)
				if how == "exec" {
					// The forked process, before its exec, could not start either.
					readable(t, filepath.Join(exp, "_f1.er"), "could not start in process", "restricted itself with a Landlock ruleset")
				}
				if !strings.Contains(r.stderr, filepath.Base(child)+": the collector library") || !strings.Contains(r.stderr, "Landlock") {
					t.Errorf("er collect does not name %s and Landlock on stderr:\n%s", filepath.Base(child), r.stderr)
				}
				noWarnings(t, exp)
			})
		}
	}
}

// TestLandlockRawClose: a process that closes every descriptor from 3 up with the close_range system
// call itself, after its Landlock ruleset, takes the library's too: it can open its files again only
// by their names, which the ruleset denies, and stops recording in that process (its files' headers
// say "permission denied"); its child, which no longer has the FIFO and may not open it by its name
// either, cannot say why it did not start, and er says it from the ruleset (before: nothing at all).
func TestLandlockRawClose(t *testing.T) {
	needCollect(t)
	needLandlock(t)
	for _, how := range []string{"fork", "exec"} {
		t.Run(how, func(t *testing.T) {
			exp, _, r := privdropRun(t, nil, []string{"-p", "on", "-H", "on"}, "landlock-rawclose", how, t.TempDir())
			child := privdropChild(exp, how)
			readable(t, exp, "the collector library stopped recording in process", "permission denied")
			readable(t, child, "did not run in process", "restricted itself with a Landlock ruleset")
			if g := heapOf(t, child)["child_leaks"]; g != nil && g[0] != 0 {
				t.Errorf("%s: child_leaks has %v allocations, which the library could not have recorded", filepath.Base(child), g)
			}
			if !strings.Contains(r.stderr, filepath.Base(child)+": the collector library did not run") {
				t.Errorf("er collect does not name %s on stderr:\n%s", filepath.Base(child), r.stderr)
			}
		})
	}
}

// TestDescriptorLimitChild: a process lowers its RLIMIT_NOFILE to one more than the number its next
// open gets (the soft limit alone, or the hard one too), then forks a child that leaks 100 blocks
// and opens a file, or forks one that execs an image that does, or execs it itself; then it opens a
// file too. Every open of the program's succeeds, with the number it gets without er, and the
// program exits as it does alone. Under the soft limit alone, the library lifts it while an
// instance starts, holds its descriptors above it and puts it back: the child's experiment has all
// 100 blocks, with no warning. Under both limits there is no number the program could not need:
// the library records nothing in those processes and takes no descriptor, and each is named with its
// limit. Before: the child recorded nothing, without a word ("No warnings"), and the exec'd image's
// own open failed with "Too many open files" (the library held the one descriptor left; the target
// exited 2, and 0 alone).
func TestDescriptorLimitChild(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "privdrop")
	for _, mode := range []string{"nofile", "nofile-hard"} {
		for _, how := range []string{"fork", "exec", "execself"} {
			t.Run(mode+"/"+how, func(t *testing.T) {
				alone := runAlone(t, prog, mode, how)
				exp, _, r := privdropRun(t, nil, []string{"-p", "on", "-H", "on"}, mode, how)
				if r.code != alone.code || outputLines(r.stdout) != outputLines(alone.stdout) {
					t.Fatalf("under er: exit %d, output\n%s\nalone: exit %d, output\n%s\n%s", r.code, r.stdout, alone.code, alone.stdout, r.stderr)
				}
				child := privdropChild(exp, how)
				if mode == "nofile" {
					childExpectations(t, exp, child, r.stdout, false)
					noWarnings(t, child)
					return
				}
				unrecordedChild(t, exp, child, r.stdout)
				var fd int
				if _, err := fmt.Sscanf(r.stdout[strings.Index(r.stdout, "open child "):], "open child %d", &fd); err != nil {
					t.Fatalf("no \"open child N\" in the output: %v\n%s", err, r.stdout)
				}
				limit := strconv.Itoa(fd + 1)
				readable(t, child, "could not start in process", "RLIMIT_NOFILE "+limit+", hard "+limit)
				if !strings.Contains(r.stderr, filepath.Base(child)+": the collector library could not start") {
					t.Errorf("er collect does not name %s on stderr:\n%s", filepath.Base(child), r.stderr)
				}
			})
		}
	}
}
