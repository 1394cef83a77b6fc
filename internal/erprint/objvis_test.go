package erprint

import (
	"strings"
	"testing"
)

// TestObjectVisibility: object_hide makes a load object one function, named as the object, with the
// exclusive time of its functions and the inclusive time of any of them; object_api keeps the functions
// entered from outside the object and folds their callees inside it into them; objects_default
// restores; object_list says each object's setting.
func TestObjectVisibility(t *testing.T) {
	rows := func(args ...string) map[string]string {
		got, code := runCase(append(append([]string{"-metrics", "e.totalcpu:i.totalcpu"}, args...), "-functions", "demo.1.er"), "")
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, got)
		}
		out := map[string]string{}
		for _, line := range strings.Split(got, "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && (strings.Contains(f[0], ".") || f[0] == "0.") {
				out[strings.Join(f[2:], " ")] = f[0] + " " + f[1]
			}
		}
		return out
	}
	hidden := rows("-object_hide", "libc.so.6")
	if got := hidden["<libc.so.6>"]; got != "0.030 1.331" {
		t.Errorf("<libc.so.6> hidden: %q, want 0.030 1.331 (printf's own; every stack starts in libc)", got)
	}
	for _, fn := range []string{"printf", "__libc_start_main", "start_thread", "<static>@0x27100 (<libc.so.6>)"} {
		if _, ok := hidden[fn]; ok {
			t.Errorf("%s listed with libc hidden", fn)
		}
	}
	if hidden["main"] != "0.020 1.091" || hidden["compute"] != "0.600 1.141" {
		t.Errorf("main %q, compute %q with libc hidden", hidden["main"], hidden["compute"])
	}
	api := rows("-object_api", "<libc.so.6>")
	for fn, want := range map[string]string{"printf": "0.030 0.030", "write": "0. 0.060", "clone3": "0. 0.240"} {
		if api[fn] != want {
			t.Errorf("%s with libc's API only: %q, want %q", fn, api[fn], want)
		}
	}
	for _, fn := range []string{"__libc_start_main", "start_thread"} {
		if _, ok := api[fn]; ok {
			t.Errorf("%s (called inside libc) listed with libc's API only", fn)
		}
	}
	if back := rows("-object_hide", "all", "-objects_default"); back["printf"] != "0.030 0.030" {
		t.Errorf("objects_default: printf %q", back["printf"])
	}
	got, _ := runCase([]string{"-object_hide", "/usr/lib/x86_64-linux-gnu/libc.so.6", "-object_api", "demo", "-object_list", "demo.1.er"}, "")
	if !strings.Contains(got, "hide <libc.so.6>") || !strings.Contains(got, "api  <demo>") || !strings.Contains(got, "show <libm.so.6>") {
		t.Errorf("object_list:\n%s", got)
	}
}
