package erarchive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"er/internal/archive"
)

// TestMain runs Main when the test program is run again as er archive, as an experiment's owner
// (selfExe), or by a test that gives it a deadline.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "archive" {
		os.Exit(Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// nobody is the user that plays another user in the tests run as root.
const nobody = 65534

// openTempDir is a new temporary directory that other users may search and read (t.TempDir's, and
// the one above it, are 0700), for files that another user is to reach.
func openTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chownTree gives every file under dir to uid (and its group).
func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestArchiveAsOwner: er archive run by root on another user's experiment copies into it only what
// that user may read: here the user nobody, whose experiment names (by its program's debug
// information) a source file that only root may read (mode 0600) and one in a directory only root
// may search (mode 0644, as /root/secret.c), and maps a library only root may read. Before, root's
// er archive copied all of them, the last two where nobody could read them (archives/ is the
// experiment owner's). Now it runs again as nobody: the world-readable source and the program are
// copied, the others not, each said on stderr with why, and what it wrote belongs to nobody.
func TestArchiveAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: acting as another user needs root")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("gcc not installed: %v", err)
	}
	dir := openTempDir(t)
	priv := filepath.Join(dir, "priv")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: dir, prog: filepath.Join(dir, "prog"), lib: filepath.Join(dir, "libcold.so"),
		progSrc: filepath.Join(dir, "prog.c"), coldSrc: filepath.Join(dir, "cold.c")}
	hidden := filepath.Join(priv, "hidden.c")
	for src, text := range map[string]string{f.progSrc: "", f.coldSrc: "/* COLD SECRET */\n",
		hidden: "int hidden(int n) { return n + 1; } /* HIDDEN SECRET */\n"} {
		b, err := os.ReadFile(filepath.Join("testdata", filepath.Base(src)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if err := os.WriteFile(src, append(b, text...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.gcc(t, "-O1", "-g", "-Wl,--build-id", "-o", f.prog, f.progSrc, f.coldSrc, hidden)
	f.gcc(t, "-O1", "-g", "-Wl,--build-id", "-shared", "-fPIC", "-o", f.lib, f.coldSrc)
	exp := filepath.Join(dir, "test.1.er")
	f.experiment(t, exp, false)
	chownTree(t, exp, nobody)
	for p, m := range map[string]os.FileMode{f.coldSrc: 0o600, f.lib: 0o700} { // root's alone
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}

	var out, errb bytes.Buffer
	code := Main([]string{"-a", "on", exp}, &out, &errb)
	t.Logf("er archive: exit %d\n%s%s", code, out.String(), errb.String())
	objects, sources := archived(t, exp)
	if code != 0 || !slices.Equal(objects, []string{f.prog}) || !slices.Equal(sources, []string{f.progSrc}) {
		t.Errorf("exit %d; archived objects %q, sources %q; want 0, %q and %q", code, objects, sources, f.prog, f.progSrc)
	}
	for _, want := range []string{
		"er archive: " + exp + " belongs to nobody (uid 65534): it is archived as that user, with that user's permissions: files they may not read are not copied into it\n",
		"er archive: warning: " + f.coldSrc + ": not archived: it belongs to user 0 and others may not read it (mode 0600)\n",
		"er archive: warning: " + hidden + ": not archived: nobody (uid 65534), who archives the experiment, may not read it (stat " + hidden + ": permission denied)\n",
		"er archive: warning: " + f.lib + ": not archived: nobody (uid 65534), who archives the experiment, may not read it (open " + f.lib + ": permission denied)\n",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	err := filepath.WalkDir(filepath.Join(exp, "archives"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != nobody {
			t.Errorf("%s belongs to uid %d, want %d, the experiment's owner", p, uid, nobody)
		}
		if b, _ := os.ReadFile(p); e.Type().IsRegular() && bytes.Contains(b, []byte("SECRET")) {
			t.Errorf("%s holds a secret", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestArchiveOtherUser: a user other than root is refused an experiment that is another user's,
// with why and what to do, and nothing is written into it.
func TestArchiveOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: giving an experiment to another user needs root")
	}
	exp := filepath.Join(openTempDir(t), "test.1.er")
	if err := os.Mkdir(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(exp, "log.xml"), []byte("<experiment/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Root's experiment, archived by nobody: er archive run as nobody (the test program, as Main
	// runs it for an owner).
	cmd := exec.Command(selfExe, "archive", exp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	b, err := cmd.CombinedOutput()
	want := "er archive: " + exp + " belongs to root (uid 0), not to nobody (uid 65534), who runs er archive: it copies into an experiment only the files its owner may read, and only root can act as another user to check that; run er archive as root (uid 0)\n"
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 || string(b) != want {
		t.Errorf("%v\n%s\nwant exit 1 and\n%s", err, b, want)
	}
	if _, err := os.Stat(filepath.Join(exp, "archives")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("archives/: %v, want none made", err)
	}
}

// TestArchiveOwnerCannotReach: an experiment of another user in a directory that user may not
// search cannot be archived as that user: er archive says so, and exits 1.
func TestArchiveOwnerCannotReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: acting as another user needs root")
	}
	exp := filepath.Join(t.TempDir(), "test.1.er") // t.TempDir is 0700, root's
	if err := os.Mkdir(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(exp, "log.xml"), []byte("<experiment/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chownTree(t, exp, nobody)
	var out, errb bytes.Buffer
	code := Main([]string{"-q", exp}, &out, &errb)
	want := "er archive: " + exp + ": nobody (uid 65534), who archives it, may not reach it (stat " + exp + ": permission denied); er archive reads and writes an experiment as its owner\n"
	if code != 1 || errb.String() != want || out.Len() != 0 {
		t.Errorf("exit %d\n%s%s\nwant exit 1 and\n%s", code, out.String(), errb.String(), want)
	}
}

// TestArchiveSpecialFiles: an experiment that names, as load objects or (by its program's debug
// information) source files, a FIFO, a device or a file of /proc gets none of them copied, each
// said on stderr with why, and er archive does not wait on the FIFO. Before, a FIFO named as a
// source was passed over without a word, and /proc/self/exe, er's own program by a link of the
// kernel's, was copied as a load object. The test's deadline stops er archive had it waited.
func TestArchiveSpecialFiles(t *testing.T) {
	f := build(t)
	fifoObj, fifoSrc := filepath.Join(f.dir, "libfifo.so"), filepath.Join(f.dir, "fifo.c")
	for _, p := range []string{fifoObj, fifoSrc} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var src strings.Builder
	for i, n := range []string{fifoSrc, "/proc/self/cwd/testdata/prog.c"} { // er archive's directory is the test's
		fmt.Fprintf(&src, "#line 1 %q\nint f%d(int x) { return x + %d; }\n", n, i, i)
	}
	namesC := filepath.Join(f.dir, "names.c")
	if err := os.WriteFile(namesC, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.gcc(t, "-O1", "-g", "-Wl,--build-id", "-o", f.prog, f.progSrc, f.coldSrc, namesC)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false, fifoObj, "/dev/zero", "/proc/self/exe")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, selfExe, "archive", "-a", "on", exp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	t.Logf("er archive: %v\n%s%s", err, out.String(), errb.String())
	if ctx.Err() != nil {
		t.Fatalf("er archive did not finish before the test's deadline: it waits on a FIFO")
	}
	if err != nil {
		t.Errorf("er archive: %v, want exit 0", err)
	}
	for _, want := range []string{
		fifoObj + ": not archived: archive: " + fifoObj + ": not a regular file but a named pipe (FIFO)",
		fifoSrc + ": not archived: " + fifoSrc + ": not a regular file but a named pipe (FIFO)",
		"/dev/zero: not archived: it is in /dev, where no load objects are",
		"/proc/self/exe: not archived: it is in /proc, where no load objects are",
		"/proc/self/cwd/testdata/prog.c: not archived: it is in /proc, where no source files are",
	} {
		if !strings.Contains(errb.String(), "er archive: warning: "+want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	objects, sources := archived(t, exp)
	if !slices.Equal(objects, []string{f.lib, f.prog}) || !slices.Equal(sources, []string{f.coldSrc, namesC, f.progSrc}) {
		t.Errorf("archived objects %q, sources %q; want prog, libcold.so and their sources", objects, sources)
	}
	ix, err := archive.ReadIndex(exp)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ix.Copies {
		if !strings.HasPrefix(c.Path, f.dir+"/") {
			t.Errorf("%s is archived", c.Path)
		}
	}
}

func TestPlainWriter(t *testing.T) {
	var b bytes.Buffer
	w := &plainWriter{w: &b}
	in := "a\x1b]0;title\x07b\tc\r\n\x7f\xc3\xa9\n"
	if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
		t.Errorf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if got, want := b.String(), "a]0;titleb\tc\n\xc3\xa9\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

func TestOwnerEnv(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/root", "SECRET_TOKEN=x", "ER_CACHE_DIR=/root/c", "XDG_CACHE_HOME=/root/.c", "LC_ALL=C", "LANG=C.UTF-8", "ER_DEBUG_DIR=/d"}
	got := ownerEnv(env, &user.User{Username: "bob", HomeDir: "/home/bob"})
	want := []string{"HOME=/home/bob", "USER=bob", "LOGNAME=bob", "PATH=/bin", "LC_ALL=C", "LANG=C.UTF-8", "ER_DEBUG_DIR=/d"}
	if !slices.Equal(got, want) {
		t.Errorf("ownerEnv = %q, want %q", got, want)
	}
}
