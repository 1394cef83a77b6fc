package collect

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LibraryName is the file name of the collector library (built by make from preload/).
const LibraryName = "libercollector.so"

// LibraryEnv names the environment variable that points er at a collector library elsewhere.
const LibraryEnv = "ER_COLLECTOR_LIB"

// FindLibrary locates the collector library: $ER_COLLECTOR_LIB, else beside the er executable,
// else in ../lib/er/ from it.
func FindLibrary() (string, error) {
	if p := os.Getenv(LibraryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("the collector library $%s=%s: %v", LibraryEnv, p, err)
		}
		return filepath.Abs(p)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the collector library %s: %v", LibraryName, err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	dir := filepath.Dir(exe)
	tried := []string{filepath.Join(dir, LibraryName), filepath.Join(dir, "..", "lib", "er", LibraryName)}
	for _, p := range tried {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("cannot find the collector library %s (looked in %s); build it with make, or set $%s",
		LibraryName, strings.Join(tried, " and "), LibraryEnv)
}

// checkDynamic refuses a statically linked ELF program, which cannot load the collector
// library. A script or a file that is not ELF passes: its interpreter is checked when it runs.
func checkDynamic(path, why string) error {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil
		}
	}
	if strings.Contains(why, "SIGPROF") {
		return fmt.Errorf("%s is statically linked: it cannot load the collector library that %s needs; "+
			"link it dynamically, or let er use perf events (unset $%s; perf_event_paranoid 2 or less)", path, why, ClockSourceEnv)
	}
	return fmt.Errorf("%s is statically linked: it cannot load the collector library that %s needs; "+
		"link it dynamically, or collect clock profiles only (-p, without -H, -s or -i)", path, why)
}

// openMPRuntimes are the sonames of the OpenMP runtimes: GCC's, LLVM's, Intel's.
var openMPRuntimes = []string{"libgomp.so", "libomp.so", "libiomp5.so"}

// linksOpenMP says whether the program at path needs an OpenMP runtime: its own or its libraries'
// DT_NEEDED entries name one (a library found in the usual directories).
func linksOpenMP(path string) bool {
	seen := map[string]bool{}
	var needs func(file string, depth int) bool
	needs = func(file string, depth int) bool {
		f, err := elf.Open(file)
		if err != nil {
			return false
		}
		defer f.Close()
		libs, _ := f.ImportedLibraries()
		for _, l := range libs {
			for _, rt := range openMPRuntimes {
				if strings.HasPrefix(l, rt) {
					return true
				}
			}
		}
		if depth == 0 {
			return false
		}
		for _, l := range libs {
			if seen[l] || strings.HasPrefix(l, "libc.so") || strings.HasPrefix(l, "libm.so") {
				continue
			}
			seen[l] = true
			for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/usr/local/lib"} {
				if p := filepath.Join(dir, l); fileExists(p) {
					if needs(p, depth-1) {
						return true
					}
					break
				}
			}
		}
		return false
	}
	return needs(path, 1)
}

// jvmLaunchers are the sonames that say a program starts a JVM: the launcher's library, the VM's.
var jvmLaunchers = []string{"libjli.so", "libjvm.so"}

// startsJVM says whether the program at path starts a JVM: it, or a library it needs, links the
// JVM's launcher library (OpenJDK's java, javac, jshell) or the JVM itself (a program that embeds
// one with JNI_CreateJavaVM).
func startsJVM(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	for _, l := range libs {
		for _, rt := range jvmLaunchers {
			if strings.HasPrefix(l, rt) {
				return true
			}
		}
	}
	return false
}

// callsFuncLoad says whether the program at path calls the collector API's collector_func_load
// (preload/include/collectorAPI.h): it imports the symbol.
func callsFuncLoad(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && (s.Name == "collector_func_load" || s.Name == "collector_func_unload") {
			return true
		}
	}
	return false
}

