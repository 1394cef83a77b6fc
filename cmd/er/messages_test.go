package main

// Messages and conventions (issue 12): what er says when something is wrong, checked on real runs.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectMissingDir: -o into a directory that does not exist, or -d naming one, is an error
// naming the directory, and er creates nothing (it used to create the directory for -o).
func TestCollectMissingDir(t *testing.T) {
	needCollect(t)
	missing := filepath.Join(t.TempDir(), "nonexistent")
	for _, args := range [][]string{{"-o", filepath.Join(missing, "x.er")}, {"-d", missing}} {
		r := er(t, "", nil, append(append([]string{"collect"}, args...), "/bin/true")...)
		want := "er collect: experiment directory " + missing + " does not exist: create it first (mkdir -p " + missing + ") or choose another -d or -o\n"
		if r.code != 1 || r.stderr != want {
			t.Errorf("er collect %s: code %d, stderr %q; want 1, %q", strings.Join(args, " "), r.code, r.stderr, want)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("er collect %s created %s", strings.Join(args, " "), missing)
		}
	}
}

// TestHelpConventions: er --help, er help COMMAND and COMMAND --help print help on stdout, exit 0.
func TestHelpConventions(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Usage: er <command>"},
		{[]string{"-h"}, "Usage: er <command>"},
		{[]string{"help"}, "Usage: er <command>"},
		{[]string{"help", "collect"}, "Usage: er collect"},
		{[]string{"help", "print"}, "Usage: er print"},
		{[]string{"collect", "--help"}, "Usage: er collect"},
		{[]string{"collect", "-h"}, "hardware counters:"},
		{[]string{"print", "--help"}, "Usage: er print"},
		{[]string{"archive", "--help"}, "Usage: er archive"},
		{[]string{"rm", "--help"}, "Usage: er rm"},
		{[]string{"cp", "--help"}, "Usage: er cp"},
		{[]string{"mv", "--help"}, "Usage: er mv"},
		{[]string{"analyzer", "--help"}, "usage: er analyzer"},
	} {
		r := er(t, "", nil, c.args...)
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("er %s: code %d, want 0 and %q in:\n%s%s", strings.Join(c.args, " "), r.code, c.want, r.stdout, r.stderr)
		}
	}
	if r := er(t, "", nil, "collect", "-Z", "/bin/true"); r.code != 2 || r.stderr != "er collect: unknown option \"-Z\" (run `er collect --help` for the list)\n" {
		t.Errorf("er collect -Z: code %d, stderr %q", r.code, r.stderr)
	}
}
