package perfevent

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/perfabi"
)

// requireClock skips the test when the task clock cannot be sampled here.
func requireClock(t *testing.T) {
	t.Helper()
	if c := Probe(); !c.ClockProfiling {
		t.Skipf("perf events unavailable: %s", c.ClockError)
	}
}

// checkAccounting asserts that the samples account for the process's CPU time:
// the task clock counts exactly the time on CPU, so sum(Period) must be within
// a few percent of it (each thread drops its last partial period).
func checkAccounting(t *testing.T, p *profile, period uint64) {
	t.Helper()
	var sum uint64
	for _, s := range p.samples {
		if s.Period != period {
			t.Fatalf("sample period %d, want %d", s.Period, period)
		}
		sum += s.Period
	}
	// A sampling timer that fires late (a vCPU the hypervisor held, without reporting it as steal)
	// skips the periods it missed: the sample that comes has the one period. Where the samples carry
	// their thread's count (ReadCount), the count since the thread's previous sample on that CPU's
	// event says how many periods the timer skipped; those are added to what was sampled, counted
	// by the kernel, not guessed.
	var skipped uint64
	type key struct {
		tid uint32
		id  uint64
	}
	last := map[key]uint64{}
	for _, s := range p.samples {
		if s.Count == 0 {
			continue
		}
		k := key{s.Tid, s.ID}
		if d := s.Count - last[k]; s.Count > last[k] && d >= 2*period {
			skipped += (d/period - 1) * period
		}
		last[k] = s.Count
	}
	sum += skipped
	ratio := float64(sum) / float64(p.cpuNS)
	steal := float64(p.steal) / float64(p.cpuNS) // what the counts may have beyond the CPU time (stealNS)
	t.Logf("%d samples, %.1f ms sampled (%.1f ms of it periods a late timer skipped), %.1f ms CPU time (rusage): ratio %.4f; the CPUs' steal %.1f ms",
		len(p.samples), float64(sum)/1e6, float64(skipped)/1e6, float64(p.cpuNS)/1e6, ratio, float64(p.steal)/1e6)
	if ratio < 0.97 || ratio > 1.03+steal {
		t.Errorf("samples account for %.1f%% of the CPU time; want 97-%.1f%% (103%% and the steal)", 100*ratio, 100*(1.03+steal))
	}
	// The count is what was sampled plus what was not yet sampled when each
	// thread exited: the events are per CPU and inherited, so every thread
	// holds one child event per CPU, and each keeps less than one period
	// unsampled. A thread that migrated leaves up to one period per CPU.
	threads := uint64(max(len(p.exits), 1))
	cpus, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	bound := threads * uint64(len(cpus))
	t.Logf("count %.1f ms over %d threads on %d CPUs: %.1f ms not sampled", float64(p.count)/1e6, threads, len(cpus), float64(p.count-min(p.count, sum))/1e6)
	if p.count < sum || p.count-sum >= bound*period+p.steal {
		t.Errorf("count %d ns, samples %d ns: want the count to exceed the samples by less than %d periods (%d threads × %d CPUs) and the steal, %d ns", p.count, sum, bound, threads, len(cpus), p.steal)
	}
	if c := float64(p.count) / float64(p.cpuNS); c < 0.98 || c > 1.02+steal {
		t.Errorf("count is %.1f%% of the CPU time (rusage); want 98-%.1f%% (102%% and the steal)", 100*c, 100*(1.02+steal))
	}
}

func TestTaskClockAccounting(t *testing.T) {
	requireClock(t)
	spin := spinBinary(t)
	const period = 1000000
	o := TaskClock(period)
	o.ReadCount = CountInSamples()
	p := runProfiled(t, o, spin, "1", "300")
	checkAccounting(t, p, period)
	cpus, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	kernelMode := 0
	for i, s := range p.samples {
		if s.Pid != uint32(p.pid) {
			t.Fatalf("sample %d: pid %d, want %d", i, s.Pid, p.pid)
		}
		if s.Time < p.start || s.Time > p.end {
			t.Fatalf("sample %d: time %d outside the run [%d, %d]", i, s.Time, p.start, p.end)
		}
		if !slices.Contains(cpus, int(s.CPU)) || len(s.Callchain) == 0 || s.Callchain[0] < perfabi.ContextMax {
			t.Fatalf("sample %d: cpu %d, callchain %#x", i, s.CPU, s.Callchain)
		}
		// Kernel call chains were not asked for: only user frames, even in kernel mode.
		if kernel, user := perfabi.SplitCallchain(s.Callchain); len(kernel) != 0 || len(user) == 0 {
			t.Fatalf("sample %d: callchain %#x", i, s.Callchain)
		}
		if s.Kernel() {
			kernelMode++
		}
	}
	t.Logf("%d of %d samples in kernel mode", kernelMode, len(p.samples))
}

