package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"er/internal/experiment"
)

// writeFile writes content to p with modification time mtime.
func writeFile(t *testing.T, p, content string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestIndexAdd(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "test.1.er")
	src := filepath.Join(t.TempDir(), "prog.c")
	t0 := time.Unix(1700000000, 123456789)
	writeFile(t, src, "int main(void) { return 0; }\n", t0)
	ix, err := ReadIndex(exp)
	if err != nil || len(ix.Copies) != 0 {
		t.Fatalf("index of an experiment without one: %+v, %v", ix, err)
	}
	c, added, err := ix.Add(KindSource, src, "", false)
	if err != nil || !added {
		t.Fatalf("Add: %+v, %v, %v", c, added, err)
	}
	h := sha256.Sum256([]byte("int main(void) { return 0; }\n"))
	sum := hex.EncodeToString(h[:])
	if got, err := FileSHA256(src); err != nil || got != sum {
		t.Errorf("FileSHA256 = %s, %v; want %s", got, err, sum)
	}
	want := Copy{Kind: KindSource, Path: src, File: "sources/" + sum[:32] + "/prog.c", Size: 29, Mtime: t0.UnixNano(), SHA256: sum}
	if c != want {
		t.Errorf("Add = %+v, want %+v", c, want)
	}
	copyPath := filepath.Join(exp, "archives", "sources", sum[:32], "prog.c")
	if ix.FilePath(c) != copyPath {
		t.Errorf("FilePath = %s, want %s", ix.FilePath(c), copyPath)
	}
	b, err := os.ReadFile(copyPath)
	st, _ := os.Stat(copyPath)
	if err != nil || string(b) != "int main(void) { return 0; }\n" || !st.ModTime().Equal(t0) {
		t.Errorf("copy %s: %q, modified %v, %v; want the original's content and time %v", copyPath, b, st.ModTime(), err, t0)
	}
	// Again: nothing copied.
	if c2, added, err := ix.Add(KindSource, src, "", false); err != nil || added || c2 != c {
		t.Errorf("second Add = %+v, %v, %v; want the same copy, not added", c2, added, err)
	}
	// Forced: copied again, still one entry.
	if _, added, err := ix.Add(KindSource, src, "", true); err != nil || !added || len(ix.Copies) != 1 {
		t.Errorf("forced Add: added %v, %v, %d copies; want added, 1 copy", added, err, len(ix.Copies))
	}
	// Edited: a second version; Lookup finds the newest.
	writeFile(t, src, "int main(void) { return 1; }\n", t0.Add(time.Minute))
	c3, added, err := ix.Add(KindSource, src, "", false)
	if err != nil || !added || c3.SHA256 == c.SHA256 || len(ix.Copies) != 2 {
		t.Fatalf("Add of the edited file = %+v, %v, %v; %d copies", c3, added, err, len(ix.Copies))
	}
	if l, ok := ix.Lookup(KindSource, src, nil); !ok || l != c3 {
		t.Errorf("Lookup = %+v, %v; want the newest %+v", l, ok, c3)
	}
	if l, ok := ix.Lookup(KindSource, src, func(x Copy) bool { return x.SHA256 == c.SHA256 }); !ok || l != c {
		t.Errorf("Lookup of the first version = %+v, %v", l, ok)
	}
	if _, ok := ix.Lookup(KindObject, src, nil); ok {
		t.Error("Lookup found a source as a load object")
	}
	if err := ix.Write(); err != nil {
		t.Fatal(err)
	}
	back, err := ReadIndex(exp)
	if err != nil || !reflect.DeepEqual(back.Copies, ix.Copies) {
		t.Errorf("ReadIndex = %+v, %v; want %+v", back, err, ix.Copies)
	}
	// A copy that went missing is not found.
	os.Remove(ix.FilePath(c3))
	if l, ok := ix.Lookup(KindSource, src, nil); !ok || l != c {
		t.Errorf("Lookup after the newest copy was removed = %+v, %v; want the first", l, ok)
	}
	entries, _ := os.ReadDir(filepath.Join(exp, "archives"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestIndexOddPath: any path is recorded exactly; the copy's name is made safe.
func TestIndexOddPath(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "t.er")
	src := filepath.Join(t.TempDir(), "a \"b\"\n\xff.c")
	writeFile(t, src, "\x7fELF x", time.Unix(1, 0)) // as a load object begins
	ix, _ := ReadIndex(exp)
	c, _, err := ix.Add(KindObject, src, "abcd", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(c.File, "/a__b___.c") || !strings.HasPrefix(c.File, "objects/") {
		t.Errorf("copy %s, want objects/HASH/a__b___.c", c.File)
	}
	if err := ix.Write(); err != nil {
		t.Fatal(err)
	}
	back, err := ReadIndex(exp)
	if err != nil || len(back.Copies) != 1 || back.Copies[0] != c {
		t.Errorf("ReadIndex = %+v, %v; want %+v", back.Copies, err, c)
	}
	for _, p := range []string{"/x/.hidden", "/", "/x/a/b/c\x00"} {
		if n := safeName(p); strings.ContainsAny(n, "/\x00") || strings.HasPrefix(n, ".") || n == "" {
			t.Errorf("safeName(%q) = %q", p, n)
		}
	}
}

func TestIndexAddErrors(t *testing.T) {
	dir := t.TempDir()
	ix, _ := ReadIndex(filepath.Join(dir, "t.er"))
	for _, c := range []struct{ kind, src, want string }{
		{KindSource, filepath.Join(dir, "gone.c"), "no such file"},
		{KindSource, dir, "its name is not a source file's"},
		{KindObject, dir, "not a regular file but a directory"},
		{"other", dir, "unknown kind"},
	} {
		if _, _, err := ix.Add(c.kind, c.src, "", false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%s, %s): %v, want %q", c.kind, c.src, err, c.want)
		}
	}
}

func TestReadIndexErrors(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, c := range []struct{ body, want string }{
		{`<files version="2.0"></files>`, `version "2.0"`},
		{`<files version="1.0"><source path="/a.c" copy="sources/x/a.c" size="1" mtime="1" sha256="xyz"/></files>`, "not 64 lower-case hex digits"},
		{`<files version="1.0"><source path="/a.c" copy="../../../etc/passwd" size="1" mtime="1" sha256="` + sum + `"/></files>`, "want sources/" + sum[:32] + "/NAME"},
		{`<files version="1.0"><object path="/a" copy="sources/` + sum[:32] + `/a" size="1" mtime="1" sha256="` + sum + `"/></files>`, "want objects/"},
		{`<files version="1.0"><source path="/a.c" copy="sources/` + sum[:32] + `/a.c" size="-1" mtime="1" sha256="` + sum + `"/></files>`, "size -1"},
		{`<files`, "unexpected EOF"},
	} {
		exp := filepath.Join(t.TempDir(), "t.er")
		os.MkdirAll(filepath.Join(exp, "archives"), 0o755)
		os.WriteFile(filepath.Join(exp, "archives", IndexFile), []byte(c.body), 0o644)
		_, err := ReadIndex(exp)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(exp, "archives", IndexFile)) ||
			!strings.Contains(err.Error(), "er archive") {
			t.Errorf("index %s: %v; want the file, %q and what to do", c.body, err, c.want)
		}
	}
}

func TestFindObjectAndSource(t *testing.T) {
	founder := filepath.Join(t.TempDir(), "test.1.er")
	sub := filepath.Join(founder, "_f1.er")
	obj := filepath.Join(t.TempDir(), "lib.so")
	t0 := time.Unix(1700000000, 5)
	writeFile(t, obj, "\x7fELF, not real", t0) // as a load object begins
	src := filepath.Join(t.TempDir(), "lib.c")
	writeFile(t, src, "void f(void) {}\n", t0)
	ix, _ := ReadIndex(founder)
	if _, _, err := ix.Add(KindObject, obj, "", false); err != nil {
		t.Fatal(err)
	}
	withID := filepath.Join(t.TempDir(), "withid.so")
	writeFile(t, withID, "\x7fELF another", t0)
	if _, _, err := ix.Add(KindObject, withID, "feed", false); err != nil {
		t.Fatal(err)
	}
	cs, _, err := ix.Add(KindSource, src, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Write(); err != nil {
		t.Fatal(err)
	}
	for _, dirs := range [][]string{{founder}, {sub}, {filepath.Join(t.TempDir(), "other.er"), sub}} {
		a := &experiment.Archive{Path: obj, Size: 14, Mtime: t0.UnixNano()}
		if p, _, err := FindObject(dirs, a); err != nil || !strings.HasPrefix(p, filepath.Join(founder, "archives", "objects")+"/") {
			t.Errorf("FindObject(%q) = %q, %v; want the founder's copy", dirs, p, err)
		}
		a.Mtime++
		if p, _, err := FindObject(dirs, a); err != nil || p != "" {
			t.Errorf("FindObject(%q) of another time = %q, %v; want none", dirs, p, err)
		}
		if p, _, err := FindObject(dirs, &experiment.Archive{Path: withID, BuildID: "feed", Size: 1}); err != nil || p == "" {
			t.Errorf("FindObject(%q) by build id = %q, %v", dirs, p, err)
		}
		if p, _, err := FindObject(dirs, &experiment.Archive{Path: withID, BuildID: "beef", Size: 7, Mtime: t0.UnixNano()}); err != nil || p != "" {
			t.Errorf("FindObject(%q) of another build id = %q, %v; want none", dirs, p, err)
		}
		c, file, ok, err := FindSource(dirs, src)
		if err != nil || !ok || c != cs || file != ix.FilePath(cs) {
			t.Errorf("FindSource(%q) = %+v %s %v %v; want %+v", dirs, c, file, ok, err, cs)
		}
		if _, _, ok, err := FindSource(dirs, obj); ok || err != nil {
			t.Errorf("FindSource(%q) of a load object: %v %v", dirs, ok, err)
		}
	}
	if p, _, err := FindObject([]string{founder}, nil); p != "" || err != nil {
		t.Errorf("FindObject(nil archive) = %q, %v", p, err)
	}
	os.WriteFile(filepath.Join(founder, "archives", IndexFile), []byte("<files"), 0o644)
	if _, _, err := FindObject([]string{sub}, &experiment.Archive{Path: obj}); err == nil {
		t.Error("FindObject with a damaged index: no error")
	}
	if _, _, _, err := FindSource([]string{sub}, src); err == nil {
		t.Error("FindSource with a damaged index: no error")
	}
}

// FuzzReadIndex: any index gives copies that pass the checks, or an error; never a panic.
func FuzzReadIndex(f *testing.F) {
	sum := strings.Repeat("0f", 32)
	f.Add([]byte(`<files version="1.0"><object path="/a" copy="objects/` + sum[:32] + `/a" size="1" mtime="2" buildid="ab" sha256="` + sum + `"></object></files>`))
	f.Add([]byte(`<files version="1.0"><source path="&quot;\xff&quot;" copy="sources/x/y" size="1" mtime="2" sha256="x"></source></files>`))
	f.Add([]byte(`<files version="1.0"></files><files version="1.0"><object path="/etc/shadow" copy="objects/` + sum[:32] + `/shadow" size="1" mtime="2" sha256="` + sum + `"></object></files>`))
	f.Add([]byte(`<files version="1.1"><compact path="/a" copy="compact/` + sum[:32] + `/a" size="100" mtime="2" buildid="ab" sha256="` + sum + `" length="7"></compact></files>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		copies, err := decodeIndex(b)
		if err != nil {
			return
		}
		for _, c := range copies {
			sub := map[string]string{KindObject: objectsSubdir, KindSource: sourcesSubdir, KindCompact: compactSubdir}[c.Kind]
			if err := checkCopy(c, sub); err != nil || strings.Contains(c.File, "..") {
				t.Errorf("accepted %+v: %v", c, err)
			}
		}
		if _, err := encodeIndex(copies); err != nil {
			t.Errorf("cannot write back %+v: %v", copies, err)
		}
	})
}

// Files that are not regular files are refused without being opened for reading: a FIFO (which
// would block the open until a writer came), a device (/dev/zero: endless). Before, Add copied a
// FIFO fed by a writer, ReadIndex read one, and Build and SameFile blocked on one without.
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.c")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	feed(t, fifo, "int x;\n")
	zero := filepath.Join(dir, "zero.h")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	ix, _ := ReadIndex(filepath.Join(dir, "t.er"))
	for _, src := range []string{fifo, zero} {
		for _, kind := range []string{KindSource, KindObject} {
			want := ": not a regular file but a "
			switch {
			case kind == KindSource && src == zero:
				want = "it leads to /dev/zero, and it is in /dev, where no source files are"
			case src == zero:
				want = "it leads to /dev/zero, and it is in /dev, where no load objects are"
			}
			if _, _, err := ix.Add(kind, src, "", false); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Add(%s, %s): %v, want %q", kind, src, err, want)
			}
		}
		if _, err := FileSHA256(src); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FileSHA256(%s): %v, want not a regular file", src, err)
		}
		if err := SameFile(src, &experiment.Archive{Path: src, BuildID: "ab"}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("SameFile(%s): %v, want not a regular file", src, err)
		}
		if _, err := Build(src); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Build(%s): %v, want not a regular file", src, err)
		}
	}
	exp := filepath.Join(dir, "u.er")
	index := filepath.Join(exp, "archives", IndexFile)
	if err := os.MkdirAll(filepath.Dir(index), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(index, 0o644); err != nil {
		t.Fatal(err)
	}
	feed(t, index, `<files version="1.0"></files>`)
	if _, err := ReadIndex(exp); err == nil || !strings.Contains(err.Error(), index+": not a regular file but a named pipe") {
		t.Errorf("ReadIndex with a FIFO: %v", err)
	}
}

// feed writes text into the FIFO at path once a reader opens it; the test's end releases the
// writer if none did.
func feed(t *testing.T, path, text string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.WriteString(text)
			f.Close()
		}
	}()
	t.Cleanup(func() {
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			r.Close()
		}
	})
}

// An index has one root element.
func TestIndexOneRoot(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	one := `<files version="1.0"><source path="/a.c" copy="sources/` + sum[:32] + `/a.c" size="1" mtime="1" sha256="` + sum + `"/></files>`
	if _, err := decodeIndex([]byte(one + "\n<!-- c -->\n")); err != nil {
		t.Errorf("a comment after the root: %v", err)
	}
	for _, tail := range []string{`<files version="1.0"></files>`, "junk"} {
		if _, err := decodeIndex([]byte(one + tail)); err == nil || !strings.Contains(err.Error(), "after the root element <files>") {
			t.Errorf("%q after the root: %v", tail, err)
		}
	}
}

// modeCase makes a source file of mode src, and the index of a new experiment whose archives/ has
// mode dir (and group gid, unless it is -1).
func modeCase(t *testing.T, src, dir os.FileMode, gid int) (*Index, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "prog.c")
	writeFile(t, file, "int main(void) { return 0; }\n", time.Unix(1700000000, 0))
	os.Chmod(file, src)
	ix, err := ReadIndex(filepath.Join(t.TempDir(), "test.1.er"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ix.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ix.Dir, -1, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ix.Dir, dir); err != nil {
		t.Fatal(err)
	}
	return ix, file
}

// TestCopyMode: a copy is readable by the group and others where the original and the experiment's
// archives directory both allow it (copies were 0600, the temporary file's mode), and never more.
func TestCopyMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, c := range []struct {
		src, dir, want os.FileMode
	}{
		{0o644, 0o755, 0o644},
		{0o755, 0o755, 0o644},
		{0o640, 0o755, 0o640},
		{0o600, 0o755, 0o600}, // a private file stays private
		{0o644, 0o750, 0o640},
		{0o644, 0o700, 0o600},
	} {
		ix, src := modeCase(t, c.src, c.dir, -1)
		cp, _, err := ix.Add(KindSource, src, "", false)
		if err != nil {
			t.Fatalf("source %o, directory %o: %v", c.src, c.dir, err)
		}
		st, err := os.Stat(ix.FilePath(cp))
		if err != nil || st.Mode().Perm() != c.want {
			t.Errorf("source %o, directory %o: copy mode %v (%v), want %o", c.src, c.dir, st.Mode().Perm(), err, c.want)
		}
	}
}

// TestCopyNoWider: no one may read a copy, or a compact archive, who may not read the original, as
// far as its mode says: never more than the original's bits (a 0444 file's copy was 0644; never more
// than 0644), and the group's read bit only where the copy's group is the original's (a
// set-group-ID archives directory gives its copies its own group: a 0640 file of root's group was
// copied 0640 into the group 65534). A load object that is not an ELF file is not copied.
func TestCopyNoWider(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root := os.Geteuid() == 0
	for _, c := range []struct {
		src, dir, want os.FileMode
		group          bool // the archives directory is set-group-ID, of another group (as root)
	}{
		{0o444, 0o755, 0o444, false},
		{0o666, 0o755, 0o644, false},
		{0o604, 0o755, 0o604, false},
		{0o640, 0o755 | os.ModeSetgid, 0o600, true},
		{0o644, 0o755 | os.ModeSetgid, 0o644, true},
	} {
		if c.group && !root {
			t.Logf("source %o: a directory of another group needs root; not tried", c.src)
			continue
		}
		gid := -1
		if c.group {
			gid = 65534
		}
		ix, src := modeCase(t, c.src, c.dir, gid)
		fi, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		cp, _, err := ix.Add(KindSource, src, "", false)
		if err != nil {
			t.Fatalf("source %o, directory %o: %v", c.src, c.dir, err)
		}
		cc, _, err := ix.AddCompact(src, "", fi.Size(), fi.ModTime().UnixNano(), fi, []byte("a compact archive"), false)
		if err != nil {
			t.Fatalf("source %o, directory %o: compact: %v", c.src, c.dir, err)
		}
		for _, f := range []string{ix.FilePath(cp), ix.FilePath(cc)} {
			st, err := os.Stat(f)
			if err != nil || st.Mode().Perm() != c.want {
				t.Errorf("source %o, directory %o: %s: mode %o (%v), want %o", c.src, c.dir, strings.TrimPrefix(f, ix.Dir), st.Mode().Perm(), err, c.want)
			}
		}
	}
	exp := filepath.Join(t.TempDir(), "test.1.er")
	notELF := filepath.Join(t.TempDir(), "libx.so")
	writeFile(t, notELF, "#!/bin/sh\n", time.Unix(1700000000, 0))
	ix, _ := ReadIndex(exp)
	if _, _, err := ix.Add(KindObject, notELF, "", false); err == nil || err.Error() != notELF+" is not an ELF file, so not a load object" {
		t.Errorf("Add of a load object that is not an ELF file: %v", err)
	}
}

// TestAddCompact: a compact archive is written under compact/HASH/NAME (HASH its own SHA-256's),
// recorded with the load object's size and the file's length, kept when added again, and found by
// FindObject where there is no whole copy of the object; a whole copy comes first.
func TestAddCompact(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "test.1.er")
	obj := filepath.Join(t.TempDir(), "libx.so")
	t0 := time.Unix(1700000000, 5)
	writeFile(t, obj, "\x7fELF whole object", t0) // 16 bytes, as a load object begins
	ix, _ := ReadIndex(exp)
	data := []byte("a compact archive")
	fi, err := os.Stat(obj)
	if err != nil {
		t.Fatal(err)
	}
	c, added, err := ix.AddCompact(obj, "feed", 16, t0.UnixNano(), fi, data, false)
	if err != nil || !added {
		t.Fatalf("AddCompact: %v, %v", added, err)
	}
	if !strings.HasPrefix(c.File, "compact/"+c.SHA256[:32]+"/libx.so") || c.Length != int64(len(data)) || c.Size != 16 || c.FileSize() != int64(len(data)) {
		t.Errorf("copy %+v", c)
	}
	if b, err := os.ReadFile(ix.FilePath(c)); err != nil || string(b) != string(data) {
		t.Errorf("the file holds %q, %v", b, err)
	}
	if _, added, _ := ix.AddCompact(obj, "feed", 16, t0.UnixNano(), fi, data, false); added {
		t.Error("added again")
	}
	if err := ix.Write(); err != nil {
		t.Fatal(err)
	}
	back, err := ReadIndex(exp)
	if err != nil || len(back.Copies) != 1 || back.Copies[0] != c {
		t.Fatalf("read back %+v, %v; want %+v", back, err, c)
	}
	a := &experiment.Archive{Path: obj, BuildID: "feed"}
	if p, compact, err := FindObject([]string{exp}, a); err != nil || !compact || p != ix.FilePath(c) {
		t.Errorf("FindObject = %q, %v, %v; want the compact archive", p, compact, err)
	}
	cp, _, err := back.Add(KindObject, obj, "feed", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Write(); err != nil {
		t.Fatal(err)
	}
	if p, compact, err := FindObject([]string{exp}, a); err != nil || compact || p != back.FilePath(cp) {
		t.Errorf("FindObject with a whole copy too = %q, %v, %v; want the copy", p, compact, err)
	}
}
