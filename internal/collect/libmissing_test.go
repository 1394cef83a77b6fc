package collect

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestAuxvValue(t *testing.T) {
	vec := func(pairs ...uint64) []byte {
		b := make([]byte, 8*len(pairs))
		for i, v := range pairs {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	for _, tc := range []struct {
		auxv        []byte
		nonzero, ok bool
	}{
		{vec(6, 4096, atSecure, 1, 0, 0), true, true},
		{vec(6, 4096, atSecure, 0, 0, 0), false, true},
		{vec(6, 4096, 0, 0, atSecure, 1), false, false}, // after AT_NULL
		{vec(6, 4096), false, false},
		{vec(atSecure, 1)[:12], false, false}, // cut short
		{nil, false, false},
	} {
		if nonzero, ok := auxvValue(tc.auxv, atSecure); nonzero != tc.nonzero || ok != tc.ok {
			t.Errorf("auxvValue(%x) = %v, %v; want %v, %v", tc.auxv, nonzero, ok, tc.nonzero, tc.ok)
		}
	}
	// This process's own: not secure.
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		t.Skip(err)
	}
	if nonzero, ok := auxvValue(b, atSecure); !ok || nonzero {
		t.Errorf("this test's own AT_SECURE: %v, %v; want 0, present", nonzero, ok)
	}
}

func TestStaticELF(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dyn := filepath.Join(dir, "dyn")
	if out, err := exec.Command("gcc", "-o", dyn, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if staticELF(dyn) {
		t.Error("a dynamically linked program is said to be static")
	}
	if staticELF(src) || staticELF(filepath.Join(dir, "none")) {
		t.Error("a file that is not ELF, or none, is said to be a static program")
	}
	st := filepath.Join(dir, "static")
	if out, err := exec.Command("gcc", "-static", "-o", st, src).CombinedOutput(); err != nil {
		t.Skipf("no static libc: %v\n%s", err, out)
	}
	if !staticELF(st) {
		t.Error("a statically linked program is not said to be static")
	}
}

func TestLibraryMissingReason(t *testing.T) {
	for _, tc := range []struct {
		f    execFacts
		want string
	}{
		{execFacts{secure: true, secureKnown: true, preloadKnown: true}, "set-user-ID, set-group-ID or file-capabilities program: the dynamic loader"},
		{execFacts{secureKnown: true, preloadKnown: true}, "its environment did not preload the collector library"},
		{execFacts{secureKnown: true, preload: true, preloadKnown: true}, "it ended before the library started"},
		{execFacts{}, "its environment did not preload the collector library (the process that ran it cleared LD_PRELOAD or the environment), or it ended"},
		{execFacts{exe: "/nonexistent/prog"}, "or it ended before the library started"},
		{execFacts{secureKnown: true, preload: true, preloadKnown: true, root: "/jail"}, "it runs chrooted to /jail, where the experiment directory is out of its reach"},
		{execFacts{secureKnown: true, preload: true, preloadKnown: true, root: "/", otherMounts: true}, "a mount namespace of its own"},
		{execFacts{secureKnown: true, preload: true, preloadKnown: true, root: "/", euid: 65534}, "it runs as user nobody, 65534, which may not write into the experiment: its privileges were dropped by the system call itself"},
		{execFacts{inherited: "process 7 chrooted"}, "process 7 chrooted"},
	} {
		if got := libraryMissingReason(tc.f); !strings.Contains(got, tc.want) {
			t.Errorf("libraryMissingReason(%+v) = %q, want %q in it", tc.f, got, tc.want)
		}
	}
}

func TestReadExecFacts(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	cmd.Env = append(os.Environ(), "LD_PRELOAD=/nonexistent/"+LibraryName)
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := uint32(cmd.Process.Pid)
	// Start returns when exec has passed its point of no return, maybe before the new image's
	// auxiliary vector is set up: the facts are unknown until then.
	var f execFacts
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if f = readExecFacts(pid, "sleep", "/elsewhere/"+LibraryName); f.secureKnown || time.Now().After(deadline) {
			break
		}
		if f.preloadKnown {
			t.Fatalf("facts known in part: %+v", f)
		}
	}
	if !f.secureKnown || f.secure || !f.preloadKnown || !f.preload || !strings.HasSuffix(f.exe, "sleep") {
		t.Errorf("facts of sleep with the library preloaded: %+v", f)
	}
	if f := readExecFacts(pid, "sleep", "/elsewhere/libother.so"); f.preload || !f.preloadKnown {
		t.Errorf("facts of sleep with another library preloaded: %+v", f)
	}
	if f := readExecFacts(pid, "other", "/elsewhere/"+LibraryName); f.secureKnown || f.preloadKnown {
		t.Errorf("facts read for another program than the one exec started: %+v", f)
	}
}

// An image the library could not start in, or did not run in, is explained by what the processes it
// came from did: a chroot out of the experiment's reach, a start that failed, a user that may not
// reach the experiment directory.
func TestInheritedReason(t *testing.T) {
	s := testSession(t, DefaultSpec())
	child := s.newImage(11, 10, s.founder, 'f', 500, "prog")
	img := s.newImage(11, 10, child, 'x', 900, "prog")
	if got := s.inheritedReason(img); got != "" {
		t.Errorf("nothing happened, and the reason is %q", got)
	}
	s.libUnreachable = []libNoStart{{libStart: libStart{10, 400}, euid: 1}}
	if got := s.inheritedReason(img); !strings.Contains(got, "process 10 chrooted at 0.000 s, and the experiment directory is out of reach") {
		t.Errorf("the founder chrooted before the fork: %q", got)
	}
	s.libUnreachable = []libNoStart{{libStart: libStart{10, 400}, euid: 2}}
	if got := s.inheritedReason(img); !strings.Contains(got, "process 10 changed its mounts (or entered another mount namespace) at 0.000 s") {
		t.Errorf("the founder mounted before the fork: %q", got)
	}
	s.libUnreachable = []libNoStart{{libStart: libStart{10, 950}, euid: 1}}
	if got := s.inheritedReason(img); got != "" {
		t.Errorf("a chroot after the image began: %q", got)
	}
	s.libNoStarts = []libNoStart{{libStart: libStart{11, 600}, err: unix.EACCES, euid: 65534}}
	if got := s.inheritedReason(img); !strings.Contains(got, "the library could not start in process 11 before it either (permission denied, as user nobody, 65534)") {
		t.Errorf("the forked image could not start: %q", got)
	}
	drop := libNoStart{libStart: libStart{11, 600}, err: unix.EACCES, euid: 65534}
	if text := noStartText(11, "prog", "heap tracing (-H)", s.noStartCause(drop, child)); os.Geteuid() != 65534 &&
		!strings.Contains(text, "could not start in process 11 (prog), so heap tracing (-H) recorded nothing in it: creating its directory and files in the experiment: permission denied (the process runs as user nobody, 65534; its privileges were dropped by the system call itself") {
		t.Errorf("noStartText: %q", text)
	}
	full := libNoStart{libStart: libStart{11, 600}, err: unix.ENOSPC, euid: 65534}
	if text := s.noStartCause(full, child); strings.Contains(text, "privileges") || !strings.Contains(text, "no space left on device") {
		t.Errorf("noStartCause of a full disk: %q", text)
	}

	// A descriptor limit that left no room: said as such, here and in the image exec'd after it.
	nofile := libNoStart{libStart: libStart{11, 600}, err: unix.EMFILE, nofile: [2]uint32{4, 4}}
	if got := s.noStartCause(nofile, child); !strings.Contains(got, "its descriptor limit (RLIMIT_NOFILE 4, hard 4, which the program lowered)") {
		t.Errorf("noStartCause of a descriptor limit: %q", got)
	}
	s.libNoStarts = []libNoStart{nofile}
	if got := s.inheritedReason(img); !strings.Contains(got, "could not start in process 11 before it either: its descriptor limit (RLIMIT_NOFILE 4, hard 4") {
		t.Errorf("the forked image had no room: %q", got)
	}

	// A Landlock ruleset of the founder's, before the fork: the forked image's permission denied is
	// its doing, and so is the exec'd image's missing library; one made after the image began is not.
	s.libNoStarts = nil
	s.libLandlocks = []libStart{{10, 450}}
	want := "process 10 restricted itself with a Landlock ruleset at 0.000 s (landlock_restrict_self)"
	if got := s.noStartCause(drop, child); !strings.Contains(got, "permission denied: "+want) || strings.Contains(got, "privileges were dropped") {
		t.Errorf("noStartCause under Landlock: %q", got)
	}
	if got := s.inheritedReason(img); !strings.Contains(got, want) {
		t.Errorf("the exec'd image under the founder's Landlock ruleset: %q", got)
	}
	s.libNoStarts = []libNoStart{drop}
	if got := s.inheritedReason(img); !strings.Contains(got, "could not start in process 11 before it either: creating its directory and files in the experiment: permission denied: "+want) {
		t.Errorf("the exec'd image after the forked one could not start under Landlock: %q", got)
	}
	s.libNoStarts = nil
	s.libLandlocks = []libStart{{10, 950}}
	if got := s.inheritedReason(img); got != "" {
		t.Errorf("a Landlock ruleset made after the image began: %q", got)
	}
	if got := s.noStartCause(drop, child); strings.Contains(got, "Landlock") {
		t.Errorf("a Landlock ruleset made after the failure: %q", got)
	}
}

// unreachable names a directory on the way that a user may not search.
func TestUnreachable(t *testing.T) {
	dir := t.TempDir()
	closed := filepath.Join(dir, "closed")
	exp := filepath.Join(closed, "open", "test.1.er")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := unreachable(exp, 65534); !strings.Contains(got, "who may not search "+closed+" (0700") {
		t.Errorf("unreachable = %q", got)
	}
	if err := os.Chmod(closed, 0o711); err != nil {
		t.Fatal(err)
	}
	if got := unreachable(exp, 65534); got != "" {
		t.Errorf("unreachable = %q, with every directory searchable", got)
	}
}
