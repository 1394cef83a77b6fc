package collect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/archive"
	"er/internal/experiment"
	"er/internal/perfevent"
	"er/internal/version"
)

// Session is one live collection: a target started stopped, its perf events, and the experiment being written.
type Session struct {
	spec   Spec
	stderr io.Writer // er's own messages

	dir     string // the experiment directory
	w       *experiment.Writer
	cmd     *exec.Cmd
	pid     int
	events  *perfevent.Group
	startNS int64 // CLOCK_MONOTONIC at the start: sample times are relative to it

	recording  bool // samples are being written (false after -t or -L stopped recording)
	kernel     bool // kernel stacks permitted
	live       map[uint32][]experiment.Mapping
	procs      map[uint32]bool // processes seen alive, for the overview
	sampleNo   uint32
	samples    int64
	lost       int64
	throttled  int64
	usedPaths  map[string]bool     // load objects to archive
	kernelPCs  map[uint64]struct{} // kernel addresses in recorded stacks: their symbols are archived
	kernelSyms chan kernelArchive  // the kernel's symbols, read in the background while the target runs
	stacks     *stacker            // call stacks of the samples
	batch      batch               // the records of one drain, put in time order
	stackBuf   experiment.Stack
	sigprof    bool   // clock profiling by the collector library's SIGPROF timers, not perf events
	sigprofWhy string // why
	lib        string // the collector library, when the target loads it
	mapped     map[mapKey]bool
}

type mapKey struct {
	pid   uint32
	start uint64
	path  string
}

type kernelArchive struct {
	a   *experiment.Archive
	err error
}

// ExitError carries the target's exit code out of Run: er collect exits with it.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("target exited with status %d", e.Code) }

// ExperimentDir picks the experiment directory for spec: -d joined with -o, or the next free test.N.er there.
func ExperimentDir(spec Spec) (string, error) {
	dir := spec.Dir
	if dir == "" {
		dir = "."
	}
	if spec.Output != "" {
		p := spec.Output
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("experiment %s already exists: remove it (er rm %s) or choose another -o name", p, p)
		}
		return p, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("experiment directory %s: %v", dir, err)
	}
	re := regexp.MustCompile(`^test\.([0-9]+)\.er$`)
	next := 1
	for _, e := range ents {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n >= next {
				next = n + 1
			}
		}
	}
	return filepath.Join(dir, fmt.Sprintf("test.%d.er", next)), nil
}

// LookTarget resolves the target program as a shell would, with a clear error when it cannot be run.
func LookTarget(name string) (string, error) {
	path := name
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("cannot run %q: no such program in $PATH", name)
		}
		if err == nil {
			return p, nil
		}
		// Found but not usable: say why below.
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				path = filepath.Join(dir, name)
				break
			}
		}
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("cannot run %q: no such file", name)
	case err != nil:
		return "", fmt.Errorf("cannot run %q: %v", name, err)
	case st.IsDir():
		return "", fmt.Errorf("cannot run %q: it is a directory", name)
	case unix.Access(path, unix.X_OK) != nil:
		return "", fmt.Errorf("cannot run %q: %s is not executable (chmod +x it)", name, path)
	}
	return path, nil
}

func monotonicNS() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Run collects an experiment of spec.Target. It returns the experiment directory and, when the target
// ran, an *ExitError with its exit status (128+N when signal N killed it) or nil for status 0.
func Run(spec Spec, stderr io.Writer) (string, error) {
	if len(spec.Target) == 0 {
		return "", fmt.Errorf("%w: no target program given", ErrUsage)
	}
	path, err := LookTarget(spec.Target[0])
	if err != nil {
		return "", err
	}
	dir, err := ExperimentDir(spec)
	if err != nil {
		return "", err
	}
	s := &Session{spec: spec, stderr: stderr, dir: dir, live: map[uint32][]experiment.Mapping{},
		procs: map[uint32]bool{}, usedPaths: map[string]bool{}, kernelPCs: map[uint64]struct{}{}, stacks: newStacker()}
	return dir, s.run(path)
}

