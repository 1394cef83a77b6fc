package collect

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/erarchive"
	"er/internal/experiment"
	"er/internal/expfiles"
	"er/internal/perfabi"
	"er/internal/perfevent"
	"er/internal/safedir"
	"er/internal/version"
)

// Session is one live collection: a target started stopped (or a running process attached to), its
// perf events, and the experiments being written: the founder's and one per followed descendant.
type Session struct {
	spec   Spec
	stderr io.Writer // er's own messages

	dir     string             // the founder experiment's directory
	w       *experiment.Writer // the founder experiment: events about the whole collection go there
	cmd     *exec.Cmd          // nil when attached (-P)
	pid     int
	events  *perfevent.Group
	startNS int64 // CLOCK_MONOTONIC at the start: sample times are relative to it
	baseLog experiment.Log

	recording  bool         // samples are being written (false after -t or -L stopped recording)
	kernel     bool         // kernel stacks permitted
	live       liveMappings // each process's mappings, for the copy its fork makes
	founder    *proc
	cur        map[uint32]*proc // the running image of each process
	images     []*proc          // every image seen, in order of appearance
	global     proc             // pause and resume by a signal sent to er itself (no collector library)
	samples    int64
	dropped    int64 // samples of processes not known (a lost fork record)
	lost       int64
	throttled  int64
	usedPaths  map[string]bool     // load objects to archive
	kernelPCs  map[uint64]struct{} // kernel addresses in recorded stacks: their symbols are archived
	kernelSyms chan kernelRead     // the kernel's symbols cached in the background while the target runs
	stacks     *stacker            // call stacks of the samples
	// preopen opens, once the target has exited, the files of the objects the unwinder went
	// through, for the archiving that follows (analysis.Preopener); nil before.
	preopen *analysis.Preopener
	batch   batch // the records read and not yet handled, put in time order
	spare   batch // the store of the records that wait for the next read
	// ahead holds the records the watcher drained from the rings (drainAhead), for the next read;
	// aheadMu guards it and the draining.
	ahead      batch
	aheadMu    sync.Mutex
	aheadAt    uint64   // the bytes in the rings at which handleBatch drains them (an eighth of a ring)
	finishing  bool     // the last read: every record is handled
	sigprof    bool     // clock profiling by the collector library's SIGPROF timers, not perf events
	sigprofWhy string   // why
	lib        string   // the collector library, when the target loads it
	ctl        *control // the channel to the collector library
	closedSize int64    // bytes in the experiments of images already closed

	threadCPU    map[*proc]map[uint32]int64 // CPU time counted by the kernel for each exited thread
	readTotal    int64                      // sum of the counts the exited threads reported
	orphanRead   int64                      // counts reported under the founder's main thread
	reported     map[*proc]map[uint32]bool  // threads whose counts the kernel reported for themselves (not orphanRead)
	orphanToTask bool                       // assignOrphanRead gave orphanRead to the task without a count, not to the founder
	sampledNS    map[uint32]int64           // the period of each thread's samples, ns, by tid
	readCount    bool                       // samples carry their thread's count (perfevent.Options.ReadCount)
	counts       sampleCounts               // the threads' counts at their last samples, with readCount

	// The modules (module.go), in the order they were added, and the module each sampling event's id
	// belongs to (the clock's when none). Four are kept by type as well: the clock takes every
	// sample no other module claims, and the CPU time each thread's count gives is the counters',
	// the microstates' and the runtime counts' to say at the end (finish, scaleToRusage).
	mods        []module
	owner       map[uint64]module
	clock       *clockModule
	hwc         *counterModule     // the counters (-h), or nil
	ms          *microstates       // the threads' context switches, when microstates are recorded
	runtime     *runtimeCounts     // the threads' runtime counts, where the clock's group counts them
	enabledAt   int64              // when the events were enabled (ns since the start)
	lastFlush   int64              // when drain last flushed the experiments (ns since the start)
	exitedTasks map[*proc][]uint32 // threads that exited, by image
	stoppedAt   int64              // when -t or -L stopped recording; 0 while recording
	writeErr    error              // the first write that failed (a full disk): recording stopped
	archiveFull bool               // archiving found the disk full: it stopped there
	liveMark    *os.File           // the FIFO .control held open, without the library: readers tell a live experiment by it

	// The founder's own usage at its exit, read from /proc before er reaped it (wait4's usage holds
	// its descendants too); set before the founder's wait returns.
	founderExit   procUsage
	founderExitOK bool

	subexperiments   int
	libraryInstances int
	libStarts        []libStart       // where and when the collector library said it started
	libNoStarts      []libNoStart     // where and when it said it could not start, and why
	libUnreachable   []libNoStart     // where and when it said that the experiment was out of reach (euid: 1 a chroot, 2 a mount)
	libSetUIDs       []libNoStart     // where and when it said that its process is to run as another user (euid)
	libLandlocks     []libStart       // where and when it said that its process restricted itself with Landlock
	endedBytes       map[string]int64 // the size of the files of the library's instances whose images have ended
	unrecorded       int              // images exec started that the kernel did not record (checkUnrecorded)
	founderDone      bool             // the founder process has exited (or was detached from)
	setIDText        string           // what a set-user-ID target loses under er (checkSetID), or ""
	setIDGated       bool             // and it waited at the gate: setIDText says that nothing of it is recorded, or that it runs unprivileged

	seccompChecked int       // the seccomp filters er runs under, which the library's probe passed
	seccompText    string    // why the library is not loaded: er's filters deny it (checkOwnSeccomp), or ""
	seccompDenials int       // processes that installed a seccomp filter denying the library
	seccompPending []message // seccomp messages of images er did not know yet (seccompLate)
	handlersSaid   int       // warnings that a process has a handler of its own for the -l or -y signal

	gate      *perfevent.Gate // the target waited before its exec (ptrace was refused: startTarget)
	gateWhy   string          // why ptrace was refused
	awaitExec bool            // the gated target's exec, its start, is still to be read
}

// kernelRead is what reading the kernel's symbols in the background gave: the whole table where
// they were not cached (archive.KernelCached), else nil.
type kernelRead struct {
	a   *experiment.Archive
	err error
}

// ExitError carries the target's exit code out of Run: er collect exits with it. Signal is the signal
// that killed the target (Code is then 128 + Signal), or 0.
type ExitError struct{ Code, Signal int }

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return fmt.Sprintf("the target was killed by signal %d (%s)", e.Signal, unix.SignalName(syscall.Signal(e.Signal)))
	}
	return "the target exited with status " + experiment.StatusText(e.Code)
}

// experimentDir picks the experiment directory for spec: -d joined with -o, or the next free
// test.N.er there (experiment.NewDir, which er import names its experiments by too).
func (spec Spec) experimentDir() (string, error) {
	return experiment.NewDir(spec.Dir, spec.Output, spec.Group)
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
	if spec.Attach > 0 {
		dir, err := spec.experimentDir()
		if err != nil {
			return "", err
		}
		s := newSession(spec, stderr, dir)
		err = s.attach(spec.Attach)
		return s.dir, err
	}
	if len(spec.Target) == 0 {
		return "", fmt.Errorf("%w: no target program given", ErrUsage)
	}
	path, err := LookTarget(spec.Target[0])
	if err != nil {
		return "", err
	}
	dir, err := spec.experimentDir()
	if err != nil {
		return "", err
	}
	s := newSession(spec, stderr, dir)
	err = s.run(path)
	return s.dir, err
}

// maxClaims bounds the names tried when other collections take each one first.
const maxClaims = 10000

