package main

import (
	"strconv"
	"testing"

	"er/internal/experiment"
	"er/internal/perfevent"
)

// TestSampleCounts: without microstates (which weigh the samples by the context switches, see
// TestMicrostatesThreads), where the threads' counts at exit cannot weight their samples (-y, -t, -L, -P),
// each clock sample carries its thread's count and stands for the CPU time counted since the thread's
// previous sample: exact whatever the sampling timer's drift, so each thread's raw samples add up to
// the CPU time it measured of itself, short only by what it ran after its last sample on each CPU.
func TestSampleCounts(t *testing.T) {
	needCollect(t)
	if !perfevent.CountInSamples() {
		t.Skip("this kernel refuses PERF_SAMPLE_READ with inherit (before a 2024 change): samples keep their periods")
	}
	// -y with ",r": recording runs from the start, and may be paused (it is not).
	exp, r := collectExp(t, nil, "-p", "hi", "--microstates", "off", "-y", "USR2,r", cprog(t, "fourthreads"), "0.15")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	d := openExp(t, exp)
	if v, _ := d.Log.Setting(experiment.SettingClockPeriods); v != "counted" {
		t.Fatalf("log.xml's %s is %q, want counted", experiment.SettingClockPeriods, v)
	}
	iv, _ := d.Log.Setting(experiment.SettingClockInterval)
	interval, err := strconv.ParseInt(iv, 10, 64)
	if err != nil {
		t.Fatalf("log.xml's %s: %v", experiment.SettingClockInterval, err)
	}
	cpus, err := perfevent.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	raw := map[uint32]int64{}
	nominal := 0
	for _, s := range d.ClockSamples() {
		raw[s.Tid] += s.Period
		if s.Period == interval {
			nominal++
		}
	}
	if nominal == d.ClockTable().Len() {
		t.Errorf("all %d samples have the timer's period %d ns: none has its thread's count", nominal, interval)
	}
	_, excl := functionTimes(t, exp)
	for _, f := range []string{"work_a", "work_b", "work_c", "work_d"} {
		tid, cpu := uint32(m["tid "+f]), m["cpu "+f]
		got := float64(raw[tid]) / 1e9
		// Short by at most a period on each CPU (the time after the thread's last sample there). The
		// task clock counts the time the hypervisor took the CPU while the thread was on it (steal),
		// which the thread's own clock does not, and er takes it out by the runtime count in each
		// sample, but for a tick's worth on each CPU (before, a CI machine's threads were 1.2% to
		// 3.9% over); 2% allowed.
		short := float64(int64(len(cpus))*interval) / 1e9
		t.Logf("%s (thread %d): samples stand for %.4f s, er print %.4f s, it measured %.4f s", f, tid, got, excl[f], cpu)
		if got < cpu-short-0.002 || got > 1.02*cpu+0.002 {
			t.Errorf("%s: samples stand for %.4f s, it measured %.4f s: want within [-%.3f, +2%% +0.002] s", f, got, cpu, short+0.002)
		}
		// What er print shows: the samples weighted by the thread's count at its exit, which er
		// brings to the process's getrusage (steal out): within 1% and 2 ms.
		if abs(excl[f]-cpu) > 0.01*cpu+0.002 {
			t.Errorf("%s: er print %.4f s, it measured %.4f s", f, excl[f], cpu)
		}
	}
}
