package debuginfo

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// splitDebug builds inline.c with a build id, moves its DWARF into
// prog.debug (objcopy --only-keep-debug) and strips prog, adding a
// .gnu_debuglink to prog.debug unless link is false. It returns the
// directory, the stripped program and the debug file.
func splitDebug(t *testing.T, link bool, flags ...string) (dir, exe, dbg string) {
	t.Helper()
	dir = t.TempDir()
	exe = build(t, dir, "prog", "gcc", "inline.c", append([]string{"-O2", "-g", "-Wl,--build-id"}, flags...)...)
	dbg = filepath.Join(dir, "prog.debug")
	run(t, "objcopy", "--only-keep-debug", exe, dbg)
	if link {
		run(t, "objcopy", "--strip-debug", "--add-gnu-debuglink="+dbg, exe)
	} else {
		run(t, "objcopy", "--strip-debug", exe)
	}
	return dir, exe, dbg
}

// checkSeparate checks that in found its DWARF at dbg by via, and answers.
func checkSeparate(t *testing.T, in *Info, exe, dbg, via string) {
	t.Helper()
	if !in.HasDWARF || in.Via != via || in.Source != dbg {
		t.Fatalf("HasDWARF %v, Via %q, Source %q, want %s via %s (%s)", in.HasDWARF, in.Via, in.Source, dbg, via, in.Note)
	}
	if !strings.Contains(in.Note, dbg) {
		t.Errorf("Note %q does not name %s", in.Note, dbg)
	}
	checkInline(t, in, exe, markers(t, "inline.c"))
}

func TestDebugLink(t *testing.T) {
	t.Run("same directory", func(t *testing.T) {
		_, exe, dbg := splitDebug(t, true)
		checkSeparate(t, open(t, exe, t.TempDir()), exe, dbg, "debuglink")
	})
	t.Run(".debug subdirectory", func(t *testing.T) {
		dir, exe, dbg := splitDebug(t, true)
		sub := filepath.Join(dir, ".debug", "prog.debug")
		if err := os.Mkdir(filepath.Dir(sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dbg, sub); err != nil {
			t.Fatal(err)
		}
		checkSeparate(t, open(t, exe, t.TempDir()), exe, sub, "debuglink")
	})
	t.Run("global directory", func(t *testing.T) {
		dir, exe, dbg := splitDebug(t, true)
		global := t.TempDir()
		moved := filepath.Join(global, dir, "prog.debug")
		if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dbg, moved); err != nil {
			t.Fatal(err)
		}
		checkSeparate(t, open(t, exe, global), exe, moved, "debuglink")
	})
	t.Run("CRC mismatch", func(t *testing.T) {
		_, exe, dbg := splitDebug(t, true)
		f, err := os.OpenFile(dbg, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0})
		f.Close()
		in := open(t, exe, t.TempDir())
		if in.HasDWARF {
			t.Fatalf("used %s despite its CRC", in.Source)
		}
		if err := in.Err(); err == nil || !strings.Contains(err.Error(), "CRC") || !strings.Contains(err.Error(), dbg) {
			t.Errorf("Err = %v, want a CRC mismatch naming %s", err, dbg)
		}
		if _, ok := in.Frames(sym(t, exe, "caller_a").Value); ok {
			t.Error("Frames answered without DWARF")
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, exe, dbg := splitDebug(t, true)
		os.Remove(dbg)
		in := open(t, exe, t.TempDir())
		if in.HasDWARF || in.Err() != nil || !strings.Contains(in.Note, "prog.debug") {
			t.Errorf("HasDWARF %v, Err %v, Note %q", in.HasDWARF, in.Err(), in.Note)
		}
	})
}

func TestBuildID(t *testing.T) {
	dir, exe, dbg := splitDebug(t, false)
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	id := buildID(ef)
	ef.Close()
	if len(id) < 8 {
		t.Fatalf("build id %q", id)
	}
	global := filepath.Join(dir, "global")
	byID := filepath.Join(global, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(byID), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dbg, byID); err != nil {
		t.Fatal(err)
	}
	in := open(t, exe, t.TempDir(), global)
	checkSeparate(t, in, exe, byID, "build-id")
	if in.BuildID != id {
		t.Errorf("BuildID %q, want %q", in.BuildID, id)
	}

	// A file at that path with another build id is refused.
	_, _, other := splitDebug(t, false, "-O1")
	if err := os.Rename(other, byID); err != nil {
		t.Fatal(err)
	}
	in = open(t, exe, global)
	if in.HasDWARF || in.Err() == nil || !strings.Contains(in.Err().Error(), "build id") {
		t.Errorf("HasDWARF %v, Err %v", in.HasDWARF, in.Err())
	}
}

func TestDebugLinkSection(t *testing.T) {
	_, exe, _ := splitDebug(t, true)
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	name, crc, ok := debugLink(ef)
	if !ok || name != "prog.debug" || crc == 0 {
		t.Errorf("debugLink = %q %08x %v", name, crc, ok)
	}
	got, err := fileCRC(filepath.Join(filepath.Dir(exe), "prog.debug"))
	if err != nil || got != crc {
		t.Errorf("fileCRC = %08x %v, want %08x", got, err, crc)
	}
}

func TestDebugLinkPaths(t *testing.T) {
	got := debugLinkPaths("/opt/app/bin/prog", "prog.debug", []string{"/usr/lib/debug"})
	want := []string{"/opt/app/bin/prog.debug", "/opt/app/bin/.debug/prog.debug", "/usr/lib/debug/opt/app/bin/prog.debug"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("debugLinkPaths = %q, want %q", got, want)
	}
}