// create makes the founder experiment's directory, and so claims its name: experimentDir's choice,
// or when another collection made that directory in the meantime (several er collect started at
// once), the next free number. The mkdir is the claim; an -o name taken is an error.
func (s *Session) create(path string) error {
	s.baseLog = s.initialLog(path)
	for tries := 1; ; tries++ {
		w, err := experiment.CreatePending(s.dir, s.baseLog)
		if err == nil {
			s.w = w
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		if s.spec.Output != "" {
			return fmt.Errorf("experiment %s already exists: remove it (er rm %s) or choose another -o name", s.dir, s.dir)
		}
		if tries >= maxClaims {
			return fmt.Errorf("no free experiment name in %s: %d names tried after %s were taken", filepath.Dir(s.dir), maxClaims, filepath.Base(s.dir))
		}
		s.dir = nextName(s.dir)
	}
}

// nextName is the experiment name numbered one more than dir's (stem.N.er).
func nextName(dir string) string {
	name := strings.TrimSuffix(filepath.Base(dir), ".er")
	stem, n := name, 0
	if i := strings.LastIndex(name, "."); i >= 0 {
		if v, err := strconv.Atoi(name[i+1:]); err == nil {
			stem, n = name[:i], v
		}
	}
	return filepath.Join(filepath.Dir(dir), fmt.Sprintf("%s.%d.er", stem, n+1))
}

func newSession(spec Spec, stderr io.Writer, dir string) *Session {
	s := &Session{spec: spec, stderr: stderr, dir: dir, live: liveMappings{},
		cur: map[uint32]*proc{}, usedPaths: map[string]bool{}, kernelPCs: map[uint64]struct{}{}, stacks: newStacker()}
	s.clock = &clockModule{s: s, periods: nominalPeriods{}}
	s.use(s.clock)
	return s
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
				paranoid, perr := perfevent.Paranoid()
				if perr != nil {
					paranoid = -1
				}
				s.sigprof, s.sigprofWhy = true, "perf events cannot be used: "+clockDeniedReason(err, paranoid)
				fmt.Fprintf(s.stderr, "er collect: %s; clock profiling by SIGPROF timers inside the target instead, without kernel stacks or exact CPU accounting\n", s.sigprofWhy)
			}
		}
	}
	var libWarning string
	autoOpenMP := s.spec.OpenMP == ""
	if autoOpenMP {
		s.spec.OpenMP = map[bool]string{true: "on", false: "off"}[linksOpenMP(path)]
	}
	if s.spec.Java == "" {
		s.spec.Java = map[bool]string{true: "on", false: "off"}[startsJVM(path)]
	}
	s.spec.DynFunc = callsFuncLoad(path)
	needLib := s.sigprof || s.spec.Tracing() || s.spec.OpenMPOn() || s.spec.JavaOn() || s.spec.SampleSignal != 0 || s.spec.PauseSignal != 0
	if needLib || s.spec.DynFunc {
		lib, err := FindLibrary()
		if err == nil {
			err = checkDynamic(path, libraryUses(s.spec, s.sigprof))
		}
		switch {
		case err != nil && !needLib:
			// Only the program's generated functions, which were not asked for: profiled without their names.
			libWarning = fmt.Sprintf("%v; the functions it generates (collector_func_load) are not named", err)
			s.spec.DynFunc = false
		case err != nil && autoOpenMP && s.spec.OpenMPOn() && !s.spec.JavaOn() && !s.sigprof && !s.spec.Tracing() && s.spec.SampleSignal == 0 && s.spec.PauseSignal == 0:
			// Only the OpenMP regions, which were not asked for: the program is profiled without them.
			libWarning = fmt.Sprintf("%v; its OpenMP regions are not recorded", err)
			s.spec.OpenMP = "off"
		case err != nil && !s.sigprof && !s.spec.Tracing() && !s.spec.OpenMPOn() && !s.spec.JavaOn():
			// Only the signals needed the library: er itself takes them.
			libWarning = fmt.Sprintf("%v; send the -l/-y signals to er (process %d) instead of the target", err, os.Getpid())
		case err != nil:
			return err
		default:
			s.lib = lib
		}
		if err := s.checkOwnSeccomp(); err != nil {
			return err
		}
	}
	// Forward the signals that ask the target to stop; install before the target starts. The signals
	// ignored when er started stay ignored, for the target too.
	stop, ignWarning := inheritIgnored(s.spec.SampleSignal, s.spec.PauseSignal)
	sigs := make(chan os.Signal, 4)
	if len(stop) > 0 {
		signal.Notify(sigs, stop...)
	}
	defer signal.Stop(sigs)
	ctlSigs := s.notifyControlSignals()
	defer signal.Stop(ctlSigs)

	if err := s.start(path); err != nil {
		return err
	}
	for _, w := range []string{libWarning, ignWarning} {
		if w != "" {
			s.w.Event(experiment.Event{Kind: "warning", Text: w})
			fmt.Fprintf(s.stderr, "er collect: %s\n", w)
		}
	}
	waitc := make(chan error, 1)
	go func() {
		s.founderExit, s.founderExitOK = exitUsage(s.cmd.Process.Pid)
		waitc <- s.cmd.Wait()
	}()
	return s.loop(waitc, sigs, ctlSigs)
}

// notifyControlSignals asks for the -l and -y signals sent to er itself.
func (s *Session) notifyControlSignals() chan os.Signal {
	c := make(chan os.Signal, 4)
	var sigs []os.Signal
	for _, sig := range []syscall.Signal{s.spec.SampleSignal, s.spec.PauseSignal} {
		if sig != 0 {
			sigs = append(sigs, sig)
		}
	}
	if len(sigs) > 0 {
		signal.Notify(c, sigs...)
	}
	return c
}

// How often the reader reads the rings: woken by the kernel after wakeEvery of sampled CPU time,
// on loop's drainEvery tick, and every deepReadEvery once a stack deeper than its copy was seen. The
// tick also flushes the data files, every flushEvery: flushing at every 100 ms tick was some of er's
// CPU time on a short run. The tick stays at 100 ms: a process that exec makes not dumpable sends
// no samples, and its exec record, read 500 ms late, found its program gone from /proc (er named
// it by its command name, not its path).
const (
	wakeEvery     = 100 * time.Millisecond
	drainEvery    = 100 * time.Millisecond
	flushEvery    = 500 * time.Millisecond
	deepReadEvery = 10 * time.Millisecond
	// The first readFastFor of a session reads every deepReadEvery too: until the first read, no
	// stack is known to be deep, and a deep stack whose frames past its copy are read 100 ms late
	// has often been left by its thread (deeprec between two recursions: the first 100 ms of its
	// samples truncated in 1 run of 10 beside two CPU hogs, with no stack image yet to stand in).
	readFastFor = 300 * time.Millisecond
)

// loop records until the founder and every followed descendant have exited (or, attached, until
// the process exits, -t expires, or er is interrupted).
func (s *Session) loop(waitc chan error, sigs, ctlSigs chan os.Signal) error {
	tick := time.NewTicker(drainEvery)
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
	var msgs chan message
	if s.ctl != nil {
		msgs = s.ctl.msgs
	}
	// Wake up as soon as a ring buffer passes its watermark, not only on the tick: with stack copies a
	// ring fills in a fraction of a second.
	ready, done := make(chan struct{}, 1), make(chan struct{})
	defer close(done)
	if s.events != nil {
		go s.watch(ready, done)
		raiseReaderPriority()
	}
	// Reads every deepReadEvery, once deep stacks were seen, and with microstates while a wait whose
	// stack may need reading from outside lasts (see grabWaits), and for the first readFastFor.
	var fast <-chan time.Time
	var fastTicker *time.Ticker
	defer func() {
		if fastTicker != nil {
			fastTicker.Stop()
		}
	}()
	var waitErr error
	for {
		switch need := s.stacks.deep || s.modulesBusy() || s.now() < readFastFor.Nanoseconds(); {
		case need && fastTicker == nil:
			fastTicker = time.NewTicker(deepReadEvery)
			fast = fastTicker.C
		case !need && fastTicker != nil:
			fastTicker.Stop()
			fastTicker, fast = nil, nil
		}
		select {
		case <-fast:
			s.handleMessages()
			s.readRecords(false)
		case waitErr = <-waitc:
			s.founderDone = true
			time.Sleep(orderMargin) // so that this read handles every record up to the founder's exit
			s.drain()
			if n := s.liveFollowed(s.now()); n > 0 {
				fmt.Fprintf(s.stderr, "er collect: the target exited; recording its %d descendant processes that still run until they exit (Ctrl-C stops)\n", n)
				continue
			}
			return s.finish(waitErr)
		case <-ready:
			s.handleMessages()
			s.readRecords(false)
		case m, ok := <-msgs:
			if !ok {
				msgs = nil
				continue
			}
			s.handleMessage(m)
		case sig := <-sigs:
			if s.cmd == nil || s.founderDone {
				fmt.Fprintf(s.stderr, "er collect: %v: stopping\n", sig)
				return s.finish(waitErr)
			}
			s.forward(sig.(syscall.Signal))
		case sig := <-ctlSigs:
			s.controlSignal(sig.(syscall.Signal))
		case tick := <-sampleTick:
			// At the tick's time, not when this loop came to it (it may have been reading rings):
			// the periods stay the interval.
			s.samplePointAt("periodic", s.now()-time.Since(tick).Nanoseconds())
		case <-durationC:
			if s.cmd == nil {
				return s.finish(nil)
			}
			s.stopRecording("limit", fmt.Sprintf("duration limit of %v reached; data recording stopped, the target runs on", s.spec.Duration))
		case <-tick.C:
			s.drain()
			if s.founderDone || s.cmd == nil {
				if s.liveFollowed(s.now()) == 0 {
					return s.finish(waitErr)
				}
			}
		}
	}
}

