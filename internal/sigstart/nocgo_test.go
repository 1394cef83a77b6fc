//go:build !cgo

package sigstart

import "syscall"

// wantIgnored is what TestIgnored's child reports without cgo: the signals the runtime leaves
// ignored, of those its shell ignored.
var wantIgnored = []syscall.Signal{syscall.SIGHUP}
