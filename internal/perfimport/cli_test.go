package perfimport

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// TestMainNotRegular: a FIFO or a device as the perf.data file is refused without being opened, so
// er import neither waits for a writer nor reads without end (a FIFO was opened, which blocks
// until a writer comes; a pipe is read with er import -). While er import runs, the test tries to
// open the FIFO for writing without blocking, which succeeds only while a reader has it open.
func TestMainNotRegular(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	fifo := filepath.Join(tmp, "perf.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{fifo, "/dev/zero"} {
		var out, errs bytes.Buffer
		done := make(chan int)
		go func() { done <- Main([]string{"-o", "x.er", in}, &out, &errs) }()
		code, opened := -1, false
		for code < 0 {
			select {
			case code = <-done:
			default:
				if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
					opened = true // er import waits in its open: give it a writer, and so an end
					unix.Close(fd)
				}
				runtime.Gosched()
			}
		}
		if opened {
			t.Errorf("er import %s opened the FIFO for reading (and waited for a writer)", in)
		}
		want := "not a regular file but a named pipe (FIFO); perf record -o - | er import - reads a pipe"
		if in == "/dev/zero" {
			want = "not a regular file but a character device"
		}
		if code != 1 || !strings.Contains(errs.String(), in+": "+want) {
			t.Errorf("er import %s: exit %d, stderr %q; want exit 1 and %q", in, code, errs.String(), want)
		}
	}
}