func (s *Session) now() int64 { return monotonicNS() - s.startNS }

// handleMessages acts on the collector library's messages that are waiting.
func (s *Session) handleMessages() {
	for _, m := range s.ctl.pending() {
		s.handleMessage(m)
	}
}

// controlSignal handles a -l or -y signal sent to er itself. With the collector library in the
// target, it is passed on to the founder process, as if sent to it; without, er takes the sample
// point, or pauses and resumes recording for every process.
func (s *Session) controlSignal(sig syscall.Signal) {
	if s.lib != "" && s.cmd != nil && !s.founderDone {
		_ = relaySignal(s.pid, sig)
		return
	}
	t := s.now()
	switch sig {
	case s.spec.SampleSignal:
		s.samplePoint("signal " + unix.SignalName(sig))
	case s.spec.PauseSignal:
		paused := !s.global.pausedAt(t)
		s.global.addToggle(t, paused)
		if paused {
			s.ctl.set(statePause, 1)
		} else {
			s.ctl.set(statePause, 0)
		}
		kind := map[bool]string{true: "pause", false: "resume"}[paused]
		s.forEachOpen(func(p *proc) {
			p.w.Event(experiment.Event{Time: t, Kind: kind, Text: fmt.Sprintf("recording %sd by %s sent to er", kind, unix.SignalName(sig))})
		})
	}
}

// watch waits on the perf events, drains the rings as soon as they have data (drainAhead), and tells
// the main loop (ready) that there are records to handle.
func (s *Session) watch(ready, done chan struct{}) {
	rearm := max(s.events.RingBytes()/8, 1)
	for {
		var err error
		if s.events.Pending() < rearm || s.aheadFull() {
			// (Not with data there: the kernel woke readers as it crossed half a ring, maybe before this
			// waiter was registered, and does not again while a ring is full.)
			err = s.events.Wait(time.Second)
		}
		if err != nil && err != perfevent.ErrTaskExited {
			return // closed
		}
		if s.events.Pending() > 0 {
			// Again while the rings filled meanwhile: the kernel wakes a reader each time half a ring
			// more was written, and not at all while a ring is full, so a wakeup taken while draining
			// (perf's are one-shot) left the watcher asleep beside full rings until its timeout.
			s.drainAhead()
			for s.events.Pending() >= rearm && !s.aheadFull() {
				s.drainAhead()
			}
			select {
			case ready <- struct{}{}:
			default: // (the loop has not taken the last one yet: it reads all there is)
			}
		}
		if err == perfevent.ErrTaskExited {
			return
		}
		select {
		case <-done:
			return
		default:
		}
	}
}

// start launches the target stopped at its first instruction, opens the perf events on it, writes the
// experiment's first files, and lets it run.
func (s *Session) start(path string) error {
	// The experiment's name is claimed before the target starts: the collector library is told it.
	if err := s.create(path); err != nil {
		return err
	}
	abandon := func(err error) error {
		_ = s.w.Close()
		_ = os.RemoveAll(s.dir)
		return err
	}
	cmd := exec.Command(path)
	cmd.Args = s.spec.Target
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if s.lib != "" {
		env, err := preloadEnv(os.Environ(), s.lib, s.dir, s.spec, s.sigprof)
		if err != nil {
			return abandon(err)
		}
		if s.seccompChecked > 0 {
			env = append(env, envSeccompChecked+"="+strconv.Itoa(s.seccompChecked))
		}
		cmd.Env = env
	}
	cannotStart := func(err error) error {
		if errors.Is(err, syscall.ENOEXEC) {
			return fmt.Errorf("cannot run %q: %s is not a program this machine can run (exec format error; a script needs a #! line)", s.spec.Target[0], path)
		}
		return fmt.Errorf("cannot start %s: %v", path, err)
	}
	cmd, err := s.startTarget(cmd)
	if err != nil {
		return abandon(cannotStart(err))
	}
	s.cmd, s.pid = cmd, cmd.Process.Pid
	s.checkSetID(path)
	fail := func(err error) error {
		s.abandonTarget()
		s.ctl.close()
		if s.liveMark != nil {
			_ = s.liveMark.Close()
		}
		return err
	}
	s.startNS = monotonicNS()
	if err := s.initFounder(path); err != nil {
		return fail(err)
	}
	s.noteGated()
	if s.setIDText != "" {
		s.w.Event(experiment.Event{Kind: "warning", Pid: uint32(s.pid), Text: s.setIDText})
	}
	if s.seccompText != "" {
		s.w.Event(experiment.Event{Kind: "warning", Pid: uint32(s.pid), Text: s.seccompText})
	}
	if s.lib != "" {
		ctl, err := openControl(s.dir)
		if err != nil {
			return fail(fmt.Errorf("the collector library's control files: %v", err))
		}
		s.ctl = ctl
	} else {
		// Without the library, the FIFO only tells readers that er collect is still recording.
		f, err := holdControl(s.dir)
		if err != nil {
			return fail(fmt.Errorf("the control FIFO: %v", err))
		}
		s.liveMark = f
	}
	if s.sigprof {
		s.setting(experiment.SettingClockSource, "sigprof")
		s.w.Event(experiment.Event{Kind: "warning", Text: "clock profiling by SIGPROF timers inside the target, " +
			"without kernel stacks or exact CPU accounting: " + s.sigprofWhy})
		if s.spec.Follow != "off" {
			s.w.Event(experiment.Event{Kind: "warning", Text: "descendant processes are not recorded with SIGPROF clock profiling"})
		}
	}
	if err := s.openEvents(); err != nil {
		_ = s.w.Close()
		_ = os.RemoveAll(s.dir)
		return fail(err)
	}
	// The collector library records too, with or without perf events (SIGPROF timers): -t and -L stop it.
	s.recording = s.recording || s.lib != ""

	s.w.Event(experiment.Event{Kind: "start", Pid: uint32(s.pid), Text: strings.Join(s.spec.Target, " ")})
	s.samplePoint("start")
	if err := s.w.Flush(); err != nil {
		return fail(err)
	}
	if err := s.release(); err != nil {
		if s.gate != nil { // its exec failed
			return abandon(fail(cannotStart(err)))
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("cannot release the target: %v", err)
	}
	return nil
}

// initFounder completes the founder experiment that create made, now that the target's process
// exists, and reads the target's mappings.
func (s *Session) initFounder(path string) error {
	s.baseLog.Pid, s.baseLog.StartPerfNS = uint32(s.pid), s.startNS
	w := s.w
	w.UpdateLog(func(l *experiment.Log) { l.Pid, l.StartPerfNS = uint32(s.pid), s.startNS })
	s.founder = &proc{pid: uint32(s.pid), prog: filepath.Base(path), w: w, mapped: map[mapKey]bool{}}
	if s.cmd != nil && s.lib != "" {
		s.founder.initPaused = s.spec.StartPaused && s.spec.PauseSignal != 0
	} else {
		s.global.initPaused = s.spec.StartPaused && s.spec.PauseSignal != 0
	}
	s.images = append(s.images, s.founder)
	s.cur[uint32(s.pid)] = s.founder
	if len(s.spec.Comments) > 0 {
		if err := w.Notes(strings.Join(s.spec.Comments, "\n") + "\n"); err != nil {
			return err
		}
	}
	if s.gate != nil {
		// It is still er's binary, waiting at the gate: its mappings come with its exec.
	} else if maps, err := readMaps(s.pid); err == nil {
		for _, m := range maps {
			s.addMapping(m)
		}
	} else {
		w.Event(experiment.Event{Kind: "warning", Pid: uint32(s.pid), Text: "cannot read the target's mappings: " + err.Error()})
	}
	return nil
}

// addVDSO records the vdso of the image that process pid exec'd at t: the kernel maps it without a
// mapping record.
func (s *Session) addVDSO(pid uint32, t int64) {
	if maps, err := readMaps(int(pid)); err == nil {
		for _, m := range maps {
			if m.Path == "[vdso]" {
				m.LoadTime = t
				s.addMapping(m)
			}
		}
	}
}

// setting adds a setting to the founder's log and to those of the subexperiments to come.
func (s *Session) setting(name experiment.SettingKey, value string) {
	st := experiment.Setting{Name: name, Value: value}
	s.baseLog.Settings = append(s.baseLog.Settings, st)
	s.w.UpdateLog(func(l *experiment.Log) { l.Settings = append(l.Settings, st) })
}

// readKernelSymbols makes sure, once, when a recorded stack first holds a kernel address, that the
// kernel's symbols are cached: in the background, while the target runs (reading /proc/kallsyms
// takes some 80 ms), and not at all for a run without kernel frames. writeArchives takes the few
// it needs from the cache at the end.
func (s *Session) readKernelSymbols() {
	if s.kernelSyms != nil {
		return
	}
	s.kernelSyms = make(chan kernelRead, 1)
	go func() {
		a, err := archive.KernelCached()
		s.kernelSyms <- kernelRead{a, err}
	}()
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
		Counters:         counterLog(s.spec.Counters),
	}
}

