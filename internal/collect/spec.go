// Package collect holds what `er collect` records: a pure Spec parsed from the command line, and a live Session.
package collect

import (
	"sync"

	"er/internal/counters"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// Clock-profiling intervals of the -p keywords. Like the Oracle collector's 10.007 ms they are slightly off
// round numbers, so that sampling does not alias with the kernel's periodic tick (250 Hz or 1000 Hz here)
// or with a target's own timers.
const (
	IntervalOn = 10007 * time.Microsecond  // -p on, the default
	IntervalHi = 1009 * time.Microsecond   // -p hi
	IntervalLo = 100003 * time.Microsecond // -p lo

	// DefaultStackBytes is how much of the user stack each sample copies for DWARF unwinding (-U); the
	// unwinder goes on in the live process's memory when the copy is too small and the outer frames are
	// unchanged. MaxStackBytes is the kernel's limit.
	DefaultStackBytes = 16384
	MaxStackBytes     = 65528

	// MinInterval and MaxInterval bound an explicit -p value.
	MinInterval = 100 * time.Microsecond
	MaxInterval = 1 * time.Second
)

// Spec is what to collect and how: everything `er collect` was asked for, with no live state.
type Spec struct {
	Clock        bool          // clock profiling enabled (-p)
	Microstates  bool          // with clock profiling, the off-CPU states from context switches (--microstates)
	Interval     time.Duration // clock-profiling interval
	ClockArg     string        // -p as given ("on", "hi", "0.5", ...)
	Output       string        // -o: experiment name (must end in .er); "" picks test.N.er
	Dir          string        // -d: directory for the experiment; "" is the current directory
	Comments     []string      // -C, in order
	Duration     time.Duration // -t: stop recording after this long; 0 = until exit
	SizeLimitMB  int64         // -L: stop recording at this size; 0 = no limit
	SamplePeriod time.Duration // -S: periodic sample points; 0 = off
	StackBytes   int           // -U: user stack bytes copied per sample for unwinding; 0 = frame pointers only
	Heap         bool          // -H on: heap tracing
	Sync         bool          // -s: synchronization wait tracing
	SyncArg      string        // -s as given ("on", "all", "100")
	SyncThresh   time.Duration // -s threshold; SyncCalibrate: measure it in the target (-s on)
	IO           bool          // -i on: I/O tracing
	OpenMP       string        // --openmp: "on", "off", or "" (on where the target program links an OpenMP runtime)
	Java         string        // -j: "on", "off", or "" (on where the target program is a JVM's launcher)
	DynFunc      bool          // the target program calls collector_func_load (decided by Session.run): the library records its generated functions
	ClockSource  string        // "" chooses perf events and falls back to SIGPROF; "perf" or "sigprof" forces one
	RingPages    int           // $ER_RING_PAGES: data pages of each CPU's ring; 0 sizes them by the sample rate
	SampleCounts string        // $ER_SAMPLE_COUNTS: "on", "off", or "" (where the exit counts cannot weight the samples)
	Follow       string        // -F: "on" (default), "off", or "=regexp"; "all" is read as "on"
	FollowRe     *regexp.Regexp
	Attach       int            // -P: the pid of a running process to attach to; 0 = run Target
	SampleSignal syscall.Signal // -l: a sample point whenever the target receives this signal; 0 = none
	PauseSignal  syscall.Signal // -y: pause and resume recording whenever the target receives this signal
	StartPaused  bool           // -y without ",r": recording starts paused
	Archive      string         // -a: off, ldobjects, usedldobjects, src, usedsrc (default), on (ldobjects and src), copy
	Group        string         // -g: the experiment group file (.erg) the experiment is added to
	DryRun       bool           // -n
	Version      bool           // -V
	Help         bool           // --help, -help: print the usage
	ListCounters bool           // -h alone: print the counters this machine offers
	CountersArg  string         // -h as given ("cycles,on,+dcrm", "page-faults,1"); "" or "off": none
	Counters     []counters.Counter
	Warnings     []string // said before the target ran (CheckCounters), recorded in the experiment's log too
	clockGiven   bool     // -p was given (-h turns the default clock profiling off, -p keeps it)
	Target       []string // the program and its arguments
}

// countInSamples says whether each clock sample should stand for its thread's count since its
// previous sample (see sampleCounts): where the threads' counts at their exits cannot weight their
// samples, because recording may cover only part of their lives (-y pauses, -t and -L stops) or
// attached processes' counts have no start; always with $ER_SAMPLE_COUNTS=on, never with off. It
// costs the target's context switches, which the kernel then cannot make cheap (see
// docs/collecting.md), so it is not the default.
func (s *Spec) countInSamples() bool {
	switch s.SampleCounts {
	case "on":
		return true
	case "off":
		return false
	}
	return s.PauseSignal != 0 || s.Duration > 0 || s.SizeLimitMB > 0 || s.Attach != 0
}

// ErrUsage marks a command line that cannot be parsed; the message says what is wrong.
var ErrUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}

