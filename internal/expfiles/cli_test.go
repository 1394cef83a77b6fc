package expfiles

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"er/internal/version"
)

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(main func([]string, io.Writer, io.Writer) int, args ...string) cliResult {
	var out, errb strings.Builder
	code := main(args, &out, &errb)
	return cliResult{code, out.String(), errb.String()}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestUsageAndVersion(t *testing.T) {
	for name, m := range map[string]func([]string, io.Writer, io.Writer) int{"rm": RmMain, "cp": CpMain, "mv": MvMain} {
		if r := runCLI(m); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: er "+name) {
			t.Errorf("er %s: %+v", name, r)
		}
		if r := runCLI(m, "-h"); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: er "+name) {
			t.Errorf("er %s -h: %+v", name, r)
		}
		if r := runCLI(m, "-V"); r.code != 0 || r.stdout != version.String()+"\n" {
			t.Errorf("er %s -V: %+v", name, r)
		}
		if r := runCLI(m, "-Z", "x.er"); r.code != 2 || !strings.Contains(r.stderr, `er `+name+`: unknown option "-Z"`) {
			t.Errorf("er %s -Z: %+v", name, r)
		}
	}
	if r := runCLI(CpMain, "a.er"); r.code != 2 || !strings.Contains(r.stderr, "a.er: no destination given") {
		t.Errorf("er cp with one operand: %+v", r)
	}
}

func TestRm(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mkExp(t, ".", "a.er")
	mkExp(t, ".", "b.er")
	mkExp(t, "a.er", "_f1.er")
	os.Mkdir("notexp", 0o755)
	write(t, "notes.txt", "x")
	os.Symlink("b.er", "link.er")

	r := runCLI(RmMain, "notexp", "notes.txt", "missing.er", "link.er", "a.er/_f1.er", "a.er/")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	for _, want := range []string{
		"er rm: notexp: not an experiment: an experiment is a directory whose name ends in .er; nothing removed",
		"er rm: notes.txt: not an experiment or experiment group",
		"er rm: missing.er: no such experiment or experiment group",
		"er rm: link.er is a symbolic link (to b.er)",
		"er rm: a.er/_f1.er is a subexperiment of a.er",
		"or use -f to remove a.er/_f1.er alone",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "removed experiment a.er\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if exists("a.er") || !exists("notexp") || !exists("notes.txt") || !exists("link.er") || !IsExperiment("b.er") {
		t.Error("er rm removed the wrong things")
	}

	// -f: silent, exit 0, and a subexperiment alone is removed.
	mkExp(t, ".", "c.er")
	mkExp(t, "c.er", "_f2.er")
	r = runCLI(RmMain, "-f", "notexp", "missing.er", "c.er/_f2.er")
	if r.code != 0 || r.stderr != "" || exists("c.er/_f2.er") || !IsExperiment("c.er") || !exists("notexp") {
		t.Errorf("er rm -f: %+v", r)
	}
	// -q: nothing on stdout.
	r = runCLI(RmMain, "-q", "c.er")
	if r.code != 0 || r.stdout != "" || exists("c.er") {
		t.Errorf("er rm -q: %+v", r)
	}
}

