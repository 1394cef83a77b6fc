package preload

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMakefileFlags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(Dir()), "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":="); ok {
			vars[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if got, want := vars["PRELOAD_CFLAGS"], strings.Join(CFlags, " "); got != want {
		t.Errorf("Makefile PRELOAD_CFLAGS = %q, preload.CFlags = %q: keep them the same", got, want)
	}
	if got, want := vars["PRELOAD_LIBS"], strings.Join(Libs, " "); got != want {
		t.Errorf("Makefile PRELOAD_LIBS = %q, preload.Libs = %q: keep them the same", got, want)
	}
}

func TestBuild(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed")
	}
	out := filepath.Join(t.TempDir(), "libercollector.so")
	if err := Build(out); err != nil {
		t.Fatal(err)
	}
	// The library exports the interposed functions and nothing of its own.
	b, err := exec.Command("nm", "-D", "--defined-only", out).Output()
	if err != nil {
		t.Skipf("nm: %v", err)
	}
	syms := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			syms[f[2]] = true
		}
	}
	for _, want := range []string{"malloc", "free", "calloc", "realloc", "posix_memalign", "mmap", "munmap",
		"pthread_mutex_lock", "pthread_cond_wait", "pthread_join", "sem_wait", "pthread_barrier_wait",
		"open", "open64", "read", "write", "fopen", "fread", "fprintf", "__printf_chk", "pthread_create",
		// the signal calls for the signals the library keeps, and the forks fork's handlers miss
		"sigaction", "__sigaction", "signal", "bsd_signal", "ssignal", "sysv_signal", "__sysv_signal", "sigset",
		"sigignore", "siginterrupt", "vfork", "__vfork", "_Fork",
		// the ways a program installs a seccomp filter (seccomp.c)
		"prctl", "syscall"} {
		if !syms[want] {
			t.Errorf("the library does not export %s", want)
		}
	}
	for s := range syms {
		// dlopen must not be interposed: it resolves names by its caller's RUNPATH.
		if strings.HasPrefix(s, "er_") || s == "dlopen" {
			t.Errorf("the library exports its internal symbol %s", s)
		}
	}
}
