// Package sigstart holds the signal dispositions er was started with: the signals its parent left
// ignored, which a program er starts must inherit as exec passes them on.
package sigstart

import "syscall"

// Ignored reports the signals that were ignored (SIG_IGN) when er started, before the Go runtime
// installed its handlers: a child that Go starts gets the default action for every signal the
// runtime handles, ignored or not, so er must ignore them itself before it starts the target
// (collect.inheritIgnored). Exact where er is built with cgo (recorded by a constructor that runs
// before the runtime starts); otherwise only SIGHUP and SIGINT, which the runtime leaves ignored
// (os/signal.Ignored).
func Ignored() []syscall.Signal {
	var out []syscall.Signal
	for s := syscall.Signal(1); s < 65; s++ {
		if ignoredAtStart(s) {
			out = append(out, s)
		}
	}
	return out
}