func TestRmGroup(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mkExp(t, ".", "a.er")
	mkExp(t, "runs", "b.er")
	write(t, "g.erg", GroupHeader+"\na.er\nruns/b.er\nmissing.er\n")
	r := runCLI(RmMain, "g.erg")
	if r.code != 1 || !strings.Contains(r.stderr, "g.erg:4: missing.er: no such experiment") ||
		!strings.Contains(r.stderr, "the group and its experiments were not removed") {
		t.Errorf("group with a missing experiment: %+v", r)
	}
	if !IsExperiment("a.er") || !IsExperiment("runs/b.er") || !exists("g.erg") {
		t.Fatal("a refused group removal removed something")
	}
	r = runCLI(RmMain, "-f", "g.erg")
	if r.code != 0 || exists("a.er") || exists("runs/b.er") || exists("g.erg") || !exists("runs") {
		t.Errorf("er rm -f group: %+v", r)
	}
	want := "removed experiment a.er\nremoved experiment runs/b.er\nremoved experiment group g.erg (2 experiments)\n"
	if r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}

	mkExp(t, ".", "c.er")
	write(t, "h.erg", GroupHeader+"\nc.er\n")
	write(t, "bad.erg", "c.er\n")
	r = runCLI(RmMain, "bad.erg", "h.erg")
	if r.code != 1 || !strings.Contains(r.stderr, "bad.erg:1: not an experiment group") || exists("c.er") || exists("h.erg") || !exists("bad.erg") {
		t.Errorf("bad group and good group: %+v", r)
	}
}

func TestCpMv(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	a := mkExp(t, ".", "a.er")
	mkExp(t, ".", "b.er")
	mkExp(t, "other", "a.er")
	os.Mkdir("out", 0o755)

	if r := runCLI(CpMain, "a.er", "c.er"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("er cp a.er c.er: %+v", r)
	}
	sameFiles(t, a, "c.er")
	if r := runCLI(CpMain, "a.er", "c.er"); r.code != 1 || !strings.Contains(r.stderr, "c.er already exists (an experiment)") {
		t.Errorf("er cp onto an experiment: %+v", r)
	}
	if r := runCLI(CpMain, "a.er", "b.er", "nodir"); r.code != 1 || !strings.Contains(r.stderr, "nodir: no such directory") {
		t.Errorf("er cp into a missing directory: %+v", r)
	}
	if r := runCLI(CpMain, "a.er", "copy"); r.code != 1 || !strings.Contains(r.stderr, "copy: an experiment's name must end in .er") {
		t.Errorf("er cp to a name without .er: %+v", r)
	}
	// Two sources of one name into one directory: nothing is copied.
	r := runCLI(CpMain, "a.er", "b.er", "other/a.er", "out")
	if r.code != 1 || !strings.Contains(r.stderr, "a.er and other/a.er would both be out/a.er") || !strings.Contains(r.stderr, "nothing was copied") {
		t.Errorf("er cp with clashing names: %+v", r)
	}
	if m, _ := filepath.Glob("out/*"); len(m) != 0 {
		t.Errorf("a refused cp left %v", m)
	}
	if r := runCLI(CpMain, "a.er", "b.er", "out"); r.code != 0 {
		t.Errorf("er cp a.er b.er out: %+v", r)
	}
	sameFiles(t, a, "out/a.er")
	sameFiles(t, "b.er", "out/b.er")

	// mv: rename, and into a directory.
	if r := runCLI(MvMain, "c.er", "d.er"); r.code != 0 || exists("c.er") {
		t.Errorf("er mv c.er d.er: %+v", r)
	}
	sameFiles(t, a, "d.er")
	os.Mkdir("moved", 0o755)
	if r := runCLI(MvMain, "d.er", "moved"); r.code != 0 || exists("d.er") {
		t.Errorf("er mv d.er moved: %+v", r)
	}
	sameFiles(t, a, "moved/d.er")
	if r := runCLI(MvMain, "moved/d.er", "moved"); r.code != 1 || !strings.Contains(r.stderr, "moved/d.er already exists") {
		t.Errorf("er mv onto itself: %+v", r)
	}
	if r := runCLI(MvMain, "a.er", "b.er"); r.code != 1 || !strings.Contains(r.stderr, "b.er already exists (an experiment)") || !IsExperiment("a.er") {
		t.Errorf("er mv onto an experiment: %+v", r)
	}
	if r := runCLI(MvMain, "a.er", "b.er/archives"); r.code != 1 || !strings.Contains(r.stderr, "would be inside experiment") {
		t.Errorf("er mv into an experiment: %+v", r)
	}
}

