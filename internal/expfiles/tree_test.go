package expfiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// richExp makes an experiment with a subexperiment, odd modes, old times and a symbolic link that
// points out of the experiment (at outside, which holds a file "keep").
func richExp(t *testing.T, dir, name, outside string) string {
	t.Helper()
	p := mkExp(t, dir, name)
	sub := mkExp(t, p, "_f1.er")
	os.RemoveAll(filepath.Join(sub, "archives")) // subexperiments have none
	write(t, filepath.Join(p, "notes"), "a note\n")
	os.Chmod(filepath.Join(p, "notes"), 0o600)
	write(t, filepath.Join(p, "run.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(p, "run.sh"), 0o751)
	write(t, filepath.Join(outside, "keep"), "not part of the experiment")
	if err := os.Symlink(outside, filepath.Join(p, "outlink")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, f := range []string{"notes", "run.sh", "archives/a.out.1234.ar", "_f1.er/log.xml", "archives", "_f1.er", "."} {
		if err := os.Chtimes(filepath.Join(p, f), old, old.Add(time.Duration(len(f))*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// sameTree fails unless dst has the same entries, contents, modes, modification times and link
// targets as src.
func sameTree(t *testing.T, src, dst string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		q := filepath.Join(dst, rel)
		si, err := os.Lstat(p)
		if err != nil {
			return err
		}
		di, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%s: missing in the copy: %v", rel, err)
			return nil
		}
		n++
		if si.Mode() != di.Mode() {
			t.Errorf("%s: mode %v, want %v", rel, di.Mode(), si.Mode())
		}
		switch {
		case si.Mode()&fs.ModeSymlink != 0:
			a, _ := os.Readlink(p)
			b, _ := os.Readlink(q)
			if a != b {
				t.Errorf("%s: link to %q, want %q", rel, b, a)
			}
		case si.Mode().IsRegular():
			a, _ := os.ReadFile(p)
			b, _ := os.ReadFile(q)
			if string(a) != string(b) {
				t.Errorf("%s: content %q, want %q", rel, b, a)
			}
			fallthrough
		default:
			if !si.ModTime().Equal(di.ModTime()) {
				t.Errorf("%s: mtime %v, want %v", rel, di.ModTime(), si.ModTime())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("only %d entries compared", n)
	}
}

func TestIsExperimentAndFounder(t *testing.T) {
	dir := t.TempDir()
	a := mkExp(t, dir, "a.er")
	sub := mkExp(t, a, "_f3_x1.er")
	os.Mkdir(filepath.Join(dir, "empty.er"), 0o755)
	mkExp(t, dir, "plain")
	os.Mkdir(filepath.Join(dir, "dirlog.er"), 0o755)
	os.Mkdir(filepath.Join(dir, "dirlog.er", "log.xml"), 0o755)
	write(t, filepath.Join(dir, "file.er"), "")
	os.Symlink("a.er", filepath.Join(dir, "link.er"))
	for name, want := range map[string]bool{"a.er": true, "a.er/": true, "a.er/_f3_x1.er": true, "link.er": true,
		"empty.er": false, "plain": false, "dirlog.er": false, "file.er": false, "none.er": false} {
		if got := IsExperiment(filepath.Join(dir, name)); got != want {
			t.Errorf("IsExperiment(%s) = %v, want %v", name, got, want)
		}
	}
	if f := Founder(sub); f != a {
		t.Errorf("Founder(%s) = %q, want %q", sub, f, a)
	}
	if f := Founder(a); f != "" {
		t.Errorf("Founder(%s) = %q, want none", a, f)
	}
	t.Chdir(a)
	if f := Founder("_f3_x1.er"); f != a {
		t.Errorf("Founder(_f3_x1.er) from inside the founder = %q, want %q", f, a)
	}
}

func TestRemove(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	a := richExp(t, dir, "a.er", outside)
	// A directory no one may write or read, inside the experiment.
	locked := filepath.Join(a, "locked")
	os.Mkdir(locked, 0o755)
	write(t, filepath.Join(locked, "f"), "x")
	os.Chmod(locked, 0)
	if err := Remove(a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists: %v", a, err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "not part of the experiment" {
		t.Errorf("a file outside the experiment, behind a link in it, was touched: %q, %v", b, err)
	}

	b := mkExp(t, dir, "b.er")
	link := filepath.Join(dir, "link.er")
	os.Symlink("b.er", link)
	plain := filepath.Join(dir, "plain")
	os.Mkdir(plain, 0o755)
	write(t, filepath.Join(plain, "log.xml"), "")
	noLog := filepath.Join(dir, "nolog.er")
	os.Mkdir(noLog, 0o755)
	for _, tc := range []struct{ path, want string }{
		{link, "is a symbolic link (to b.er), not an experiment"},
		{plain, "an experiment's name ends in .er"},
		{noLog, "it has no log.xml"},
		{filepath.Join(dir, "none.er"), "no such experiment"},
	} {
		err := Remove(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Remove(%s) = %v, want an error naming it with %q", tc.path, err, tc.want)
		}
		if tc.path != filepath.Join(dir, "none.er") {
			if _, err := os.Lstat(tc.path); err != nil {
				t.Errorf("Remove(%s) failed but removed it", tc.path)
			}
		}
	}
	if !IsExperiment(b) {
		t.Error("removing a link to an experiment hurt the experiment")
	}
	// A subexperiment can be removed alone by Remove (er rm asks for -f).
	sub := mkExp(t, b, "_f1.er")
	if err := Remove(sub); err != nil || IsExperiment(sub) || !IsExperiment(b) {
		t.Errorf("Remove(subexperiment) = %v", err)
	}
}

func TestCopy(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	a := richExp(t, dir, "a.er", outside)
	c := filepath.Join(dir, "c.er")
	if err := Copy(a, c); err != nil {
		t.Fatal(err)
	}
	sameTree(t, a, c)
	// Through a link to the experiment.
	os.Symlink("a.er", filepath.Join(dir, "link.er"))
	if err := Copy(filepath.Join(dir, "link.er"), filepath.Join(dir, "d.er")); err != nil {
		t.Fatal(err)
	}
	sameTree(t, a, filepath.Join(dir, "d.er"))

	mkExp(t, dir, "other.er")
	os.Mkdir(filepath.Join(dir, "emptydir.er"), 0o755)
	for _, tc := range []struct{ src, dst, want string }{
		{a, c, "already exists (an experiment)"},
		{a, filepath.Join(dir, "emptydir.er"), "already exists (a directory)"},
		{a, filepath.Join(dir, "copy"), "must end in .er"},
		{a, filepath.Join(dir, "nodir", "x.er"), "does not exist"},
		{a, filepath.Join(a, "x.er"), "cannot be put inside itself"},
		{a, filepath.Join(dir, "other.er", "x.er"), "would be inside experiment"},
		{a, filepath.Join(dir, "other.er", "archives", "x.er"), "would be inside experiment"},
		{filepath.Join(a, "_f1.er"), filepath.Join(dir, "f.er"), "is a subexperiment of " + a},
		{filepath.Join(dir, "none.er"), filepath.Join(dir, "g.er"), "no such experiment"},
	} {
		if err := Copy(tc.src, tc.dst); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Copy(%s, %s) = %v, want an error with %q", tc.src, tc.dst, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "f.er")); err == nil {
		t.Error("a refused copy left its destination")
	}
}

// TestCopyPartialRemoved: an experiment that cannot be copied whole leaves nothing behind.
func TestCopyPartialRemoved(t *testing.T) {
	dir := t.TempDir()
	a := mkExp(t, dir, "a.er")
	if err := syscall.Mkfifo(filepath.Join(a, "zz.fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	dst := filepath.Join(dir, "b.er")
	err := Copy(a, dst)
	if err == nil || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), "partial copy was removed") {
		t.Errorf("Copy with a FIFO inside = %v", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the partial copy %s is still there: %v", dst, err)
	}
	if !IsExperiment(a) {
		t.Error("the source was hurt")
	}
}

// An experiment whose er collect was killed keeps the FIFO .control and the reserve: it is copied
// without them. Before, er cp refused it ("k.1.er/.control is a named pipe").
func TestCopyKilledExperiment(t *testing.T) {
	dir := t.TempDir()
	a := mkExp(t, dir, "k.er")
	if err := syscall.Mkfifo(filepath.Join(a, experiment.ControlName), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	write(t, filepath.Join(a, experiment.ReserveFile), strings.Repeat("\x00", 4096))
	dst := filepath.Join(dir, "c.er")
	if err := Copy(a, dst); err != nil {
		t.Fatalf("copying a killed experiment: %v", err)
	}
	for _, name := range []string{experiment.ControlName, experiment.ReserveFile} {
		if _, err := os.Lstat(filepath.Join(dst, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the copy holds %s: %v", name, err)
		}
	}
	ents, _ := os.ReadDir(a)
	cents, _ := os.ReadDir(dst)
	if len(cents) != len(ents)-2 || !IsExperiment(dst) {
		t.Errorf("the copy holds %d entries, the experiment %d (with .control and .reserve)", len(cents), len(ents))
	}
}

func TestMove(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	a := richExp(t, dir, "a.er", outside)
	ref := filepath.Join(t.TempDir(), "ref.er")
	if err := Copy(a, ref); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "b.er")
	if err := Move(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists after the move", a)
	}
	sameTree(t, ref, b)

	// Across file systems (EXDEV from rename): copied, then the source removed.
	defer func(r func(string, string) error) { rename = r }(rename)
	rename = func(src, dst string) error { return &os.LinkError{Op: "rename", Old: src, New: dst, Err: unix.EXDEV} }
	c := filepath.Join(t.TempDir(), "c.er")
	if err := Move(b, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(b); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists after a copying move", b)
	}
	sameTree(t, ref, c)
	rename = renameNoReplace

	// Onto an existing (empty) directory: refused, though rename(2) alone would replace it.
	empty := filepath.Join(dir, "empty.er")
	os.Mkdir(empty, 0o755)
	if err := Move(c, empty); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Move onto an empty directory = %v", err)
	}
	if err := renameNoReplace(c, empty); !errors.Is(err, unix.EEXIST) {
		t.Errorf("renameNoReplace onto an empty directory = %v, want EEXIST", err)
	}
	if !IsExperiment(c) {
		t.Error("the refused move hurt the source")
	}
	// A link to an experiment is not moved.
	os.Symlink(c, filepath.Join(dir, "link.er"))
	if err := Move(filepath.Join(dir, "link.er"), filepath.Join(dir, "m.er")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Move(link) = %v", err)
	}
}

// TestMoveAcrossFileSystems moves an experiment to /dev/shm when that is another file system.
func TestMoveAcrossFileSystems(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	shm, err := os.MkdirTemp("/dev/shm", "expfiles-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.RemoveAll(shm)
	var s1, s2 unix.Stat_t
	if unix.Stat(dir, &s1) != nil || unix.Stat(shm, &s2) != nil || s1.Dev == s2.Dev {
		t.Skip("/dev/shm is on the same file system as the temporary directory")
	}
	a := richExp(t, dir, "a.er", outside)
	ref := filepath.Join(t.TempDir(), "ref.er")
	if err := Copy(a, ref); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(shm, "a.er")
	if err := Move(a, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists after the move", a)
	}
	sameTree(t, ref, dst)
}

// TestCopyFollowsNoSwappedLink: er cp (as root, of another user's experiment) reads no file through
// a link swapped in for one of the experiment's files after it was looked at, and writes nothing
// through a link swapped in for the copy's directory while it is made. Before, the copy got the
// content of the file the link pointed to (a private file of root's, with the mode of the file it
// replaced), and the rest of the copy was written where the swapped-in link pointed.
func TestCopyFollowsNoSwappedLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "root's secret\n")
	os.Chmod(secret, 0o600)
	t.Cleanup(func() { copyHook = nil })

	t.Run("source", func(t *testing.T) {
		a := mkExp(t, dir, "a.er")
		write(t, filepath.Join(a, "notes"), "a note\n")
		copyHook = func(srcDir, dstDir, name string) {
			if srcDir == a && name == "notes" {
				os.Remove(filepath.Join(a, "notes"))
				if err := os.Symlink(secret, filepath.Join(a, "notes")); err != nil {
					t.Error(err)
				}
			}
		}
		c := filepath.Join(dir, "c.er")
		err := Copy(a, c)
		copyHook = nil
		t.Logf("Copy: %v", err)
		if b, rerr := os.ReadFile(filepath.Join(c, "notes")); rerr == nil && strings.Contains(string(b), "secret") {
			t.Errorf("the copy's notes hold the file the swapped-in link points to: %q", b)
		}
		if err == nil || !strings.Contains(err.Error(), filepath.Join(a, "notes")+" is a symbolic link") {
			t.Errorf("Copy = %v, want an error that says %s is a link", err, filepath.Join(a, "notes"))
		}
	})
	t.Run("destination", func(t *testing.T) {
		a := mkExp(t, dir, "b.er")
		c := filepath.Join(dir, "d.er")
		copyHook = func(srcDir, dstDir, name string) {
			if dstDir == c && name == "log.xml" { // the first entry: the others go through the link
				if err := os.Rename(c, c+".moved"); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, c); err != nil {
					t.Error(err)
				}
			}
		}
		err := Copy(a, c)
		copyHook = nil
		t.Logf("Copy: %v", err)
		if es, err := os.ReadDir(outside); err != nil || len(es) != 0 {
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			t.Errorf("the copy wrote %q where the link swapped in for it points (%v)", names, err)
		}
	})
}

// TestCopyDropsSetID: a copy of an experiment's file keeps its permission bits but not its
// set-user-ID and set-group-ID bits, which on root's copy of another user's file would make a
// program of theirs that runs as root. Before, er cp kept them.
func TestCopyDropsSetID(t *testing.T) {
	dir := t.TempDir()
	a := mkExp(t, dir, "a.er")
	prog := filepath.Join(a, "prog")
	write(t, prog, "#!/bin/sh\nid\n")
	if err := os.Chmod(prog, 0o755|fs.ModeSetuid|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(prog, 65534, 65534); err != nil { // another user's, as in the attack
			t.Fatal(err)
		}
		if err := os.Chmod(prog, 0o755|fs.ModeSetuid|fs.ModeSetgid); err != nil { // chown cleared them
			t.Fatal(err)
		}
	}
	b := filepath.Join(dir, "b.er")
	if err := Copy(a, b); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(b, "prog"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o755 {
		t.Errorf("copy of a %v file: %v, want %v", 0o755|fs.ModeSetuid|fs.ModeSetgid, fi.Mode(), fs.FileMode(0o755))
	}
}
