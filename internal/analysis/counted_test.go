package analysis

import (
	"er/internal/sat"
	"math"
	"testing"

	"er/internal/experiment"
)

func TestCountedPeriods(t *testing.T) {
	d := &experiment.Data{Log: experiment.Log{Pid: 7, ThreadCPU: []experiment.ThreadCount{{Tid: 7, CPUNS: 1050}, {Tid: 8, CPUNS: 5000}}}}
	// Thread 7: three samples of 333 ns (999 ns) and a count of 1050 ns: weighted to add up to 1050.
	// Thread 8: one sample of 1000 ns and a count of 5000: too far apart, kept as sampled.
	// Thread 9: no count.
	for _, s := range []experiment.ClockSample{{Pid: 7, Tid: 7, Period: 333}, {Pid: 7, Tid: 8, Period: 1000},
		{Pid: 7, Tid: 7, Period: 333}, {Pid: 7, Tid: 9, Period: 400}, {Pid: 7, Tid: 7, Period: 333}} {
		d.AppendClock(s)
	}
	got := countedPeriods(d)
	want := []int64{350, 1000, 350, 400, 350}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("countedPeriods = %v, want %v", got, want)
		}
	}
	noCounts := &experiment.Data{}
	noCounts.SetClock(d.ClockSamples())
	if countedPeriods(noCounts) != nil {
		t.Error("no counts: want nil")
	}
}

// TestCountedPeriodsSaturate: periods and a thread count whose sums pass the largest int64 give
// weighted periods that are never negative and add up to it, not wrapped ones.
// TestCountedPeriodsTails: a thread's count exceeds its samples by up to a period on each CPU it ran
// on, and a late sample's more: a cc1 of 35 ms with one 10 ms sample at -p on, on 2 CPUs, stands for
// its count (make -j2 lost 25 ms of 0.287 s when it kept its one sample); on 1 CPU, or 45 ms on 2,
// the two disagree.
func TestCountedPeriodsTails(t *testing.T) {
	const ms = int64(1e6)
	for _, tc := range []struct {
		cpus  int
		count int64
		want  int64
	}{
		{2, 35 * ms, 35 * ms},
		{2, 45 * ms, 10 * ms},
		{0, 35 * ms, 35 * ms}, // an experiment that does not say: 2 CPUs
		{8, 45 * ms, 45 * ms},
	} {
		d := &experiment.Data{Log: experiment.Log{Pid: 7, CPUs: tc.cpus, ThreadCPU: []experiment.ThreadCount{{Tid: 7, CPUNS: tc.count}}}}
		d.SetClock([]experiment.ClockSample{{Pid: 7, Tid: 7, Period: 10 * ms}})
		got := ClockPeriods(d)
		if got[0] != tc.want {
			t.Errorf("%d CPUs, count %d ms, one 10 ms sample: stands for %d ms, want %d", tc.cpus, tc.count/ms, got[0]/ms, tc.want/ms)
		}
	}
}

func TestCountedPeriodsSaturate(t *testing.T) {
	const big = int64(1) << 62
	d := &experiment.Data{Log: experiment.Log{Pid: 7, ThreadCPU: []experiment.ThreadCount{{Tid: 7, CPUNS: math.MaxInt64}}}}
	for range 4 {
		d.AddClock([]experiment.ClockSample{{Pid: 7, Tid: 7, Period: big}})
	}
	got := countedPeriods(d)
	var sum int64
	for _, v := range got {
		if v < 0 {
			t.Fatalf("countedPeriods = %v: a negative period", got)
		}
		sum = sat.Add(sum, v)
	}
	if sum != math.MaxInt64 {
		t.Errorf("countedPeriods = %v, adding up to %d, want %d", got, sum, int64(math.MaxInt64))
	}
}

// TestCountedPeriodsSwapped: the main thread (7) holds the 600 ms count of worker 8, whose count is the
// main thread's 1 ms; worker 9's count is its own. The two swapped counts go back to their threads, and
// all three are weighted by them.
func TestCountedPeriodsSwapped(t *testing.T) {
	const ms = int64(1e6)
	d := &experiment.Data{Log: experiment.Log{Pid: 7, ThreadCPU: []experiment.ThreadCount{
		{Tid: 7, CPUNS: 602 * ms}, {Tid: 8, CPUNS: 1 * ms}, {Tid: 9, CPUNS: 151 * ms}}}}
	d.AddClock([]experiment.ClockSample{{Pid: 7, Tid: 7, Period: ms}})
	for range 600 {
		d.AddClock([]experiment.ClockSample{{Pid: 7, Tid: 8, Period: ms}})
	}
	for range 150 {
		d.AddClock([]experiment.ClockSample{{Pid: 7, Tid: 9, Period: ms}})
	}
	got := countedPeriods(d)
	sum := map[uint32]int64{}
	for i, s := range d.ClockSamples() {
		sum[s.Tid] += got[i]
	}
	if sum[7] != 1*ms || sum[8] != 602*ms || sum[9] != 151*ms {
		t.Errorf("weighted: main %d, worker 8 %d, worker 9 %d; want 1 ms, 602 ms and 151 ms", sum[7], sum[8], sum[9])
	}
}

// TestCountedPeriodsProcessExit: the <Process exit> sample of the founder's main thread keeps its
// period and is not in the thread's weighting: thread 7's samples still add up to its count.
func TestCountedPeriodsProcessExit(t *testing.T) {
	d := &experiment.Data{Log: experiment.Log{Pid: 7, ThreadCPU: []experiment.ThreadCount{{Tid: 7, CPUNS: 1050}}},
		Stacks: []experiment.Stack{nil, {experiment.FrameProcessExit}}}
	d.SetClock([]experiment.ClockSample{{Pid: 7, Tid: 7, Period: 500}, {Pid: 7, Tid: 7, Period: 500}, {Pid: 7, Tid: 7, Period: 4000, Stack: 1, Mode: experiment.ModeKernel}})
	got := countedPeriods(d)
	if want := []int64{525, 525, 4000}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("countedPeriods = %v, want %v", got, want)
	}
}

// TestCountedPeriodsReported: a count the kernel reported for the thread itself weights its samples
// however far they are from it (the swapped contexts carry the timer's progress between tasks: a
// child of 0.1 s had 5 samples of 10 ms beside two CPU hogs, and its 50 ms went missing); a count
// er derived keeps its samples where the two disagree.
func TestCountedPeriodsReported(t *testing.T) {
	const ms = int64(1e6)
	for _, reported := range []bool{true, false} {
		d := &experiment.Data{Log: experiment.Log{Pid: 7, CPUs: 2,
			ThreadCPU: []experiment.ThreadCount{{Tid: 7, CPUNS: 100 * ms, Reported: reported}, {Tid: 8, CPUNS: 88 * ms, Reported: reported}}}}
		for range 5 {
			d.AddClock([]experiment.ClockSample{{Pid: 7, Tid: 7, Period: 10 * ms}})
		}
		for range 9 {
			d.AddClock([]experiment.ClockSample{{Pid: 7, Tid: 8, Period: 10 * ms}})
		}
		var sum [2]int64
		for i, p := range ClockPeriods(d) {
			sum[experiment.ClockAt(d.ClockTable(), i).Tid-7] += p
		}
		want := [2]int64{100 * ms, 88 * ms}
		if !reported {
			want = [2]int64{50 * ms, 88 * ms}
		}
		if sum != want {
			t.Errorf("reported %v: threads' samples stand for %d and %d ms, want %d and %d", reported, sum[0]/ms, sum[1]/ms, want[0]/ms, want[1]/ms)
		}
	}
}
