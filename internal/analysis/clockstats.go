package analysis

import (
	"er/internal/sat"
	"fmt"
	"strconv"

	"er/internal/experiment"
)

// clockTotals are the clock data's statistics of experiments together.
type clockTotals struct {
	events    int64    // samples of threads, not the pseudo-samples <Process exit> and <Unsampled>
	cpu       [3]int64 // total, user and system CPU time: the samples weighted by their threads' counts (ClockPeriods)
	counted   int64    // CPU time the kernel counted on the clock event (0: not recorded)
	sampled   int64    // the samples' own periods, of the processes with a count
	other     int64    // the samples' own periods, of the processes without one
	unsampled int64    // counted CPU time of threads without samples (<Unsampled>)
	exit      int64    // CPU time of process exits after their clock events stopped (<Process exit>)
	truncated int64    // samples whose call stack ends in <Truncated-stack>
	failed    int64    // samples whose call stack ends in <Unwind-failed>

	micro    bool     // an experiment recorded microstates
	offCPU   int64    // off-CPU events
	offModes [7]int64 // off-CPU time by experiment.Mode
}

// clockTotalsOf sums the clock data of the experiments ds.
func clockTotalsOf(ds []*experiment.Data) clockTotals {
	var t clockTotals
	// A process's count is in the experiment of its last image (after its execs), and its samples
	// in those of all: the samples are compared with the counts by process, over all experiments.
	byPid, counted := map[uint32]int64{}, map[uint32]bool{}
	var raw int64
	for _, d := range ds {
		t.counted = sat.Add(t.counted, d.Log.CountedCPUNS)
		periods := ClockPeriods(d)
		t.micro = t.micro || microstatesRecorded(d)
		var pids []uint32
		ck := d.ClockTable()
		for i := range ck.Len() {
			cs := experiment.ClockAt(ck, i)
			c := &cs
			if !c.Mode.CPU() {
				t.offCPU++
				if int(c.Mode) < len(t.offModes) {
					t.offModes[c.Mode] = sat.Add(t.offModes[c.Mode], c.Period)
				}
				continue
			}
			exit, unsampled := d.ProcessExit(c), d.Unsampled(c)
			if !exit && !unsampled {
				t.events++
			}
			if unsampled {
				t.unsampled = sat.Add(t.unsampled, c.Period)
			}
			raw = sat.Add(raw, c.Period)
			ns := periods[i]
			t.cpu[0] = sat.Add(t.cpu[0], ns)
			switch c.Mode {
			case experiment.ModeUser:
				t.cpu[1] = sat.Add(t.cpu[1], ns)
			case experiment.ModeKernel:
				t.cpu[2] = sat.Add(t.cpu[2], ns)
			}
			if exit { // not a sample of a thread: the processes' CPU time after their clock events stopped
				t.exit = sat.Add(t.exit, c.Period)
				continue
			}
			if _, ok := byPid[c.Pid]; !ok {
				pids = append(pids, c.Pid)
			}
			byPid[c.Pid] = sat.Add(byPid[c.Pid], c.Period)
			t.truncated, t.failed = countEnd(d, c, t.truncated, t.failed)
		}
		if d.Log.CountedCPUNS > 0 {
			counted[d.Log.Pid] = true
			for _, pid := range pids {
				counted[pid] = true
			}
		}
	}
	for pid, ns := range byPid {
		if counted[pid] {
			t.sampled = sat.Add(t.sampled, ns)
		}
	}
	t.other = sat.Sub(sat.Sub(raw, t.exit), t.sampled)
	return t
}