// DefaultSpec is what `er collect prog` does with no options.
func DefaultSpec() Spec {
	return Spec{Clock: true, Microstates: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes,
		Follow: "on", Archive: "usedsrc"}
}

// Parse reads er collect's options up to the target program. Options end at the first argument that does
// not start with '-' or after "--".
func Parse(args []string) (Spec, error) {
	s := DefaultSpec()
	i := 0
	next := func(opt string) (string, error) {
		if i+1 >= len(args) {
			return "", usageErr("option %s needs a value", opt)
		}
		i++
		return args[i], nil
	}
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		var v string
		var err error
		switch a {
		case "-n":
			s.DryRun = true
			continue
		case "-V", "--version":
			s.Version = true
			continue
		case "--help", "-help", "-?":
			s.Help = true
			continue
		case "-h":
			// Oracle's collect -h alone lists the machine's counters.
			if i+1 >= len(args) {
				s.ListCounters = true
				continue
			}
			if v, err = next(a); err != nil {
				return s, err
			}
		case "--microstates", "--microstates=on", "--microstates=off":
			if v, ok := strings.CutPrefix(a, "--microstates="); ok {
				s.Microstates = v == "on"
				continue
			}
			if v, err = next(a); err != nil {
				return s, err
			}
			switch v {
			case "on", "off":
				s.Microstates = v == "on"
			default:
				return s, usageErr("--microstates %q: expected on or off", v)
			}
			continue
		case "--openmp", "--openmp=on", "--openmp=off":
			if v, ok := strings.CutPrefix(a, "--openmp="); ok {
				s.OpenMP = v
				continue
			}
			if v, err = next(a); err != nil {
				return s, err
			}
			switch v {
			case "on", "off":
				s.OpenMP = v
			default:
				return s, usageErr("--openmp %q: expected on or off", v)
			}
			continue
		case "-j":
			if v, err = next(a); err != nil {
				return s, err
			}
			switch v {
			case "on", "off":
				s.Java = v
			default:
				return s, usageErr("-j %q: expected on or off", v)
			}
			continue
		case "-p", "-o", "-d", "-C", "-t", "-L", "-S", "-U", "-H", "-s", "-i", "-F", "-P", "-l", "-y", "-a", "-g":
			if v, err = next(a); err != nil {
				return s, err
			}
		default:
			return s, usageErr("unknown option %q (run `er collect --help` for the list)", a)
		}
		switch a {
		case "-p":
			err = s.setClock(v)
			s.clockGiven = true
		case "-h":
			err = s.setCounters(v)
		case "-o":
			if !strings.HasSuffix(v, ".er") || len(v) <= 3 || strings.HasSuffix(v, "/.er") {
				err = usageErr("-o %q: an experiment name must end in .er, such as test.1.er", v)
			}
			s.Output = v
		case "-d":
			s.Dir = v
		case "-C":
			if len(s.Comments) >= 10 {
				err = usageErr("-C: at most 10 comments")
			}
			s.Comments = append(s.Comments, v)
		case "-t":
			s.Duration, err = parseSeconds("-t", v)
		case "-L":
			s.SizeLimitMB, err = parseSizeLimit(v)
		case "-S":
			err = s.setSamples(v)
		case "-U":
			s.StackBytes, err = parseStackBytes(v)
		case "-H":
			s.Heap, err = parseOnOff(a, v)
		case "-i":
			s.IO, err = parseOnOff(a, v)
		case "-s":
			err = s.setSync(v)
		case "-F":
			err = s.setFollow(v)
		case "-P":
			s.Attach, err = strconv.Atoi(v)
			if err != nil || s.Attach <= 0 {
				err = usageErr("-P %q: expected the process id of a running process", v)
			}
		case "-l":
			s.SampleSignal, err = ParseSignal("-l", v)
		case "-y":
			sig, r, _ := strings.Cut(v, ",")
			s.PauseSignal, err = ParseSignal("-y", sig)
			s.StartPaused = true
			switch r {
			case "":
			case "r":
				s.StartPaused = false
			default:
				err = usageErr("-y %q: expected a signal, optionally followed by \",r\" to start recording at once", v)
			}
		case "-a":
			switch v {
			case "off", "on", "ldobjects", "usedldobjects", "src", "usedsrc", "copy":
				s.Archive = v
			default:
				err = usageErr("-a %q: expected off, on, ldobjects, usedldobjects, src, usedsrc or copy", v)
			}
		case "-g":
			if !strings.HasSuffix(v, ".erg") || len(v) <= 4 || strings.HasSuffix(v, "/.erg") {
				err = usageErr("-g %q: an experiment group name must end in .erg, such as run.erg", v)
			}
			s.Group = v
		}
		if err != nil {
			return s, err
		}
	}
	s.Target = args[i:]
	if s.Attach > 0 && len(s.Target) > 0 {
		return s, usageErr("-P %d attaches to a running process: give no target program", s.Attach)
	}
	if s.SampleSignal != 0 && s.SampleSignal == s.PauseSignal {
		return s, usageErr("-l and -y name the same signal %v", s.SampleSignal)
	}
	if len(s.Counters) > 0 && !s.clockGiven {
		// As the manual says: -h turns the default clock profiling off; -p on keeps it.
		s.Clock, s.ClockArg = false, "off"
	}
	return s, nil
}

