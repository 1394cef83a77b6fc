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
