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
// Go<->C contract"). TestContractControl compiles testdata/contract.c, which includes the collector
// library's preload/c/collector.h and prints the state page's words, struct er_msg's layout, its
// magic number and kinds; TestContractEnv compares the ER_* variables preload/c reads with those
// er sets. A change on one side only fails them, naming what differs.

func TestContractControl(t *testing.T) {
	c := contracttest.Run(t, "testdata/contract.c")
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	seen := map[string]bool{}
	cmpConst := func(cName, goName string, goV uint64) {
		seen[cName] = true
		if v, ok := c.Consts[cName]; !ok {
			fail("%s: C has none, Go has %s = %d", cName, goName, goV)
		} else if v != goV {
			fail("%s: C %d, Go %d (%s)", cName, v, goV, goName)
		}
	}

	// The state page: words of 4 bytes (control.set writes 32-bit words).
	cmpConst("ER_STATE_MAGIC", "stateMagic", stateMagic)
	cmpConst("ER_STATE_WORD", "the 32-bit words of control.set", 4)
	cmpConst("ER_STATE_STOP_LIMIT", "stopLimit", stopLimit)
	cmpConst("ER_STATE_STOP_ENDED", "stopEnded", stopEnded)
	word := c.Consts["ER_STATE_WORD"]
	for _, w := range []struct {
		c, goName string
		off       uint64
	}{{"ER_STATE_STOP", "stateStop", stateStop}, {"ER_STATE_PAUSE_ALL", "statePause", statePause}} {
		seen[w.c] = true
		if idx, ok := c.Consts[w.c]; !ok {
			fail("%s: C has none, Go has %s at offset %d", w.c, w.goName, w.off)
		} else if idx*word != w.off {
			fail("%s: C offset %d (word %d), Go %d (%s)", w.c, idx*word, idx, w.off, w.goName)
		}
	}

	// Messages.
	cmpConst("ER_MSG_MAGIC", "messageMagic", messageMagic)
	for _, k := range []struct {
		c, goName string
		v         uint64
	}{
		{"ER_MSG_SAMPLE", "msgSample", msgSample}, {"ER_MSG_PAUSED", "msgPaused", msgPaused},
		{"ER_MSG_RESUMED", "msgResumed", msgResumed}, {"ER_MSG_STARTED", "msgStarted", msgStarted},
		{"ER_MSG_FORKED", "msgForked", msgForked}, {"ER_MSG_EXECED", "msgExeced", msgExeced},
		{"ER_MSG_STOPPED", "msgStopped", msgStopped}, {"ER_MSG_NOSTART", "msgNoStart", msgNoStart},
		{"ER_MSG_UNREACHABLE", "msgUnreachable", msgUnreachable}, {"ER_MSG_SETUID", "msgSetUID", msgSetUID},
		{"ER_MSG_HANDLER", "msgHandler", msgHandler},
		{"ER_MSG_SECCOMP", "msgSeccomp", msgSeccomp}, {"ER_MSG_SECCOMP_ALLOWED", "seccompAllowed", seccompAllowed},
		{"ER_MSG_SECCOMP_REFUSED", "seccompRefused", seccompRefused}, {"ER_MSG_SECCOMP_STRICT", "retStrict", retStrict},
		{"ER_MSG_NOFILE", "msgNoFile", msgNoFile}, {"ER_MSG_LANDLOCK", "msgLandlock", msgLandlock},
	} {
		cmpConst(k.c, k.goName, k.v)
	}
	cmpConst("ER_RELAY_COOKIE", "relayCookie", relayCookie)
	for name, v := range c.Consts {
		if !seen[name] {
			fail("%s: C has it (%d), Go has no constant for it", name, v)
		}
	}
	if size, ok := c.Structs["er_msg"]; size != messageSize || !ok {
		fail("struct er_msg: C size %d, Go %d (messageSize)", size, messageSize)
	}
	fields := []struct {
		c, goName  string
		off, width int
	}{
		{"magic", "msgOffMagic", msgOffMagic, 4}, {"kind", "msgOffKind", msgOffKind, 4},
		{"pid", "msgOffPid", msgOffPid, 4}, {"tid", "msgOffTid", msgOffTid, 4},
		{"time", "msgOffTime", msgOffTime, 8}, {"arg", "msgOffArg", msgOffArg, 4},
		{"aux", "msgOffAux", msgOffAux, 4},
	}
	for _, f := range fields {
		name := "er_msg." + f.c
		seen[name] = true
		cf, ok := c.Fields[name]
		switch {
		case !ok:
			fail("%s: C has no such field, Go has %s at offset %d", name, f.goName, f.off)
		case f.goName == "":
		case cf.Off != f.off:
			fail("%s: C offset %d, Go %d (%s)", name, cf.Off, f.off, f.goName)
		case cf.Size != f.width:
			fail("%s: C size %d, Go reads %d bytes (%s)", name, cf.Size, f.width, f.goName)
		}
	}
	for name, f := range c.Fields {
		if !seen[name] {
			fail("%s: C has it at offset %d (%d bytes), Go has no constant for it", name, f.Off, f.Size)
		}
	}

	// The program prints all of the protocol that collector.h declares.
	for _, miss := range uncovered(c, "../../preload/c/collector.h", "er_msg", "er_msg_kind", `ER_(STATE|MSG|RELAY)_\w+`) {
		fail("%s: preload/c/collector.h declares it, testdata/contract.c does not print it", miss)
	}

	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) == 0 {
		t.Logf("compared %d fields of struct er_msg, %d constants", len(c.Fields), len(c.Consts))
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

// uncovered returns what the header declares of the struct strct, the enum enum and the #defines
// of a value whose names match define that the program did not print.
func uncovered(c *contracttest.Output, header, strct, enum, define string) []string {
	b, err := os.ReadFile(header)
	if err != nil {
		return []string{err.Error()}
	}
	text := contracttest.StripComments(string(b))
	var miss []string
	if m := regexp.MustCompile(`(?s)\bstruct\s+` + strct + `\s*\{(.*?)\}\s*;`).FindStringSubmatch(text); m == nil {
		miss = append(miss, "struct "+strct)
	} else {
		for _, n := range contracttest.FieldNames(m[1]) {
			if c.Fields[strct+"."+n].Size == 0 {
				miss = append(miss, strct+"."+n)
			}
		}
	}
	if m := regexp.MustCompile(`(?s)\benum\s+` + enum + `\s*\{(.*?)\}\s*;`).FindStringSubmatch(text); m == nil {
		miss = append(miss, "enum "+enum)
	} else {
		for _, member := range strings.Split(m[1], ",") {
			n, _, _ := strings.Cut(member, "=")
			if n = strings.TrimSpace(n); n != "" {
				if _, ok := c.Consts[n]; !ok {
					miss = append(miss, "enum "+enum+" "+n)
				}
			}
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^#define\s+(`+define+`)[ \t]+\S`).FindAllStringSubmatch(text, -1) {
		if _, ok := c.Consts[m[1]]; !ok {
			miss = append(miss, "#define "+m[1])
		}
	}
	return miss
}
