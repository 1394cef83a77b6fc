package collect

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"er/internal/experiment"
	"er/internal/perfevent"
)

// attach records a running process (-P) and all its threads, and the processes it creates, until
// it exits, -t expires, or er is interrupted; then er lets go of it, and it runs on unharmed.
// Only perf events are used: the collector library cannot be loaded into a running process, so
// tracing (-H, -s, -i) is refused.
func (s *Session) attach(pid int) error {
	if s.spec.Tracing() {
		return fmt.Errorf("%w: -P attaches to a running process: heap, synchronization and I/O tracing (-H, -s, -i) need the collector library loaded when the program starts; only clock profiling is possible", ErrUsage)
	}
	if pid == os.Getpid() {
		return fmt.Errorf("%w: -P %d is er itself", ErrUsage, pid)
	}
	cmdline, err := os.ReadFile(procPath(uint32(pid), 0, "cmdline"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("-P %d: no such process", pid)
		}
		return fmt.Errorf("-P %d: %v", pid, err)
	}
	if len(cmdline) == 0 {
		return fmt.Errorf("-P %d: a kernel thread or a zombie process cannot be profiled", pid)
	}
	if err := perfevent.ClockAvailable(); err != nil {
		return fmt.Errorf("-P needs perf events, which are not available here: %v", err)
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	exe, err := os.Readlink(procPath(uint32(pid), 0, "exe"))
	if err != nil {
		return fmt.Errorf("-P %d: cannot read the process's executable (%v): it belongs to another user, or ptrace access is restricted (/proc/sys/kernel/yama/ptrace_scope)", pid, err)
	}
	sigs := make(chan os.Signal, 4)
	if stop, _ := inheritIgnored(s.spec.SampleSignal, s.spec.PauseSignal); len(stop) > 0 {
		signal.Notify(sigs, stop...)
	}
	defer signal.Stop(sigs)
	ctlSigs := s.notifyControlSignals()
	defer signal.Stop(ctlSigs)

	s.pid = pid
	s.startNS = monotonicNS()
	s.spec.Target = args
	if err := s.create(exe); err != nil {
		return err
	}
	if err := s.initFounder(exe); err != nil {
		return err
	}
	s.founder.args = args
	s.w.UpdateLog(func(l *experiment.Log) { l.Attached = true })
	// The target runs on while er makes the experiment and reads its mappings (a millisecond, more on
	// a busy machine): recording, and the experiment's time, start when the events are enabled
	// (openEvents sets the start then).
	if err := s.openEvents(); err != nil {
		_ = s.w.Close()
		_ = os.RemoveAll(s.dir)
		return err
	}
	s.w.Event(experiment.Event{Kind: "start", Pid: uint32(pid), Text: "attached to " + strings.Join(args, " ")})
	s.samplePoint("start")
	if err := s.w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(s.stderr, "er collect: attached to process %d (%s); recording until it exits%s or Ctrl-C\n", pid, filepath.Base(exe),
		map[bool]string{true: fmt.Sprintf(", %v pass", s.spec.Duration), false: ""}[s.spec.Duration > 0])
	return s.loop(nil, sigs, ctlSigs)
}

// addThreads opens the events for every thread of the attached process but the first (the events
// OpenTask opened follow only the threads created later), until no new thread appears.
func (s *Session) addThreads(g *perfevent.Group) error {
	done := map[int]bool{s.pid: true}
	for round := 0; round < 100; round++ {
		ents, err := os.ReadDir(procPath(uint32(s.pid), 0, "task"))
		if err != nil {
			return fmt.Errorf("-P %d: reading its threads: %v", s.pid, err)
		}
		added := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid] = true
			if err := g.AddTask(tid); err != nil {
				if _, serr := os.Stat(fmt.Sprintf("/proc/%d/task/%d", s.pid, tid)); serr != nil {
					continue // the thread exited meanwhile
				}
				return err
			}
			added++
		}
		if added == 0 {
			return nil
		}
	}
	return nil
}

// startAt sets the experiment's start (perf clock ns) of an attached process.
func (s *Session) startAt(ns int64) {
	s.startNS = ns
	s.baseLog.StartPerfNS = ns
	s.w.UpdateLog(func(l *experiment.Log) { l.StartPerfNS = ns })
}