// cpuMHz reads the CPUs' clocks from /proc/cpuinfo: their harmonic mean, as the manual converts cycle
// counts to time with (a cycle's mean duration); 0 when unknown.
func cpuMHz() int64 {
	data, _ := os.ReadFile("/proc/cpuinfo")
	return harmonicMHz(string(data))
}

// harmonicMHz is the harmonic mean of the "cpu MHz" lines of /proc/cpuinfo's text.
func harmonicMHz(cpuinfo string) int64 {
	var n, inv float64
	for _, line := range strings.Split(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f > 0 {
				n++
				inv += 1 / f
			}
		}
	}
	if n == 0 {
		return 0
	}
	return int64(math.Round(n / inv))
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

// addMapping records an executable mapping in the experiment of its process's running image, and
// keeps the per-process live set used to copy mappings on fork.
func (s *Session) addMapping(m experiment.Mapping) {
	if p := s.cur[m.Pid]; p.open() {
		p.record(m)
	}
	s.live.add(m)
	s.usedPaths[m.Path] = true
	s.stacks.addMapping(m)
}

// record records mapping m in p's experiment.
func (p *proc) record(m experiment.Mapping) {
	p.mapped[mapKey{m.Start, m.Path}] = true
	p.w.AddMapping(m)
	if p.execed && p.exec.exe == "" && strings.HasPrefix(m.Path, "/") {
		p.exec.exe = m.Path // exec maps the program's code first, before the loader's
	}
	if isJitdump(m.Path, p.pid) {
		p.jitdumpPath = m.Path
	}
}

// processGone ends the mappings of process pid's image at time t: it exited or exec replaced it.
func (s *Session) processGone(pid uint32, t int64) {
	if p := s.cur[pid]; p.open() {
		p.w.ProcessExit(pid, t)
	}
	delete(s.live, pid)
	s.stacks.gone(pid)
}

// size is the bytes of all experiments written so far, with the collector library's trace files
// (still in .proc/ while the target runs).
func (s *Session) size() int64 {
	n := s.closedSize
	s.forEachOpen(func(p *proc) { n += p.w.Size() })
	if s.lib != "" {
		n += s.libraryBytes()
	}
	return n
}

// drain moves every record from the ring buffers into the experiments, stops recording at the size
// limit, flushes (every flushEvery, and at every call once the founder has exited), and closes the
// experiments of processes that ended a while ago.
func (s *Session) drain() {
	s.handleMessages()
	for _, m := range s.mods {
		m.tick(s.now())
	}
	s.readRecords(s.finishing)
	s.forEachOpen(func(p *proc) {
		if err := p.w.Err(); err != nil {
			s.writeFailed(err)
		}
	})
	if s.recording && s.spec.SizeLimitMB > 0 && s.size() >= s.spec.SizeLimitMB<<20 {
		s.stopRecording("limit", fmt.Sprintf("size limit of %d MB reached; data recording stopped, the target runs on", s.spec.SizeLimitMB))
	}
	if now := s.now(); now-s.lastFlush >= flushEvery.Nanoseconds() {
		s.lastFlush = now
		s.forEachOpen(func(p *proc) {
			if err := p.w.FlushPaced(); err != nil {
				s.writeFailed(err)
			}
		})
	} else if s.founderDone {
		// The data at once; log.xml and map.xml at the flushes above and when each closes (every
		// rewrite of them is a new file).
		s.forEachOpen(func(p *proc) {
			if err := p.w.FlushData(); err != nil {
				s.writeFailed(err)
			}
		})
	}
	// Close the experiments of processes that ended a while ago, so that a long run with many short
	// processes does not keep their files open.
	now := s.now()
	for _, p := range s.images {
		if p.open() && p.exited && p != s.founder && now-p.exitTime > time.Second.Nanoseconds() && s.closeEarly(p) {
			s.checkUnrecorded(p)
			s.perfMap(p)
			s.jitdump(p)
			s.javaFiles(p)
			s.closedSize += p.w.Size()
			s.closeImage(p)
		}
	}
}

// readRecords moves the records from the ring buffers into the experiments, in time order: those
// the kernel took before this read started, less orderMargin; all when all is set (the events are
// disabled, or closing). A later record waits in the batch for the next read, because a record of
// the same time on a ring read earlier may not have been written then: the reader can lose its
// CPU between two rings, and a child's samples on one CPU would then come before its fork on another
// and be dropped.
func (s *Session) readRecords(all bool) {
	if s.events == nil {
		return
	}
	upTo := uint64(math.MaxUint64)
	if !all {
		upTo = uint64(max(monotonicNS()-orderMargin.Nanoseconds(), 0))
	}
	// What the watcher drained, and what is in the rings now, after the records kept from the last read.
	s.aheadMu.Lock()
	err := s.events.Drain(s.ahead.add)
	if errors.Is(err, perfevent.ErrClosed) {
		err = nil
	}
	for _, r := range s.batch.recs {
		s.ahead.add(r)
	}
	s.batch, s.ahead = s.ahead, s.batch
	s.ahead.reset()
	s.aheadMu.Unlock()
	s.handleBatch(upTo)
	if s.recording && !all {
		for _, m := range s.mods {
			m.read(int64(upTo) - s.startNS)
		}
	}
	if err != nil {
		s.w.Event(experiment.Event{Time: s.now(), Kind: "error", Text: "reading perf events: " + err.Error()})
	}
}

// handleBatch handles the records of the batch taken at or before upTo (perf clock), in time
// order, and keeps the others for the next read.
func (s *Session) handleBatch(upTo uint64) {
	recs := s.batch.sorted()
	s.stacks.note(recs) // (the records of later samples too: what they say of a thread's moves)
	n := sort.Search(len(recs), func(i int) bool { return recordTime(recs[i]) > upTo })
	for i, r := range recs[:n] {
		s.handle(r)
		if i%drainAheadEvery == drainAheadEvery-1 && s.events != nil && s.events.Pending() >= s.aheadAt {
			// The rings fill while this loop unwinds: drain them here too, not only when the
			// watcher gets a CPU (beside a busy target on 2 CPUs it waited up to 9 ms for one).
			s.drainAhead()
		}
	}
	s.stacks.prune(upTo)
	s.spare.reset()
	for _, r := range recs[n:] {
		s.spare.add(r)
	}
	s.batch.reset()
	s.batch, s.spare = s.spare, s.batch
}

