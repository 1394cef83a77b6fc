package objfile

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMiniDebugInfo: testdata/mini.elf (see mini.c), stripped of every symbol, names its local
// function helper and _start from its .gnu_debugdata, at the addresses the unstripped build had.
func TestMiniDebugInfo(t *testing.T) {
	f := openT(t, filepath.Join("testdata", "mini.elf"))
	if own, err := f.Symbols(); err != nil || len(own) != 0 {
		t.Fatalf("mini.elf has symbols of its own: %v %v", own, err)
	}
	mf, err := f.MiniDebugInfo()
	if err != nil || mf == nil {
		t.Fatalf("MiniDebugInfo: %v %v", mf, err)
	}
	syms, err := mf.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, s := range syms {
		got[s.Name] = s.Addr
	}
	if len(got) != 2 || got["helper"] == 0 || got["_start"] <= got["helper"] {
		t.Errorf("symbols %+v, want helper and _start after it", syms)
	}
	if !strings.HasSuffix(mf.Name(), "mini.elf[.gnu_debugdata]") {
		t.Errorf("name %q", mf.Name())
	}
	// A file without the section has none.
	if mf, err := mf.MiniDebugInfo(); mf != nil || err != nil {
		t.Errorf("the inner file: %v %v", mf, err)
	}
}

// TestMiniDebugInfoCorrupt: a .gnu_debugdata whose compressed data is damaged gives an error that
// names the file and the section, never a panic.
func TestMiniDebugInfoCorrupt(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mini.elf"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, xzMagic)
	if i < 0 {
		t.Fatal("no xz stream in mini.elf")
	}
	bad := bytes.Clone(data)
	bad[i+40] ^= 0xff
	f, err := NewFile("bad.elf", bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if mf, err := f.MiniDebugInfo(); mf != nil || err == nil || !strings.Contains(err.Error(), "bad.elf: .gnu_debugdata: xz: ") {
		t.Errorf("MiniDebugInfo = %v, %v", mf, err)
	}
}

// TestDebugLink: objcopy --add-gnu-debuglink records the debug file's name and CRC-32, which
// FileCRC computes the same.
func TestDebugLink(t *testing.T) {
	exe := buildC(t, "gcc", "prog.c", "-O1", "-g")
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	dir := filepath.Dir(exe)
	for _, args := range [][]string{{"--only-keep-debug", "prog", "prog.debug"}, {"--strip-debug", "--add-gnu-debuglink=prog.debug", "prog"}} {
		cmd := exec.Command("objcopy", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, out)
		}
	}
	name, crc, ok := openT(t, exe).DebugLink()
	want, err := FileCRC(filepath.Join(dir, "prog.debug"))
	if !ok || name != "prog.debug" || err != nil || crc != want {
		t.Errorf("DebugLink = %q %08x %v; FileCRC = %08x %v", name, crc, ok, want, err)
	}
	if _, _, ok := openT(t, filepath.Join(dir, "prog.debug")).DebugLink(); ok {
		t.Error("the debug file has a debug link")
	}
}

func TestDebugDirs(t *testing.T) {
	t.Setenv("ER_DEBUG_DIR", "")
	if got := DebugDirs(); len(got) != 1 || got[0] != "/usr/lib/debug" {
		t.Errorf("default %q", got)
	}
	t.Setenv("ER_DEBUG_DIR", "/a:/b::")
	if got := DebugDirs(); strings.Join(got, " ") != "/a /b" {
		t.Errorf("ER_DEBUG_DIR=/a:/b:: gives %q", got)
	}
}