func (s *Session) run(path string) error {
	if s.spec.Clock {
		switch s.spec.ClockSource {
		case "sigprof":
			s.sigprof, s.sigprofWhy = true, "asked for ("+ClockSourceEnv+"=sigprof)"
		case "perf":
			if err := perfevent.ClockAvailable(); err != nil {
				return fmt.Errorf("perf events are not available on this system: %v", err)
			}
		default:
			if err := perfevent.ClockAvailable(); err != nil {
				s.sigprof, s.sigprofWhy = true, "perf events are not available: "+err.Error()
			}
		}
	}
	if s.sigprof || s.spec.Tracing() {
		lib, err := FindLibrary()
		if err == nil {
			err = checkDynamic(path, libraryUses(s.spec, s.sigprof))
		}
		if err != nil {
			return err
		}
		s.lib = lib
	}
	// Forward the signals that ask the target to stop; install before the target starts.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	if err := s.start(path); err != nil {
		return err
	}
	waitc := make(chan error, 1)
	go func() { waitc <- s.cmd.Wait() }()

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var sampleTick <-chan time.Time
	if s.spec.SamplePeriod > 0 {
		st := time.NewTicker(s.spec.SamplePeriod)
		defer st.Stop()
		sampleTick = st.C
	}
	var durationC <-chan time.Time
	if s.spec.Duration > 0 {
		dt := time.NewTimer(s.spec.Duration)
		defer dt.Stop()
		durationC = dt.C
	}
	// Wake up as soon as a ring buffer passes its watermark, not only on the tick: with stack copies a
	// ring fills in a fraction of a second.
	ready, drained, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(done)
	if s.events != nil {
		go s.watch(ready, drained, done)
	}
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-waitc:
			break loop
		case <-ready:
			s.readRecords()
			drained <- struct{}{}
		case sig := <-sigs:
			s.forward(sig.(syscall.Signal))
		case <-sampleTick:
			s.samplePoint("periodic")
		case <-durationC:
			s.stopRecording("limit", fmt.Sprintf("duration limit of %v reached; data recording stopped, the target runs on", s.spec.Duration))
		case <-tick.C:
			s.drain()
		}
	}
	return s.finish(waitErr)
}

// watch waits on the perf events and tells the main loop (ready) when a ring has data, then waits until
// it was drained, so that Wait does not return at once for the same data.
func (s *Session) watch(ready, drained, done chan struct{}) {
	for {
		err := s.events.Wait(time.Second)
		if err != nil && err != perfevent.ErrTaskExited {
			return // closed
		}
		if s.events.Pending() > 0 {
			select {
			case ready <- struct{}{}:
			case <-done:
				return
			}
			select {
			case <-drained:
			case <-done:
				return
			}
		}
		if err == perfevent.ErrTaskExited {
			return
		}
	}
}

// start launches the target stopped at its first instruction, opens the perf events on it, writes the
// experiment's first files, and lets it run.
func (s *Session) start(path string) error {
	cmd := exec.Command(path)
	cmd.Args = s.spec.Target
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if s.lib != "" {
		env, err := preloadEnv(os.Environ(), s.lib, s.dir, s.spec, s.sigprof)
		if err != nil {
			return err
		}
		cmd.Env = env
	}
	if err := perfevent.StartStopped(cmd); err != nil {
		return fmt.Errorf("cannot start %s: %v", path, err)
	}
	s.cmd, s.pid = cmd, cmd.Process.Pid
	fail := func(err error) error {
		_ = cmd.Process.Kill()
		_ = perfevent.Detach(s.pid)
		_ = cmd.Wait()
		return err
	}

	s.startNS = monotonicNS()
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o755); err != nil {
		return fail(fmt.Errorf("experiment directory: %v", err))
	}
	w, err := experiment.Create(s.dir, s.initialLog(path))
	if err != nil {
		return fail(err)
	}
	s.w = w
	if len(s.spec.Comments) > 0 {
		if err := w.Notes(strings.Join(s.spec.Comments, "\n") + "\n"); err != nil {
			return fail(err)
		}
	}
	if maps, err := readMaps(s.pid); err == nil {
		for _, m := range maps {
			s.addMapping(m)
		}
	} else {
		w.Event(experiment.Event{Kind: "warning", Pid: uint32(s.pid), Text: "cannot read the target's mappings: " + err.Error()})
	}
	if s.sigprof {
		w.UpdateLog(func(l *experiment.Log) {
			l.Settings = append(l.Settings, experiment.Setting{Name: "clock_source", Value: "sigprof"})
		})
		w.Event(experiment.Event{Kind: "warning", Text: "clock profiling by SIGPROF timers inside the target, " +
			"without kernel stacks or exact CPU accounting: " + s.sigprofWhy})
	} else if s.spec.Clock {
		w.UpdateLog(func(l *experiment.Log) {
			l.Settings = append(l.Settings, experiment.Setting{Name: "clock_source", Value: "perf"})
		})
		g, err := s.openClock()
		if err != nil {
			_ = w.Close()
			_ = os.RemoveAll(s.dir)
			return fail(err)
		}
		s.events = g
		if err := g.Enable(); err != nil {
			return fail(err)
		}
		s.recording = true
	}
	s.procs[uint32(s.pid)] = true
	w.Event(experiment.Event{Kind: "start", Pid: uint32(s.pid), Text: strings.Join(s.spec.Target, " ")})
	s.samplePoint("start")
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := perfevent.Detach(s.pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("cannot release the target: %v", err)
	}
	return nil
}