// drainAhead copies the rings' records into ahead, the watcher's store, for the next read: the
// watcher drains the rings as soon as the kernel wakes it, while the loop handles what it took before.
// Handling (unwinding the stacks, reading new load objects' unwind tables) is slow beside the
// kernel's writing of a burst of samples, which filled the rings while er handled the previous ones: a
// program taking 4,500 page faults in 15 ms, each with a 16 KiB stack copy, lost 99% of them at -h
// page-faults,1 (perf record, which only copies, 3%). Past maxAhead bytes it leaves them in the rings.
func (s *Session) drainAhead() {
	s.aheadMu.Lock()
	defer s.aheadMu.Unlock()
	if s.aheadBytes() > maxAhead {
		return
	}
	if err := s.events.Drain(s.ahead.add); err != nil && !errors.Is(err, perfevent.ErrClosed) {
		s.w.Event(experiment.Event{Time: s.now(), Kind: "error", Text: "reading perf events: " + err.Error()})
	}
}

// aheadBytes is the bytes of stack copies, call chains and registers in ahead. aheadMu is held.
func (s *Session) aheadBytes() int { return len(s.ahead.bytes) + 8*len(s.ahead.words) }

// aheadFull says whether ahead holds its most.
func (s *Session) aheadFull() bool {
	s.aheadMu.Lock()
	defer s.aheadMu.Unlock()
	return s.aheadBytes() > maxAhead
}

// drainAheadEvery is how many records handleBatch handles between its looks at the rings.
const drainAheadEvery = 4

// maxAhead is the most bytes of stack copies and call chains the watcher keeps for the loop.
const maxAhead = 256 << 20

// orderMargin is how long before a read started a record must have been taken to be handled in
// it: the kernel writes a record microseconds after its timestamp, with preemption disabled.
const orderMargin = 500 * time.Microsecond

// handle records one perf record.
func (s *Session) handle(r perfabi.Record) {
	switch r := r.(type) {
	case *perfabi.Sample:
		s.sample(r)
	case *perfabi.Mmap:
		if !r.Executable {
			return
		}
		path := r.Filename
		if strings.HasPrefix(path, "//anon") {
			path = "[anon]" // executable anonymous memory (a JIT's code cache): no file to archive
		}
		s.addMapping(experiment.Mapping{Pid: r.Pid, Start: r.Addr, End: r.Addr + r.Len, Offset: r.Pgoff,
			Path: path, BuildID: fmt.Sprintf("%x", r.BuildID), LoadTime: s.rel(r.Time), UnloadTime: -1})
	case *perfabi.Fork:
		s.tell(r)
		t := s.rel(r.Time)
		if r.Pid == r.Ppid { // a new thread
			return
		}
		parent := s.cur[r.Ppid]
		if parent == nil {
			parent = s.founder
			s.w.Event(experiment.Event{Time: t, Kind: "warning", Pid: r.Pid, Text: fmt.Sprintf("process %d was created by process %d, which er did not see start; its lineage is counted under the founder", r.Pid, r.Ppid)})
		}
		s.newImage(r.Pid, r.Ppid, parent, 'f', t, parent.prog)
		// The child has its parent's mappings: the live set and the unwinder's space are copied in
		// O(1); the child's experiment lists them, loaded at the fork.
		s.live.fork(r.Ppid, r.Pid)
		s.stacks.fork(r.Ppid, r.Pid)
		if p := s.cur[r.Pid]; p.open() {
			for _, m := range s.live.of(r.Pid) {
				m.Pid, m.LoadTime, m.UnloadTime = r.Pid, t, -1
				p.record(m)
			}
		}
	case *perfabi.Comm:
		if !r.Exec {
			// A thread's new name (a JVM names its GC and compiler threads so).
			if p := s.cur[r.Pid]; p.open() && s.recording {
				t, name := s.rel(r.Time), r.Comm
				p.w.UpdateLog(func(l *experiment.Log) {
					l.ThreadNames = append(l.ThreadNames, experiment.ThreadName{Time: max(t, 0), Pid: r.Pid, Tid: r.Tid, Name: name})
				})
			}
			return
		}
		t := s.rel(r.Time)
		if s.awaitExec && r.Pid == uint32(s.pid) {
			// The gated target's exec is where it starts: the founder's image, not a new one.
			s.awaitExec = false
			s.addVDSO(r.Pid, t)
			return
		}
		s.tell(r)
		old := s.cur[r.Pid]
		s.processGone(r.Pid, t)
		if old == nil {
			old = s.founder
		} else {
			s.imageEnded(old, t, false)
		}
		ppid := old.ppid
		p := s.newImage(r.Pid, ppid, old, 'x', t, progName(r.Pid, r.Comm))
		p.execed = true
		p.exec = readExecFacts(r.Pid, r.Comm, s.lib)
		s.addVDSO(r.Pid, t)
	case *perfabi.Switch:
		s.tell(r)
	case *perfabi.Exit:
		s.tell(r)
		if p := s.cur[r.Pid]; p != nil && (r.Pid != uint32(s.pid) || r.Tid != r.Pid) {
			if s.exitedTasks == nil {
				s.exitedTasks = map[*proc][]uint32{}
			}
			s.exitedTasks[p] = append(s.exitedTasks[p], r.Tid)
		}
		if r.Pid == r.Tid {
			t := s.rel(r.Time)
			p := s.cur[r.Pid]
			s.processGone(r.Pid, t)
			s.imageEnded(p, t, true)
			delete(s.cur, r.Pid)
		}
	case *perfabi.Read:
		for _, m := range s.mods {
			if m.exitCount(r) {
				return
			}
		}
		s.readTotal += int64(r.Value)
		if r.Pid == uint32(s.pid) && r.Tid == uint32(s.pid) {
			// The founder's main thread holds the original events, unless the kernel swapped them
			// into another task: then it reports its own count here (see assignOrphanRead).
			s.orphanRead += int64(r.Value)
			return
		}
		if p := s.imageAt(r.Pid, s.rel(r.Time)); p != nil {
			s.reportCount(p, r.Tid, int64(r.Value))
		}
	case *perfabi.Lost:
		s.lost += int64(r.Lost)
		s.tell(r)
	case *perfabi.Throttle:
		if !r.Unthrottle {
			s.throttled++
		}
	}
}

// writeFailed stops recording when an experiment cannot be written (a full disk, a failing disk): the
// target runs on, what was recorded is kept, and er says so once.
func (s *Session) writeFailed(err error) {
	if s.writeErr != nil {
		return
	}
	s.writeErr = err
	s.stopRecording("warning", fmt.Sprintf("%v: recording stopped at %.3f s; the target runs on, and what was recorded so far is kept", err, float64(s.now())/1e9))
}

func (s *Session) stopRecording(kind, text string) {
	if !s.recording {
		return
	}
	s.ctl.set(stateStop, stopLimit)
	if s.events != nil {
		_ = s.events.Disable()
	}
	t := s.now() // when the events stopped, not after reading their last records (a while, on a busy machine)
	s.readRecords(true)
	s.stopModules(t)
	s.recording = false
	if s.writeErr == nil {
		// The last sample point: the usage up to the end of recording. None is taken after it, so
		// that the overview covers what was recorded, as the header's duration does.
		for _, p := range s.images {
			if p.open() && !p.exited {
				s.imagePoint(p, t, "stop")
			}
		}
	}
	s.stoppedAt = t
	s.forEachOpen(func(p *proc) {
		p.w.Event(experiment.Event{Time: t, Kind: kind, Text: text})
		p.w.UpdateLog(func(l *experiment.Log) { l.StopTime = t })
	})
	fmt.Fprintf(s.stderr, "er collect: %s\n", text)
}

// samplePoint records a sample point in the experiment of every running followed process.
func (s *Session) samplePoint(label string) { s.samplePointAt(label, s.now()) }

// samplePointAt records a sample point at t (ns since the start, at most now).
func (s *Session) samplePointAt(label string, t int64) {
	if s.stoppedAt != 0 {
		return // recording stopped (-t, -L): the "stop" point was the last
	}
	for _, p := range s.images {
		if p.open() && !p.exited {
			s.imagePoint(p, t, label) // (in order: a signal's point may be later)
		}
	}
}

// imagePoint records a sample point of one image: the usage of its process now.
func (s *Session) imagePoint(p *proc, t int64, label string) {
	u, err := readUsage(int(p.pid))
	if err != nil {
		// Gone (exited and reaped) by the time er read the point's message: a signal it took just
		// before its end, with er late beside two CPU hogs (TestProgramSampleHandler: 4 points of
		// 5 in 2 runs of 20). The point stays, with the usage last read of the process.
		u = p.last
	}
	s.writeOverview(p, max(t, p.lastPoint), label, u)
}

