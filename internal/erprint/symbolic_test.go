package erprint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/kindtest"
)

// TestSymbolicFrameViews: a toy runtime's symbolic frames (kindtest.WriteSymbolic) in every view:
// its methods by name, each in its own time where an id was reused, their positions in the PCs
// view, their lines in the lines and source views, and no code to disassemble.
func TestSymbolicFrameViews(t *testing.T) {
	dir := t.TempDir()
	exp := kindtest.WriteSymbolic(t, dir)
	var src strings.Builder
	for i := 1; i <= 25; i++ {
		src.WriteString("line\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "Toy.java"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := []string{"-metrics", "e.totalcpu:i.totalcpu", "-functions", "-calltree", "-lines", "-pcs",
		"-setpath", dir, "-source", "Toy.run", exp}
	if code := run(args, strings.NewReader(""), &out, &errb, defaultEnv()); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"0.003  0.003   Toy.run\n",
		"0.002  0.002   Toy.other\n",
		"0.001  0.001   <method 9 of table 1>\n",
		"0.     0.006   Toy.main\n",
		"0.006     +-Toy.main\n",
		"Toy.run, line 12 in \"Toy.java\"",
		"Toy.other, line 20 in \"Toy.java\"",
		"Toy.run + 0x00000007, line 12 in \"Toy.java\"",
		"Toy.main + 0x00000002, line 3 in \"Toy.java\"",
		"12. line\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(got)
	}
	errb.Reset()
	if code := run([]string{"-disasm", "Toy.run", exp}, strings.NewReader(""), &out, &errb, defaultEnv()); code == 0 || !strings.Contains(errb.String(), "Toy.run has no code") {
		t.Errorf("disasm of a method: exit %d, %q", code, errb.String())
	}
}
