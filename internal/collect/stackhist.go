package collect

import (
	"math"
	"slices"

	"golang.org/x/sys/unix"

	"er/internal/perfabi"
	"er/internal/perfevent"
	"er/internal/unwind"
)

// What er saw of a thread's stack pointer over time, so that a stack completed from memory read at
// another time than the sample (the live process, or the thread's last stack image) is not completed
// where what er saw says that the thread had left the sampled frames.
//
// A deep stack's frames past its copy are read later than the sample: from the live process when er
// handles the sample, or from the thread's last stack image, read when an earlier sample was
// handled. Memory read then is the sample's only where the thread is still below the copy's end
// (or has come back to the same frames); a thread that returned past it leaves its old frames in
// memory below its stack pointer, and the unwind can go up through them into its frames of now,
// which look like a complete stack and are wrong (TestStacksReadAfterReturn under load: deeprec,
// read as it went to sleep in pause_scrubbed, /proc saying "running", gave a chain through usleep and
// pause_scrubbed to main, which then stood in, as its stack image, for 137 more samples). The records
// tell some of where the thread was: every sample of it (a clock, context-switch, fault or counter
// sample) has its user stack pointer, every context switch says whether it blocked, and each look at
// /proc/PID/task/TID/syscall gives the stack pointer of a thread that waits. So:
//   - the live process is read for a sample only where the last thing er saw of the thread before
//     the read (the look at /proc first, then the records since the sample) puts it below the copy's
//     end: not where it was seen above, nor where it blocked and is not seen waiting below now;
//     and where the first look did not tell (a runnable thread), a second look after the unwind must
//     not find it waiting above the copy's end;
//   - only such reads become the thread's stack image, and the image completes a sample only where
//     the thread did not block between the image's read and the sample.
//
// What it cannot see: a thread that moved between the last record er has of it and the read, without
// blocking (records come some milliseconds late); and a thread that returned past the copy's end and
// came back to the same depth through other frames (deeprec returns to main between its recursions
// and comes back through the same ones: its old frames are its new ones).

// spMark is one thing seen of a thread: its stack pointer at time t (perf's clock, ns), or that it
// blocked then (sp is blockedSP).
type spMark struct {
	t, sp uint64
}

// blockedSP marks a thread's switch off a CPU by blocking: it is above every copy's end.
const blockedSP = math.MaxUint64

// maxMarks bounds a thread's marks: beyond, the oldest are dropped, and a question about a time before
// the last dropped is answered "left" (not known).
const maxMarks = 1 << 14

// threadMarks is what er saw of one thread, in time order.
type threadMarks struct {
	marks   []spMark
	horizon uint64 // the time of the last mark dropped (maxMarks): nothing is known before it
}

// add records a mark, in its place in time order (the records of a batch come in time order, the
// looks at /proc at the time er reads them, which may be later than records not read yet).
func (tm *threadMarks) add(m spMark) {
	i := len(tm.marks)
	for i > 0 && tm.marks[i-1].t > m.t {
		i--
	}
	if i > 0 && tm.marks[i-1] == m {
		return // (the records after a batch's end are seen again with the next)
	}
	tm.marks = slices.Insert(tm.marks, i, m)
	if len(tm.marks) > maxMarks {
		tm.horizon = tm.marks[0].t
		tm.marks = tm.marks[1:]
	}
}

// forget drops the marks before t: no question asks about them any more.
func (tm *threadMarks) forget(t uint64) {
	i := 0
	for i < len(tm.marks) && tm.marks[i].t < t {
		i++
	}
	if i > 0 {
		tm.marks = append(tm.marks[:0], tm.marks[i:]...)
	}
}

// latest returns the last mark in (from, to] (from <= to); ok is false when there is none.
// (Before the horizon nothing is known: a mark of a block stands for it.)
func (tm *threadMarks) latest(from, to uint64) (m spMark, ok bool) {
	if tm == nil {
		return m, false
	}
	for i := len(tm.marks) - 1; i >= 0; i-- {
		if c := tm.marks[i]; c.t <= to {
			if c.t > from {
				return c, true
			}
			break
		}
	}
	if from < tm.horizon {
		return spMark{tm.horizon, blockedSP}, true
	}
	return m, false
}

// blockedIn reports whether the thread blocked between from and to (in either order), or whether
// nothing is known of that time.
func (tm *threadMarks) blockedIn(from, to uint64) bool {
	if from > to {
		from, to = to, from
	}
	if tm == nil {
		return false
	}
	if from < tm.horizon {
		return true
	}
	for _, m := range tm.marks {
		if m.t > to {
			break
		}
		if m.t > from && m.sp == blockedSP {
			return true
		}
	}
	return false
}

// marksOf returns the marks of thread tid of process pid, made when create is set.
func (st *stacker) marksOf(pid, tid uint32, create bool) *threadMarks {
	threads := st.marks[pid]
	if threads == nil {
		if !create {
			return nil
		}
		threads = map[uint32]*threadMarks{}
		st.marks[pid] = threads
	}
	tm := threads[tid]
	if tm == nil && create {
		tm = &threadMarks{}
		threads[tid] = tm
	}
	return tm
}

// note records what the records of a batch (in time order) say of their threads' stack pointers.
func (st *stacker) note(recs []perfabi.Record) {
	for _, r := range recs {
		switch r := r.(type) {
		case *perfabi.Sample:
			if r.RegsABI != unix.PERF_SAMPLE_REGS_ABI_64 || len(r.Regs) == 0 {
				continue
			}
			regs := unwind.RegsFromSample(r.Regs, perfevent.RegsAMD64All)
			st.marksOf(r.Pid, r.Tid, true).add(spMark{r.Time, regs.SP()})
		case *perfabi.Switch:
			if r.Out && !r.Preempt {
				st.marksOf(r.Pid, r.Tid, true).add(spMark{r.Time, blockedSP})
			}
		}
	}
}

// noteWaiting records that thread tid of process pid was seen waiting at stack pointer sp at time t.
func (st *stacker) noteWaiting(pid, tid uint32, t, sp uint64) {
	st.marksOf(pid, tid, true).add(spMark{t, sp})
}

// prune forgets the marks that no question will ask about: those before upTo (the samples to come
// are later), but for a thread's stack image, read at its own time.
func (st *stacker) prune(upTo uint64) {
	for pid, threads := range st.marks {
		for tid, tm := range threads {
			from := upTo
			if img := st.images[pid][tid]; img != nil {
				from = min(from, img.readAt)
			}
			if tm.forget(from); len(tm.marks) == 0 && tm.horizon <= from {
				delete(threads, tid)
			}
		}
		if len(threads) == 0 {
			delete(st.marks, pid)
		}
	}
}