// clockStats are the clock data's lines of er print's statistics.
func clockStats(ds []*experiment.Data) []Stat {
	t := clockTotalsOf(ds)
	lines := []Stat{{Label: "Clock profile events", Values: []int64{t.events}}}
	for m, met := range ClockMetrics {
		lines = append(lines, Stat{Label: met.Title + " (sec.)", Values: []int64{t.cpu[m], t.cpu[0]},
			Format: func(v []int64) string { return fmt.Sprintf("%s (%5.1f%%)", secondsMS(v[0]), percentOf(v[0], v[1])) }})
	}
	if t.counted > 0 {
		// The samples stand for all the CPU time the kernel counted but the part of each thread's last
		// interval that had not reached a sample when the thread stopped. Only the samples of the
		// processes with a count are compared with it.
		lines = append(lines, Stat{Label: "CPU Time counted by the kernel (sec.)", Values: []int64{t.counted, t.sampled, t.other},
			Format: func(v []int64) string {
				cover := fmt.Sprintf("samples cover %.1f%%", percentOf(v[1], v[0]))
				if v[2] != 0 {
					cover += fmt.Sprintf(" of the processes with a count; %s s of samples are of processes without one", secondsMS(v[2]))
				}
				return fmt.Sprintf("%s (%s)", secondsMS(v[0]), cover)
			}})
	}
	if t.unsampled > 0 {
		lines = append(lines, Stat{Label: "CPU Time of threads without samples (sec.)", Values: []int64{t.unsampled, t.cpu[0]},
			Format: func(v []int64) string {
				return fmt.Sprintf("%s (%5.1f%%; %s, counted by the kernel)", secondsMS(v[0]), percentOf(v[0], v[1]), UnsampledName)
			}})
	}
	if t.exit > 0 {
		lines = append(lines, Stat{Label: "CPU Time of process exits, after the count (sec.)", Values: []int64{t.exit, t.cpu[0]},
			Format: func(v []int64) string {
				return fmt.Sprintf("%s (%5.1f%%; %s)", secondsMS(v[0]), percentOf(v[0], v[1]), ProcessExitName)
			}})
	}
	if t.micro {
		// The microstates the context switches recorded, beside the CPU time: a sleep on a user lock is
		// told from other sleeps by its stack (the functions' views), so here they are together.
		total := t.cpu[0]
		for _, v := range t.offModes {
			total = sat.Add(total, v)
		}
		ofTotal := func(v []int64) string { return fmt.Sprintf("%s (%5.1f%%)", secondsMS(v[0]), percentOf(v[0], v[1])) }
		lines = append(lines, Stat{Label: "Off-CPU events", Values: []int64{t.offCPU}})
		for _, m := range []struct {
			label string
			mode  experiment.Mode
		}{
			{"Wait CPU Time (sec.)", experiment.ModeWaitCPU},
			{"Sleep Time: User Lock and Other Wait (sec.)", experiment.ModeSleep},
			{"Text Page Fault Time (sec.)", experiment.ModeTextFault},
			{"Data Page Fault Time (sec.)", experiment.ModeDataFault},
		} {
			lines = append(lines, Stat{Label: m.label, Values: []int64{t.offModes[m.mode], total}, Format: ofTotal})
		}
		lines = append(lines, Stat{Label: "Total Thread Time (sec.)", Values: []int64{total, total}, Format: ofTotal})
	}
	lines = append(lines, ompStats(ds)...)
	if t.events > 0 {
		ofEvents := func(v []int64) string { return fmt.Sprintf("%d (%.1f%%)", v[0], percentOf(v[0], v[1])) }
		lines = append(lines,
			Stat{Label: "Complete call stacks", Values: []int64{t.events - t.truncated - t.failed, t.events}, Format: ofEvents},
			Stat{Label: "Truncated call stacks", Values: []int64{t.truncated, t.events}, Format: ofEvents},
			Stat{Label: "Failed unwinds", Values: []int64{t.failed, t.events}, Format: ofEvents})
	}
	return lines
}

// secondsMS prints ns as seconds to the millisecond, as er print's statistics do.
func secondsMS(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64) }

// percentOf is v as a percentage of base; 0 when base is.
func percentOf(v, base int64) float64 {
	if base == 0 {
		return 0
	}
	return 100 * float64(v) / float64(base)
}

// ClockStacks counts the clock samples of threads in d (not the pseudo-samples), and those whose
// call stack is truncated or failed to unwind.
func ClockStacks(d *experiment.Data) (samples, truncated, failed int64) {
	ck := d.ClockTable()
	for i := range ck.Len() {
		if cs := experiment.ClockAt(ck, i); cs.Mode.CPU() && !d.ProcessExit(&cs) && !d.Unsampled(&cs) {
			c := &cs
			samples++
			truncated, failed = countEnd(d, c, truncated, failed)
		}
	}
	return samples, truncated, failed
}

// countEnd adds sample c to truncated or failed where its call stack ends in <Truncated-stack> or
// <Unwind-failed>.
func countEnd(d *experiment.Data, c *experiment.ClockSample, truncated, failed int64) (int64, int64) {
	if int(c.Stack) < len(d.Stacks) {
		if frames := d.Stacks[c.Stack]; len(frames) > 0 {
			switch frames[len(frames)-1] {
			case experiment.FrameTruncated:
				truncated++
			case experiment.FrameUnwindFailed:
				failed++
			}
		}
	}
	return truncated, failed
}
