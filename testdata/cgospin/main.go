// cgospin: a Go program with cgo, as the SIGPROF clock fallback must profile it without harm: Go
// code and C code burn CPU in several goroutines (and so in several threads), and with -pprof FILE
// the program profiles itself with runtime/pprof at the same time (its own SIGPROF timers, which the
// collector library passes on). It prints the CPU time it measured of itself ("cpu SECONDS") and
// "done". Build: go build -o cgospin . (CGO_ENABLED=1)
package main

/*
#include <time.h>
static volatile unsigned long csink;
static void c_spin(long n) {
	for (long i = 0; i < n; i++)
		csink = csink * 6364136223846793005UL + (unsigned long)i;
}
static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
*/
import "C"

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
)

var sink uint64

//go:noinline
func goSpin(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + uint64(i)
	}
	return x
}

// deep recurses so that goroutine stacks grow (a signal handler running on a goroutine's stack
// overflows it).
//
//go:noinline
func deep(d, n int) uint64 {
	if d == 0 {
		C.c_spin(C.long(n))
		return goSpin(n)
	}
	return deep(d-1, n) + 1
}

func main() {
	prof := flag.String("pprof", "", "write a CPU profile of the program's own to this file")
	rounds := flag.Int("rounds", 400, "rounds of work per goroutine")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	start := float64(C.thread_cpu())
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local uint64
			for r := 0; r < *rounds; r++ {
				local += deep(r%50, 20000)
			}
			mu.Lock()
			sink += local
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("cpu %.4f\n", float64(C.thread_cpu())-start)
	fmt.Println("done")
}
