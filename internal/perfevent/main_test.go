package perfevent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/perfabi"
)

// childEnv, when set, makes the test binary act as a helper process (see TestMain).
const childEnv = "PERFEVENT_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
	case "open-kernel":
		// Run by TestPermissionDenied as an unprivileged user.
		o := TaskClock(1e6)
		o.KernelCallchain = true
		g, err := OpenTask(0, o)
		if err == nil {
			g.Close()
			fmt.Println("opened")
			os.Exit(0)
		}
		fmt.Printf("is-permission=%v\n%v\n", errors.Is(err, ErrPermission), err)
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "unknown %s\n", childEnv)
		os.Exit(2)
	}
	code := m.Run()
	if spinDir != "" {
		os.RemoveAll(spinDir)
	}
	os.Exit(code)
}

var (
	spinOnce sync.Once
	spinDir  string
	spinPath string
	spinErr  error
)

// spinBinary builds testdata/spin.c once, skipping the test when gcc is missing.
func spinBinary(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed: cannot build testdata/spin.c, the test target")
	}
	spinOnce.Do(func() {
		spinDir, spinErr = os.MkdirTemp("", "perfevent-test")
		if spinErr != nil {
			return
		}
		spinPath = filepath.Join(spinDir, "spin")
		out, err := exec.Command(gcc, "-O1", "-pthread", "-o", spinPath, "testdata/spin.c").CombinedOutput()
		if err != nil {
			spinErr = fmt.Errorf("gcc: %v\n%s", err, out)
		}
	})
	if spinErr != nil {
		t.Fatal(spinErr)
	}
	return spinPath
}

// profile is what profiling one run of a command gave.
type profile struct {
	pid        int
	samples    []perfabi.Sample // copies, with their own slices
	mmaps      []perfabi.Mmap
	comms      []perfabi.Comm
	forks      []perfabi.Fork
	exits      []perfabi.Exit
	reads      []perfabi.Read // with Options.InheritStat, each thread's counts at its exit
	lost       uint64
	throttled  int
	cpuNS      int64  // the process's user+system time, with its waited-for children
	count      uint64 // the group's Count after the task exited
	start, end uint64
	steal      uint64 // the steal time of all CPUs during the run, in ns (stealNS)
}

// stealNS returns the time the hypervisor has taken from this machine's CPUs, all of them together,
// in nanoseconds: /proc/stat's steal column (in USER_HZ, 100 a second on every Linux ABI), 0 where
// the kernel does not account it.
//
// The task clock counts a thread's time on a CPU by the clock, steal included, where the thread's own
// CPU time (getrusage, its CPU clock) leaves steal out; and a sampling timer that fires late, after
// the vCPU was taken away for several periods, forwards over the periods it missed with one sample.
// So on a busy VM the counts exceed the CPU time, and the samples the counts, by at most the steal of
// the CPUs the threads ran on while they ran: the steal of all CPUs during the run bounds both (at load
// averages of 15 here, 3% of the CPU time: 103.4% and 104.3% against bounds of 102%).
func stealNS(t *testing.T) uint64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	ticks, err := strconv.ParseUint(f[8], 10, 64)
	if err != nil {
		t.Fatalf("/proc/stat: steal %q: %v", f[8], err)
	}
	return ticks * 1e7
}

// monotonic returns CLOCK_MONOTONIC in nanoseconds, the clock of sample times.
func monotonic(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// runProfiled starts argv stopped, profiles it with o until it and all its
// descendants exit, and returns everything recorded.
func runProfiled(t *testing.T, o Options, argv ...string) *profile {
	t.Helper()
	return runProfiledFrom(t, false, o, argv...)
}

// runProfiledFrom is runProfiled, with the target started at an exec gate (StartGated) instead
// of stopped by ptrace when gated is set.
func runProfiledFrom(t *testing.T, gated bool, o Options, argv ...string) *profile {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	p := &profile{start: monotonic(t)}
	steal0 := stealNS(t)
	var gate *Gate
	var err error
	if gated {
		o.Disabled, o.EnableOnExec = true, true
		gate, err = StartGated(cmd)
	} else {
		err = StartStopped(cmd)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.pid = cmd.Process.Pid
	g, err := OpenTask(p.pid, o)
	if err != nil {
		if gated {
			gate.Abort()
		} else {
			cmd.Process.Kill()
			Detach(p.pid)
			cmd.Wait()
		}
		t.Fatal(err)
	}
	defer g.Close()
	if gated {
		err = gate.Release()
	} else {
		err = Detach(p.pid)
	}
	if err != nil {
		t.Fatal(err)
	}
	collect := func(r perfabi.Record) {
		switch v := r.(type) {
		case *perfabi.Sample:
			s := *v
			s.Callchain = slices.Clone(v.Callchain)
			s.Regs = slices.Clone(v.Regs)
			s.Stack = slices.Clone(v.Stack)
			p.samples = append(p.samples, s)
		case *perfabi.Mmap:
			m := *v
			m.BuildID = slices.Clone(v.BuildID)
			p.mmaps = append(p.mmaps, m)
		case *perfabi.Comm:
			p.comms = append(p.comms, *v)
		case *perfabi.Fork:
			p.forks = append(p.forks, *v)
		case *perfabi.Exit:
			p.exits = append(p.exits, *v)
		case *perfabi.Read:
			p.reads = append(p.reads, *v)
		case *perfabi.Lost:
			p.lost += v.Lost
		case *perfabi.Throttle:
			p.throttled++
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		werr := g.Wait(100 * time.Millisecond)
		if err := g.Drain(collect); err != nil {
			t.Error(err)
		}
		if werr == ErrTaskExited {
			break
		}
		if werr != nil {
			t.Fatal(werr)
		}
		if time.Now().After(deadline) {
			t.Fatal("Wait never reported that the task exited")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	if p.count, err = g.Count(); err != nil {
		t.Fatal(err)
	}
	p.end = monotonic(t)
	p.steal = stealNS(t) - steal0
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	p.cpuNS = ru.Utime.Nano() + ru.Stime.Nano()
	if p.lost != 0 || p.throttled != 0 {
		t.Logf("%d records lost, %d throttle records", p.lost, p.throttled)
	}
	return p
}