// javaToolOptions returns env with the collector library as the agent of every JVM that starts
// (JAVA_TOOL_OPTIONS, which each JVM reads, a child JVM too, the launcher's own options kept), and
// the JVMs' compiled code keeping frame pointers, so that er unwinds their stacks through it, and
// debug information at every PC of it, not only at its calls and safepoints (DebugNonSafepoints),
// so that a PC of code inlined from another method is that method's.
func javaToolOptions(env []string, lib string) []string {
	opts := "-agentpath:" + lib + " -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints"
	for i, e := range env {
		if v, ok := strings.CutPrefix(e, javaToolOptionsEnv+"="); ok {
			if v != "" {
				opts += " " + v
			}
			env[i] = javaToolOptionsEnv + "=" + opts
			return env
		}
	}
	return append(env, javaToolOptionsEnv+"="+opts)
}

// javaToolOptionsEnv is the variable from which every JVM takes options.
const javaToolOptionsEnv = "JAVA_TOOL_OPTIONS"

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sigprofTitle names the SIGPROF clock and why it is used, for messages.
func sigprofTitle(spec Spec) string {
	if spec.ClockSource == "sigprof" {
		return "clock profiling by SIGPROF ($" + ClockSourceEnv + "=sigprof)"
	}
	return "clock profiling by SIGPROF (perf events cannot be used)"
}

// clockDeniedReason says why perf events cannot be used, from the error of opening the clock and
// kernel.perf_event_paranoid (-1 when unreadable), with what the user can do.
func clockDeniedReason(err error, paranoid int) string {
	switch {
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOENT):
		return fmt.Sprintf("this kernel has no perf events (%v)", err)
	case (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) && paranoid > 2:
		return fmt.Sprintf("kernel.perf_event_paranoid is %d, which denies perf events to users without CAP_PERFMON "+
			"(sudo sysctl kernel.perf_event_paranoid=2 allows them)", paranoid)
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		return fmt.Sprintf("perf_event_open was refused (%v) although kernel.perf_event_paranoid is %d: "+
			"a seccomp filter (a container's) or a security module denies it", err, paranoid)
	}
	return fmt.Sprintf("perf_event_open failed: %v", err)
}

// libraryJob is one thing the collector library does: its word in ER_TRACE and its name in messages.
type libraryJob struct{ word, title string }

// libraryJobs lists what the collector library is loaded for.
func libraryJobs(spec Spec, sigprof bool) []libraryJob {
	var jobs []libraryJob
	for _, j := range []struct {
		on bool
		libraryJob
	}{
		{spec.Heap, libraryJob{"heap", "heap tracing (-H)"}},
		{spec.Sync, libraryJob{"sync", "synchronization tracing (-s)"}},
		{spec.IO, libraryJob{"io", "I/O tracing (-i)"}},
		{spec.OpenMPOn(), libraryJob{"omp", "OpenMP tracing (--openmp)"}},
		{spec.JavaOn(), libraryJob{"java", "Java profiling (-j)"}},
		{spec.DynFunc, libraryJob{"dyn", "the functions the program generates (collector_func_load)"}},
		{sigprof, libraryJob{"clock", sigprofTitle(spec)}},
		{spec.SampleSignal != 0, libraryJob{"", "sample points by signal (-l)"}},
		{spec.PauseSignal != 0, libraryJob{"", "pause and resume by signal (-y)"}},
	} {
		if j.on {
			jobs = append(jobs, j.libraryJob)
		}
	}
	return jobs
}

// libraryUses names what the collector library is loaded for, for messages.
func libraryUses(spec Spec, sigprof bool) string {
	var what []string
	for _, j := range libraryJobs(spec, sigprof) {
		what = append(what, j.title)
	}
	return strings.Join(what, " and ")
}