// openClock opens the clock-profiling events with kernel stacks, or with user stacks only where
// perf_event_paranoid does not permit kernel profiling.
func (s *Session) openClock() (*perfevent.Group, error) {
	o := perfevent.TaskClock(uint64(s.spec.Interval.Nanoseconds()))
	o.Callchain = true
	o.KernelCallchain = true
	if s.spec.StackBytes > 0 {
		// Registers and a copy of the user stack, for DWARF unwinding; a sample is then some kilobytes,
		// so the rings are larger.
		o.SampleRegsUser = perfevent.RegsAMD64All
		o.SampleStackUser = uint32(s.spec.StackBytes)
		o.RingPages = 1024
		// Wake the reader every 10 ms of sampled CPU time (every sample at -p on): a stack deeper than the
		// copy is completed from the live process, which works only while the process is still in the call
		// it was sampled in. More wakeups would cost the target: the kernel wakes the reader from its CPU.
		o.WakeupEvents = uint32(max(1, (10*time.Millisecond)/s.spec.Interval))
	}
	g, err := openShrinking(s.pid, &o)
	if errors.Is(err, perfevent.ErrPermission) {
		o.KernelCallchain, o.ExcludeKernel = false, true
		if g, err = openShrinking(s.pid, &o); err == nil {
			p, _ := perfevent.Paranoid()
			s.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("kernel profiling is not permitted "+
				"(/proc/sys/kernel/perf_event_paranoid is %d): user-mode samples and stacks only; "+
				"sysctl kernel.perf_event_paranoid=1 or CAP_PERFMON permits it", p)})
		}
	}
	if err != nil {
		return nil, err
	}
	s.kernel = o.KernelCallchain
	s.w.UpdateLog(func(l *experiment.Log) { l.KernelStacks = s.kernel })
	if s.kernel {
		// The kernel is mapped into every process; map.xml records it once, as process 0.
		s.w.AddMapping(experiment.Mapping{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]", UnloadTime: -1})
		// Reading /proc/kallsyms takes some 80 ms: do it while the target runs, not after it exits.
		s.kernelSyms = make(chan kernelArchive, 1)
		go func() {
			a, err := archive.Kernel()
			s.kernelSyms <- kernelArchive{a, err}
		}()
	}
	return g, nil
}

// openShrinking opens the events with smaller rings when the kernel refuses to lock as much memory as asked
// (an unprivileged user gets kernel.perf_event_mlock_kb, 516 KiB by default, for all CPUs together).
func openShrinking(pid int, o *perfevent.Options) (*perfevent.Group, error) {
	for {
		g, err := perfevent.OpenTask(pid, *o)
		if err == nil || o.RingPages <= 8 || !(errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM)) ||
			errors.Is(err, perfevent.ErrPermission) {
			return g, err
		}
		if o.RingPages == 0 {
			o.RingPages = perfevent.DefaultRingPages
		}
		o.RingPages /= 4
	}
}

