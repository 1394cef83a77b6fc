package perfimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/objfile"
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
