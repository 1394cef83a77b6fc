package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGenerate: the generator writes the two files where go generate, run in internal/tracedef,
// finds them.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "internal", "tracedef")
	for _, d := range []string{work, filepath.Join(dir, "preload", "c"), filepath.Join(dir, "internal", "experiment"), filepath.Join(dir, "internal", "collect")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "gen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	for _, f := range []string{"preload/c/trace.h", "internal/experiment/tracelayout.go", "preload/c/control.h", "internal/collect/controllayout.go"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() < 500 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
