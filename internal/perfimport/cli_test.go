package perfimport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMainCommand(t *testing.T) {
	abs, err := filepath.Abs(fixtures + "fp.data")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Chdir(tmp)
	tests := []struct {
		args      []string
		code      int
		out, errs string
	}{
		{[]string{"--help"}, 0, "Usage: er import [-o experiment] [-a mode] [perf.data]", ""},
		{[]string{"-x"}, 2, "", `unknown option "-x"`},
		{[]string{"a.data", "b.data"}, 2, "", "one perf.data file at a time (2 given)"},
		{[]string{"-o"}, 2, "", "-o needs an experiment name"},
		{[]string{"-o", "name", abs}, 2, "", "an experiment's name ends in .er"},
		{[]string{"-a", "all", abs}, 2, "", "er import: -a: "},
		{[]string{"-a"}, 2, "", "-a needs a mode"},
		{nil, 1, "", "perf.data does not exist (perf record writes ./perf.data"},
		{[]string{abs}, 0, "er import: " + abs + " -> test.1.er: 15 clock samples, 5 counter samples\n", ""},
		{[]string{abs}, 0, "-> test.2.er: 15 clock samples", ""},
		{[]string{"-o", "mine.er", "-a", "off", abs}, 0, "-> mine.er: 15 clock samples", ""},
		{[]string{"-o", "mine.er", abs}, 1, "", "experiment mine.er already exists"},
	}
	for _, tc := range tests {
		var out, errs bytes.Buffer
		code := Main(tc.args, &out, &errs)
		if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errs.String(), tc.errs) {
			t.Errorf("er import %q: exit %d, stdout %q, stderr %q; want exit %d with %q and %q", tc.args, code, out.String(), errs.String(), tc.code, tc.out, tc.errs)
		}
	}
	for _, d := range []string{"test.1.er", "test.2.er", "mine.er"} {
		if _, err := os.Stat(filepath.Join(tmp, d, "profile.clock")); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
