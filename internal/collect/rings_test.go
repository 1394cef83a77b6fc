package collect

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRingPages(t *testing.T) {
	for _, tc := range []struct {
		interval   time.Duration
		stack, cpu int
		want       int
	}{
		{1009 * time.Microsecond, 16384, 2, 4096},  // -p hi: 17.3 MB/s, half a second in 16 MiB
		{10007 * time.Microsecond, 16384, 2, 256},  // -p on: 1.7 MB/s, half a second in 1 MiB
		{100003 * time.Microsecond, 16384, 2, 256}, // -p lo: the least with stack copies
		{1009 * time.Microsecond, 0, 2, 128},       // no stack copies: 1 MB/s, the default
		{100 * time.Microsecond, 0, 2, 2048},       // 10 MB/s without stacks: 5 MB, in 8 MiB
		{100 * time.Microsecond, 16384, 2, 16384},  // 173 MB/s: the most a CPU, 64 MiB
		{1009 * time.Microsecond, 16384, 64, 1024}, // 64 CPUs: 256 MiB over them, 4 MiB each
		{1009 * time.Microsecond, 16384, 32, 2048}, // 32 CPUs: 8 MiB each
		{1009 * time.Microsecond, 65528, 2, 8192},  // 64 KiB stacks at -p hi: 33 MB, in 32 MiB
		{0, 16384, 2, 256},
	} {
		if got := ringPages(tc.interval, tc.stack, tc.cpu, 4096); got != tc.want {
			t.Errorf("ringPages(%v, %d, %d CPUs) = %d pages, want %d", tc.interval, tc.stack, tc.cpu, got, tc.want)
		}
	}
}

func TestRaiseReaderPriority(t *testing.T) {
	// On a thread of its own, so that the test's other goroutines keep the usual priority.
	got := make(chan int, 1)
	go func() {
		raiseReaderPriority()
		defer runtime.UnlockOSThread()
		// getpriority returns 20-nice for a thread.
		p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		if err != nil {
			got <- 99
			return
		}
		got <- 20 - p
	}()
	nice := <-got
	switch {
	case os.Geteuid() == 0 && nice != readerNice:
		t.Errorf("as root, the reader's nice value is %d, want %d", nice, readerNice)
	case os.Geteuid() != 0 && nice > 0:
		t.Errorf("the reader's nice value is %d: lowered", nice)
	}
}