func (s *Session) writeOverview(p *proc, t int64, label string, u procUsage) {
	p.last, p.lastPoint, p.tailUser, p.tailSys = u, t, 0, 0
	p.endPoint = p.endPoint || label == "end"
	p.sampleNo++
	p.w.Event(experiment.Event{Time: t, Kind: "sample", Pid: p.pid, Text: fmt.Sprintf("sample point %d: %s", p.sampleNo, label)})
	_ = p.w.Overview(experiment.OverviewSample{Time: t, Pid: p.pid, Sample: p.sampleNo, UserNS: u.userNS,
		SystemNS: u.systemNS, MinFlt: u.minFlt, MajFlt: u.majFlt, VolCtxSw: u.volCS, InvolCtxSw: u.involCS,
		RSSBytes: u.rssBytes, NumThreads: u.threads, Label: label})
}

// finish drains the last records, records the exit, moves the collector library's data into the
// experiments, writes the archives and closes the experiments.
func (s *Session) finish(waitErr error) error {
	// Every collector-library instance ends now (its records after this are not written), and so does
	// every instance of a descendant that outlives er: the experiment does not change after er exits.
	s.ctl.end()
	if s.cmd == nil && s.events != nil && s.recording {
		// Attached: the process runs on, and so would its events while er reads their last records;
		// the experiment ends when they stop.
		_ = s.events.Disable()
	}
	end := s.now()
	s.finishing = true
	if os.Getenv("GOMAXPROCS") == "" {
		// What is left (the last samples, the experiment's files, the archiving) is er's alone:
		// it may use every CPU, not the one processor of the collection (Main).
		runtime.GOMAXPROCS(runtime.NumCPU())
	}
	s.preopenFiles()
	s.drain()
	s.preopenFiles() // those the last samples went through
	if s.recording {
		s.stopModules(end)
	}
	var counted int64
	if s.events != nil {
		if c, err := s.events.Count(); err == nil && s.spec.Clock {
			counted = int64(c)
		}
		for _, m := range s.mods {
			m.closing(s.events)
		}
		_ = s.events.Close()
	}
	code, sig := 0, 0
	var st *os.ProcessState
	if s.cmd != nil {
		st = s.cmd.ProcessState
	}
	if st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = int(ws.Signal())
			code = 128 + sig
		} else {
			code = st.ExitCode()
		}
		// The end point of the founder's process: of its last image, where an exec replaced the
		// founder's.
		last := s.founderImage(end)
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok && last.open() && s.stoppedAt == 0 && !last.endPoint {
			u := procUsage{userNS: ru.Utime.Nano(), systemNS: ru.Stime.Nano(), minFlt: ru.Minflt, majFlt: ru.Majflt,
				volCS: ru.Nvcsw, involCS: ru.Nivcsw, rssBytes: ru.Maxrss * 1024}
			if s.founderExitOK && (s.founderExit.childrenNS > 0 || s.forked()) {
				// wait4's usage holds the descendants the founder waited for, which their own
				// experiments hold: the end point is the process's own usage, read while it was a
				// zombie (to the clock tick, as /proc says it).
				u = s.founderExit
			}
			s.writeOverview(last, end, "end", u)
		}
	} else if s.cmd == nil {
		if s.founder.open() && !s.founder.exited {
			s.imagePoint(s.founder, end, "end")
		}
	} else if waitErr != nil {
		s.w.Event(experiment.Event{Time: end, Kind: "error", Text: "waiting for the target: " + waitErr.Error()})
	}
	var text string
	switch {
	case s.cmd == nil && !s.founder.exited:
		text = "detached; the process runs on"
		fmt.Fprintf(s.stderr, "er collect: detached from process %d, which runs on\n", s.pid)
	case s.cmd == nil:
		text = "the process exited"
	case sig != 0:
		text = fmt.Sprintf("killed by signal %d (%s)", sig, unix.SignalName(syscall.Signal(sig)))
	default:
		text = fmt.Sprintf("exit status %d", code)
	}
	s.w.Event(experiment.Event{Time: end, Kind: "exit", Pid: uint32(s.pid), Text: text})
	if s.lost > 0 {
		text := lostWarning(s.lostRecords(counted), s.spec.Interval, s.readCount && len(s.spec.Counters) > 0)
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: text})
		fmt.Fprintf(s.stderr, "er collect: warning: %s\n", text)
	}
	if s.dropped > 0 {
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: fmt.Sprintf("%d samples of processes whose start was not seen were dropped", s.dropped)})
	}
	if tl := &s.stacks.tally; tl.Failed > 0 {
		var top []string
		for _, r := range tl.TopReasons(3) {
			top = append(top, r.Text)
		}
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: fmt.Sprintf("%d of %d call stacks could not be unwound completely (most often: %s)",
			tl.Failed, tl.Total(), strings.Join(top, "; "))})
	}
	if st := s.stacks; st.fromImage > 0 {
		s.w.Event(experiment.Event{Time: end, Kind: "comment", Text: fmt.Sprintf("%d call stacks that their process had left (it exited, or returned into the frames past the stack copy) by the time er read them were completed from the thread's last stack read live (docs/stacks.md)", st.fromImage)})
	}
	if st := s.stacks; len(st.liveFailed) > 0 {
		var why []string
		for err, n := range st.liveFailed {
			why = append(why, fmt.Sprintf("%d with %v", n, err))
		}
		slices.Sort(why)
		s.w.Event(experiment.Event{Time: end, Kind: "comment", Text: "reads of the target's stacks past their copies failed: " + strings.Join(why, ", ") +
			"; the stacks they were for are truncated (docs/stacks.md)"})
	}
	if st := s.stacks; st.refused > 0 {
		s.w.Event(experiment.Event{Time: end, Kind: "comment", Text: fmt.Sprintf("%d call stacks deeper than their copy were not completed from the live process: their thread had left the frames past the copy, or may have, by the time er read them (docs/stacks.md)", st.refused)})
	}
	if s.throttled > 0 {
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: fmt.Sprintf("the kernel throttled sampling %d times (perf_event_max_sample_rate)", s.throttled)})
	}
	s.warnUnrecordedExecs() // before the counts: an image the kernel stopped recording reports none
	if s.spec.Clock && s.events != nil && counted > 0 {
		// The founder's main thread has the original events, whose count includes every inherited
		// thread's: what the exited threads reported is theirs.
		if s.threadCPU == nil {
			s.threadCPU = map[*proc]map[uint32]int64{}
		}
		if s.threadCPU[s.founder] == nil {
			s.threadCPU[s.founder] = map[uint32]int64{}
		}
		if s.cmd != nil && s.ms == nil {
			// (With microstates every thread's CPU time is its own, from its context switches.)
			s.threadCPU[s.founder][uint32(s.pid)] += counted - s.readTotal
		}
		for _, m := range s.mods {
			m.endCounts(counted)
		}
		s.assignOrphanRead()
		if !s.recordedWhole(s.founder) {
			// Paused or stopped: the counts hold time the samples were not meant to.
		} else if text := unsampledWarning(s.threadCPU[s.founder][uint32(s.pid)], s.uncountedSampledNS(), counted, s.spec.Interval); text != "" {
			s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: text})
			fmt.Fprintf(s.stderr, "er collect: warning: %s\n", text)
		}
		counted = s.scaleToRusage(st, counted)
		if last := s.founderImage(end); last != s.founder && s.threadCPU[s.founder] != nil {
			// Exec replaced the founder's image: its main thread's count, reported at the process's
			// exit, is the last image's (as its other threads' counts went to the image they ran in).
			main := uint32(s.pid)
			if ns, ok := s.threadCPU[s.founder][main]; ok {
				if s.threadCPU[last] == nil {
					s.threadCPU[last] = map[uint32]int64{}
				}
				s.threadCPU[last][main] += ns
				delete(s.threadCPU[s.founder], main)
				counted -= ns
			}
		}
		s.writeThreadCounts()
		s.recordProcessExits(st, end)
	}
	founderEnd := end
	if s.founder.exited {
		founderEnd = s.founder.exitTime
	}
	s.w.UpdateLog(func(l *experiment.Log) {
		l.EndTime, l.ExitStatus, l.ExitSignal, l.Exited = founderEnd, code, sig, st != nil || s.founder.exited
		if s.subexperiments == 0 {
			l.CountedCPUNS = counted
		} else if tc := s.threadCPU[s.founder]; tc != nil {
			var n int64
			for _, ns := range tc {
				n += ns
			}
			l.CountedCPUNS = n
		}
	})
	if s.liveMark != nil {
		_ = s.liveMark.Close()
		_ = os.Remove(filepath.Join(s.dir, experiment.ControlName))
	}
	if s.ctl != nil {
		for _, m := range s.ctl.all() { // every message written so far, the last starts included
			s.handleMessage(m)
		}
		s.ctl.close()
		s.seccompLate()
		s.warnLibraryMissing()
		s.seccompSummary()
		s.relocateLibraryData()
		s.checkSigprofCoverage(st)
		s.w.Event(experiment.Event{Time: end, Kind: "comment", Text: fmt.Sprintf("the collector library ran in %d process images", s.libraryInstances)})
	}
	s.forEachOpen(func(p *proc) {
		if p != s.founder && !p.exited {
			p.w.UpdateLog(func(l *experiment.Log) { l.EndTime = end })
		}
		s.traceMappings(p)
		s.perfMap(p)
		s.jitdump(p)
		s.javaFiles(p)
	})
	if s.writeErr != nil {
		// The disk is full: the space kept back is for the logs, not for archives.
		s.w.ReleaseReserve()
		s.w.Event(experiment.Event{Time: end, Kind: "warning", Text: "load objects and sources were not archived: the disk was full (run er archive on the experiment when there is space)"})
	}
	// Subexperiments are closed first: archives may fill the disk, and only the founder keeps a
	// reserve for its final log.
	s.forEachOpen(func(p *proc) {
		if p != s.founder {
			s.closeImage(p)
		}
	})
	if s.spec.Clock && s.events != nil {
		s.recordUnsampled(s.founder)
	}
	if s.writeErr == nil {
		_ = s.w.FlushData() // before the archives, which may fill the disk; Close writes the logs
		s.writeArchives()
	}
	var errs []error
	if prior, err := s.w.Err(), s.w.Close(); err != nil && (err != prior || s.writeErr == nil) {
		errs = append(errs, fmt.Errorf("writing %s: %v", s.dir, err))
	}
	s.founder.closed = true
	if s.subexperiments > 0 {
		fmt.Fprintf(s.stderr, "er collect: %d descendant processes recorded in subexperiments of %s\n", s.subexperiments, s.dir)
	}
	if err := s.afterCollection(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if code != 0 {
		return &ExitError{Code: code, Signal: sig}
	}
	return nil
}

