package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectorFramesHidden: under heap tracing, the collector library's interposers are not in the
// CPU stacks and are not candidates of csingle; the time it spends recording is the one
// <Collector> function, called where the program called malloc (issue 12). Before, its malloc
// was a second "malloc" that csingle asked about, and its unwinder's functions (walk, step,
// get_rule) were among the program's.
func TestCollectorFramesHidden(t *testing.T) {
	needCollect(t)
	prog := cbuild(t, "mallocbench", "-O2", "-g")
	exp, r := collectExp(t, nil, "-H", "on", "-p", "hi", prog, "300000")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	excl, incl := functionTimes(t, exp)
	// At -O2 level5 tail-calls free, whose recording is then under level4; the library's start is
	// outside main.
	if c := excl["<Collector>"]; c <= 0 || incl["level5"] < 0.5*c || incl["level1"] < 0.9*c {
		t.Errorf("<Collector> %.3f s exclusive; level5 %.3f s and level1 %.3f s inclusive: want the recording's time under the calls it recorded",
			c, incl["level5"], incl["level1"])
	}
	out := er(t, "", nil, "print", "-metrics", "e.totalcpu", "-limit", "0", "-functions", "-lobjects", exp).stdout
	for _, internal := range []string{"walk", "step", "get_rule", "record", "er_backtrace"} {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == internal {
				t.Errorf("the collector's %s is a function of the profile: %q", internal, line)
			}
		}
	}
	r = er(t, "", nil, "print", "-csingle", "malloc", exp)
	if msg := r.stdout + r.stderr; strings.Contains(msg, "functions are named") && !strings.Contains(msg, "libercollector") {
		// Another malloc than libc's and the collector's (the dynamic linker's own, where a wait at the
		// start happened to be, with microstates): libc's, by its number in the list.
		choice := ""
		for _, line := range strings.Split(msg, "\n") {
			if n, rest, ok := strings.Cut(strings.TrimSpace(line), ") malloc ["); ok && strings.Contains(rest, "/libc.so") {
				choice = n
			}
		}
		script := filepath.Join(t.TempDir(), "csingle")
		if err := os.WriteFile(script, []byte("csingle malloc "+choice+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r = er(t, "", nil, "print", "-script", script, exp)
	}
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, "functions are named") || strings.Contains(r.stdout, "libercollector") {
		t.Errorf("csingle malloc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "level5") {
		t.Errorf("csingle malloc does not show level5 as its caller:\n%s", r.stdout)
	}
}