// CounterEnv is what -h's names resolve against: this machine's PMUs and tracefs (a test may set
// another).
var CounterEnv = sync.OnceValues(counters.System)

// setCounters reads -h's argument.
func (s *Spec) setCounters(v string) error {
	env, _ := CounterEnv() // (a PMU whose sysfs files cannot be read is left out)
	cs, err := env.Parse(v)
	if err != nil {
		return usageErr("%v", err)
	}
	s.CountersArg, s.Counters = v, cs
	return nil
}

func (s *Spec) setFollow(v string) error {
	switch {
	case v == "on" || v == "all":
		s.Follow, s.FollowRe = "on", nil
	case v == "off":
		s.Follow, s.FollowRe = "off", nil
	case strings.HasPrefix(v, "=") && len(v) > 1:
		re, err := regexp.Compile(v[1:])
		if err != nil {
			return usageErr("-F %q: bad regular expression: %v", v, err)
		}
		s.Follow, s.FollowRe = v, re
	default:
		return usageErr("-F %q: expected on, off, all, or =regexp (matched against a descendant's program name or lineage, such as _f1_x1)", v)
	}
	return nil
}

// ParseSignal reads a signal for -l or -y: a name with or without SIG (USR1, SIGUSR1, PROF) or a
// number. SIGKILL and SIGSTOP cannot be caught; SIGPROF is refused as the clock fallback uses it.
func ParseSignal(opt, v string) (syscall.Signal, error) {
	var sig syscall.Signal
	if n, err := strconv.Atoi(v); err == nil {
		sig = syscall.Signal(n)
	} else {
		name := strings.ToUpper(v)
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		sig = unix.SignalNum(name)
	}
	switch {
	case sig <= 0 || sig > 64:
		return 0, usageErr("%s %q: not a signal (expected a name such as USR1 or SIGUSR2, or a number)", opt, v)
	case sig == syscall.SIGKILL || sig == syscall.SIGSTOP:
		return 0, usageErr("%s %q: %v cannot be caught", opt, v, unix.SignalName(sig))
	case sig == syscall.SIGPROF:
		return 0, usageErr("%s %q: SIGPROF is used by the clock-profiling fallback; choose another signal, such as USR1", opt, v)
	}
	return sig, nil
}