func (s *Session) initialLog(path string) experiment.Log {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	host, _ := os.Hostname()
	cwd, _ := os.Getwd()
	var si unix.Sysinfo_t
	_ = unix.Sysinfo(&si)
	return experiment.Log{
		FormatVersion:    experiment.FormatVersion,
		CollectorVersion: version.Version,
		Host:             host,
		OS:               unix.ByteSliceToString(uts.Sysname[:]) + " " + unix.ByteSliceToString(uts.Release[:]),
		Arch:             unix.ByteSliceToString(uts.Machine[:]),
		CPUs:             runtime.NumCPU(),
		PageSize:         os.Getpagesize(),
		WordSize:         64,
		ClockHz:          cpuMHz() * 1_000_000,
		MemoryBytes:      int64(si.Totalram) * int64(si.Unit),
		Command:          append([]string{}, s.spec.Target...),
		Cwd:              cwd,
		Pid:              uint32(s.pid),
		StartTime:        time.Now().UnixNano(),
		StartPerfNS:      s.startNS,
		Settings:         s.spec.Settings(),
	}
}

// cpuMHz reads the first CPU's clock from /proc/cpuinfo; 0 when unknown.
func cpuMHz() int64 {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f)
		}
	}
	return 0
}

// forward passes a stop signal on to the target. A SIGINT from the terminal reaches the whole foreground
// process group, the target included, so it is forwarded only when er is not in the terminal's foreground
// group (someone sent it to er alone).
func (s *Session) forward(sig syscall.Signal) {
	if sig == syscall.SIGINT {
		if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil && fg == unix.Getpgrp() {
			return
		}
	}
	_ = s.cmd.Process.Signal(sig)
}

func (s *Session) rel(t uint64) int64 { return int64(t) - s.startNS }

// addMapping records an executable mapping and keeps the per-process live set used to copy mappings on fork.
func (s *Session) addMapping(m experiment.Mapping) {
	if s.mapped == nil {
		s.mapped = map[mapKey]bool{}
	}
	s.mapped[mapKey{m.Pid, m.Start, m.Path}] = true
	s.w.AddMapping(m)
	live := s.live[m.Pid][:0]
	for _, old := range s.live[m.Pid] {
		if old.End <= m.Start || old.Start >= m.End {
			live = append(live, old)
		}
	}
	s.live[m.Pid] = append(live, m)
	s.usedPaths[m.Path] = true
	s.stacks.addMapping(m)
}

func (s *Session) processGone(pid uint32, t int64) {
	s.w.ProcessExit(pid, t)
	delete(s.live, pid)
	s.stacks.gone(pid)
}

// drain moves every record from the ring buffers into the experiment, stops recording at the size
// limit, and flushes.
func (s *Session) drain() {
	s.readRecords()
	if s.recording && s.spec.SizeLimitMB > 0 && s.w.Size() >= s.spec.SizeLimitMB<<20 {
		s.stopRecording("limit", fmt.Sprintf("size limit of %d MB reached; data recording stopped, the target runs on", s.spec.SizeLimitMB))
	}
	if err := s.w.Flush(); err != nil {
		fmt.Fprintf(s.stderr, "er collect: writing %s: %v\n", s.dir, err)
	}
}

// readRecords moves every record from the ring buffers into the experiment.
func (s *Session) readRecords() {
	if s.events == nil {
		return
	}
	err := s.events.Drain(s.batch.add)
	for _, r := range s.batch.sorted() {
		s.handle(r)
	}
	s.batch.reset()
	if err != nil {
		s.w.Event(experiment.Event{Time: s.rel(uint64(monotonicNS())), Kind: "error", Text: "reading perf events: " + err.Error()})
	}
}