// founderImage is the image the founder's process ran at time t: the founder's, or the one an
// exec (or a chain of them) put in its place, where that one is recorded (-F).
func (s *Session) founderImage(t int64) *proc {
	if !s.founder.replaced || s.cmd == nil {
		return s.founder
	}
	if p := s.imageAt(uint32(s.pid), t); p != nil && p.w != nil {
		return p
	}
	return s.founder
}

// forked reports whether a process of the target's tree forked a child.
func (s *Session) forked() bool {
	for _, p := range s.images {
		if p != s.founder && !p.execed {
			return true
		}
	}
	return false
}

// checkSigprofCoverage warns when the SIGPROF clock recorded less than half the CPU time the target
// used (st: its exit, with the usage of the descendants it waited for): threads that block SIGPROF
// with the system call itself, which the collector library cannot see, are not sampled.
func (s *Session) checkSigprofCoverage(st *os.ProcessState) {
	if !s.sigprof || st == nil {
		return
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok {
		return
	}
	used := ru.Utime.Nano() + ru.Stime.Nano()
	var recorded int64
	for _, p := range s.images {
		if p.w != nil && !p.closed {
			ns, err := experiment.TraceClockNS(filepath.Join(p.w.Dir(), experiment.ClockTraceFile))
			if err == nil {
				recorded += ns
			}
		}
	}
	if used < 200e6 || 2*recorded >= used {
		return
	}
	text := fmt.Sprintf("the SIGPROF clock recorded %.3f s of the %.3f s of CPU time the target used: threads that block SIGPROF "+
		"with the rt_sigprocmask system call (which the collector library cannot see) or processes it does not follow are "+
		"not sampled; perf events sample every thread (sysctl kernel.perf_event_paranoid=2 or less)", float64(recorded)/1e9, float64(used)/1e9)
	s.w.Event(experiment.Event{Time: s.now(), Kind: "warning", Text: text})
	fmt.Fprintf(s.stderr, "er collect: %s\n", text)
}

// uncountedSampledNS is the period of the samples of the founder's main thread and of what the
// samples of the other threads stand for beyond their own counts: the counts that the kernel
// reported under the founder's main thread are theirs (a thread whose count was reported there has
// none, or only that of its first moments), or else they were lost with their samples. A thread whose
// samples exceed its count but agree with it (countAgrees) has them weighted down to the count when
// they are read, so its excess is in no view: counting it here (half a period in each of hundreds of
// short threads) put the CPU time said lost 0.23 s under what the views missed (0.401 s said of
// 5.118 s counted, where er print showed 4.447 s).
func (s *Session) uncountedSampledNS() int64 {
	counted := map[uint32]int64{}
	for _, threads := range s.threadCPU {
		for tid, ns := range threads {
			counted[tid] += ns
		}
	}
	var ns int64
	for tid, v := range s.sampledNS {
		if tid == uint32(s.pid) {
			ns += v
		} else if c := counted[tid]; v > c && (c == 0 || !s.countAgrees(c, v)) {
			ns += v - c
		}
	}
	return ns
}

// assignOrphanRead places the count reported under the founder's main thread (orphanRead). The
// kernel swaps the perf contexts of two tasks running clones of the same events instead of
// switching their events (inherit_stat swaps the counts back, so each count follows its task):
// when the founder's main thread and a descendant (another process or thread) swapped, the
// descendant exits with the original events and reports no count, and the founder's main thread
// exits with the copy and reports its own count. So the orphan read is the founder's own, and what
// the original events hold beyond the reports (counted less readTotal, which the caller gave the
// founder's main thread) is the count of the one exited task that reported none. (On 2 CPUs with 4
// busy processes the founder and a child swapped in 7 runs of 10; read the other way round, the
// founder showed the child's 0.81 s for its own 0.40 s.) That pairing is taken where the samples of
// the two tasks agree with it, or where they agree with neither pairing and are nearer to it;
// otherwise the rest stays the founder's main thread's, as when the kernel neither sampled nor
// reported some threads, whose CPU it then holds.
// With several such tasks, none of them gets a count and their samples keep their own periods.
func (s *Session) assignOrphanRead() {
	if s.orphanRead == 0 {
		return
	}
	type task struct {
		p   *proc
		tid uint32
	}
	var missing []task
	for p, tids := range s.exitedTasks {
		if p.unrecorded {
			continue // the kernel removed its events at its exec: it reports no count
		}
		for _, tid := range tids {
			if _, ok := s.threadCPU[p][tid]; !ok {
				missing = append(missing, task{p, tid})
			}
		}
	}
	if len(missing) != 1 {
		return
	}
	m := missing[0]
	if s.threadCPU[m.p] == nil {
		s.threadCPU[m.p] = map[uint32]int64{}
	}
	if s.cmd == nil {
		// Attached: the founder's main thread has no count of its own here.
		s.threadCPU[m.p][m.tid] = s.orphanRead
		s.orphanToTask = true
		return
	}
	main := uint32(s.pid)
	rest := s.threadCPU[s.founder][main]
	sMain, sTask := s.sampledNS[main], s.sampledNS[m.tid]
	kernels := s.countAgrees(s.orphanRead, sMain) && s.countAgrees(rest, sTask)
	if !kernels && !s.countAgrees(s.orphanRead, sTask) {
		// The samples fit neither pairing well (few samples of short tasks are noisy: the swapped
		// contexts carry the sampling timer's progress from one task to the other): the one they
		// are nearer to, the other one where they are as near to both.
		kernels = absDiff(s.orphanRead, sMain)+absDiff(rest, sTask) < absDiff(s.orphanRead, sTask)+absDiff(rest, sMain)
	}
	if kernels {
		s.threadCPU[s.founder][main] = s.orphanRead
		s.threadCPU[m.p][m.tid] = rest
		return
	}
	// The samples say otherwise, or the rest holds more than the silent task's count: the CPU of
	// threads the kernel neither sampled nor reported (see unsampledWarning), which stays with the
	// founder's main thread, where the warning looks for it.
	s.threadCPU[m.p][m.tid] = s.orphanRead
	s.orphanToTask = true
}

func absDiff(a, b int64) int64 {
	if a < b {
		return b - a
	}
	return a - b
}

// recordedWhole reports whether recording covered the whole life of image p: no pause (of p or of
// all), no stop.
func (s *Session) recordedWhole(p *proc) bool {
	return s.stoppedAt == 0 && !s.global.initPaused && len(s.global.toggles) == 0 &&
		p != nil && !p.initPaused && len(p.toggles) == 0
}

// orphanDrift is how far, relative to the larger, a thread's count and the period of its samples may
// differ and still agree in assignOrphanRead: the sampling timer's drift (up to 6% seen) and steal time,
// with the margin the analysis gives them (its maxWeight, 1.25).
const orphanDrift = 0.2

// countAgrees says whether count c fits samples whose periods add up to sampled: within orphanDrift,
// and two sampling intervals for the time after a thread's last samples.
func (s *Session) countAgrees(c, sampled int64) bool {
	d := c - sampled
	if d < 0 {
		d = -d
	}
	return float64(d) <= orphanDrift*float64(max(c, sampled))+2*float64(s.spec.Interval)
}

// writeThreadCounts records in each experiment the CPU time the kernel counted for its threads,
// where recording was not paused or stopped during the image's life (the counts cover the whole
// life; the samples only what was recorded).
// An image closed before the end (closeImage) got its counts then, and gets them again here, as
// scaleToRusage left them.
func (s *Session) writeThreadCounts() {
	for p := range s.threadCPU {
		s.writeThreadCount(p)
	}
}

// writeThreadCount records the CPU time the kernel counted for the threads of image p in its
// experiment, under the conditions writeThreadCounts says.
func (s *Session) writeThreadCount(p *proc) {
	threads := s.threadCPU[p]
	if s.cmd == nil || p.w == nil || threads == nil || !s.recordedWhole(p) {
		return
	}
	var tc []experiment.ThreadCount
	var total int64
	for tid := range threads {
		if ns := s.ownCount(p, tid); ns > 0 {
			tc = append(tc, experiment.ThreadCount{Tid: tid, CPUNS: ns, Reported: s.reported[p][tid]})
			total += ns
		}
	}
	sort.Slice(tc, func(i, j int) bool { return tc[i].Tid < tc[j].Tid })
	p.w.UpdateLog(func(l *experiment.Log) {
		l.ThreadCPU = tc
		if p != s.founder {
			l.CountedCPUNS = total
		}
	})
}

// afterCollection archives the experiment's load objects and sources (-a) and adds it to its
// group (-g).
func (s *Session) afterCollection() error {
	if s.archiveFull {
		fmt.Fprintf(s.stderr, "er collect: archiving stopped: the disk is full (run er archive on %s when there is space)\n", s.dir)
	} else if s.spec.Archive != "off" && s.writeErr == nil {
		full := false // a full disk is said once, not once per file
		var open func(string, *experiment.Archive) (*analysis.ObjectFile, error)
		if s.preopen != nil {
			open = s.preopen.OpenFile
		}
		_, err := erarchive.Experiment(s.dir, s.spec.Archive, func(w string) {
			if isDiskFull(w) {
				if full {
					return
				}
				full = true
			}
			fmt.Fprintf(s.stderr, "er collect: archive: %s\n", w)
		}, open)
		if err != nil && !(full && isDiskFull(err.Error())) {
			fmt.Fprintf(s.stderr, "er collect: archiving %s: %v (run er archive on it later)\n", s.dir, err)
		} else if full {
			fmt.Fprintf(s.stderr, "er collect: archiving stopped: the disk is full (run er archive on %s when there is space)\n", s.dir)
		}
	}
	if s.spec.Group != "" {
		g := s.spec.Group
		if !filepath.IsAbs(g) && s.spec.Dir != "" {
			g = filepath.Join(s.spec.Dir, g)
		}
		if err := expfiles.AppendGroup(g, s.dir); err != nil {
			return fmt.Errorf("adding the experiment to the group %s: %v", g, err)
		}
	}
	return nil
}

// preopenFiles starts opening the files of the load objects the unwinder went through, for the
// archiving after the collection (which reads them to find what was used): on the CPUs the target
// has left, while er drains the last samples and writes the experiment's files.
func (s *Session) preopenFiles() {
	if !erarchive.ReadsObjectFiles(s.spec.Archive) || s.stacks == nil {
		return
	}
	if s.preopen == nil {
		s.preopen = analysis.NewPreopener(min(4, max(1, runtime.NumCPU()-1)))
	}
	s.preopen.Open(s.stacks.cache.Paths())
}

// isDiskFull says whether an error's text is that of a full disk or quota.
func isDiskFull(text string) bool {
	return strings.Contains(text, syscall.ENOSPC.Error()) || strings.Contains(text, syscall.EDQUOT.Error())
}

// diskFull says whether err is that of a full disk or quota.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// writeArchives records each load object's symbols so that names survive a rebuilt or deleted binary.
func (s *Session) writeArchives() {
	// The experiment is opened once, and nothing beneath it is reached through a link: its directory
	// may be in another user's, who could swap in links (safedir).
	root, err := safedir.OpenExperiment(s.dir, true)
	if err != nil {
		s.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("load objects not archived: %v", err)})
		return
	}
	defer root.Close()
	for path := range s.usedPaths {
		var err error
		switch {
		case path == "[vdso]":
			var a *experiment.Archive
			if a, err = archive.VDSO(); err == nil {
				err = experiment.WriteArchiveTo(root, a)
			}
		case strings.HasPrefix(path, "/"):
			err = archive.WriteTo(root, path)
		default:
			continue
		}
		if err != nil {
			if diskFull(err) {
				s.archivingFull()
				return
			}
			if le := (*safedir.LinkError)(nil); errors.As(err, &le) { // nothing can be written: said once
				s.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("load objects not archived: %v", err)})
				return
			}
			s.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("cannot archive %s: %v", path, err)})
		}
	}
	if len(s.kernelPCs) > 0 && s.kernelSyms != nil {
		k := <-s.kernelSyms
		a, err := k.a, k.err
		addrs := make([]uint64, 0, 2*len(s.kernelPCs))
		for pc := range s.kernelPCs {
			addrs = append(addrs, pc, pc-1) // a return address can be just past its call
		}
		if a == nil { // cached: only the symbols the stacks hold are read
			a, err = archive.KernelAt(addrs)
		}
		if a != nil {
			a.Symbols = archive.UsedSymbols(a, addrs)
			if werr := experiment.WriteArchiveTo(root, a); diskFull(werr) {
				s.archivingFull()
				return
			} else if werr != nil && err == nil {
				err = werr
			}
		}
		if err != nil {
			s.w.Event(experiment.Event{Kind: "warning", Text: "kernel symbols: " + err.Error()})
		}
	}
}

// archivingFull stops archiving when the disk is full, with one warning: load objects and sources
// are not copied afterwards either.
func (s *Session) archivingFull() {
	s.archiveFull = true
	s.w.Event(experiment.Event{Kind: "warning", Text: "load objects and sources were not all archived: the disk was full (run er archive on the experiment when there is space)"})
}

// traceMappings adds to an image's map.xml the load objects that the collector library saw mapped
// and perf events did not report (all of them when clock profiling was off or by SIGPROF), so that
// they are archived.
func (s *Session) traceMappings(p *proc) {
	if s.lib == "" {
		return
	}
	maps, err := experiment.TraceMappings(p.w.Dir())
	if err != nil {
		p.w.Event(experiment.Event{Kind: "warning", Text: "reading the collector library's mappings: " + err.Error()})
		return
	}
	for _, m := range maps {
		if !p.mapped[mapKey{m.Start, m.Path}] {
			p.mapped[mapKey{m.Start, m.Path}] = true
			p.w.AddMapping(m)
			s.usedPaths[m.Path] = true
		}
	}
}
