package collect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// TestRelocate moves each library instance's files into the experiment of its image, by pid and
// start time, and drops the data of images that are not followed.
func TestRelocate(t *testing.T) {
	s := testSession(t, DefaultSpec())
	dir := s.dir
	child := s.newImage(11, 10, s.founder, 'f', 500, "prog")
	s.spec.Follow = "off"
	unfollowed := s.newImage(12, 10, s.founder, 'f', 600, "prog")
	if unfollowed.open() {
		t.Fatal("-F off: the image is followed")
	}
	write := func(name string) {
		p := filepath.Join(dir, procDirName, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"tracestacks", "heaptrace", "info"} {
			if err := os.WriteFile(filepath.Join(p, f), []byte(name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("10.1100") // the founder, started 100 ns after er
	write("11.1700") // the child, 200 ns after its fork at 500
	write("12.1800")
	s.relocateLibraryData()
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "heaptrace"), "10.1100"},
		{filepath.Join(child.w.Dir(), "tracestacks"), "11.1700"},
	} {
		if b, err := os.ReadFile(tc.file); err != nil || string(b) != tc.want {
			t.Errorf("%s: %q, %v; want the data of %s", tc.file, b, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, procDirName)); !os.IsNotExist(err) {
		t.Errorf(".proc is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "_f2.er")); !os.IsNotExist(err) {
		t.Errorf("an unfollowed process has a subexperiment: %v", err)
	}
}

func TestParseInstanceName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pid   uint32
		start int64
		ok    bool
	}{
		{"10.1100", 10, 1100, true}, {"4294967295.0", 4294967295, 0, true},
		{"10", 0, 0, false}, {"x.1", 0, 0, false}, {"10.-1", 0, 0, false}, {"4294967296.1", 0, 0, false}, {"u65534", 0, 0, false},
	} {
		if pid, start, ok := parseInstanceName(tc.name); pid != tc.pid || start != tc.start || ok != tc.ok {
			t.Errorf("parseInstanceName(%q) = %d, %d, %v; want %d, %d, %v", tc.name, pid, start, ok, tc.pid, tc.start, tc.ok)
		}
	}
	for name, want := range map[string]int{"u65534": 65534, "u0": 0, "u": -1, "u+1": -1, "u-1": -1, "x1": -1, "u1x": -1, "10.11": -1} {
		if got := userDirUID(name); got != want {
			t.Errorf("userDirUID(%q) = %d, want %d", name, got, want)
		}
	}
}

// userInstance makes .proc/u65534/NAME with files, as a process running as user 65534 would (all
// of it the user's: the test runs as root).
func userInstance(t *testing.T, pd, name string, files map[string]string) string {
	t.Helper()
	ud := filepath.Join(pd, "u65534")
	if err := os.MkdirAll(ud, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ud, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(ud, name)
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(in, f), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(in, f), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

// TestRelocateUserDir: the instances of processes whose privileges were dropped write in
// .proc/u<uid>/, which is that user's. er moves their files into the experiments and makes them its
// own (0644), and does not follow what the user may have put there: an instance directory that is a
// symbolic link, a file that is a link to another file, a hard link. The size count of -L finds
// them too.
func TestRelocateUserDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: files of another user cannot be made")
	}
	s := testSession(t, DefaultSpec())
	pd := filepath.Join(s.dir, procDirName)
	if err := os.Mkdir(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	child := s.newImage(11, 10, s.founder, 'f', 500, "prog")
	other := s.newImage(12, 10, s.founder, 'f', 600, "prog")
	third := s.newImage(13, 10, s.founder, 'f', 700, "prog")
	userInstance(t, pd, "11.1700", map[string]string{"heaptrace": "child heap", "tracestacks": "child stacks", "info": "pid=11"})
	// Someone else's secret, and a directory of root's.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	rootDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(rootDir, "heaptrace"), []byte("root's file"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := userInstance(t, pd, "12.1800", map[string]string{"info": "pid=12"})
	if err := os.Symlink(secret, filepath.Join(in, "heaptrace")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(in, "tracestacks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rootDir, filepath.Join(pd, "u65534", "13.1900")); err != nil {
		t.Fatal(err)
	}
	if n, want := s.libraryBytes(), int64(len("child heap")+len("child stacks")+len("pid=11")+len("pid=12")+len("root's")); n != want {
		t.Errorf("libraryBytes = %d, want %d (the user's regular files)", n, want)
	}
	s.relocateLibraryData()
	for f, want := range map[string]string{"heaptrace": "child heap", "tracestacks": "child stacks"} {
		p := filepath.Join(child.w.Dir(), f)
		b, err := os.ReadFile(p)
		var st unix.Stat_t
		if err != nil || string(b) != want || unix.Stat(p, &st) != nil || st.Uid != 0 || st.Mode&0o7777 != 0o644 {
			t.Errorf("%s: %q, %v, owner %d, mode %o; want %q, root's, 0644", p, b, err, st.Uid, st.Mode&0o7777, want)
		}
	}
	for _, f := range []string{"heaptrace", "tracestacks"} {
		if _, err := os.Lstat(filepath.Join(other.w.Dir(), f)); err == nil {
			t.Errorf("%s/%s: a link of the user's was moved into the experiment", filepath.Base(other.w.Dir()), f)
		}
		if _, err := os.Lstat(filepath.Join(third.w.Dir(), f)); err == nil {
			t.Errorf("%s/%s: a file of a directory the user linked was moved into the experiment", filepath.Base(third.w.Dir()), f)
		}
	}
	var st unix.Stat_t
	if b, err := os.ReadFile(secret); err != nil || string(b) != "root's" || unix.Stat(secret, &st) != nil || st.Mode&0o7777 != 0o600 || st.Uid != 0 {
		t.Errorf("the other file: %q, %v, mode %o, owner %d", b, err, st.Mode&0o7777, st.Uid)
	}
	if b, err := os.ReadFile(filepath.Join(rootDir, "heaptrace")); err != nil || string(b) != "root's file" {
		t.Errorf("root's directory's file: %q, %v", b, err)
	}
	var warned []string
	s.w.UpdateLog(func(l *experiment.Log) {
		for _, e := range l.Events {
			if e.Kind == "warning" {
				warned = append(warned, e.Text)
			}
		}
	})
	if !slices.ContainsFunc(warned, func(w string) bool { return strings.Contains(w, "12.1800/heaptrace: not a regular file") }) ||
		!slices.ContainsFunc(warned, func(w string) bool {
			return strings.Contains(w, "12.1800/tracestacks: not a file of its own (2 links)")
		}) {
		t.Errorf("warnings %q", warned)
	}
}