// Following reports whether a descendant with program name prog and lineage (such as "_f1_x1")
// is recorded.
func (s Spec) Following(prog, lineage string) bool {
	switch {
	case s.Follow == "off":
		return false
	case s.FollowRe != nil:
		return s.FollowRe.MatchString(prog) || s.FollowRe.MatchString(lineage)
	}
	return true
}

func (s *Spec) setClock(v string) error {
	s.ClockArg = v
	s.Clock = true
	switch v {
	case "off":
		s.Clock = false
		return nil
	case "on":
		s.Interval = IntervalOn
		return nil
	case "hi", "high":
		s.Interval = IntervalHi
		return nil
	case "lo", "low":
		s.Interval = IntervalLo
		return nil
	}
	d, err := ParseInterval(v)
	if err != nil {
		return err
	}
	s.Interval = d
	return nil
}

// ParseInterval reads an explicit clock-profiling interval: milliseconds ("10", "0.5", "10ms") or
// microseconds with a "u" or "us" suffix ("500u", "500us"). It must lie within [MinInterval, MaxInterval].
func ParseInterval(v string) (time.Duration, error) {
	num, unit := v, time.Millisecond
	switch {
	case strings.HasSuffix(v, "ms"):
		num = strings.TrimSuffix(v, "ms")
	case strings.HasSuffix(v, "us"):
		num, unit = strings.TrimSuffix(v, "us"), time.Microsecond
	case strings.HasSuffix(v, "u"):
		num, unit = strings.TrimSuffix(v, "u"), time.Microsecond
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, usageErr("-p %q: expected on, off, lo, hi, or an interval in milliseconds (10, 0.5) or microseconds (500u)", v)
	}
	d := time.Duration(f * float64(unit))
	if d < MinInterval || d > MaxInterval {
		return 0, usageErr("-p %q: the interval must be between %v and %v", v, MinInterval, MaxInterval)
	}
	return d, nil
}

// SyncCalibrate as Spec.SyncThresh asks the collector library to measure the threshold: six times
// the mean time of an uncontended mutex lock, as the specification says.
const SyncCalibrate time.Duration = -1

// Tracing reports whether the spec needs the collector library inside the target.
func (s Spec) Tracing() bool { return s.Heap || s.Sync || s.IO }

// OpenMPOn says whether the OpenMP regions and states are recorded (--openmp, decided for the
// target by Session.run where not given).
func (s Spec) OpenMPOn() bool { return s.OpenMP == "on" }

// JavaOn says whether the JVMs' methods and compiled code are recorded (-j, decided for the target
// by Session.run where not given).
func (s Spec) JavaOn() bool { return s.Java == "on" }

func parseOnOff(opt, v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, usageErr("%s %q: expected on or off", opt, v)
}

// setSync reads -s: on (calibrated threshold), off, all (threshold 0), or a threshold in
// microseconds.
func (s *Spec) setSync(v string) error {
	s.SyncArg = v
	switch v {
	case "on", "calibrate":
		s.Sync, s.SyncThresh = true, SyncCalibrate
		return nil
	case "off":
		s.Sync = false
		return nil
	case "all":
		s.Sync, s.SyncThresh = true, 0
		return nil
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSuffix(v, "us"), "u"), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 1e9 {
		return usageErr("-s %q: expected on (calibrated threshold), off, all, or a threshold in microseconds (100)", v)
	}
	s.Sync, s.SyncThresh = true, time.Duration(f*float64(time.Microsecond))
	return nil
}

func (s *Spec) setSamples(v string) error {
	switch v {
	case "off":
		s.SamplePeriod = 0
		return nil
	case "on":
		s.SamplePeriod = time.Second
		return nil
	}
	d, err := parseSeconds("-S", v)
	if err != nil {
		return err
	}
	s.SamplePeriod = d
	return nil
}

