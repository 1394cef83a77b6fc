package web

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMainUsage checks er analyzer's usage errors and its static report.
func TestMainUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "no experiment given"},
		{[]string{"--port", "70000", "x.er"}, 2, "not a port number"},
		{[]string{"--nosuch", "x.er"}, 2, "flag provided but not defined"},
		{[]string{"--no-browser", "/nonexistent/x.er"}, 1, "/nonexistent/x.er"},
	} {
		var out, errb bytes.Buffer
		if code := Main(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("er analyzer %v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.msg)
		}
	}
	exp := writeTestExperiment(t, t.TempDir())
	dir := filepath.Join(t.TempDir(), "r")
	var out, errb bytes.Buffer
	if code := Main([]string{"--html", dir, exp}, &out, &errb); code != 0 {
		t.Fatalf("--html: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), filepath.Join(dir, "index.html")) {
		t.Errorf("stdout %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data.js")); err != nil {
		t.Error(err)
	}
}