func TestThreadsForkRecords(t *testing.T) {
	requireClock(t)
	spin := spinBinary(t)
	const period = 1000000
	o := TaskClock(period)
	o.ReadCount = CountInSamples()
	p := runProfiled(t, o, spin, "2", "150", "fork")

	pid := uint32(p.pid)
	var threads []uint32
	var child uint32
	for _, f := range p.forks {
		switch {
		case f.Pid == pid && f.Ppid == pid && f.Tid != pid:
			threads = append(threads, f.Tid)
		case f.Ppid == pid && f.Pid != pid && f.Pid == f.Tid:
			child = f.Pid
		}
	}
	if len(threads) != 2 || child == 0 {
		t.Fatalf("fork records %+v: want 2 threads and 1 child process of %d", p.forks, pid)
	}

	perTid := map[uint32]int{}
	for _, s := range p.samples {
		perTid[s.Tid]++
		if s.Tid == child && s.Pid != child {
			t.Errorf("sample of tid %d has pid %d", s.Tid, s.Pid)
		}
	}
	for _, tid := range append(threads, child) {
		// 150 ms at 1 ms: expect about 150 samples each (a little more for
		// the process, which also pays for fork, exec and exit).
		if perTid[tid] < 120 || perTid[tid] > 200 {
			t.Errorf("tid %d: %d samples, want about 150 (all: %v)", tid, perTid[tid], perTid)
		}
	}

	names := map[string]uint32{}
	for _, c := range p.comms {
		names[c.Comm] = c.Tid
	}
	for _, n := range []string{"spin-0", "spin-1", "spin-child"} {
		if _, ok := names[n]; !ok {
			t.Errorf("no comm record %q (got %v)", n, names)
		}
	}
	if names["spin-child"] != child {
		t.Errorf("comm spin-child for tid %d, want %d", names["spin-child"], child)
	}

	exited := map[uint32]bool{}
	for _, e := range p.exits {
		exited[e.Tid] = true
	}
	for _, tid := range append(threads, child, pid) {
		if !exited[tid] {
			t.Errorf("no exit record for tid %d (exits %+v)", tid, p.exits)
		}
	}

	libc := false
	for _, m := range p.mmaps {
		if strings.Contains(filepath.Base(m.Filename), "libc.so") && m.Executable && m.Pid == pid && m.Len > 0 {
			libc = true
			if m.Time < p.start || m.Time > p.end {
				t.Errorf("libc mmap time %d outside the run", m.Time)
			}
		}
	}
	if !libc {
		t.Errorf("no executable mmap2 record for libc in %+v", p.mmaps)
	}
	checkAccounting(t, p, period)
}

