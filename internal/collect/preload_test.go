package collect

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestFindLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, LibraryName)
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(LibraryEnv, lib)
	if got, err := FindLibrary(); err != nil || got != lib {
		t.Errorf("FindLibrary() = %q, %v; want %q", got, err, lib)
	}
	t.Setenv(LibraryEnv, filepath.Join(dir, "none.so"))
	if _, err := FindLibrary(); err == nil || !strings.Contains(err.Error(), "none.so") {
		t.Errorf("FindLibrary() with a missing $%s: %v", LibraryEnv, err)
	}
	t.Setenv(LibraryEnv, "")
	// The test binary has no library beside it: the error says where it looked and what to do.
	if _, err := FindLibrary(); err == nil || !strings.Contains(err.Error(), "build it with make") {
		t.Errorf("FindLibrary() = %v", err)
	}
}

func TestCheckDynamic(t *testing.T) {
	if err := checkDynamic("/bin/sh", "heap tracing"); err != nil {
		t.Errorf("/bin/sh: %v", err)
	}
	if err := checkDynamic("/no/such/file", "x"); err != nil {
		t.Errorf("a missing file is checked when it runs, not here: %v", err)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "s.c")
	if err := os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "s")
	if out, err := exec.Command("gcc", "-static", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("no static libc here: %v\n%s", err, out)
	}
	err := checkDynamic(bin, "heap tracing (-H)")
	if err == nil || !strings.Contains(err.Error(), "statically linked") || !strings.Contains(err.Error(), "heap tracing (-H)") {
		t.Errorf("static binary: %v", err)
	}
}

func TestPreloadEnv(t *testing.T) {
	spec := Spec{Heap: true, Sync: true, SyncThresh: 250 * time.Microsecond, IO: true, Interval: IntervalHi}
	env, err := preloadEnv([]string{"PATH=/bin", "LD_PRELOAD=/x/other.so", "ER_TRACE=old"}, "/lib/er.so", "/tmp/t.er", spec, true)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(env, "\n")
	for _, want := range []string{"PATH=/bin", "LD_PRELOAD=/lib/er.so:/x/other.so", "ER_EXPDIR=/tmp/t.er", "ER_TRACE=heap,sync,io,clock",
		"ER_SYNC_THRESHOLD_NS=250000", "ER_CLOCK_INTERVAL_NS=1009000"} {
		if !strings.Contains(got, want+"\n") && !strings.HasSuffix(got, want) {
			t.Errorf("environment lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ER_TRACE=old") {
		t.Errorf("the old ER_TRACE is kept:\n%s", got)
	}
	if got, want := libraryUses(spec, true), "heap tracing (-H) and synchronization tracing (-s) and I/O tracing (-i) and "+
		"clock profiling by SIGPROF (perf events cannot be used)"; got != want {
		t.Errorf("libraryUses = %q, want %q", got, want)
	}
	spec = Spec{Sync: true, SyncThresh: SyncCalibrate}
	env, _ = preloadEnv(nil, "/l.so", "/e.er", spec, false)
	if got := strings.Join(env, " "); !strings.Contains(got, "ER_SYNC_THRESHOLD_NS=18446744073709551615") || !strings.Contains(got, "ER_TRACE=sync ") {
		t.Errorf("calibrated sync: %s", got)
	}
}

// TestSigprofReason: the SIGPROF clock's messages say why it is used: asked for, or the real reason
// perf events cannot be used (they said "perf events are not available" in both cases).
func TestSigprofReason(t *testing.T) {
	if got, want := sigprofTitle(Spec{ClockSource: "sigprof"}), "clock profiling by SIGPROF ($ER_CLOCK_SOURCE=sigprof)"; got != want {
		t.Errorf("asked for: %q, want %q", got, want)
	}
	open := func(e error) error { return fmt.Errorf("perf_event_open task-clock (pid 0, cpu -1): %w", e) }
	for _, c := range []struct {
		err      error
		paranoid int
		want     string
	}{
		{open(unix.EACCES), 3, "kernel.perf_event_paranoid is 3, which denies perf events to users without CAP_PERFMON (sudo sysctl kernel.perf_event_paranoid=2 allows them)"},
		{open(unix.EPERM), 2, "perf_event_open was refused (perf_event_open task-clock (pid 0, cpu -1): operation not permitted) although kernel.perf_event_paranoid is 2: a seccomp filter (a container's) or a security module denies it"},
		{open(unix.ENOSYS), -1, "this kernel has no perf events (perf_event_open task-clock (pid 0, cpu -1): function not implemented)"},
		{open(unix.EINVAL), 2, "perf_event_open failed: perf_event_open task-clock (pid 0, cpu -1): invalid argument"},
	} {
		if got := clockDeniedReason(c.err, c.paranoid); got != c.want {
			t.Errorf("%v, paranoid %d: %q, want %q", c.err, c.paranoid, got, c.want)
		}
	}
}
