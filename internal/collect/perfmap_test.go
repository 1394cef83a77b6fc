package collect

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"er/internal/experiment"
)

func TestParsePerfMapLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want experiment.Mapping
		ok   bool
	}{
		{"7f2db8025d00 5d8 JS:*alpha /x/spin.js:20:15", experiment.Mapping{Pid: 7, Start: 0x7f2db8025d00, End: 0x7f2db80262d8, Path: experiment.DynamicPath, Func: "JS:*alpha /x/spin.js:20:15", UnloadTime: -1}, true},
		{"0x1000 0x10 trace_42  ", experiment.Mapping{Pid: 7, Start: 0x1000, End: 0x1010, Path: experiment.DynamicPath, Func: "trace_42", UnloadTime: -1}, true},
		{"1000 10", experiment.Mapping{}, false},                 // no name
		{"1000 0 f", experiment.Mapping{}, false},                // no size
		{"zz 10 f", experiment.Mapping{}, false},                 // not hex
		{"ffffffffffffff00 1000 f", experiment.Mapping{}, false}, // wraps
		{"8000000000000000 10 f", experiment.Mapping{}, false},   // not user space
	} {
		m, ok := parsePerfMapLine(c.line, 7)
		if ok != c.ok || !reflect.DeepEqual(m, c.want) {
			t.Errorf("%q: %+v, %v; want %+v, %v", c.line, m, ok, c.want, c.ok)
		}
	}
}

func TestReadPerfMap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "perf-9.map")
	if err := os.WriteFile(path, []byte("1000 20 first\nnot a line\n\n1010 8 second over it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := map[uint32]bool{uint32(os.Getuid()): true}
	ms, skipped, err := readPerfMap(path, 9, own, 0)
	if err != nil || skipped != 1 || len(ms) != 2 || ms[0].Func != "first" || ms[1].Func != "second over it" || ms[1].Start != 0x1010 {
		t.Fatalf("readPerfMap: %+v, %d skipped, %v; want first and second, 1 skipped", ms, skipped, err)
	}
	// Another user's map is not read, nor a link, nor what is not a regular file.
	if _, _, err := readPerfMap(path, 9, map[uint32]bool{12345: true}, 0); err == nil || !strings.Contains(err.Error(), "belongs to user") {
		t.Errorf("another user's map: %v", err)
	}
	link := filepath.Join(dir, "perf-10.map")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readPerfMap(link, 10, own, 0); err == nil {
		t.Errorf("a link was read")
	}
	if _, _, err := readPerfMap(dir, 11, own, 0); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	// A map older than the process is an earlier process's of the same pid.
	if _, _, err := readPerfMap(path, 9, own, time.Now().Add(time.Hour).UnixNano()); err == nil || !strings.Contains(err.Error(), "earlier process") {
		t.Errorf("a stale map: %v", err)
	}
	if _, _, err := readPerfMap(path, 9, own, time.Now().UnixNano()); err != nil {
		t.Errorf("a map written just now: %v", err)
	}
	if _, _, err := readPerfMap(filepath.Join(dir, "perf-12.map"), 12, own, 0); !os.IsNotExist(err) {
		t.Errorf("no map: %v, want os.ErrNotExist", err)
	}
}