func TestKernelStacksRegsAndStack(t *testing.T) {
	requireClock(t)
	spin := spinBinary(t)
	caps := Probe()
	o := TaskClock(1000000)
	o.KernelCallchain = caps.KernelStacks
	o.ExcludeKernel = !caps.KernelStacks
	o.SampleRegsUser = 1<<RegAMD64BP | 1<<RegAMD64SP | 1<<RegAMD64IP
	o.SampleStackUser = 4096
	o.RingPages = 256
	p := runProfiled(t, o, spin, "1", "150", "sys")
	if len(p.samples) < 100 {
		t.Fatalf("%d samples, want about 150", len(p.samples))
	}
	ipIdx, spIdx := RegIndex(o.SampleRegsUser, RegAMD64IP), RegIndex(o.SampleRegsUser, RegAMD64SP)
	kernelSamples := 0
	for i, s := range p.samples {
		if s.RegsABI != unix.PERF_SAMPLE_REGS_ABI_64 || len(s.Regs) != 3 {
			t.Fatalf("sample %d: regs abi %d, %d regs", i, s.RegsABI, len(s.Regs))
		}
		if len(s.Stack) != 4096 || s.StackDynSize == 0 || s.StackDynSize > 4096 || s.StackDynSize%8 != 0 {
			t.Fatalf("sample %d: stack of %d bytes, dyn_size %d", i, len(s.Stack), s.StackDynSize)
		}
		kernel, user := perfabi.SplitCallchain(s.Callchain)
		if len(user) == 0 {
			t.Fatalf("sample %d: no user frames in %#x", i, s.Callchain)
		}
		if s.Kernel() {
			kernelSamples++
			if len(kernel) == 0 || kernel[0] != s.IP || s.IP < 1<<63 {
				t.Fatalf("kernel sample %d: ip %#x, callchain %#x", i, s.IP, s.Callchain)
			}
			// The user registers are those at the system call.
			if s.Regs[ipIdx] >= 1<<63 {
				t.Fatalf("kernel sample %d: user IP %#x", i, s.Regs[ipIdx])
			}
			continue
		}
		if len(kernel) != 0 || user[0] != s.IP || s.Regs[ipIdx] != s.IP {
			t.Fatalf("user sample %d: ip %#x, regs %#x, callchain %#x", i, s.IP, s.Regs, s.Callchain)
		}
		if sp := s.Regs[spIdx]; sp < 1<<40 || sp >= 1<<47 {
			t.Fatalf("user sample %d: sp %#x is not a user stack address", i, sp)
		}
	}
	// spin sys reads /dev/zero all the time: most of its time is the kernel's. (It used to spin in user
	// code with a system call every 10,000 additions: 2 kernel samples of 150, none in some runs.)
	if caps.KernelStacks && kernelSamples < len(p.samples)/4 {
		t.Errorf("%d kernel-mode samples of %d, though spin sys spends most of its time in system calls", kernelSamples, len(p.samples))
	}
	t.Logf("%d samples, %d in kernel mode", len(p.samples), kernelSamples)
}

// burn spends about d of CPU time in this thread.
func burn(d time.Duration) {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	end := ru.Utime.Nano() + ru.Stime.Nano() + d.Nanoseconds()
	for {
		for i := range 100000 {
			burnSink += i
		}
		unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		if ru.Utime.Nano()+ru.Stime.Nano() >= end {
			return
		}
	}
}

var burnSink int

