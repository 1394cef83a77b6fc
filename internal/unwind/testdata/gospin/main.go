// Command gospin spins in main.leaf, called through main.a, main.b and main.c, for the CPU
// seconds given as its argument: a Go program for the unwinder's tests.
package main

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

var sink uint64

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:noinline
func leaf(until time.Duration) uint64 {
	x := uint64(0)
	for cpu() < until {
		for i := range uint64(200000) {
			x += i * sink
		}
	}
	return x
}

//go:noinline
func c(until time.Duration) uint64 { return leaf(until) + 1 }

//go:noinline
func b(until time.Duration) uint64 { return c(until) * 3 }

//go:noinline
func a(until time.Duration) uint64 { return b(until) ^ 5 }

func main() {
	secs := 0.3
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	sink = a(cpu() + time.Duration(secs*1e9))
}