// sameFiles fails unless directories a and b hold the same files with the same contents.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	n := 0
	filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, _ := os.ReadFile(p)
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || string(x) != string(y) {
			t.Errorf("%s/%s: %q, %v; want %q", b, rel, y, err, x)
		}
		n++
		return nil
	})
	if n == 0 {
		t.Errorf("%s holds no files", a)
	}
}

func TestCpMvGroup(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mkExp(t, ".", "a.er")
	abs := mkExp(t, t.TempDir(), "b.er")
	write(t, "g.erg", GroupHeader+"\n# the runs\na.er\n\n"+abs+"\n")
	os.Mkdir("out", 0o755)
	if r := runCLI(CpMain, "g.erg", "h.erg"); r.code != 1 || !strings.Contains(r.stderr, "g.erg is an experiment group: a group is copied into a directory") {
		t.Errorf("er cp group to a name: %+v", r)
	}
	if r := runCLI(CpMain, "g.erg", "out"); r.code != 0 {
		t.Fatalf("er cp g.erg out: %+v", r)
	}
	data, _ := os.ReadFile("out/g.erg")
	if want := GroupHeader + "\n# the runs\na.er\n\nb.er\n"; string(data) != want {
		t.Errorf("copied group file %q, want %q", data, want)
	}
	got, err := ReadGroup("out/g.erg")
	if err != nil || len(got) != 2 || got[0] != "out/a.er" || got[1] != "out/b.er" {
		t.Errorf("ReadGroup(out/g.erg) = %q, %v", got, err)
	}
	sameFiles(t, "a.er", "out/a.er")
	sameFiles(t, abs, "out/b.er")
	if !IsExperiment("a.er") || !IsExperiment(abs) || !IsGroup("g.erg") {
		t.Error("er cp hurt the sources")
	}

	// A second copy into the same directory is refused whole.
	if r := runCLI(CpMain, "g.erg", "out"); r.code != 1 || !strings.Contains(r.stderr, "out/g.erg already exists") ||
		!strings.Contains(r.stderr, "g.erg:3: out/a.er already exists") {
		t.Errorf("er cp g.erg out again: %+v", r)
	}

	// mv: the experiments and the group file move.
	os.Mkdir("moved", 0o755)
	if r := runCLI(MvMain, "g.erg", "moved"); r.code != 0 {
		t.Fatalf("er mv g.erg moved: %+v", r)
	}
	if exists("g.erg") || exists("a.er") || exists(abs) {
		t.Error("er mv left the sources")
	}
	if got, err := ReadGroup("moved/g.erg"); err != nil || len(got) != 2 || got[0] != "moved/a.er" || got[1] != "moved/b.er" {
		t.Errorf("ReadGroup(moved/g.erg) = %q, %v", got, err)
	}
}

// TestMvGroupUndo: when one experiment of a group cannot be moved, those moved before it go back.
func TestMvGroupUndo(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mkExp(t, ".", "a.er")
	mkExp(t, ".", "b.er")
	write(t, "g.erg", GroupHeader+"\na.er\nb.er\n")
	os.Mkdir("out", 0o755)
	defer func(r func(string, string) error) { rename = r }(rename)
	rename = func(src, dst string) error {
		if filepath.Base(src) == "b.er" {
			return &os.LinkError{Op: "rename", Old: src, New: dst, Err: unix.EPERM}
		}
		return renameNoReplace(src, dst)
	}
	r := runCLI(MvMain, "g.erg", "out")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot move b.er to out/b.er: operation not permitted") ||
		!strings.Contains(r.stderr, "nothing of group g.erg was moved") {
		t.Errorf("er mv with a failing member: %+v", r)
	}
	if !IsExperiment("a.er") || !IsExperiment("b.er") || !IsGroup("g.erg") {
		t.Error("the group's experiments are not back in place")
	}
	if m, _ := filepath.Glob("out/*"); len(m) != 0 {
		t.Errorf("left in out: %v", m)
	}
}
