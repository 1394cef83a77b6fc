package perfevent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCPUList(t *testing.T) {
	good := []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"0-1\n", []int{0, 1}},
		{"0-1,4", []int{0, 1, 4}},
		{"0,2-3,6-7", []int{0, 2, 3, 6, 7}},
	}
	for _, tt := range good {
		got, err := ParseCPUList(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "x", "1-", "3-1", "0,0", "2,1", "-1", "0-99999999"} {
		if got, err := ParseCPUList(in); err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want an error", in, got)
		}
	}
}

// withFile points *path at a temporary file holding content for the test.
func withFile(t *testing.T, path *string, content string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), filepath.Base(*path))
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := *path
	*path = f
	t.Cleanup(func() { *path = old })
}

func TestOnlineCPUsAndParanoid(t *testing.T) {
	withFile(t, &onlineCPUsPath, "0-1,4\n")
	withFile(t, &paranoidPath, "-1\n")
	cpus, err := OnlineCPUs()
	if err != nil || !reflect.DeepEqual(cpus, []int{0, 1, 4}) {
		t.Errorf("OnlineCPUs = %v, %v", cpus, err)
	}
	if p, err := Paranoid(); p != -1 || err != nil {
		t.Errorf("Paranoid = %d, %v", p, err)
	}
	withFile(t, &onlineCPUsPath, "zero")
	if _, err := OnlineCPUs(); err == nil || !strings.Contains(err.Error(), "online") {
		t.Errorf("bad online file: %v", err)
	}
	withFile(t, &paranoidPath, "two")
	if _, err := Paranoid(); err == nil || !strings.Contains(err.Error(), "perf_event_paranoid") {
		t.Errorf("bad paranoid file: %v", err)
	}
}

func TestExplainOpen(t *testing.T) {
	withFile(t, &paranoidPath, "2\n")
	withFile(t, &maxStackPath, "127\n")
	clock := TaskClock(1e6)
	hw := HardwareCounter(unix.PERF_COUNT_HW_CACHE_MISSES, 1e5)
	deep := TaskClock(1e6)
	deep.MaxStack = 500
	tests := []struct {
		errno unix.Errno
		o     Options
		kind  error
		want  []string
	}{
		{unix.EACCES, clock, ErrPermission, []string{"perf_event_open task-clock (pid 42, cpu 1): permission denied",
			"perf_event_paranoid is 2", "kernel samples or kernel call stacks", "sysctl kernel.perf_event_paranoid=1", "CAP_PERFMON", "SIGPROF"}},
		{unix.EPERM, clock, ErrPermission, []string{"operation not permitted", "perf_event_paranoid is 2"}},
		{unix.ENOENT, hw, ErrUnsupported, []string{"hardware counter cache-misses is not supported on this machine (no PMU)"}},
		{unix.EOPNOTSUPP, hw, ErrUnsupported, []string{"hardware counter cache-misses is not supported"}},
		{unix.ENOENT, Options{Type: unix.PERF_TYPE_SOFTWARE, Config: 77, PeriodNS: 1}, ErrUnsupported, []string{"event type 1 config 0x4d is not supported by this kernel"}},
		{unix.ESRCH, clock, nil, []string{"no process 42"}},
		{unix.EOVERFLOW, deep, nil, []string{"MaxStack 500 exceeds", "(127)"}},
		{unix.EMFILE, clock, nil, []string{"ulimit -n"}},
		{unix.EINVAL, clock, nil, []string{"rejected the event attributes (period 1000000"}},
	}
	for _, tt := range tests {
		err := explainOpen(tt.errno, &tt.o, 42, 1)
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", tt.errno, err, w)
			}
		}
		if !errors.Is(err, tt.errno) {
			t.Errorf("%v: errors.Is(err, errno) is false", tt.errno)
		}
		for _, k := range []error{ErrPermission, ErrUnsupported} {
			if errors.Is(err, k) != (k == tt.kind) {
				t.Errorf("%v: errors.Is(err, %v) = %v", tt.errno, k, errors.Is(err, k))
			}
		}
	}
	withFile(t, &paranoidPath, "3\n")
	user := TaskClock(1e6)
	user.ExcludeKernel = true
	err := explainOpen(unix.EACCES, &user, 1, 0)
	if s := err.Error(); !strings.Contains(s, "is 3 (perf events are disabled for unprivileged users)") || strings.Contains(s, "kernel call stacks") {
		t.Errorf("paranoid 3: %v", err)
	}
}
