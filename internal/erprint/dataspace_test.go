package erprint

import (
	"strings"
	"testing"
)

// TestDataSpaceCommands: mobj_list lists the memory object types; memobj refuses an unknown type with
// the list; the data-space views of an experiment without counters say what to collect.
func TestDataSpaceCommands(t *testing.T) {
	got, code := runCase([]string{"-mobj_list"}, "")
	for _, want := range []string{"Vaddress", "Vline_64B", "Vpage_4K         4096  4 KiB virtual page", "Vpage_2M"} {
		if code != 0 || !strings.Contains(got, want) {
			t.Errorf("mobj_list has no %q:\n%s", want, got)
		}
	}
	got, code = runCase([]string{"-memobj", "Vpage_3K", "demo.1.er"}, "")
	if code == 0 || !strings.Contains(got, `memobj "Vpage_3K": unknown memory object type; the types: Vaddress, Vline_32B, Vline_64B, Vpage_4K, Vpage_2M, Vpage_1G`) {
		t.Errorf("memobj of an unknown type:\n%s", got)
	}
	for _, cmd := range []string{"-data_objects", "-datalayout", "-memobj"} {
		args := []string{cmd, "demo.1.er"}
		if cmd == "-memobj" {
			args = []string{cmd, "vpage_4k", "demo.1.er"}
		}
		got, _ = runCase(args, "")
		if !strings.Contains(got, "no hwc-profiling data; collect with -h name") {
			t.Errorf("%s without counters:\n%s", cmd, got)
		}
	}
}