// handle records one perf record.
func (s *Session) handle(r perfevent.Record) {
	switch r := r.(type) {
	case *perfevent.Sample:
		s.sample(r)
	case *perfevent.Mmap2:
		if !r.Executable {
			return
		}
		s.addMapping(experiment.Mapping{Pid: r.Pid, Start: r.Addr, End: r.Addr + r.Len, Offset: r.Pgoff,
			Path: r.Filename, BuildID: fmt.Sprintf("%x", r.BuildID), LoadTime: s.rel(r.Time), UnloadTime: -1})
	case *perfevent.Fork:
		if r.Pid == r.Ppid { // a new thread
			return
		}
		t := s.rel(r.Time)
		s.procs[r.Pid] = true
		for _, m := range s.live[r.Ppid] {
			m.Pid, m.LoadTime, m.UnloadTime = r.Pid, t, -1
			s.addMapping(m)
		}
	case *perfevent.Comm:
		if r.Exec {
			t := s.rel(r.Time)
			s.processGone(r.Pid, t)
			// The new image's vdso is mapped by the kernel without a mapping record.
			if maps, err := readMaps(int(r.Pid)); err == nil {
				for _, m := range maps {
					if m.Path == "[vdso]" {
						m.LoadTime = t
						s.addMapping(m)
					}
				}
			}
		}
	case *perfevent.Exit:
		if r.Pid == r.Tid {
			s.processGone(r.Pid, s.rel(r.Time))
			delete(s.procs, r.Pid)
		}
	case *perfevent.Lost:
		s.lost += int64(r.Lost)
	case *perfevent.Throttle:
		if !r.Unthrottle {
			s.throttled++
		}
	}
}

func (s *Session) sample(r *perfevent.Sample) {
	if !s.recording {
		return
	}
	frames := s.stacks.stack(r, s.stackBuf[:0])
	s.stackBuf = frames
	id, err := s.w.Stack(frames)
	if err != nil {
		return
	}
	for _, pc := range frames {
		if pc >= experiment.KernelBase && pc < experiment.PseudoFrameBase {
			s.kernelPCs[pc] = struct{}{}
		}
	}
	mode := experiment.ModeUser
	if r.Kernel() {
		mode = experiment.ModeKernel
	}
	if err := s.w.Clock(experiment.ClockSample{Time: s.rel(r.Time), Pid: r.Pid, Tid: r.Tid, CPU: r.CPU, Mode: mode,
		Period: int64(r.Period), Stack: id}); err == nil {
		s.samples++
	}
}

func (s *Session) stopRecording(kind, text string) {
	if !s.recording {
		return
	}
	if s.events != nil {
		_ = s.events.Disable()
	}
	s.readRecords()
	s.recording = false
	s.w.Event(experiment.Event{Time: s.rel(uint64(monotonicNS())), Kind: kind, Text: text})
	fmt.Fprintf(s.stderr, "er collect: %s\n", text)
}

// samplePoint records the usage of every live process of the target.
func (s *Session) samplePoint(label string) {
	s.sampleNo++
	now := s.rel(uint64(monotonicNS()))
	s.w.Event(experiment.Event{Time: now, Kind: "sample", Pid: uint32(s.pid), Text: fmt.Sprintf("sample point %d: %s", s.sampleNo, label)})
	for pid := range s.procs {
		u, err := readUsage(int(pid))
		if err != nil {
			continue
		}
		s.writeOverview(now, pid, label, u)
	}
}

func (s *Session) writeOverview(t int64, pid uint32, label string, u procUsage) {
	_ = s.w.Overview(experiment.OverviewSample{Time: t, Pid: pid, Sample: s.sampleNo, UserNS: u.userNS,
		SystemNS: u.systemNS, MinFlt: u.minFlt, MajFlt: u.majFlt, VolCtxSw: u.volCS, InvolCtxSw: u.involCS,
		RSSBytes: u.rssBytes, NumThreads: u.threads, Label: label})
}

