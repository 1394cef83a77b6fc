package collect

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeccompCallNames: every system call of the library's table (calls[] of preload/c/seccomp.c)
// has its name in libraryCalls, and libraryCalls names no other.
func TestSeccompCallNames(t *testing.T) {
	src, err := os.ReadFile("../../preload/c/seccomp.c")
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`\{SYS_(\w+), "(\w+)"`)
	c := map[string]bool{}
	for _, m := range entry.FindAllSubmatch(src, -1) {
		if string(m[1]) != string(m[2]) {
			t.Errorf("calls[]: SYS_%s is named %q", m[1], m[2])
		}
		c[string(m[1])] = true
	}
	if len(c) < 20 {
		t.Fatalf("found %d system calls in calls[] of seccomp.c: is the table still written {SYS_name, \"name\", ...}?", len(c))
	}
	goNames := map[string]bool{}
	for _, n := range libraryCalls {
		goNames[n] = true
		if !c[n] {
			t.Errorf("libraryCalls names %s, which the library's table does not have", n)
		}
	}
	for n := range c {
		if !goNames[n] {
			t.Errorf("the library makes the system call %s, which libraryCalls does not name", n)
		}
	}
	if callName(unix.SYS_FALLOCATE) != "fallocate" || callName(9999) != "number 9999" {
		t.Errorf("callName: %q, %q", callName(unix.SYS_FALLOCATE), callName(9999))
	}
}

func TestFilterAction(t *testing.T) {
	for ret, want := range map[uint32]string{
		0x80000000:         "SECCOMP_RET_KILL_PROCESS: it kills the process",
		0:                  "SECCOMP_RET_KILL_THREAD: it kills the thread",
		0x00030000:         "SECCOMP_RET_TRAP: it sends the thread SIGSYS",
		0x00050000 | 1:     "SECCOMP_RET_ERRNO: it fails with operation not permitted",
		0x7fc00000:         "SECCOMP_RET_USER_NOTIF: a supervisor answers it",
		0x7ff00000:         "SECCOMP_RET_TRACE: a tracer answers it",
		0x12340000:         "0x12340000, which the kernel takes as SECCOMP_RET_KILL_PROCESS",
		retStrict:          "strict mode, SECCOMP_MODE_STRICT: only read, write, _exit and sigreturn; any other call kills the process",
		0x00050000 | 0x0d:  "SECCOMP_RET_ERRNO: it fails with permission denied",
		0x80000000 | 0x0d:  "SECCOMP_RET_KILL_PROCESS: it kills the process",
		0x00000000 | 0x0d:  "SECCOMP_RET_KILL_THREAD: it kills the thread",
		0x00030000 | 0x101: "SECCOMP_RET_TRAP: it sends the thread SIGSYS",
	} {
		if got := filterAction(ret); got != want {
			t.Errorf("filterAction(%#x) = %q, want %q", ret, got, want)
		}
	}
}

// TestProbeOutcomes: what probeLibrary makes of each way its probe ends, with stand-in probes (the
// library's own runs under real filters in cmd/er's TestSeccompUnderEr).
func TestProbeOutcomes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, script, want string }{
		{"passes", `echo call openat; echo call tgkill; test -d "$ER_SECCOMP_PROBE"`, ""},
		{"killed", `echo call openat; echo call mkdir; kill -SYS $$`, "they kill it at its system call mkdir (its probe was killed by SIGSYS)"},
		{"killedfirst", `kill -SYS $$`, "they kill it (its probe was killed by SIGSYS before its first call)"},
		{"fails", `echo call openat; echo failed openat 13; exit 1`, "they fail its system call openat with permission denied"},
		{"other", `echo call openat; exit 3`, "its probe failed (exit status 3): call openat"},
	} {
		probe := filepath.Join(dir, c.name)
		if err := os.WriteFile(probe, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := probeLibrary(probe); got != c.want {
			t.Errorf("%s: probeLibrary = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOwnSeccompFilters: this process's filters, as /proc/self/status counts them (none here, unless
// the tests run in a container).
func TestOwnSeccompFilters(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	want := 0
	if statusField(string(status), "Seccomp") == "2" {
		if want, err = strconv.Atoi(statusField(string(status), "Seccomp_filters")); err != nil {
			want = -1
		}
	}
	if got := ownSeccompFilters(); got != want {
		t.Errorf("ownSeccompFilters() = %d, want %d", got, want)
	}
}
