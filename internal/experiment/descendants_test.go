package experiment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescendants(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "test.1.er")
	for _, n := range []string{"_f10.er", "_f2.er", "_f2_x1.er", "_f1.er", "_x1.er", "_f2_x1_f1.er", "archives", "M_r1.er"} {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "_f3.er"), nil, 0o644); err != nil { // a file, not a subexperiment
		t.Fatal(err)
	}
	got, err := Descendants(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, filepath.Base(p))
	}
	want := []string{"_f1.er", "_f2.er", "_f2_x1.er", "_f2_x1_f1.er", "_f10.er", "_x1.er", "M_r1.er"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("Descendants order (-want +got):\n%s", d)
	}
	if !IsSubexperiment(filepath.Join(dir, "_f2_x1.er")) || IsSubexperiment(dir) || IsSubexperiment(filepath.Join(t.TempDir(), "_f1.er")) {
		t.Error("IsSubexperiment: wrong answer")
	}
	if _, err := Descendants(filepath.Join(dir, "missing")); err == nil {
		t.Error("Descendants of a missing directory: no error")
	}
}
