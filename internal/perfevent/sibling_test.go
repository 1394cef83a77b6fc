package perfevent

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/perfabi"
)

func TestTracepointIDErrors(t *testing.T) {
	for _, n := range [][2]string{{"sched", "../../x"}, {"", "x"}, {"sched", ""}, {"no_such_system", "no_such_event"}} {
		if id, err := TracepointID(n[0], n[1]); err == nil {
			t.Errorf("TracepointID(%q, %q) = %d, want an error", n[0], n[1], id)
		}
	}
}

func TestTooManySiblings(t *testing.T) {
	o := TaskClock(1e6)
	o.Siblings = make([]Sibling, MaxSiblings+1)
	if g, err := OpenTask(0, o); err == nil {
		g.Close()
		t.Fatalf("OpenTask with %d siblings succeeded", len(o.Siblings))
	}
}

// TestRuntimeSibling counts sched:sched_stat_runtime in the task clock's group while 4 threads each
// burn 200 ms of their own CPU time, as their own clocks measure it (which brings their runtime up to
// date): each thread reports both counts, in Read records told apart by their ids, the runtime one
// 190 to 202 ms, and the sibling's total is within 1% of the process's rusage.
func TestRuntimeSibling(t *testing.T) {
	requireClock(t)
	cmd, g := openRuntimeSpin(t, func(o *Options) {})
	defer g.Close()
	ids := g.SiblingIDs()
	if len(ids) != len(g.CPUs()) {
		t.Fatalf("%d sibling ids for %d CPUs", len(ids), len(g.CPUs()))
	}
	clock, runtime := map[uint32]uint64{}, map[uint32]uint64{}
	drainUntilExit(t, g, func(r perfabi.Record) {
		if rd, ok := r.(*perfabi.Read); ok {
			if _, ok := ids[rd.ID]; ok {
				runtime[rd.Tid] += rd.Value
			} else {
				clock[rd.Tid] += rd.Value
			}
		}
	})
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpuNS := uint64(ru.Utime.Nano() + ru.Stime.Nano())
	total, err := g.Count()
	if err != nil {
		t.Fatal(err)
	}
	sib, err := g.SiblingCounts()
	if err != nil || len(sib) != 1 {
		t.Fatalf("SiblingCounts: %v %v", sib, err)
	}
	t.Logf("rusage %d ns, clock total %d, runtime total %d; per thread: runtime %v, task clock %v", cpuNS, total, sib[0], runtime, clock)
	// The kernel reports one thread's counts late, under the main thread, when it tore the thread's
	// events down before it could (see collect's assignOrphanRead): 3 or 4 of the threads report. A
	// runtime count misses what the scheduler accounted from another CPU (a wakeup there): here up to
	// 1%. It can also hold another task's time: a thread that wakes one on a busy CPU has that CPU's
	// running task's runtime counted as its own (beside two CPU hogs the main thread, which only starts
	// and joins threads, counted 4.1 ms of runtime for 0.9 ms of task clock, and the total came to
	// 100.65% of getrusage). A thread's runtime count above its task clock is not its own, so the
	// collector takes the smaller of the two (collect's interpolateCounts); so does this check.
	burnt := 0
	for _, ns := range runtime {
		if ns >= 190e6 && ns <= 202e6 {
			burnt++
		}
	}
	if burnt < 3 {
		t.Errorf("%d threads reported a runtime of the 200 ms they burnt (190 to 202 ms), want at least 3", burnt)
	}
	low := int64(sib[0])
	var sumR, sumC int64
	for tid, r := range runtime {
		c := clock[tid]
		sumR, sumC = sumR+int64(r), sumC+int64(c)
		low -= max(int64(r)-int64(c), 0)
	}
	if rest, restC := int64(sib[0])-sumR, int64(total)-sumC; rest > restC {
		low -= rest - restC // the thread that reported under the main thread
	}
	if r := float64(low) / float64(cpuNS); r < 0.99 || r > 1.005 {
		t.Errorf("runtime total %d ns, %d ns with no thread above its task clock, is %.2f%% of rusage %d ns", sib[0], low, 100*r, cpuNS)
	}
}

