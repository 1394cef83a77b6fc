package collect

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args []string
		want Spec
	}{
		{[]string{"./a.out", "-x"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes, Target: []string{"./a.out", "-x"}}},
		{[]string{"-p", "hi", "-o", "x.er", "-d", "/tmp", "-C", "one", "-C", "two", "-t", "2", "-L", "5", "-S", "off", "-U", "8195", "prog"},
			Spec{Clock: true, Interval: IntervalHi, ClockArg: "hi", Output: "x.er", StackBytes: 8192, Dir: "/tmp", Comments: []string{"one", "two"},
				Duration: 2 * time.Second, SizeLimitMB: 5, Target: []string{"prog"}}},
		{[]string{"-p", "500u", "-S", "0.5", "--", "-prog"}, Spec{Clock: true, Interval: 500 * time.Microsecond, ClockArg: "500u", SamplePeriod: 500 * time.Millisecond, StackBytes: DefaultStackBytes, Target: []string{"-prog"}}},
		{[]string{"-p", "2.5", "-t", "1m", "p"}, Spec{Clock: true, Interval: 2500 * time.Microsecond, ClockArg: "2.5", SamplePeriod: time.Second, StackBytes: DefaultStackBytes, Duration: time.Minute, Target: []string{"p"}}},
		{[]string{"-p", "lo", "-n", "p"}, Spec{Clock: true, Interval: IntervalLo, ClockArg: "lo", SamplePeriod: time.Second, StackBytes: DefaultStackBytes, DryRun: true, Target: []string{"p"}}},
		{[]string{"-p", "off", "p"}, Spec{Clock: false, Interval: IntervalOn, ClockArg: "off", SamplePeriod: time.Second, StackBytes: DefaultStackBytes, Target: []string{"p"}}},
		{[]string{"-V"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes, Version: true, Target: []string{}}},
		{[]string{"-H", "on", "-s", "on", "-i", "on", "p"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes,
			Heap: true, Sync: true, SyncArg: "on", SyncThresh: SyncCalibrate, IO: true, Target: []string{"p"}}},
		{[]string{"-s", "all", "-H", "off", "p"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes,
			Sync: true, SyncArg: "all", Target: []string{"p"}}},
		{[]string{"-s", "250", "p"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes,
			Sync: true, SyncArg: "250", SyncThresh: 250 * time.Microsecond, Target: []string{"p"}}},
		{[]string{"-s", "on", "-s", "off", "p"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes,
			SyncArg: "off", SyncThresh: SyncCalibrate, Target: []string{"p"}}},
		{[]string{"--microstates", "off", "p"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes,
			Target: []string{"p"}, Microstates: false}},
		{[]string{"--microstates=off", "--microstates=on", "p"}, Spec{Clock: true, Interval: IntervalOn, ClockArg: "on", SamplePeriod: time.Second, StackBytes: DefaultStackBytes,
			Target: []string{"p"}, Microstates: true}},
	}
	for i, tt := range tests {
		// The defaults of the options not given: descendants followed, used objects and sources archived,
		// microstates recorded (but where the case says off).
		tt.want.Follow, tt.want.Archive = "on", "usedsrc"
		tt.want.Microstates = i != len(tests)-2
		got, err := Parse(tt.args)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.args, err)
			continue
		}
		if d := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Spec{})); d != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.args, d)
		}
	}
}

