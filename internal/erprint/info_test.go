package erprint

import (
	"testing"

	"er/internal/experiment"
)

func TestDescribeSetting(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"clock_interval_ns", "1009000", "Clock-profiling, interval = 1009 microsecs."},
		{"clock_profiling", "off", "Clock-profiling off."},
		{"clock_profiling", "hi", ""},
		{"sample_period_ns", "0", "Periodic sampling off."},
		{"sample_period_ns", "500000000", "Periodic sampling, 0.5 secs."},
		{"duration_limit_ns", "30000000000", "Data collection duration limit, 30 secs."},
		{"duration_limit_ns", "0", ""},
		{"size_limit_mb", "100", "Experiment size limit, 100 MB."},
		{"follow", "on", "follow = on"},
		{"clock_interval_ns", "fast", "clock_interval_ns = fast"},
	}
	for _, c := range cases {
		if got := describeSetting(experiment.Setting{Name: experiment.SettingKey(c.name), Value: c.value}); got != c.want {
			t.Errorf("%s=%s: %q, want %q", c.name, c.value, got, c.want)
		}
	}
	if seconds(1335931000) != "1.335931000" || seconds(-5) != "-0.000000005" || secondsMS(1500000) != "0.002" {
		t.Error("seconds")
	}
	if quoteCommand([]string{"./a", "b c"}) != "'./a' 'b c'" {
		t.Error("quoteCommand")
	}
}

func TestStats(t *testing.T) {
	st := statsOf(demo1())
	if st.threads != 2 || st.processes != 1 {
		t.Errorf("stats %+v", st)
	}
	if st.lost != 1 || st.warnings != 1 || st.procUser != 1270000000 || st.maxRSS != 6<<20 || st.involcs != 52 {
		t.Errorf("stats %+v", st)
	}
	d := demo2()
	if got := duration(d); got != 22*period {
		t.Errorf("duration of an unfinished experiment: %d", got)
	}
	var all stats
	all.add(st)
	all.add(statsOf(d))
	if all.processes != 2 || all.duration != st.duration {
		t.Errorf("sum %+v", all)
	}
}

func TestPidOf(t *testing.T) {
	if got := pidOf(experiment.Event{Pid: 42}); got != ", pid 42" {
		t.Errorf("pidOf(42) = %q", got)
	}
	if got := pidOf(experiment.Event{}); got != "" {
		t.Errorf("pidOf(0) = %q, want nothing for an event of the whole collection", got)
	}
}

func TestDescribeTracingSettings(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"heap_tracing", "on", "Heap tracing."},
		{"heap_tracing", "off", ""},
		{"io_tracing", "on", "IO tracing."},
		{"sync_tracing", "off", ""},
		{"sync_tracing", "on (calibrated threshold)", "Synchronization tracing, calibrated threshold."},
		{"sync_tracing", "all", "Synchronization tracing, threshold = 0 microsecs."},
		{"sync_tracing", "100", "Synchronization tracing, threshold = 100 microsecs."},
		{"collector.sync_threshold_ns", "1650", "Synchronization wait threshold = 1.65 microsecs."},
	} {
		if got := describeSetting(experiment.Setting{Name: experiment.SettingKey(c.name), Value: c.value}); got != c.want {
			t.Errorf("%s=%s: %q, want %q", c.name, c.value, got, c.want)
		}
	}
}

// TestStatsPseudoSamples: a clock sample of a process's exit is no thread's (clockstats_test.go
// has the CPU lines).
func TestStatsPseudoSamples(t *testing.T) {
	d := &experiment.Data{Log: experiment.Log{Pid: 5, CountedCPUNS: 3000},
		Stacks: []experiment.Stack{nil, {0x1000}, {experiment.FrameProcessExit}, {experiment.FrameUnsampled}}}
	d.SetClock([]experiment.ClockSample{
		{Pid: 5, Tid: 5, Mode: experiment.ModeUser, Period: 2000, Stack: 1},
		{Pid: 5, Tid: 6, Mode: experiment.ModeUnknown, Period: 1000, Stack: 3},
		{Pid: 7, Tid: 7, Mode: experiment.ModeKernel, Period: 400, Stack: 2},
	})
	if st := statsOf(d); st.threads != 2 || st.processes != 1 {
		t.Errorf("stats %+v: want 2 threads of 1 process", st)
	}
}
