package collect

import (
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"time"

	"er/internal/perfevent"
	"golang.org/x/sys/unix"
)

// Ring sizes. A CPU's ring holds half a second of samples of a thread that runs all the time, so that a
// reader kept off the CPUs for a while (by a target's hundreds of runnable threads, or a busy machine)
// loses nothing: at -p hi with 16 KiB stack copies some 17 MB a second come, 4 MiB lasted 240 ms, and
// 1,000 threads started at once lost up to 78% of their samples.
//
// The rings are allocated and cleared when they are mapped, before the target starts: 4 MiB a CPU took
// 2.6 to 3.3 ms of a short collection's fixed cost, 1 MiB 1.0 to 1.6 ms. So the least with stack
// copies is 1 MiB, which half a second at -p on (1.7 MB/s) needs.
const (
	ringSeconds      = 0.5 // what a ring holds, in seconds of one CPU's samples
	minStackRingPage = 256 // the least with stack copies: 1 MiB
	// minMicroRingPages is the least with microstates and stack copies: 2 MiB, for the context switches'
	// records and stack samples.
	minMicroRingPages = 512
	maxRingBytes      = 64 << 20  // the most for one CPU
	maxRingsBytes     = 256 << 20 // the most for all CPUs together
	sampleOverhead    = 1024      // a sample's bytes beside its stack copy: header, registers, call chain
)

// ringPages returns the data pages of each CPU's ring for clock samples every interval with stackBytes
// of stack copied: a power of 2, at least perfevent's default (256 pages with stack copies), enough for
// ringSeconds of samples where that fits in maxRingBytes a CPU and maxRingsBytes for all cpus.
func ringPages(interval time.Duration, stackBytes, cpus, pageSize int) int {
	least := perfevent.DefaultRingPages
	if stackBytes > 0 {
		least = minStackRingPage
	}
	if interval <= 0 || cpus <= 0 || pageSize <= 0 {
		return least
	}
	perSecond := float64(stackBytes+sampleOverhead) * float64(time.Second) / float64(interval)
	pages := pow2Ceil(uint64(perSecond*ringSeconds) / uint64(pageSize))
	most := pow2Floor(uint64(min(maxRingBytes, maxRingsBytes/cpus) / pageSize))
	return int(max(uint64(least), min(pages, most)))
}

func pow2Ceil(n uint64) uint64 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len64(n-1)
}

func pow2Floor(n uint64) uint64 {
	if n == 0 {
		return 1
	}
	return 1 << (bits.Len64(n) - 1)
}

// RingPagesEnv names the environment variable that sets the data pages of each CPU's ring buffer.
const RingPagesEnv = "ER_RING_PAGES"

// parseRingPages reads $ER_RING_PAGES: a power of 2 from 1 to 2^20.
func parseRingPages(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1<<20 || n&(n-1) != 0 {
		return 0, fmt.Errorf("expected the data pages of each CPU's ring buffer, a power of 2 from 1 to %d", 1<<20)
	}
	return n, nil
}

// lostRecords is what er knows of the records the kernel could not write into full rings: how many
// (the kernel's count, of every kind: samples, mapping, process and context-switch records), and of
// them the clock samples, where the clock's count tells (lostSamples).
type lostRecords struct {
	records  int64 // the kernel's count of records lost
	samples  int64 // clock samples among them; -1: not known
	recorded int64 // samples recorded (clock and counters)
}

// lostSamples estimates the clock samples among lost records: the kernel takes one each period of a
// thread's CPU time, so it took the clock's count over the period, less one for each thread (its
// last partial period) at most; those not received were lost. Less is claimed rather than more: the
// threads' partial periods are all taken off. It is not known (-1) without the clock's count, or
// where the kernel throttled sampling (it then took fewer than its count says).
func lostSamples(counted int64, period time.Duration, received, threads, lost, throttled int64) int64 {
	if counted <= 0 || period <= 0 || throttled > 0 {
		return -1
	}
	n := counted/period.Nanoseconds() - received - threads
	return max(0, min(n, lost))
}

// lostWarning says how many records the kernel could not write into full rings, how many of them
// were samples and what share of the samples, what that costs, and what to do. counters says the
// counters' samples carry their threads' counts, so that their events are all counted. A ring full
// of a burst of mapping records (a target that makes 50,000 mmaps) loses no samples: er said
// "43 samples lost (41.3% of the samples) ... the CPU time recorded falls short by as much" where
// every sample was there and the CPU time whole.
func lostWarning(l lostRecords, interval time.Duration, counters bool) string {
	text := fmt.Sprintf("%d records lost: the ring buffers were full when the kernel wrote them, because er could not read them fast enough", l.records)
	switch {
	case l.samples == 0:
		text += "; none of them a clock sample (the samples received are those the clock's count says the kernel took): " +
			"they were mapping, process or context-switch records, or counter samples; a stack through an object mapped then may not be unwound"
	case l.samples > 0:
		share := 100 * float64(l.samples) / float64(l.samples+l.recorded)
		// (By up to: a thread's other samples stand for some of it, where its count or context
		// switches tell its CPU time.)
		text += fmt.Sprintf("; %d samples lost (%.1f%% of the samples): the CPU time recorded falls short by up to as much", l.samples, share)
	default:
		share := 100 * float64(l.records) / float64(l.records+l.recorded)
		text += fmt.Sprintf("; %d samples lost at most (%.1f%% of the samples): the CPU time recorded falls short by up to as much", l.records, share)
	}
	if counters {
		text += " (the counters' events are all counted: each thread's at its next sample, whose stack they go to)"
	}
	advice := "give er a less busy machine, or larger rings ($" + RingPagesEnv + "=N data pages a CPU, a power of 2)"
	if interval < 10*time.Millisecond {
		advice = "collect with a longer interval (-p on), " + advice
	}
	return text + "; " + advice
}

// readerNice is the nice value of er's threads while they read the rings, where er may raise its
// priority.
const readerNice = -10

// raiseReaderPriority gives er's threads a higher priority than the target's, where er may (root,
// or RLIMIT_NICE). A ring
// holds half a second of samples, and on a busy machine (1,000 threads started at once beside two CPU
// hogs, on 2 CPUs) er at the target's priority was kept off the CPUs longer than that in 1 run of 3,
// and samples were lost. Every thread: the one that waits for the rings is not the one that reads
// them, and Go starts threads from its own (a new thread takes its creator's priority). Its work is
// the same; only when it runs changes. (It does not save the stacks of a 10,000-frame recursion taken
// in the last moments of a run, read from the live process after it exited: see docs/stacks.md.)
// The reading goroutine is not locked to its thread: every thread has the priority, and with
// GOMAXPROCS 1 a locked goroutine made each wakeup hand the processor from thread to thread (er's CPU
// on a 6 s single-threaded target at -p on: 1.26% locked, 1.02% not, medians of 4).
func raiseReaderPriority() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), readerNice)
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, readerNice)
		}
	}
}

// lostRecords is what er knows, at the end, of the records lost; counted is the clock's count (0:
// none).
func (s *Session) lostRecords(counted int64) lostRecords {
	threads := int64(1)
	for _, tids := range s.threadCPU {
		threads += int64(len(tids))
	}
	for _, tids := range s.exitedTasks {
		threads += int64(len(tids))
	}
	samples := int64(-1)
	if s.spec.Clock {
		samples = lostSamples(counted, s.spec.Interval, s.clock.received, threads, s.lost, s.throttled)
	}
	recorded := s.samples
	if s.hwc != nil {
		recorded += s.hwc.samples
	}
	return lostRecords{records: s.lost, samples: samples, recorded: recorded}
}