// finish drains the last records, records the exit, writes the archives and closes the experiment.
func (s *Session) finish(waitErr error) error {
	end := s.rel(uint64(monotonicNS()))
	s.drain()
	var counted int64
	if s.events != nil {
		if c, err := s.events.Count(); err == nil {
			counted = int64(c)
		}
		_ = s.events.Close()
	}
	st := s.cmd.ProcessState
	code, sig := 0, 0
	if st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = int(ws.Signal())
			code = 128 + sig
		} else {
			code = st.ExitCode()
		}
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			s.sampleNo++
			s.w.Event(experiment.Event{Time: end, Kind: "sample", Pid: uint32(s.pid), Text: fmt.Sprintf("sample point %d: end", s.sampleNo)})
			s.writeOverview(end, uint32(s.pid), "end", procUsage{
				userNS: ru.Utime.Nano(), systemNS: ru.Stime.Nano(), minFlt: ru.Minflt, majFlt: ru.Majflt,
				volCS: ru.Nvcsw, involCS: ru.Nivcsw, rssBytes: ru.Maxrss * 1024})
		}
	} else if waitErr != nil {
		s.w.Event(experiment.Event{Time: end, Kind: "error", Text: "waiting for the target: " + waitErr.Error()})
	}
	text := fmt.Sprintf("exit status %d", code)
	if sig != 0 {
		text = fmt.Sprintf("killed by signal %d (%s)", sig, unix.SignalName(syscall.Signal(sig)))
	}
	s.w.Event(experiment.Event{Time: end, Kind: "exit", Pid: uint32(s.pid), Text: text})
	if s.lost > 0 {
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: fmt.Sprintf("%d samples lost: the ring buffer overflowed", s.lost)})
	}
	if st := s.stacks; st.failed > 0 {
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: fmt.Sprintf("%d of %d call stacks could not be unwound completely (most often: %s)",
			st.failed, st.complete+st.truncated+st.failed, strings.Join(st.topReasons(3), "; "))})
	}
	if s.throttled > 0 {
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: fmt.Sprintf("the kernel throttled sampling %d times (perf_event_max_sample_rate)", s.throttled)})
	}
	s.w.UpdateLog(func(l *experiment.Log) {
		l.EndTime, l.ExitStatus, l.ExitSignal, l.Exited = end, code, sig, st != nil
		l.CountedCPUNS = counted
	})
	s.traceMappings()
	_ = s.w.Flush()
	s.writeArchives()
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("writing %s: %v", s.dir, err)
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}

// writeArchives records each load object's symbols so that names survive a rebuilt or deleted binary.
func (s *Session) writeArchives() {
	for path := range s.usedPaths {
		var a *experiment.Archive
		var err error
		switch {
		case path == "[vdso]":
			a, err = archive.VDSO()
		case strings.HasPrefix(path, "/"):
			a, err = archive.Build(path)
		default:
			continue
		}
		if err != nil {
			s.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("cannot archive %s: %v", path, err)})
			continue
		}
		if err := experiment.WriteArchive(s.dir, a); err != nil {
			s.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("cannot archive %s: %v", path, err)})
		}
	}
	if len(s.kernelPCs) > 0 && s.kernelSyms != nil {
		k := <-s.kernelSyms
		a, err := k.a, k.err
		if a != nil {
			a.Symbols = usedSymbols(a, s.kernelPCs)
			if werr := experiment.WriteArchive(s.dir, a); werr != nil && err == nil {
				err = werr
			}
		}
		if err != nil {
			s.w.Event(experiment.Event{Kind: "warning", Text: "kernel symbols: " + err.Error()})
		}
	}
}

// usedSymbols keeps the symbols of a that hold one of the addresses: the kernel has some 200,000 symbols and
// a profile touches a few hundred. Kept symbols get an explicit size, so lookups in the smaller table stay
// exact.
func usedSymbols(a *experiment.Archive, pcs map[uint64]struct{}) []experiment.Symbol {
	keep := map[uint64]experiment.Symbol{}
	for pc := range pcs {
		for _, addr := range []uint64{pc, pc - 1} { // a return address can be just past its call
			if sym, ok := archive.SymbolAt(a, addr); ok {
				if sym.Size == 0 {
					sym.Size = addr - sym.Addr + 1
					if old, ok := keep[sym.Addr]; ok && old.Size > sym.Size {
						sym.Size = old.Size
					}
				}
				keep[sym.Addr] = sym
			}
		}
	}
	out := make([]experiment.Symbol, 0, len(keep))
	for _, sym := range keep {
		out = append(out, sym)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// traceMappings adds to map.xml the load objects that the collector library saw mapped and perf
// events did not report (all of them when clock profiling was off or by SIGPROF), so that they
// are archived.
func (s *Session) traceMappings() {
	if s.lib == "" {
		return
	}
	maps, err := experiment.TraceMappings(s.dir)
	if err != nil {
		s.w.Event(experiment.Event{Kind: "warning", Text: "reading the collector library's mappings: " + err.Error()})
		return
	}
	for _, m := range maps {
		if !s.mapped[mapKey{m.Pid, m.Start, m.Path}] {
			s.addMapping(m)
		}
	}
}
