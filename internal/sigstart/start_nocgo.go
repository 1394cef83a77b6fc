//go:build !cgo

package sigstart

import (
	"os/signal"
	"syscall"
)

// Without cgo nothing runs before the Go runtime: os/signal knows only the signals the runtime
// leaves ignored.
func ignoredAtStart(s syscall.Signal) bool {
	return (s == syscall.SIGHUP || s == syscall.SIGINT) && signal.Ignored(s)
}

// Exact says that Ignored reports every signal ignored at start: here only SIGHUP and SIGINT.
const Exact = false
