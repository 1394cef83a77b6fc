package collect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"er/internal/erarchive"
	"er/internal/experiment"
	"er/internal/perfevent"
	"er/internal/version"
)

// Main is `er collect` (and `collect`): it parses args, runs the target and returns er's exit code: the
// target's own exit code, 2 for a usage error, 127 when the target cannot be found, 1 for other failures.
func Main(args []string, stdout, stderr io.Writer) int {
	stderr = messageWriter{stderr} // (the target's own stderr is its own: not this writer)
	// One processor for Go's scheduler: er collect's goroutines wait on the kernel and run one at a
	// time, and with two, each of their wakeups also woke an idle processor to look for work, and
	// the runtime's monitor thread polled them (a tenth of er's CPU on a 2 s run, on 2 CPUs).
	// $GOMAXPROCS, where set, decides.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	spec, err := Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "er collect: %v\n", strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	}
	if len(spec.Counters) > 0 && os.Getenv("GOMAXPROCS") == "" {
		// Counters come in bursts (every fault of a loop touching new memory): the watcher that
		// drains the rings must run while the loop unwinds what it drained before (with one
		// processor, a burst of 4,500 page faults lost 90% to 97% of its samples in 4 runs of 4;
		// with two, none in 3 of 4).
		runtime.GOMAXPROCS(2)
	}
	spec.ClockSource = os.Getenv(ClockSourceEnv)
	switch spec.ClockSource {
	case "", "perf", "sigprof":
	default:
		fmt.Fprintf(stderr, "er collect: $%s=%q: expected perf or sigprof\n", ClockSourceEnv, spec.ClockSource)
		return 2
	}
	switch spec.SampleCounts = os.Getenv(SampleCountsEnv); spec.SampleCounts {
	case "", "on", "off":
	default:
		fmt.Fprintf(stderr, "er collect: $%s=%q: expected on or off\n", SampleCountsEnv, spec.SampleCounts)
		return 2
	}
	if v := os.Getenv(RingPagesEnv); v != "" {
		n, err := parseRingPages(v)
		if err != nil {
			fmt.Fprintf(stderr, "er collect: $%s=%q: %v\n", RingPagesEnv, v, err)
			return 2
		}
		spec.RingPages = n
	}
	if spec.Version {
		fmt.Fprintln(stdout, version.String())
		if len(spec.Target) == 0 {
			return 0
		}
	}
	if spec.ListCounters && !spec.Help {
		ListCounters(stdout)
		return 0
	}
	if spec.Help || len(spec.Target) == 0 && spec.Attach == 0 {
		Usage(stdout, perfevent.Probe())
		if !spec.Help {
			// Alone, as the manual's collect: the options, then the counters this machine offers.
			fmt.Fprintln(stdout)
			ListCounters(stdout)
		}
		return 0
	}
	warnings, err := CheckCounters(&spec)
	spec.Warnings = append(spec.Warnings, warnings...)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "er collect: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "er collect: %v\n", err)
		return 1
	}
	if spec.DryRun {
		return dryRun(spec, stdout, stderr)
	}
	dir, err := Run(spec, stderr)
	var exit *ExitError
	switch {
	case errors.As(err, &exit):
		fmt.Fprintf(stderr, "er collect: experiment %s%s written; %v\n", dir, sizes(dir), exit)
		return exit.Code
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "er collect: %v\n", strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	case err != nil && (dir == "" || !exists(dir)):
		// No experiment was made (the target could not start, the library cannot be loaded): the
		// message names no experiment.
		fmt.Fprintf(stderr, "er collect: %v\n", err)
		if strings.HasPrefix(err.Error(), "cannot run") {
			return 127
		}
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "er collect: %s: %v\n", dir, err)
		return 1
	}
	fmt.Fprintf(stderr, "er collect: experiment %s%s written\n", dir, sizes(dir))
	return 0
}

// sizes says how large the experiment dir is, and how much of it its archives take.
func sizes(dir string) string {
	return fmt.Sprintf(" (%s, of which archives %s)", erarchive.Size(erarchive.DirSize(dir)),
		erarchive.Size(erarchive.DirSize(filepath.Join(dir, experiment.ArchivesDir))))
}

