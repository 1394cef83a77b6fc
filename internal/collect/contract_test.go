package collect

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"er/internal/contracttest"
)

// The Go<->C contract of the control protocol and the environment (docs/trace-format.md, "The
// Go<->C contract"). The control page's words and the messages' layout and kinds are generated from
// one definition (internal/tracedef, whose tests check both sides); TestContractControl checks what
// it cannot say: that the library reads the page in the 32-bit words whose offsets er writes.
// TestContractEnv compares the ER_* variables preload/c reads with those er sets. A change on one
// side only fails them, naming what differs.

func TestContractControl(t *testing.T) {
	c := contracttest.Run(t, "testdata/contract.c")
	if w := c.Consts["ER_STATE_WORD"]; w != 4 || stateStop != int(w)*stateStopWord || statePause != int(w)*statePauseWord {
		t.Errorf("the library reads the control page in words of %d bytes; er writes the stop word at %d and pause_all at %d (words %d and %d of 4 bytes)",
			w, stateStop, statePause, stateStopWord, statePauseWord)
	}
}

// envNotSetByEr are the variables the library reads that er does not set, and why.
var envNotSetByEr = map[string]string{
	envFounderPID:     "whoever starts a founder that is not the first instance sets it (tests)",
	envParentStartNS:  "the library sets it for the images a process execs",
	envSeccompChecked: "er sets it only where it runs under seccomp filters that the library's probe passed (checkOwnSeccomp)",
	envSeccompProbe:   "er sets it for the probe, the library run as a program, not for the target",
	envSeccompTable:   "tests set it: the library run as a program prints its seccomp table (TestSeccompTable)",
}

// envNotRead are the variables er sets that the library does not read, and why.
var envNotRead = map[string]string{}

// cEnvName is a string literal of the collector library that names one of its variables.
var cEnvName = regexp.MustCompile(`"(ER_[A-Z0-9_]+)"`)

func TestContractEnv(t *testing.T) {
	srcs, err := filepath.Glob("../../preload/c/*.[ch]")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no preload/c sources: %v", err)
	}
	reads := map[string]bool{}
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cEnvName.FindAllSubmatch(b, -1) {
			reads[string(m[1])] = true
		}
	}
	spec := Spec{Heap: true, Sync: true, IO: true, Interval: IntervalHi, SyncThresh: SyncCalibrate, Follow: "on",
		SampleSignal: syscall.SIGUSR1, PauseSignal: syscall.SIGUSR2, StartPaused: true}
	env, err := preloadEnv(nil, "/l.so", t.TempDir(), spec, true)
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]bool{}
	for _, e := range env {
		if k, _, _ := strings.Cut(e, "="); strings.HasPrefix(k, "ER_") {
			sets[k] = true
		}
	}
	listed := map[string]bool{}
	for _, k := range libraryEnvVars {
		listed[k] = true
	}

	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	for k := range reads {
		if !listed[k] {
			fail("%s: the library reads it, Go does not list it (libraryEnvVars)", k)
		}
		if !sets[k] && envNotSetByEr[k] == "" {
			fail("%s: the library reads it, er does not set it (preloadEnv)", k)
		}
	}
	for k := range sets {
		if !listed[k] {
			fail("%s: er sets it, Go does not list it (libraryEnvVars): a value the target inherits is kept", k)
		}
		if !reads[k] && envNotRead[k] == "" {
			fail("%s: er sets it, the library does not read it", k)
		}
	}
	for k := range listed {
		if !reads[k] && envNotRead[k] == "" {
			fail("%s: Go lists it (libraryEnvVars), the library does not read it", k)
		}
	}
	for k, why := range envNotSetByEr {
		if sets[k] || !reads[k] {
			fail("%s: listed as read by the library and not set by er (%s), but er sets it: %v, the library reads it: %v", k, why, sets[k], reads[k])
		}
	}
	for k, why := range envNotRead {
		if reads[k] || !sets[k] {
			fail("%s: listed as set by er and not read by the library (%s), but er sets it: %v, the library reads it: %v", k, why, sets[k], reads[k])
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) == 0 {
		t.Logf("the library reads %d ER_* variables, er sets %d", len(reads), len(sets))
	}
}
