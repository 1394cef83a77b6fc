package analysis

import (
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
)

func TestLockFunction(t *testing.T) {
	for name, want := range map[string]int{
		"__lll_lock_wait": lockYes, "___pthread_mutex_lock": lockYes, "pthread_cond_wait@@GLIBC_2.3.2": lockYes,
		"__futex_abstimed_wait_common": lockYes, "futex_wait_queue": lockYes, "__pthread_rwlock_wrlock_full64": lockYes,
		"__new_sem_wait_slow64": lockYes, "sem_timedwait": lockYes, "___pthread_barrier_wait": lockYes,
		"runtime.futexsleep":     lockYes,
		"__pthread_clockjoin_ex": lockNo, "pthread_join": lockNo, "pthread_timedjoin_np": lockNo,
		"nanosleep": lockMaybe, "read": lockMaybe, "main": lockMaybe, "pipe_read": lockMaybe,
	} {
		if got := lockFunction(name); got != want {
			t.Errorf("lockFunction(%q) = %d, want %d", name, got, want)
		}
	}
}

// TestMicrostateMetrics: the microstate metrics follow the clock's where an experiment recorded them,
// and only then.
func TestMicrostateMetrics(t *testing.T) {
	plain := &experiment.Data{Log: experiment.Log{Settings: []experiment.Setting{{Name: experiment.SettingClockInterval, Value: "10000000"}}}}
	micro := &experiment.Data{Log: experiment.Log{Settings: []experiment.Setting{{Name: experiment.SettingClockInterval, Value: "10000000"},
		{Name: experiment.SettingMicrostates, Value: "on"}}}}
	names := func(ms []Metric) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	if got := names(MetricsFor([]*experiment.Data{plain})); !slices.Equal(got, []string{"totalcpu", "user", "system"}) {
		t.Errorf("metrics without microstates: %v", got)
	}
	want := []string{"totalcpu", "user", "system", "wait", "ulock", "text", "data", "owait", "total", "wall"}
	if got := names(MetricsFor([]*experiment.Data{plain, micro})); !slices.Equal(got, want) {
		t.Errorf("metrics with microstates: %v, want %v", got, want)
	}
	p := newProfile(MetricsFor([]*experiment.Data{micro}))
	if !p.hasMicrostates() || p.kindLen(DataClock) != len(want) {
		t.Errorf("profile with microstates: hasMicrostates %v, clock metrics %d", p.hasMicrostates(), p.kindLen(DataClock))
	}
	if q := newProfile(MetricsFor([]*experiment.Data{plain})); q.hasMicrostates() {
		t.Error("profile without microstates has them")
	}
}

// TestMicrostateStats: the off-CPU events are in no CPU line of the statistics, and in their own.
func TestMicrostateStats(t *testing.T) {
	d := &experiment.Data{Log: experiment.Log{Pid: 5, Settings: []experiment.Setting{{Name: experiment.SettingMicrostates, Value: "on"}}},
		Stacks: []experiment.Stack{nil, {0x1000}}}
	d.SetClock([]experiment.ClockSample{
		{Pid: 5, Tid: 5, Mode: experiment.ModeUser, Period: 2000, Stack: 1},
		{Pid: 5, Tid: 5, Mode: experiment.ModeWaitCPU, Period: 300, Stack: 1},
		{Pid: 5, Tid: 5, Mode: experiment.ModeSleep, Period: 5000, Stack: 1},
		{Pid: 5, Tid: 6, Mode: experiment.ModeDataFault, Period: 700, Stack: 1},
	})
	tt := clockTotalsOf([]*experiment.Data{d})
	if tt.events != 1 || tt.cpu[0] != 2000 || tt.offCPU != 3 || tt.offModes[experiment.ModeSleep] != 5000 {
		t.Errorf("totals %+v", tt)
	}
	var text []string
	for _, st := range clockStats([]*experiment.Data{d}) {
		text = append(text, st.Label+" "+st.String())
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"Clock profile events 1", "Total CPU Time (sec.) 0.000", "Off-CPU events 3",
		"Wait CPU Time (sec.) 0.000 (  3.8%)", "Data Page Fault Time (sec.) 0.000 (  8.8%)", "Total Thread Time (sec.) 0.000 (100.0%)"} {
		if !strings.Contains(all, want) {
			t.Errorf("statistics lack %q:\n%s", want, all)
		}
	}
	if x := (&ExpIndex{d: d}).ClockCPU(); !slices.Equal(x, []int64{2000, 0, 0, 0}) {
		t.Errorf("ClockCPU = %v, want the sample's CPU time alone", x)
	}
}