func TestEnableDisableSelf(t *testing.T) {
	requireClock(t)
	// pid 0 is the calling thread (and threads it creates later): stay on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	o := TaskClock(1000000)
	o.Disabled = true
	o.ExcludeKernel = true
	o.RingPages = 16
	g, err := OpenTask(0, o)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got := len(g.CPUs()); got != Probe().NumCPU {
		t.Errorf("events on %d CPUs, want %d", got, Probe().NumCPU)
	}
	count := func() (n int) {
		t.Helper()
		if err := g.Drain(func(r perfabi.Record) {
			if s, ok := r.(*perfabi.Sample); ok {
				if s.Pid != uint32(os.Getpid()) {
					t.Errorf("sample of pid %d, want %d", s.Pid, os.Getpid())
				}
				n++
			}
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	burn(30 * time.Millisecond)
	if n := count(); n != 0 {
		t.Errorf("%d samples while disabled", n)
	}
	if err := g.Enable(); err != nil {
		t.Fatal(err)
	}
	burn(50 * time.Millisecond)
	if g.Pending() == 0 {
		t.Error("nothing pending after 50 ms of CPU while enabled")
	}
	if n := count(); n < 20 {
		t.Errorf("%d samples for 50 ms of CPU, want about 50", n)
	}
	if err := g.Disable(); err != nil {
		t.Fatal(err)
	}
	count()
	burn(30 * time.Millisecond)
	if n := count(); n != 0 {
		t.Errorf("%d samples after Disable", n)
	}
}

func TestWaitCloseAndTimeout(t *testing.T) {
	requireClock(t)
	o := TaskClock(1000000)
	o.Disabled = true
	o.ExcludeKernel = true
	o.RingPages = 1
	g, err := OpenTask(0, o)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := g.Wait(30 * time.Millisecond); err != nil {
		t.Fatalf("Wait with nothing to read: %v", err)
	}
	if d := time.Since(start); d < 25*time.Millisecond {
		t.Errorf("Wait returned after %v, before its 30 ms timeout", d)
	}
	done := make(chan error)
	go func() { done <- g.Wait(-1) }()
	time.Sleep(20 * time.Millisecond)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Wait after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt Wait")
	}
	if err := g.Drain(func(perfabi.Record) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Drain after Close: %v", err)
	}
	if err := g.Enable(); !errors.Is(err, ErrClosed) {
		t.Errorf("Enable after Close: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenTaskErrors(t *testing.T) {
	requireClock(t)
	caps := Probe()
	if !caps.HardwareCounters {
		_, err := OpenTask(0, HardwareCounter(unix.PERF_COUNT_HW_INSTRUCTIONS, 100000))
		if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrPermission) || !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENODEV) {
			t.Errorf("hardware counter without a PMU: %v", err)
		}
		if err == nil || !strings.Contains(err.Error(), "hardware counter instructions is not supported on this machine (no PMU)") {
			t.Errorf("error text: %v", err)
		}
	}
	_, err := OpenTask(1<<22+12345, TaskClock(1e6)) // beyond pid_max's default
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Errno != unix.ESRCH || !strings.Contains(err.Error(), "no process") {
		t.Errorf("no such process: %v", err)
	}
	bad := TaskClock(1e6)
	bad.RingPages = 3
	if _, err := OpenTask(0, bad); err == nil || !strings.Contains(err.Error(), "power of 2") {
		t.Errorf("RingPages 3: %v", err)
	}
}

// TestPermissionDenied runs this test binary as an unprivileged user that asks
// for kernel call stacks, which perf_event_paranoid >= 2 forbids.
func TestPermissionDenied(t *testing.T) {
	par, err := Paranoid()
	if err != nil {
		t.Skip(err)
	}
	if par < 2 {
		t.Skipf("perf_event_paranoid is %d: unprivileged kernel profiling is allowed", par)
	}
	if os.Geteuid() != 0 {
		o := TaskClock(1e6)
		o.KernelCallchain = true
		_, err := OpenTask(0, o)
		if !errors.Is(err, ErrPermission) {
			t.Fatalf("got %v, want ErrPermission", err)
		}
		return
	}
	// As root: copy the test binary where user nobody can run it.
	dir, err := os.MkdirTemp("", "perfevent-perm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "perfevent.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), childEnv+"=open-kernel")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as nobody: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"is-permission=true", "permission denied", "/proc/sys/kernel/perf_event_paranoid is ", "sysctl kernel.perf_event_paranoid=1", "CAP_PERFMON"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// elfBuildID reads the GNU build id note of an ELF file.
func elfBuildID(t *testing.T, path string) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".note.gnu.build-id")
	if sec == nil {
		t.Skipf("%s has no build id note", path)
	}
	b, err := sec.Data()
	if err != nil || len(b) < 16 {
		t.Fatalf("%s: build id note: %v", path, err)
	}
	namesz, descsz := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	off := 12 + (namesz+3)&^3
	if uint64(off)+uint64(descsz) > uint64(len(b)) {
		t.Fatalf("%s: bad build id note", path)
	}
	return b[off : off+descsz]
}

func TestBuildID(t *testing.T) {
	requireClock(t)
	spin := spinBinary(t)
	o := TaskClock(1e6)
	o.BuildID = true
	p := runProfiled(t, o, spin, "1", "5")
	n := 0
	for _, m := range p.mmaps {
		if !strings.Contains(m.Filename, "libc.so") {
			continue
		}
		n++
		if want := elfBuildID(t, m.Filename); !bytes.Equal(m.BuildID, want) || m.Ino != 0 {
			t.Errorf("%s: build id %x (ino %d), want %x", m.Filename, m.BuildID, m.Ino, want)
		}
	}
	if n == 0 {
		t.Fatalf("no libc mmap2 record in %+v", p.mmaps)
	}
}

