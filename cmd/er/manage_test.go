package main

// End-to-end tests of er rm, er cp and er mv on a real experiment.

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/expfiles"
)

// TestManageExperiments collects an experiment, then moves it with er mv and with a plain rename,
// copies it with er cp, and removes the copies with er rm; er print must show the same profile
// wherever the experiment is.
func TestManageExperiments(t *testing.T) {
	needCollect(t)
	dir, other := t.TempDir(), t.TempDir()
	exp := filepath.Join(dir, "a.er")
	r := er(t, "", nil, "collect", "-o", exp, cprog(t, "behave"), "spin", "0.3")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	// Everything in the experiment is found relative to its directory: no file names the directory.
	abs, _ := filepath.Abs(exp)
	filepath.WalkDir(exp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(abs)) {
				t.Errorf("%s holds the experiment's own path %s: the experiment cannot be moved", p, abs)
			}
		}
		return nil
	})
	want := printProfile(t, exp)
	if want.excl["spin_for"] <= 0 {
		t.Fatalf("spin_for has no time: %v", want.excl)
	}
	same := func(what, path string) {
		t.Helper()
		if got := printProfile(t, path); !maps.Equal(got.excl, want.excl) || !maps.Equal(got.incl, want.incl) {
			t.Errorf("%s: er print shows\n%v\n%v\nwant\n%v\n%v", what, got.excl, got.incl, want.excl, want.incl)
		}
	}

	moved := filepath.Join(dir, "b.er")
	if r := er(t, "", nil, "mv", exp, moved); r.code != 0 || r.stderr != "" {
		t.Fatalf("er mv: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(exp); err == nil {
		t.Errorf("%s still exists after er mv", exp)
	}
	same("after er mv", moved)

	renamed := filepath.Join(other, "c.er")
	if err := os.Rename(moved, renamed); err != nil {
		t.Fatal(err)
	}
	same("after a plain rename to another directory", renamed)

	copied := filepath.Join(dir, "d.er")
	out, err := exec.Command(filepath.Join(workDir, "er_cp"), renamed, copied).CombinedOutput()
	if err != nil {
		t.Fatalf("er_cp: %v\n%s", err, out)
	}
	same("the original after er cp", renamed)
	same("the copy", copied)
	fi1, _ := os.Stat(filepath.Join(renamed, "log.xml"))
	fi2, _ := os.Stat(filepath.Join(copied, "log.xml"))
	if fi1 == nil || fi2 == nil || !fi1.ModTime().Equal(fi2.ModTime()) || fi1.Mode() != fi2.Mode() {
		t.Errorf("log.xml of the copy: %v, want the original's %v", fi2, fi1)
	}

	// er rm through a group that lists both, and through er_rm.
	group := filepath.Join(dir, "both.erg")
	for _, e := range []string{copied, renamed} {
		if err := expfiles.AppendGroup(group, e); err != nil {
			t.Fatal(err)
		}
	}
	if r := er(t, "", nil, "rm", group); r.code != 0 || !strings.Contains(r.stdout, "removed experiment group "+group+" (2 experiments)") {
		t.Errorf("er rm group: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{copied, renamed, group} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s still exists after er rm", p)
		}
	}

	notExp := filepath.Join(dir, "results")
	os.Mkdir(notExp, 0o755)
	cmd := exec.Command(filepath.Join(workDir, "er_rm"), notExp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), notExp+": not an experiment") {
		t.Errorf("er_rm on a directory that is not an experiment: %v, stderr %q", err, stderr.String())
	}
	if _, err := os.Stat(notExp); err != nil {
		t.Errorf("er rm removed %s, which is not an experiment", notExp)
	}
}

// TestManageUsage: er with no arguments lists the commands, and each prints its usage.
func TestManageUsage(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	r := er(t, "", nil, "help")
	for _, w := range []string{"rm [-f] [-q]", "cp experiment new.er", "mv experiment new.er", "also as: er_archive"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("er help lacks %q:\n%s", w, r.stdout)
		}
	}
	for _, c := range []string{"rm", "cp", "mv"} {
		if r := er(t, "", nil, c); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: er "+c) {
			t.Errorf("er %s: exit %d, stdout %q", c, r.code, r.stdout)
		}
	}
}
