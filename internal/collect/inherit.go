package collect

import (
	"os"
	"os/signal"
	"slices"
	"syscall"

	"er/internal/sigstart"
)

// stopSignals are the signals that ask er collect to stop: it stops the target (or detaches from it)
// and writes the experiment.
var stopSignals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// inheritIgnored keeps ignored, for the target, the signals that er's parent left ignored (nohup's
// SIGHUP, a shell's trap "" SIGNAL, a job control shell's SIGINT and SIGQUIT for a background job),
// as exec would have passed them on: Go starts a child with the default action for every signal
// its runtime handles, ignored or not, so er ignores them itself before the target starts, and
// a stop signal among them does not stop er either (nohup er collect ... runs on at a hangup, as
// its target does). Not SIGCHLD, whose SIG_IGN would have the kernel reap the target before er
// waits for it (the target then gets SIGCHLD's default action: the returned warning says so), nor
// keep, the -l and -y signals, which er relays to the target. It returns the stop signals to
// notify and a warning, or "".
func inheritIgnored(keep ...syscall.Signal) (stop []os.Signal, warning string) {
	ignored := sigstart.Ignored()
	for _, s := range ignored {
		switch {
		case s == syscall.SIGCHLD:
			warning = "SIGCHLD was ignored when er started; the target gets its default action (the children it does not wait for are not reaped for it)"
		case slices.Contains(keep, s), s == syscall.SIGKILL, s == syscall.SIGSTOP:
		default:
			signal.Ignore(s)
		}
	}
	for _, s := range stopSignals {
		if !slices.Contains(ignored, s) {
			stop = append(stop, s)
		}
	}
	return stop, warning
}