// drainUntilExit hands every record of g to fn until the task exits (at most 60 s).
func drainUntilExit(t *testing.T, g *Group, fn func(perfabi.Record)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		werr := g.Wait(100 * time.Millisecond)
		if err := g.Drain(fn); err != nil {
			t.Error(err)
		}
		if werr == ErrTaskExited {
			return
		}
		if werr != nil || time.Now().After(deadline) {
			t.Fatalf("waiting for the task: %v", werr)
		}
	}
}

// openDetached opens o for cmd, started stopped (StartStopped), and lets it run; the caller closes the
// group.
func openDetached(t *testing.T, cmd *exec.Cmd, o Options) *Group {
	t.Helper()
	pid := cmd.Process.Pid
	g, err := OpenTask(pid, o)
	if err != nil {
		cmd.Process.Kill()
		Detach(pid)
		cmd.Wait()
		t.Fatal(err)
	}
	if err := Detach(pid); err != nil {
		g.Close()
		t.Fatal(err)
	}
	return g
}

// TestSamplingSibling: a sibling that samples the context-switch event takes the clock's sample layout
// (user registers and stack), told apart by its id; the clock's switch records say the CPU. sleep
// blocks in nanosleep: a sample with rax at -ENOSYS (a system call), and a switch out and back in.
func TestSamplingSibling(t *testing.T) {
	requireClock(t)
	cmd := exec.Command("sleep", "0.2")
	if err := StartStopped(cmd); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	o := TaskClock(1e6)
	o.SampleRegsUser, o.SampleStackUser, o.ContextSwitch = RegsAMD64All, 4096, true
	o.Siblings = []Sibling{{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CONTEXT_SWITCHES, Freq: 10000, StackUser: 1024}}
	g := openDetached(t, cmd, o)
	defer g.Close()
	ids := g.SiblingIDs()
	var switchSamples, inSyscall, outs, ins int
	cpus := map[uint32]bool{}
	for _, c := range g.CPUs() {
		cpus[uint32(c)] = true
	}
	ax := RegIndex(RegsAMD64All, RegAMD64AX)
	deadline := time.Now().Add(30 * time.Second)
	for {
		werr := g.Wait(50 * time.Millisecond)
		if err := g.Drain(func(r perfabi.Record) {
			switch r := r.(type) {
			case *perfabi.Sample:
				if _, ok := ids[r.ID]; !ok {
					return
				}
				switchSamples++
				if len(r.Stack) > 1024 {
					t.Errorf("a switch sample copied %d bytes of stack, want at most 1024", len(r.Stack))
				}
				if len(r.Regs) > ax && r.Regs[ax] == ^uint64(unix.ENOSYS)+1 {
					inSyscall++
				}
			case *perfabi.Switch:
				if r.Pid != uint32(pid) {
					return
				}
				if !cpus[r.CPU] {
					t.Errorf("switch record on CPU %d, not one of %v", r.CPU, g.CPUs())
				}
				if r.Out {
					outs++
				} else {
					ins++
				}
			}
		}); err != nil {
			t.Error(err)
		}
		if werr == ErrTaskExited {
			break
		}
		if werr != nil || time.Now().After(deadline) {
			t.Fatalf("waiting for the task: %v", werr)
		}
	}
	cmd.Wait()
	t.Logf("%d switch samples (%d in a system call), %d switches out, %d in", switchSamples, inSyscall, outs, ins)
	if switchSamples == 0 || inSyscall == 0 || outs == 0 || ins == 0 {
		t.Errorf("%d switch samples (%d in a system call), %d switches out and %d in; want each", switchSamples, inSyscall, outs, ins)
	}
}