// TestParseCounters: -h's counters, which turn the default clock profiling off (as the manual says)
// unless -p is given too; -h alone lists the counters.
func TestParseCounters(t *testing.T) {
	s, err := Parse([]string{"-h", "page-faults,1,+minor-faults,context-switches,hi", "prog"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Clock || len(s.Counters) != 3 || s.CountersArg != "page-faults,1,+minor-faults,context-switches,hi" {
		t.Errorf("clock %v, counters %+v (%q)", s.Clock, s.Counters, s.CountersArg)
	}
	if c := s.Counters[1]; c.Name != "minor-faults" || !c.Backtrack || c.Interval != 101 {
		t.Errorf("+minor-faults: %+v", c)
	}
	if c := s.Counters[2]; c.Interval != 1 {
		t.Errorf("context-switches,hi: interval %d, want 1 (a tenth of 1, at least 1)", c.Interval)
	}
	if s, err = Parse([]string{"-h", "context-switches", "-p", "on", "prog"}); err != nil || !s.Clock || len(s.Counters) != 1 {
		t.Errorf("-h with -p on: clock %v, counters %d, %v", s.Clock, len(s.Counters), err)
	}
	if s, err = Parse([]string{"-p", "hi", "-h", "context-switches", "prog"}); err != nil || !s.Clock || s.Interval != IntervalHi {
		t.Errorf("-p hi before -h: clock %v at %v, %v", s.Clock, s.Interval, err)
	}
	if s, err = Parse([]string{"-h", "off", "prog"}); err != nil || !s.Clock || len(s.Counters) != 0 {
		t.Errorf("-h off: clock %v, counters %d, %v", s.Clock, len(s.Counters), err)
	}
	if s, err = Parse([]string{"-h"}); err != nil || !s.ListCounters {
		t.Errorf("-h alone: %+v, %v", s, err)
	}
	for _, bad := range []string{"nosuch", "page-faults,0", "+context-switches"} {
		if _, err := Parse([]string{"-h", bad, "prog"}); !errors.Is(err, ErrUsage) {
			t.Errorf("-h %s: %v, want a usage error", bad, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-p"}, {"-p", "fast", "x"}, {"-p", "0.01", "x"}, {"-p", "5000", "x"}, {"-o", "name", "x"}, {"-o", ".er", "x"},
		{"-t", "-1", "x"}, {"-U", "70000", "x"}, {"-U", "-8", "x"}, {"-t", "soon", "x"}, {"-L", "big", "x"}, {"-S", "never", "x"}, {"-Q", "x"},
		{"-H", "yes", "x"}, {"-i", "1", "x"}, {"-s", "-5", "x"}, {"-s", "fast", "x"}, {"-H"},
		{"--microstates", "maybe", "x"}, {"--microstates=yes", "x"}, {"--microstates"},
	} {
		if _, err := Parse(args); !errors.Is(err, ErrUsage) {
			t.Errorf("Parse(%q) = %v, want a usage error", args, err)
		}
	}
}

func TestSettings(t *testing.T) {
	s, err := Parse([]string{"-p", "hi", "-t", "3", "-L", "10", "x"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, st := range s.Settings() {
		got[string(st.Name)] = st.Value
	}
	want := map[string]string{"clock_profiling": "hi", "clock_interval_ns": "1009000", "sample_period_ns": "1000000000",
		"duration_limit_ns": "3000000000", "size_limit_mb": "10", "stack_copy_bytes": "16384",
		"heap_tracing": "off", "io_tracing": "off", "sync_tracing": "off"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Settings (-want +got):\n%s", d)
	}
}

func TestParseProcessOptions(t *testing.T) {
	s, err := Parse([]string{"-F", "=^cc1$", "-l", "USR2", "-y", "SIGUSR1,r", "-a", "off", "-g", "x.erg", "prog"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Follow != "=^cc1$" || !s.Following("cc1", "_f1_x1") || s.Following("cc", "_f1") ||
		s.SampleSignal != syscall.SIGUSR2 || s.PauseSignal != syscall.SIGUSR1 || s.StartPaused ||
		s.Archive != "off" || s.Group != "x.erg" {
		t.Errorf("Parse: %+v", s)
	}
	if s, _ = Parse([]string{"-y", "10", "-F", "off", "p"}); !s.StartPaused || s.PauseSignal != syscall.SIGUSR1 || s.Following("p", "_f1") {
		t.Errorf("-y 10 -F off: %+v", s)
	}
	if s, err = Parse([]string{"-P", "123", "-t", "2"}); err != nil || s.Attach != 123 || len(s.Target) != 0 {
		t.Errorf("-P 123: %+v, %v", s, err)
	}
	for _, bad := range [][]string{{"-F", "sometimes", "p"}, {"-F", "=(", "p"}, {"-P", "0"}, {"-P", "12", "prog"},
		{"-l", "KILL", "p"}, {"-y", "NOPE", "p"}, {"-y", "USR1,x", "p"}, {"-l", "USR1", "-y", "USR1", "p"},
		{"-l", "PROF", "p"}, {"-a", "some", "p"}, {"-g", "x.er", "p"}} {
		if _, err := Parse(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("Parse(%q): %v, want a usage error", bad, err)
		}
	}
}
