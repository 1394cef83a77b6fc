package perfimport

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/objfile"
	"er/internal/report"
)

func TestLookObject(t *testing.T) {
	sh := "/bin/sh"
	if p, err := filepath.EvalSymlinks(sh); err == nil {
		sh = p
	}
	o, err := objfile.Open(sh)
	if err != nil {
		t.Skipf("no ELF shell to test with: %v", err)
	}
	id := o.BuildID()
	o.Close()
	if id == "" {
		t.Skipf("%s has no build id", sh)
	}
	cache := t.TempDir()
	t.Setenv("PERF_BUILDID_DIR", cache)
	if f := lookObject(sh, id); f.file != sh {
		t.Errorf("%s with its own build id: %+v", sh, f)
	}
	if f := lookObject(sh, ""); f.file != sh {
		t.Errorf("%s without a build id: %+v", sh, f)
	}
	other := "00112233445566778899aabbccddeeff00112233"
	f := lookObject(sh, other)
	if f.file != "" || !strings.Contains(f.why, "has build id "+id+", the profiled one "+other) || !strings.Contains(f.why, "build-id cache has no copy") {
		t.Errorf("another build id: %+v", f)
	}
	// perf's build-id cache holds the profiled one.
	copyDir := filepath.Join(cache, ".build-id", other[:2], other[2:])
	if err := os.MkdirAll(copyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "elf"), []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := lookObject(sh, other); f.file != filepath.Join(copyDir, "elf") {
		t.Errorf("with a cached copy: %+v", f)
	}
	if f := lookObject("/nonexistent/lib.so", ""); f.file != "" || f.why != "it is not on this machine" {
		t.Errorf("a missing object: %+v", f)
	}
}

// TestImportObjectsNotRead: a perf.data file that names files as load objects, as a crafted one
// can (a secret file, a symbolic link, a FIFO, a device, a /proc file, an ELF file that is too
// small for its mapping, a name with terminal escapes), gets none of them read nor any of their
// bytes shown, by er import or by the archiving after it; each is not archived, with its reason,
// and the names are quoted (issue 27, items 22 and 10: the first bytes of /etc/shadow were shown,
// as its ELF-magic mismatch, and names were printed raw).
func TestImportObjectsNotRead(t *testing.T) {
	sh := "/bin/sh"
	if p, err := filepath.EvalSymlinks(sh); err == nil {
		sh = p
	}
	st, err := os.Stat(sh)
	if err != nil {
		t.Skip(err)
	}
	tmp := t.TempDir()
	secret := filepath.Join(tmp, "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$s3cr3tHash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "libsh.so")
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(tmp, "fifo.so")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	escaped := filepath.Join(tmp, "x\x1b]0;pwned\x07\x1b[2J.so")
	objects := []struct{ path, why string }{
		{secret, "not an ELF file"},
		{link, "a symbolic link, which is not followed"},
		{fifo, "a named pipe (FIFO), not a load object"},
		{"/dev/zero", "a character device, not a load object"},
		{"/proc/self/environ", "a file of /proc or /sys"},
		{sh, fmt.Sprintf("has %d bytes, and the profiled one was mapped from offset %#x", st.Size(), st.Size()+4096)},
		{escaped, "it is not on this machine"},
	}
	c := newCraft()
	c.comm(craftPid, "evil\x1b]0;title\x07")
	for i, o := range objects {
		addr, off := uint64(0x400000+i*0x100000), uint64(0)
		if o.path == sh {
			off = uint64(st.Size() + 4096)
		}
		c.mmap(craftPid, addr, 0x1000, off, o.path)
		c.sample(craftPid, addr+0x10, uint64(1000*(i+1)))
	}
	data := c.write(t)
	t.Chdir(t.TempDir())
	var out, errs bytes.Buffer
	if code := Main([]string{"-o", "x.er", data}, &out, &errs); code != 0 {
		t.Fatalf("er import: exit %d\n%s", code, errs.String())
	}
	stderr := errs.String()
	t.Logf("stderr:\n%s", stderr)
	if strings.ContainsAny(stderr, "\x1b\x07") {
		t.Errorf("er import wrote terminal escapes from the file: %q", stderr)
	}
	for _, o := range objects {
		want := fmt.Sprintf("er import: warning: %s is not archived: ", report.Clean(strconv.Quote(o.path)))
		if i := strings.Index(stderr, want); i < 0 || !strings.Contains(stderr[i:i+strings.IndexByte(stderr[i:], '\n')], o.why) {
			t.Errorf("no warning %q ... %q", want, o.why)
		}
	}
	// Nothing of the secret, in what er import said or in the experiment it wrote.
	leaks := []string{"root:", "s3cr3t", "72 6f 6f 74", "726f6f74"}
	for _, l := range leaks {
		if strings.Contains(stderr, l) || strings.Contains(out.String(), l) {
			t.Errorf("er import's output shows the secret file's bytes (%q)", l)
		}
	}
	err = filepath.WalkDir("x.er", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if int64(len(b)) == st.Size() {
			if shb, _ := os.ReadFile(sh); bytes.Equal(b, shb) {
				t.Errorf("%s is a copy of %s, which the file named only through a symbolic link or for a mapping it cannot hold", p, sh)
			}
		}
		for _, l := range leaks {
			if bytes.Contains(b, []byte(l)) {
				t.Errorf("%s holds the secret file's bytes (%q)", p, l)
			}
		}
		if strings.HasSuffix(p, experiment.LogFile) && bytes.ContainsAny(b, "\x1b\x07") {
			t.Errorf("%s holds terminal escapes", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open("x.er")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Log.Events {
		if e.Kind == "warning" && strings.ContainsAny(e.Text, "\x1b\x07") {
			t.Errorf("the log's warning %q holds terminal escapes", e.Text)
		}
	}
}