// The environment variables of the collector library (docs/trace-format.md, "Instances"). er sets
// all but envFounderPID and envParentStartNS; the library reads all (envCollectorPID to know when er
// is gone, where its process may no longer open the FIFO).
// TestContractEnv compares them with the names preload/c reads.
const (
	envExpDir         = "ER_EXPDIR"
	envTrace          = "ER_TRACE"
	envSyncThreshold  = "ER_SYNC_THRESHOLD_NS"
	envClockInterval  = "ER_CLOCK_INTERVAL_NS"
	envFollow         = "ER_FOLLOW"
	envCollectorPID   = "ER_COLLECTOR_PID"
	envSampleSignal   = "ER_SAMPLE_SIGNAL"
	envPauseSignal    = "ER_PAUSE_SIGNAL"
	envPaused         = "ER_PAUSED"
	envFounderPID     = "ER_FOUNDER_PID"     // the founder's pid, where not the first instance
	envParentStartNS  = "ER_PARENT_START_NS" // set by the library for the images a process execs
	envSeccompChecked = "ER_SECCOMP_CHECKED" // the seccomp filters er runs under, which its probe checked (seccomp.go)
	envSeccompProbe   = "ER_SECCOMP_PROBE"   // the library run as a program: the probe's directory
	envSeccompTable   = "ER_SECCOMP_TABLE"   // the library run as a program: "1" prints its table
)

// libraryEnvVars lists them: preloadEnv drops each from the environment the target would inherit.
var libraryEnvVars = []string{envExpDir, envTrace, envSyncThreshold, envClockInterval, envFollow, envFounderPID,
	envCollectorPID, envSampleSignal, envPauseSignal, envPaused, envParentStartNS, envSeccompChecked, envSeccompProbe, envSeccompTable}

// preloadEnv returns env with the collector library loaded and configured for spec.
func preloadEnv(env []string, lib, dir string, spec Spec, sigprof bool) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var what []string
	for _, j := range libraryJobs(spec, sigprof) {
		if j.word != "" {
			what = append(what, j.word)
		}
	}
	out := make([]string, 0, len(env)+12)
	preload := lib
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		switch {
		case k == "LD_PRELOAD":
			if v != "" {
				preload = lib + ":" + v
			}
			continue
		case slices.Contains(libraryEnvVars, k):
			continue
		}
		out = append(out, e)
	}
	thresh := "0"
	switch {
	case spec.SyncThresh == SyncCalibrate:
		thresh = strconv.FormatUint(^uint64(0), 10)
	case spec.SyncThresh > 0:
		thresh = strconv.FormatInt(spec.SyncThresh.Nanoseconds(), 10)
	}
	out = append(out, "LD_PRELOAD="+preload, envExpDir+"="+abs, envTrace+"="+strings.Join(what, ","),
		envSyncThreshold+"="+thresh, envClockInterval+"="+strconv.FormatInt(spec.Interval.Nanoseconds(), 10),
		envCollectorPID+"="+strconv.Itoa(os.Getpid()))
	// Without perf events (the SIGPROF clock) er does not see the descendants, and their data would be
	// discarded: they are not followed, and run as without er, as with -F off.
	follow := "1"
	if spec.Follow == "off" || sigprof {
		follow = "0"
	}
	out = append(out, envFollow+"="+follow)
	if spec.JavaOn() {
		out = javaToolOptions(out, lib)
	}
	if spec.SampleSignal != 0 {
		out = append(out, envSampleSignal+"="+strconv.Itoa(int(spec.SampleSignal)))
	}
	if spec.PauseSignal != 0 {
		out = append(out, envPauseSignal+"="+strconv.Itoa(int(spec.PauseSignal)))
		if spec.StartPaused {
			out = append(out, envPaused+"=1")
		}
	}
	return out, nil
}

// ClockSourceEnv names the environment variable that forces the clock-profiling source: "perf"
// (fail when perf events are denied) or "sigprof" (SIGPROF timers inside the target).
const ClockSourceEnv = "ER_CLOCK_SOURCE"