func dryRun(spec Spec, stdout, stderr io.Writer) int {
	path := ""
	if spec.Attach > 0 {
		exe, err := os.Readlink(procPath(uint32(spec.Attach), 0, "exe"))
		if err != nil {
			fmt.Fprintf(stderr, "er collect: -P %d: %v\n", spec.Attach, err)
			return 1
		}
		path, spec.Target = exe, []string{fmt.Sprintf("process %d", spec.Attach)}
	} else {
		var err error
		if path, err = LookTarget(spec.Target[0]); err != nil {
			fmt.Fprintf(stderr, "er collect: %v\n", err)
			return 127
		}
	}
	dir, err := spec.experimentDir()
	if err != nil {
		fmt.Fprintf(stderr, "er collect: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Dry run: the target is not started and nothing is recorded.\n")
	fmt.Fprintf(stdout, "  target:      %s (%s)\n", strings.Join(spec.Target, " "), path)
	fmt.Fprintf(stdout, "  experiment:  %s\n", dir)
	if spec.Clock {
		fmt.Fprintf(stdout, "  clock:       every %.3f ms of CPU time per thread (-p %s)\n", float64(spec.Interval.Microseconds())/1000, spec.ClockArg)
	} else {
		fmt.Fprintf(stdout, "  clock:       off\n")
	}
	if spec.Tracing() {
		var what []string
		if spec.Heap {
			what = append(what, "heap")
		}
		if spec.Sync {
			what = append(what, "synchronization waits (-s "+spec.SyncArg+")")
		}
		if spec.IO {
			what = append(what, "I/O")
		}
		lib, err := FindLibrary()
		if err != nil {
			lib = "not found: " + err.Error()
		}
		fmt.Fprintf(stdout, "  tracing:     %s, by the collector library %s\n", strings.Join(what, ", "), lib)
	}
	switch {
	case spec.Attach > 0:
		fmt.Fprintf(stdout, "  processes:   attach to process %d and its threads; follow the processes it creates (-F %s)\n", spec.Attach, spec.Follow)
	case spec.Follow == "off":
		fmt.Fprintf(stdout, "  processes:   the target only (-F off)\n")
	default:
		fmt.Fprintf(stdout, "  processes:   the target and its descendants (-F %s), each in a subexperiment\n", spec.Follow)
	}
	if spec.SampleSignal != 0 {
		fmt.Fprintf(stdout, "  signals:     a sample point on %s (-l)\n", unix.SignalName(spec.SampleSignal))
	}
	if spec.PauseSignal != 0 {
		fmt.Fprintf(stdout, "  signals:     pause and resume on %s (-y); recording starts %s\n", unix.SignalName(spec.PauseSignal),
			map[bool]string{true: "paused", false: "at once"}[spec.StartPaused])
	}
	if spec.Archive != "off" {
		fmt.Fprintf(stdout, "  archive:     -a %s\n", spec.Archive)
	}
	if spec.Group != "" {
		fmt.Fprintf(stdout, "  group:       %s\n", spec.Group)
	}
	if spec.SamplePeriod > 0 {
		fmt.Fprintf(stdout, "  samples:     every %v\n", spec.SamplePeriod)
	} else {
		fmt.Fprintf(stdout, "  samples:     at start and end only\n")
	}
	if spec.StackBytes > 0 {
		fmt.Fprintf(stdout, "  stacks:      DWARF unwinding of %d bytes of stack copied per sample\n", spec.StackBytes)
	} else {
		fmt.Fprintf(stdout, "  stacks:      frame pointers only\n")
	}
	if spec.Duration > 0 {
		fmt.Fprintf(stdout, "  duration:    record for %v\n", spec.Duration)
	}
	if spec.SizeLimitMB > 0 {
		fmt.Fprintf(stdout, "  size limit:  %d MB\n", spec.SizeLimitMB)
	}
	for _, c := range spec.Comments {
		fmt.Fprintf(stdout, "  comment:     %s\n", c)
	}
	return 0
}

// Usage prints er collect's options and what this machine supports.
func Usage(w io.Writer, c perfevent.Capabilities) {
	fmt.Fprintf(w, `Usage: er collect [options] program [arguments...]

Runs program and records an experiment (test.1.er, or the next free number) of where its time goes.

Options:
  -p on|off|lo|hi|<interval>  clock profiling (default on): on = %.3f ms, hi = %.3f ms, lo = %.3f ms of CPU
                              time per sample and thread; <interval> in ms (10, 0.5) or us (500u), %v to %v
  --microstates on|off        with -p, where each thread's time goes off the CPU (default on): Wait CPU,
                              User Lock, Text and Data Page Fault, Other Wait, Total Thread Time, Wall;
                              and each thread's CPU time exact, from the kernel's context switches
  --openmp on|off             OpenMP parallel regions, tasks and thread states (default: on where the
                              program links an OpenMP runtime): the user and expert view modes, the
                              <OMP-*> states, OpenMP Work and Wait (docs/openmp.md)
  -j on|off                   Java: the JVM's methods, compiled code and threads, by a JVMTI agent
                              (default: on where the program is a JVM; on for a script that starts one):
                              Java call stacks, the user, expert and machine view modes (docs/java.md)
  -o name.er                  experiment name (must end in .er; it must not exist)
  -d dir                      directory to put the experiment in (default: the current directory)
  -C comment                  a comment for the experiment's notes (up to 10)
  -t seconds                  stop recording after this long (2, 0.5, 3m); the target runs on
  -L megabytes                stop recording when the experiment (with the collector library's trace
                              files) reaches this size; the target runs on
  -S seconds|on|off           periodic sample points of process usage (default every 1 s)
  -U bytes                    user stack copied per sample for DWARF unwinding (default %d, at most %d;
                              0: frame-pointer stacks only); deeper stacks go on in the live process
  -H on|off                   heap tracing: allocations, frees and leaks, with their call stacks
  -s on|off|all|<us>          synchronization wait tracing: waits of at least <us> microseconds;
                              on = a threshold calibrated in the target, all = every wait
  -i on|off                   I/O tracing: POSIX and stdio file calls, bytes, times and errors
  -h name[,interval][,name[,interval]]...|auto|off
                              counter overflow profiling: a sample every interval (on, hi, lo or a
                              number) events of each counter: hardware (cycles, insts, dcrm, ...),
                              software (page-faults, context-switches, ...), tracepoints (sched:
                              sched_wakeup), raw (r1c2, cpu/event=0x3c/); +name records data addresses
                              (load/store counters, page faults); turns -p off unless -p is given;
                              -h alone lists this machine's counters
  -F on|off|all|=regexp       follow descendant processes (default on): each fork, exec, clone,
                              posix_spawn or system() child gets a subexperiment (_f1.er, _f1_x1.er);
                              =regexp: only those whose program name or lineage matches; -F off:
                              the descendants run as without er (no LD_PRELOAD, no ER_* variables)
  -P pid                      attach to a running process and its threads (no target program); record
                              until it exits, -t passes, or Ctrl-C; it runs on unharmed
  -l signal                   a sample point whenever the target receives signal (USR1, SIGUSR2, 12)
  -y signal[,r]               pause and resume recording whenever the target receives signal; recording
                              starts paused, or at once with ",r"; also when the signal is sent to er
                              (-l, -y: a handler of the program's for the signal runs too, except for
                              the signals sent to er; er collect warns of it)
  -a usedsrc|usedldobjects|copy|ldobjects|src|on|off
                              archive load objects (and sources) in the experiment, so that it
                              reads after they change or elsewhere (default usedsrc: compact
                              archives of the load objects with events, only what er print shows
                              of them, and the source files with events; copy: whole copies of
                              those load objects and sources)
  -g name.erg                 add the experiment to an experiment group file
  -n                          dry run: show what would be collected
  -V, --version               print er's version
  --help                      print this help

`, ms(IntervalOn), ms(IntervalHi), ms(IntervalLo), MinInterval, MaxInterval, DefaultStackBytes, MaxStackBytes)
	fmt.Fprintf(w, "Environment: %s=perf|sigprof forces the clock source (by default SIGPROF timers inside the\n"+
		"target replace perf events where those are denied); %s names the collector library.\n\n", ClockSourceEnv, LibraryEnv)
	fmt.Fprintf(w, "This machine:\n")
	fmt.Fprintf(w, "  CPUs: %d; perf_event_paranoid: %d\n", c.NumCPU, c.Paranoid)
	if c.MaxSampleRate > 0 {
		fmt.Fprintf(w, "  kernel sample rate limit: %d samples/s per CPU (perf_event_max_sample_rate)\n", c.MaxSampleRate)
	}
	if c.KernelStacks {
		fmt.Fprintf(w, "  kernel call stacks: recorded\n")
	} else {
		fmt.Fprintf(w, "  kernel call stacks: not permitted (perf_event_paranoid %d > 1 and no CAP_PERFMON): user stacks only\n", c.Paranoid)
	}
	if c.KernelStacks {
		fmt.Fprintf(w, "  microstates (with -p): recorded, with the stacks at which threads leave a CPU\n")
	} else {
		fmt.Fprintf(w, "  microstates (with -p): recorded; off-CPU time goes to where each thread last ran, or to its\n"+
			"    stack read from outside for waits of 1 ms or more (the stacks at context switches need kernel samples)\n")
	}
	if c.HardwareCounters {
		fmt.Fprintf(w, "  hardware counters: available\n")
	} else {
		fmt.Fprintf(w, "  hardware counters: not available (%s)\n", c.HardwareError)
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func ms(d interface{ Microseconds() int64 }) float64 { return float64(d.Microseconds()) / 1000 }
