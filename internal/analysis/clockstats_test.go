package analysis

import (
	"strings"
	"testing"

	"er/internal/experiment"
)

// The clock lines of the statistics: the pseudo-samples are in the CPU time, not in the clock
// events; <Process exit> is no thread's and no process's sample, so it is not in the samples
// compared with the count either.
func TestClockStats(t *testing.T) {
	d := &experiment.Data{Log: experiment.Log{Pid: 5, CountedCPUNS: 3000},
		Stacks: []experiment.Stack{nil, {0x1000}, {experiment.FrameProcessExit}, {experiment.FrameUnsampled},
			{0x1000, experiment.FrameTruncated}}}
	d.SetClock([]experiment.ClockSample{
		{Pid: 5, Tid: 5, Mode: experiment.ModeUser, Period: 2000, Stack: 1},
		{Pid: 5, Tid: 6, Mode: experiment.ModeUnknown, Period: 1000, Stack: 3},
		{Pid: 5, Tid: 5, Mode: experiment.ModeKernel, Period: 400, Stack: 2},
	})
	tt := clockTotalsOf([]*experiment.Data{d})
	want := clockTotals{events: 1, cpu: [3]int64{3400, 2000, 400}, counted: 3000, sampled: 3000, unsampled: 1000, exit: 400}
	if tt != want {
		t.Errorf("totals %+v, want %+v", tt, want)
	}
	// A process's count is in the experiment of its last image; the samples of its image before an
	// exec, in another experiment, are of a process with a count. Those of process 9 are not.
	before := &experiment.Data{Log: experiment.Log{Pid: 5}, Stacks: []experiment.Stack{nil, {0x1000}, {0x1000, experiment.FrameTruncated}}}
	before.SetClock([]experiment.ClockSample{
		{Pid: 5, Tid: 5, Mode: experiment.ModeKernel, Period: 500, Stack: 2},
		{Pid: 9, Tid: 9, Mode: experiment.ModeUser, Period: 700, Stack: 1},
	})
	tt = clockTotalsOf([]*experiment.Data{before, d})
	want = clockTotals{events: 3, cpu: [3]int64{4600, 2700, 900}, counted: 3000, sampled: 3500, other: 700, unsampled: 1000,
		exit: 400, truncated: 1}
	if tt != want {
		t.Errorf("totals of two experiments %+v, want %+v", tt, want)
	}
	var lines []string
	for _, l := range clockStats([]*experiment.Data{before, d}) {
		lines = append(lines, l.Label+": "+l.String())
	}
	got := strings.Join(lines, "\n")
	wantLines := `Clock profile events: 3
Total CPU Time (sec.): 0.000 (100.0%)
User CPU Time (sec.): 0.000 ( 58.7%)
System CPU Time (sec.): 0.000 ( 19.6%)
CPU Time counted by the kernel (sec.): 0.000 (samples cover 116.7% of the processes with a count; 0.000 s of samples are of processes without one)
CPU Time of threads without samples (sec.): 0.000 ( 21.7%; <Unsampled>, counted by the kernel)
CPU Time of process exits, after the count (sec.): 0.000 (  8.7%; <Process exit>)
Complete call stacks: 2 (66.7%)
Truncated call stacks: 1 (33.3%)
Failed unwinds: 0 (0.0%)`
	if got != wantLines {
		t.Errorf("lines:\n%s\nwant:\n%s", got, wantLines)
	}
	if n, tr, f := ClockStacks(before); n != 2 || tr != 1 || f != 0 {
		t.Errorf("ClockStacks = %d, %d, %d; want 2, 1, 0", n, tr, f)
	}
}
