package experiment

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitText says how the experiment's target ended, for er print's header ("Target " + it) and the
// Analyzer: "exited with status 3", "terminated by signal 6 (SIGABRT)", and for what er cannot know
// or what did not end, says so: a process attached to (-P) that exited or that er detached from, a
// descendant (whose parent, not er, collects its status), an image that exec replaced.
func (l *Log) ExitText() string {
	switch {
	case l.ExitSignal != 0:
		return fmt.Sprintf("terminated by signal %d (%s)", l.ExitSignal, SignalName(l.ExitSignal))
	case l.EndTime == 0 && !l.Exited:
		return "exit not recorded" // the header says why: the experiment did not end
	case l.Attached && l.Exited:
		return "exited; its exit status is not known (er collect -P attached to it: its parent collects the status)"
	case l.Attached:
		return "detached at the end of recording; the process ran on"
	case l.Lineage != "" && l.Exited:
		return "exited; its exit status is not known (a descendant: its parent collects the status)"
	case l.Lineage != "" && l.execEnded():
		return "replaced by exec: the process ran on as another program"
	case !l.Exited:
		return "still running when recording ended"
	}
	return "exited with status " + StatusText(l.ExitStatus)
}

// execEnded reports whether the image ended by exec (the collector's exit event says so).
func (l *Log) execEnded() bool {
	for _, e := range l.Events {
		if e.Kind == "exit" && e.Text == "exec started a new image" {
			return true
		}
	}
	return false
}

// StatusText is an exit status, with what a status above 128 most often means: "134 (128+6: how a
// shell reports a command that signal 6 (SIGABRT) killed)". er collect's own status for a target
// killed by a signal is 128+N too, as a shell's.
func StatusText(code int) string {
	if sig := code - 128; sig > 0 && sig < 65 && unix.SignalName(syscall.Signal(sig)) != "" {
		return fmt.Sprintf("%d (128+%d: how a shell reports a command that signal %d (%s) killed)", code, sig, sig, SignalName(sig))
	}
	return fmt.Sprint(code)
}

// SignalName is the name of signal n, such as SIGABRT, or "signal n" for one without a name.
func SignalName(n int) string {
	if s := unix.SignalName(syscall.Signal(n)); s != "" {
		return s
	}
	return fmt.Sprintf("signal %d", n)
}

// RecordedDuration is how long data were recorded, ns: until -t or -L stopped recording (or a write
// failed) while the target ran on, else until the end of collection; 0 while running.
func (l *Log) RecordedDuration() int64 {
	if l.StopTime > 0 && (l.StopTime < l.EndTime || l.EndTime == 0) {
		return l.StopTime
	}
	return l.EndTime
}
