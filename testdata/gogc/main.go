// Command gogc allocates binary trees until it has used the CPU time given by -cpu (seconds), so that
// the garbage collector works on the system stack (runtime.systemstack) for a good share of it: a
// test program for unwinding through Go's stack switches (issue 12). It prints "cpu SECONDS", its own
// CPU time from getrusage.
package main

import (
	"flag"
	"fmt"
	"syscall"
)

type node struct {
	l, r *node
	v    [4]int
}

func build(d int) *node {
	if d == 0 {
		return &node{}
	}
	return &node{l: build(d - 1), r: build(d - 1)}
}

func cpu() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	limit := flag.Float64("cpu", 1, "CPU seconds to use")
	flag.Parse()
	n := 0
	for cpu() < *limit {
		if t := build(14); t.l != nil {
			n++
		}
	}
	fmt.Printf("trees %d\ncpu %.6f\n", n, cpu())
}