// TestAddTask: the events of a second task write into the same rings, and its count adds up.
func TestAddTask(t *testing.T) {
	requireClock(t)
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		c := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	g, err := OpenTask(cmds[0].Process.Pid, TaskClock(1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.AddTask(cmds[1].Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := g.Enable(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	pids := map[uint32]int{}
	if err := g.Drain(func(r perfabi.Record) {
		if s, ok := r.(*perfabi.Sample); ok {
			pids[s.Pid]++
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if pids[uint32(c.Process.Pid)] == 0 {
			t.Errorf("no samples of task %d (samples by pid: %v)", c.Process.Pid, pids)
		}
	}
	if n, err := g.Count(); err != nil || n == 0 {
		t.Errorf("Count = %d, %v", n, err)
	}
	if err := g.AddTask(1 << 30); err == nil {
		t.Error("AddTask of a missing task: no error")
	}
}

// TestWaitWakesAtWakeupEvents: with WakeupEvents, Wait returns when the kernel has that many samples
// for a ring, while the task runs: a perf event's readiness is one-shot, and Go's poller, checking
// the epoll set, took it, so Wait slept to its timeout (here it would outlast the task, and return
// ErrTaskExited).
func TestWaitWakesAtWakeupEvents(t *testing.T) {
	requireClock(t)
	spin := spinBinary(t)
	cmd := exec.Command(spin, "1", "1000")
	if err := StartStopped(cmd); err != nil {
		t.Fatal(err)
	}
	o := TaskClock(10e6)
	o.WakeupEvents = 10
	g, err := OpenTask(cmd.Process.Pid, o)
	if err != nil {
		cmd.Process.Kill()
		Detach(cmd.Process.Pid)
		cmd.Wait()
		t.Fatal(err)
	}
	defer g.Close()
	if err := Detach(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	for i := range 3 {
		if err := g.Wait(time.Minute); err != nil {
			t.Fatalf("wait %d: %v, want a wakeup while the task runs", i+1, err)
		}
		n := 0
		if err := g.Drain(func(r perfabi.Record) {
			if _, ok := r.(*perfabi.Sample); ok {
				n++
			}
		}); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("wait %d returned with no sample to read", i+1)
		}
	}
}

// TestSampleCounts: with ReadCount, each sample carries its thread's count on the sample's CPU event,
// so the differences between a thread's successive samples on one event are the CPU time each sample
// stands for, and they end below the count the thread reports at its exit by less than a period.
func TestSampleCounts(t *testing.T) {
	requireClock(t)
	if !CountInSamples() {
		t.Skip("this kernel refuses PERF_SAMPLE_READ with inherit (before a 2024 change)")
	}
	spin := spinBinary(t)
	const period = 1000000
	o := TaskClock(period)
	o.InheritStat = true
	o.ReadCount = true
	p := runProfiled(t, o, spin, "2", "150", "fork")
	type key struct {
		tid uint32
		id  uint64
	}
	last := map[key]uint64{}
	perTid := map[uint32]uint64{}
	for i, s := range p.samples {
		k := key{s.Tid, s.ID}
		if s.Count < last[k] {
			t.Fatalf("sample %d of thread %d: count %d after %d: counts only grow", i, s.Tid, s.Count, last[k])
		}
		perTid[s.Tid] += s.Count - last[k]
		last[k] = s.Count
	}
	exit := map[key]uint64{}
	var counted, sampled uint64
	for _, r := range p.reads {
		exit[key{r.Tid, r.ID}] += r.Value
		counted += r.Value
	}
	for k, v := range last {
		sampled += v
		// The founder's own events are the ones opened: they report no Read at its exit.
		if k.tid == uint32(p.pid) {
			continue
		}
		e, ok := exit[k]
		if !ok {
			t.Errorf("thread %d: samples on event %d, and no count at its exit", k.tid, k.id)
			continue
		}
		if e < v || e-v >= 2*period {
			t.Errorf("thread %d, event %d: last sample's count %d, count at exit %d: want less than 2 periods more", k.tid, k.id, v, e)
		}
	}
	// Each spinning thread and the child measured 150 ms of their own CPU time; the task clock has the
	// steal besides (stealNS).
	n := 0
	for tid, ns := range perTid {
		if ns >= 140e6 {
			n++
			if ns > 160e6+p.steal {
				t.Errorf("thread %d: samples stand for %.1f ms; it spun 150 ms, and the CPUs' steal was %.1f ms", tid, float64(ns)/1e6, float64(p.steal)/1e6)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d threads with 140-160 ms in their samples, want 3 (2 threads and the child): %v", n, perTid)
	}
	t.Logf("%d samples stand for %.1f ms; the descendants' counts at exit %.1f ms; the process's CPU time %.1f ms",
		len(p.samples), float64(sampled)/1e6, float64(counted)/1e6, float64(p.cpuNS)/1e6)
}
