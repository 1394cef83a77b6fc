package gprofng

import (
	"os"
	"path/filepath"
	"testing"

	"er/internal/experiment"
)

func TestFindCopy(t *testing.T) {
	names := []string{"heap_IqLLTLOwCY6", "libc.so.6_dnWuQRcLhw9", "libc.so.6_other000000", "heap.c", "heap"}
	logged := map[string]string{"/usr/lib/libc.so.6": "libc.so.6_dnWuQRcLhw9"}
	for path, want := range map[string]string{
		"/tmp/gp/heap":       "heap_IqLLTLOwCY6",
		"/usr/lib/libc.so.6": "libc.so.6_dnWuQRcLhw9", // two candidates: archive.log says which
		"/lib/libc.so.6":     "",                      // two, and the log names neither
		"/bin/true":          "",
	} {
		if got := findCopy(names, path, logged); got != want {
			t.Errorf("findCopy(%s) = %q, want %q", path, got, want)
		}
	}
}

func TestArchiveLog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "archive.log")
	os.WriteFile(file, []byte("### Start\n# /usr/bin/gp-archive -n -a on x.er\nCopying `/tmp/gp/heap'  to `/tmp/gp/h.er/archives/heap_IqLLTLOwCY6'\nCopying `/a b/c'  to `/x/archives/c_Z'\n"), 0o644)
	m := archiveLog(file)
	if len(m) != 2 || m["/tmp/gp/heap"] != "heap_IqLLTLOwCY6" || m["/a b/c"] != "c_Z" {
		t.Errorf("archiveLog = %v", m)
	}
}

func TestVDSOArchive(t *testing.T) {
	maps := []experiment.Mapping{{Start: 0x7000, End: 0x8000, Path: "[vdso]"}}
	a := vdsoArchive(maps, []DynFunc{{"[vdso]", "__vdso_time", 0x7a00, 40}, {"[vdso]", "__vdso_clock_gettime", 0x7800, 900}, {"[vdso]", "far", 0x9000, 4}})
	if a == nil || len(a.Symbols) != 2 || a.Symbols[0] != (experiment.Symbol{Name: "__vdso_clock_gettime", Addr: 0x800, Size: 900}) {
		t.Fatalf("vdso archive %+v", a)
	}
	d := &experiment.Data{Mappings: maps, Archives: map[string]*experiment.Archive{"[vdso]": a}}
	n := newNamer(d)
	for pc, want := range map[uint64]string{0x7810: "__vdso_clock_gettime", 0x7a10: "__vdso_time", 0x7a40: "", 0x6000: "", 0x7100: ""} {
		if got := n.name(pc); got != want {
			t.Errorf("name(%#x) = %q, want %q", pc, got, want)
		}
	}
}

// TestReadArchives: the program's copy in archives/ names its functions even where the program
// is gone (the fixture's /tmp/gp/heap need not exist).
func TestReadArchives(t *testing.T) {
	d := open(t, "heap")
	a := d.Archives["/tmp/gp/heap"]
	if a == nil || a.Path != "/tmp/gp/heap" {
		t.Fatalf("archive of the program: %+v", a)
	}
	found := false
	for _, s := range a.Symbols {
		found = found || s.Name == "leak_direct"
	}
	if !found {
		t.Errorf("the program's archive has no leak_direct")
	}
	if d.Archives["[vdso]"] == nil || len(d.Archives["[vdso]"].Symbols) != 6 {
		t.Errorf("vdso archive %+v", d.Archives["[vdso]"])
	}
}
