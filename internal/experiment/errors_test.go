package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormatErrorMessage(t *testing.T) {
	tests := []struct {
		e    FormatError
		want string
	}{
		{FormatError{File: "x.er/stacks", Offset: 48, Msg: "bad block magic", Hint: "truncate it"}, "x.er/stacks: offset 48: bad block magic (truncate it)"},
		{FormatError{File: "x.er/map.xml", Offset: -1, Msg: "no format version"}, "x.er/map.xml: no format version (the experiment is damaged; record it again)"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if e := formatErrorf("f", 3, "h", "%d of %d", 1, 2); *e != (FormatError{"f", 3, "1 of 2", "h"}) {
		t.Errorf("formatErrorf: %+v", e)
	}
}

// TestErrNotExperiment: Open's error for a directory that is not an experiment, or a file, is
// ErrNotExperiment, and names the path once.
func TestErrNotExperiment(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{dir, file} {
		_, err := Open(p)
		if !errors.Is(err, ErrNotExperiment) || strings.Count(err.Error(), p) != 1 {
			t.Errorf("Open(%s): %v", p, err)
		}
	}
}

// TestErrGprofng: Open's error for an experiment that gprofng recorded says so, and that er print
// reads it; er's own log is not taken for one.
func TestErrGprofng(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g.er")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, LogFile), []byte("<experiment version=\"12.4\">\n<collector>2.40.00</collector>\n</experiment>\n<system/>\x00\x00"), 0o644)
	_, err := Open(dir)
	if !errors.Is(err, ErrGprofng) || !strings.Contains(err.Error(), "g.er: recorded by GNU gprofng (experiment version 12.4), not by er collect: er print and er analyzer read it") {
		t.Errorf("Open: %v", err)
	}
	for _, log := range []string{"<?xml version=\"1.0\"?>\n<experiment version=\"1.1\">", `<experiment version="1.1">`, `<experiment version="x">`, ""} {
		if v, ok := gprofngVersion([]byte(log)); ok {
			t.Errorf("gprofngVersion(%q) = %q, true", log, v)
		}
	}
}
