//go:build cgo

package sigstart

import "syscall"

// wantIgnored is what TestIgnored's child reports: every signal its shell ignored.
var wantIgnored = []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGPIPE, syscall.SIGTERM}