// parseSeconds reads a duration in seconds ("2", "0.5", "2s") or minutes ("3m").
func parseSeconds(opt, v string) (time.Duration, error) {
	num, unit := v, time.Second
	switch {
	case strings.HasSuffix(v, "s"):
		num = strings.TrimSuffix(v, "s")
	case strings.HasSuffix(v, "m"):
		num, unit = strings.TrimSuffix(v, "m"), time.Minute
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, usageErr("%s %q: expected a positive number of seconds (2, 0.5, 2s) or minutes (3m)", opt, v)
	}
	return time.Duration(f * float64(unit)), nil
}

// parseStackBytes reads -U: bytes of user stack to copy per sample, 0 for frame-pointer stacks only.
// The kernel wants a multiple of 8.
func parseStackBytes(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > MaxStackBytes {
		return 0, usageErr("-U %q: expected the bytes of stack to copy per sample, 0 (frame pointers only) to %d", v, MaxStackBytes)
	}
	return n &^ 7, nil
}

func parseSizeLimit(v string) (int64, error) {
	switch v {
	case "unlimited", "none", "0":
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, usageErr("-L %q: expected a size in megabytes, or unlimited", v)
	}
	return n, nil
}

// Settings lists the spec as log.xml records it.
func (s Spec) Settings() []experiment.Setting {
	var out []experiment.Setting
	if s.Clock {
		out = append(out,
			experiment.Setting{Name: experiment.SettingClockProfiling, Value: s.ClockArg},
			experiment.Setting{Name: experiment.SettingClockInterval, Value: strconv.FormatInt(s.Interval.Nanoseconds(), 10)})
	} else {
		out = append(out, experiment.Setting{Name: experiment.SettingClockProfiling, Value: "off"})
	}
	if s.SamplePeriod > 0 {
		out = append(out, experiment.Setting{Name: "sample_period_ns", Value: strconv.FormatInt(s.SamplePeriod.Nanoseconds(), 10)})
	} else {
		out = append(out, experiment.Setting{Name: "sample_period_ns", Value: "0"})
	}
	out = append(out, experiment.Setting{Name: "stack_copy_bytes", Value: strconv.Itoa(s.StackBytes)})
	onOff := map[bool]string{true: "on", false: "off"}
	out = append(out, experiment.Setting{Name: experiment.SettingHeapTracing, Value: onOff[s.Heap]},
		experiment.Setting{Name: experiment.SettingIOTracing, Value: onOff[s.IO]})
	switch {
	case !s.Sync:
		out = append(out, experiment.Setting{Name: experiment.SettingSyncTracing, Value: "off"})
	case s.SyncThresh == SyncCalibrate:
		out = append(out, experiment.Setting{Name: experiment.SettingSyncTracing, Value: "on (calibrated threshold)"})
	default:
		out = append(out, experiment.Setting{Name: experiment.SettingSyncTracing, Value: s.SyncArg})
	}
	if s.OpenMPOn() {
		out = append(out, experiment.Setting{Name: experiment.SettingOpenMP, Value: "on"})
	}
	if s.JavaOn() {
		out = append(out, experiment.Setting{Name: experiment.SettingJava, Value: "on"})
	}
	if len(s.Counters) > 0 {
		out = append(out, experiment.Setting{Name: experiment.SettingCounters, Value: s.CountersArg})
	}
	if s.Duration > 0 {
		out = append(out, experiment.Setting{Name: "duration_limit_ns", Value: strconv.FormatInt(s.Duration.Nanoseconds(), 10)})
	}
	if s.SizeLimitMB > 0 {
		out = append(out, experiment.Setting{Name: "size_limit_mb", Value: strconv.FormatInt(s.SizeLimitMB, 10)})
	}
	return out
}

// OptionNames lists er collect's options, for shell completion.
func OptionNames() []string {
	return []string{"-p", "-h", "-H", "-s", "-i", "-j", "-o", "-d", "-C", "-t", "-L", "-S", "-U", "-F", "-P", "-l", "-y", "-a", "-g",
		"-n", "-V", "--microstates", "--openmp", "--help", "--version"}
}