// TestRuntimeInSamples: with ReadCount and ReadGroup, each clock sample carries the thread's counts of
// the whole group on its CPU (the clock's, then the runtime's), the Read records at the threads' exits
// each their own event's count (4 threads burning 200 ms: runtime 190 to 202 ms), and Count and
// SiblingCounts read the groups' totals (the runtime's within 5% of rusage, the clock's at least it).
func TestRuntimeInSamples(t *testing.T) {
	requireClock(t)
	if !CountInSamples() || !SiblingsInSamples() {
		t.Skip("this kernel gives no group counts in inherited samples")
	}
	cmd, g := openRuntimeSpin(t, func(o *Options) { o.ReadCount, o.ReadGroup = true, true })
	defer g.Close()
	ids := g.SiblingIDs()
	type mark struct{ clock, runtime uint64 }
	last := map[[2]uint64]mark{} // by thread and event
	runtime := map[uint32]uint64{}
	var samples, bad int
	drainUntilExit(t, g, func(r perfabi.Record) {
		switch r := r.(type) {
		case *perfabi.Sample:
			samples++
			if !r.Leader || len(r.Siblings) != 2 || r.Siblings[0] != r.Count {
				bad++
				return
			}
			k := [2]uint64{uint64(r.Tid), r.ID}
			m := last[k]
			if r.Count < m.clock || r.Siblings[1] < m.runtime {
				bad++
			}
			last[k] = mark{r.Count, r.Siblings[1]}
		case *perfabi.Read:
			if _, ok := ids[r.ID]; ok {
				runtime[r.Tid] += r.Value
			}
		}
	})
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if samples < 400 || bad > 0 {
		t.Errorf("%d samples, %d of them without the group's counts, or with counts going back", samples, bad)
	}
	var sampledRuntime uint64
	for _, m := range last {
		sampledRuntime += m.runtime
	}
	burnt := 0
	for _, ns := range runtime {
		if ns >= 190e6 && ns <= 202e6 {
			burnt++
		}
	}
	if burnt < 3 {
		t.Errorf("%d threads reported a runtime of the 200 ms they burnt (190 to 202 ms), want at least 3: %v", burnt, runtime)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpuNS := float64(ru.Utime.Nano() + ru.Stime.Nano())
	total, err := g.Count()
	if err != nil {
		t.Fatal(err)
	}
	sib, err := g.SiblingCounts()
	if err != nil || len(sib) != 1 {
		t.Fatalf("SiblingCounts: %v %v", sib, err)
	}
	t.Logf("rusage %.0f ns, clock total %d, runtime total %d, runtime at the last samples %d", cpuNS, total, sib[0], sampledRuntime)
	if r := float64(sib[0]) / cpuNS; r < 0.95 || r > 1.05 {
		t.Errorf("runtime total %d ns is %.2f%% of rusage", sib[0], 100*r)
	}
	if float64(total) < 0.99*cpuNS || float64(sampledRuntime) > float64(sib[0]) {
		t.Errorf("clock total %d, runtime at the samples %d, runtime total %d, rusage %.0f", total, sampledRuntime, sib[0], cpuNS)
	}
}

// openRuntimeSpin starts testdata/spin with 4 threads burning 200 ms each, stopped at its exec, and
// opens the task clock on it (with inherit_stat, and as set) with sched:sched_stat_runtime counted in
// its group; it skips where the trace event's id cannot be read.
func openRuntimeSpin(t *testing.T, set func(*Options)) (*exec.Cmd, *Group) {
	t.Helper()
	id, err := TracepointID("sched", "sched_stat_runtime")
	if err != nil {
		t.Skipf("no trace event id (tracefs is often root's only): %v", err)
	}
	cmd := exec.Command(spinBinary(t), "4", "200")
	cmd.Stderr = os.Stderr
	if err := StartStopped(cmd); err != nil {
		t.Fatal(err)
	}
	o := TaskClock(1e6)
	o.InheritStat = true
	o.Siblings = []Sibling{{Type: unix.PERF_TYPE_TRACEPOINT, Config: id}}
	set(&o)
	return cmd, openDetached(t, cmd, o)
}
