package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewDir(t *testing.T) {
	dir := t.TempDir()
	got, err := NewDir(dir, "", "")
	if err != nil || got != filepath.Join(dir, "test.1.er") {
		t.Fatalf("empty dir: %q, %v", got, err)
	}
	for _, n := range []string{"test.1.er", "test.7.er", "test.x.er", "other.9.er"} {
		os.Mkdir(filepath.Join(dir, n), 0o755)
	}
	if got, _ := NewDir(dir, "", ""); got != filepath.Join(dir, "test.8.er") {
		t.Errorf("next free: %q, want test.8.er", got)
	}
	if got, _ := NewDir(dir, "mine.er", ""); got != filepath.Join(dir, "mine.er") {
		t.Errorf("-o: %q", got)
	}
	if _, err := NewDir(dir, "test.1.er", ""); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing -o: %v", err)
	}
	if _, err := NewDir(filepath.Join(dir, "missing"), "", ""); err == nil {
		t.Error("missing -d directory: no error")
	}
}

// TestNewDirMissingParent: -o into a directory that does not exist, and -d naming one, are
// errors that name the directory; nothing is created (er used to make the directory for -o).
func TestNewDirMissingParent(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent")
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct {
		dir, output string
		want        string
	}{
		{"", filepath.Join(missing, "x.er"), "experiment directory " + missing + " does not exist: create it first (mkdir -p " + missing + ")"},
		{missing, "", "experiment directory " + missing + " does not exist"},
		{missing, "x.er", "experiment directory " + missing + " does not exist"},
		{dir, "sub/x.er", "experiment directory " + filepath.Join(dir, "sub") + " does not exist"},
		{"", filepath.Join(file, "x.er"), "experiment directory " + file + " is not a directory"},
	} {
		if got, err := NewDir(c.dir, c.output, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("-d %q -o %q: %q, %v; want an error with %q", c.dir, c.output, got, err, c.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s was created", missing)
	}
}
