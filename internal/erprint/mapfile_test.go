package erprint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMapfileGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"mapfile", []string{"-mapfile", "demo", "-", "-sort", "i.totalcpu", "-mapfile", "<libc.so.6>", "-", "-ifreq", "demo.1.er"}, exitOK},
		{"mapfile_thread", []string{"-thread_select", "2", "-mapfile", progPath, "-", "demo.1.er"}, exitOK},
		{"mapfile_no_object", []string{"-mapfile", "nosuch", "-", "demo.1.er"}, exitUsage},
		{"mapfile_no_archive", []string{"-mapfile", "libz.so.1", "-", "demo.2.er"}, exitUsage},
		{"mapfile_kernel", []string{"-mapfile", "<vmlinux>", "-", "demo.1.er"}, exitUsage},
		{"mapfile_nothing", []string{"-filters", "THRID == 9", "-mapfile", "demo", "-", "demo.1.er"}, exitUsage},
	} {
		got, code := runCase(c.args, "")
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, got)
		}
		checkGolden(t, c.name, got)
	}
}

// TestMapfileWritesFile: the order goes to the file named, and text mode says how many functions.
func TestMapfileWritesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo.order")
	got, code := runCase([]string{"-mapfile", "demo", file, "demo.1.er"}, "")
	if code != 0 || !strings.Contains(got, "Wrote the order of 6 functions of <demo> to "+file) {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, ".text.") {
			sections = append(sections, line)
		}
	}
	want := []string{".text.compute", ".text._Z3sumPKdi", ".text._ZN4geom6Circle4areaEv", ".text.fib", ".text.main", ".text.startup.main",
		".text.worker"}
	if strings.Join(sections, " ") != strings.Join(want, " ") {
		t.Errorf("sections %v\nwant %v", sections, want)
	}
	if _, code := runCase([]string{"-mapfile", "demo", filepath.Join(t.TempDir(), "no", "such", "dir"), "demo.1.er"}, ""); code != exitError {
		t.Errorf("a file that cannot be written: exit %d", code)
	}
}
