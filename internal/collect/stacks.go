package collect

import (
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"
	"er/internal/unwind"
)

// stacker turns samples into call stacks: the kernel frames of the kernel's call chain, then the user frames
// found by DWARF unwinding of the sampled registers and stack copy (or, without a copy, the kernel's
// frame-pointer chain). An unwind that stops early ends in a pseudo-frame (experiment.FrameTruncated or
// FrameUnwindFailed), so the analysis shows it.
//
// It keeps, per process, the executable mappings with their call-frame information (unwind.Space).
type stacker struct {
	cache      unwind.Cache
	spaces     map[uint32]*unwind.Space
	live       map[uint32]func(addr uint64, b []byte) bool
	rec        imageRecorder
	recRead    func(addr uint64, b []byte) bool   // rec.read
	images     map[uint32]map[uint32]*stackImage  // per process and thread, its last deep stack read live
	imageBytes int64                              // the bytes of all images
	marks      map[uint32]map[uint32]*threadMarks // per process and thread, what er saw of its stack pointer (stackhist.go)
	clock      func() uint64                      // perf's clock now (CLOCK_MONOTONIC, ns)
	unw        unwind.Unwinder
	copy       unwind.StackCopy
	frames     []uint64

	tally     unwind.Tally // how the unwinds ended, for the log
	fromImage int64        // complete stacks continued from a stack image (stackImage)
	refused   int64        // stacks whose completion from memory read later was refused: the thread had moved (stackhist.go)
	// liveFailed counts the reads of live processes' stacks that failed for another reason than the
	// address or the process's exit, by error (unwind.LiveReaderNoting); said in the experiment.
	liveFailed map[error]int64
	deep       bool // a stack went on past its copy, or was cut at its end
	// interp is each JVM's interpreter code [lo, hi) (the agent's ER_MSG_JAVA_INTERP): the method
	// and bytecode pointer of its frames are read from their stack (javaInterpData).
	interp     map[uint32][2]uint64
	interpNow  [2]uint64 // the sample's process's, while it is unwound
	interpData func(pc, bp uint64, mem unwind.Memory, frames []uint64) []uint64
}

// setInterp says that process pid's JVM interprets in [lo, hi).
func (st *stacker) setInterp(pid uint32, lo, hi uint64) {
	if st.interp == nil {
		st.interp = map[uint32][2]uint64{}
	}
	st.interp[pid] = [2]uint64{lo, hi}
}

// HotSpot's x86-64 interpreter frame: below its saved frame pointer, the words of the method it runs
// (frame::interpreter_frame_method_offset, -3) and of its bytecode pointer (_bcp_offset, -8).
const (
	interpMethodSlot = 3 * 8
	interpBCPSlot    = 8 * 8
)

// javaInterpData is the unwinder's FrameData while a JVM's sample is unwound: after a frame in its
// interpreter, the method it interprets and the bytecode there, as two frames the reader turns into
// the Java method (experiment.JavaInterpMethod, JavaInterpBCP).
func (st *stacker) javaInterpData(pc, bp uint64, mem unwind.Memory, frames []uint64) []uint64 {
	if pc < st.interpNow[0] || pc >= st.interpNow[1] || bp < interpBCPSlot {
		return frames
	}
	m, ok1 := mem.ReadU64(bp - interpMethodSlot)
	bcp, ok2 := mem.ReadU64(bp - interpBCPSlot)
	if !ok1 || !ok2 || m == 0 || m >= 1<<47 {
		return frames
	}
	if bcp >= 1<<47 {
		bcp = 0
	}
	return append(frames, experiment.JavaInterpMethod(m), experiment.JavaInterpBCP(bcp))
}

func newStacker() *stacker {
	st := &stacker{spaces: map[uint32]*unwind.Space{}, live: map[uint32]func(uint64, []byte) bool{},
		images: map[uint32]map[uint32]*stackImage{}, marks: map[uint32]map[uint32]*threadMarks{},
		clock: func() uint64 { return uint64(monotonicNS()) }}
	st.rec.seen = func(pid, tid uint32, sp uint64) { st.noteWaiting(pid, tid, st.clock(), sp) }
	return st
}

// addMapping adds an executable mapping to its process's space. A load object's CFI is read when a
// stack first needs it (unwind.NewLazyModule), past the page cache: the objects no stack goes
// through are not read at all while the target runs. Load objects without usable CFI get a module
// without a table: the unwinder then tries frame pointers there.
func (st *stacker) addMapping(m experiment.Mapping) {
	if m.Pid == 0 { // the kernel
		return
	}
	sp := st.spaces[m.Pid]
	if sp == nil {
		sp = &unwind.Space{}
		st.spaces[m.Pid] = sp
	}
	if m.Path == "[vdso]" || strings.HasPrefix(m.Path, "/") {
		sp.Add(unwind.NewLazyModule(m.Start, m.End, m.Offset, m.Path, &st.cache))
		return
	}
	sp.Add(unwind.NewModule(m.Start, m.End, m.Offset, m.Path, nil))
}

// fork gives a new process a copy of its parent's space (none where the parent has none), in O(1).
func (st *stacker) fork(parent, child uint32) {
	if sp := st.spaces[parent]; sp != nil {
		st.spaces[child] = sp.Clone()
		return
	}
	delete(st.spaces, child)
}

// gone forgets a process that exited or replaced its image with exec.
func (st *stacker) gone(pid uint32) {
	delete(st.spaces, pid)
	delete(st.interp, pid)
	delete(st.live, pid)
	for _, img := range st.images[pid] {
		st.imageBytes -= int64(cap(img.data))
	}
	delete(st.images, pid)
	delete(st.marks, pid)
}

// keepImage keeps img as thread tid's last stack image, within the bound of all images.
func (st *stacker) keepImage(pid, tid uint32, img *stackImage) {
	threads := st.images[pid]
	if threads == nil {
		threads = map[uint32]*stackImage{}
		st.images[pid] = threads
	}
	if old := threads[tid]; old != nil {
		st.imageBytes -= int64(cap(old.data))
		delete(threads, tid)
		st.rec.release(old)
	}
	if st.imageBytes+int64(cap(img.data)) > maxStackImages {
		st.rec.release(img)
		return
	}
	threads[tid] = img
	st.imageBytes += int64(cap(img.data))
}

// stack appends the call stack of sample r, leaf first, to out.
func (st *stacker) stack(r *perfabi.Sample, out experiment.Stack) experiment.Stack {
	kernel, user := perfabi.SplitCallchain(r.Callchain)
	out = append(out, kernel...)
	sp := st.spaces[r.Pid]
	if r.RegsABI != unix.PERF_SAMPLE_REGS_ABI_64 || len(r.Regs) == 0 || sp == nil {
		// No user registers (a kernel thread, a 32-bit task), no stack copy asked for, or a process
		// whose mappings are unknown: the kernel's frame-pointer chain is all there is.
		out = append(out, user...)
		if len(out) == 0 {
			out = append(out, r.IP)
		}
		return out
	}
	regs := unwind.RegsFromSample(r.Regs, perfevent.RegsAMD64All)
	end := regs.SP() + uint64(len(r.Stack))
	now := st.clock()
	at := r.Time
	if at == 0 {
		at = now // a stack read from outside (grabStack): its copy is of now
	}
	// The last the records say of the thread between the sample and now (stackhist.go).
	last, seen := st.marksOf(r.Pid, r.Tid, false).latest(at, now)
	above, blocked := seen && last.sp != blockedSP && last.sp > end, seen && last.sp == blockedSP
	st.copy.Reset(regs.SP(), r.Stack)
	live := st.live[r.Pid]
	if live == nil {
		live = unwind.LiveReaderNoting(int(r.Pid), st.noteLiveFailed)
		st.live[r.Pid] = live
	}
	st.rec.begin(live, regs.SP(), r.Stack, r.Pid, r.Tid)
	st.rec.left, st.rec.blocked = above, blocked
	if st.recRead == nil {
		st.recRead = st.rec.read
	}
	st.copy.Live = st.recRead
	st.unw.Modules = sp.Find
	st.unw.FPChain = user
	st.unw.FrameData = nil
	if in, ok := st.interp[r.Pid]; ok {
		st.interpNow = in
		if st.interpData == nil {
			st.interpData = st.javaInterpData
		}
		st.unw.FrameData = st.interpData
	}
	frames, status, reason := st.unw.Unwind(regs, &st.copy, st.frames[:0])
	usedLive := st.copy.UsedLive()
	st.deep = st.deep || usedLive || status == unwind.Truncated
	liveDone := status == unwind.Complete && usedLive
	if liveDone && !st.rec.stillThere() {
		liveDone = false
		st.refused++
	} else if st.rec.refused {
		st.refused++
	}
	if liveDone {
		if img := st.rec.take(now); img != nil {
			st.keepImage(r.Pid, r.Tid, img)
		}
	}
	if !liveDone && (status != unwind.Complete || usedLive) {
		tried, done := false, false
		if img := st.images[r.Pid][r.Tid]; img != nil && (usedLive || status == unwind.Truncated) && st.imageFits(r.Pid, r.Tid, img, at) {
			// The live process no longer holds the stack of the sample: it has exited (a reader
			// late on a busy machine), or the thread has since returned into the frames past the
			// copy (deeprec back in main between two recursions, preempted in its clock_gettime
			// call). The thread's last stack read live stands in for it, on the same terms: the
			// copy's outermost bytes unchanged there, a chain to the outermost frame, and nothing
			// seen of the thread between the image's read and the sample that says it had moved.
			st.copy.Reset(regs.SP(), r.Stack)
			st.copy.Live = img.read
			tried = true
			frames, status, reason = st.unw.Unwind(regs, &st.copy, frames[:0])
			if done = status == unwind.Complete && st.copy.UsedLive(); done {
				st.fromImage++
			}
		}
		if !done && (usedLive || tried) {
			// Frames read from the live process (or an image) are trusted only when they lead to
			// the outermost frame and the thread is not known to have moved: a chain that breaks
			// off there means the process had left the stack it had at the sample (it returned past
			// the copied part and called something else). Keep the copied part only.
			st.copy.Reset(regs.SP(), r.Stack)
			st.copy.Live = nil
			frames, status, reason = st.unw.Unwind(regs, &st.copy, frames[:0])
		}
	}
	st.frames = frames
	out = append(out, frames...)
	st.tally.Add(status, reason)
	switch status {
	case unwind.Complete:
	case unwind.Truncated:
		out = append(out, experiment.FrameTruncated)
	default:
		out = append(out, experiment.FrameUnwindFailed)
	}
	return out
}

// noteLiveFailed counts a read of a live process's stack that failed with err.
func (st *stacker) noteLiveFailed(err error) {
	if st.liveFailed == nil {
		st.liveFailed = map[error]int64{}
	}
	st.liveFailed[err]++
}

// imageFits says whether thread tid's stack image img may stand in for the frames past the copy of
// its sample at time at: the thread did not block between the image's read and the sample.
func (st *stacker) imageFits(pid, tid uint32, img *stackImage, at uint64) bool {
	return !st.marksOf(pid, tid, false).blockedIn(img.readAt, at)
}

// recordTime is the time of a perf record, for putting the records of several rings in order.
func recordTime(r perfabi.Record) uint64 {
	switch r := r.(type) {
	case *perfabi.Sample:
		return r.Time
	case *perfabi.Mmap:
		return r.Time
	case *perfabi.Comm:
		return r.Time
	case *perfabi.Fork:
		return r.Time
	case *perfabi.Exit:
		return r.Time
	case *perfabi.Lost:
		return r.Time
	case *perfabi.Read:
		return r.Time
	case *perfabi.Throttle:
		return r.Time
	case *perfabi.Switch:
		return r.Time
	}
	return 0
}

// batch holds copies of the records of one Drain, so that they can be handled in time order once every
// ring was read: a sample on one CPU may need a mapping recorded on another.
type batch struct {
	recs     []perfabi.Record
	bytes    []byte           // backing store of the copied stacks
	words    []uint64         // backing store of the copied call chains and registers
	samples  []perfabi.Sample // backing store of the copied samples
	switches []perfabi.Switch // and context-switch records (two at every switch: not one allocation each)
}

func (b *batch) reset() {
	clear(b.recs)
	b.recs, b.bytes, b.words = b.recs[:0], b.bytes[:0], b.words[:0]
	b.samples, b.switches = b.samples[:0], b.switches[:0]
}

// reserve sizes the stores for the records of bytes of rings: read while a burst fills them, the
// stores grew by doubling, and making (and clearing) a new store of tens of megabytes held a drain for
// milliseconds, time in which the rings filled.
func (b *batch) reserve(bytes int) {
	b.bytes = make([]byte, 0, bytes)
	b.words = make([]uint64, 0, bytes/64)
	b.samples = make([]perfabi.Sample, 0, bytes/4096)
	b.recs = make([]perfabi.Record, 0, bytes/4096)
}

// add copies r, which is only valid during the Drain callback.
func (b *batch) add(r perfabi.Record) {
	switch r := r.(type) {
	case *perfabi.Sample:
		c := keepOne(&b.samples, r, 1024)
		c.Callchain = b.keepWords(r.Callchain)
		c.Regs = b.keepWords(r.Regs)
		c.Siblings = b.keepWords(r.Siblings)
		c.Stack = b.keepBytes(r.Stack[:min(uint64(len(r.Stack)), r.StackDynSize)])
		c.More = nil // (the decoder reuses it: the counts are kept in Count and Siblings)
		b.recs = append(b.recs, c)
	case *perfabi.Mmap:
		c := *r
		c.BuildID = append([]byte(nil), r.BuildID...)
		b.recs = append(b.recs, &c)
	case *perfabi.Comm:
		b.recs = append(b.recs, clone(r))
	case *perfabi.Fork:
		b.recs = append(b.recs, clone(r))
	case *perfabi.Exit:
		b.recs = append(b.recs, clone(r))
	case *perfabi.Lost:
		b.recs = append(b.recs, clone(r))
	case *perfabi.Read:
		c := clone(r)
		c.Values = nil // (the decoder reuses them: the count is kept in Value)
		b.recs = append(b.recs, c)
	case *perfabi.Throttle:
		b.recs = append(b.recs, clone(r))
	case *perfabi.Switch:
		b.recs = append(b.recs, keepOne(&b.switches, r, 4096))
	}
}

// clone copies a record that holds no slices.
func clone[T any](r *T) *T {
	c := *r
	return &c
}

// keepOne copies *r to the end of *store and returns the copy, as keep does.
func keepOne[T any](store *[]T, r *T, minCap int) *T {
	s := *store
	if len(s) == cap(s) {
		s = make([]T, 0, max(2*cap(s), minCap))
	}
	s = append(s, *r)
	*store = s
	return &s[len(s)-1]
}

// keepWords and keepBytes copy a slice into the batch's store (see keep).
func (b *batch) keepWords(w []uint64) []uint64 { return keep(&b.words, w, 4096) }
func (b *batch) keepBytes(p []byte) []byte     { return keep(&b.bytes, p, 1<<20) }

// keep copies p to the end of *store and returns the copy. When the store is full a new, larger one
// replaces it: earlier copies keep pointing into the old array, which stays alive through them, so no
// copy is ever overwritten before the store is reset.
func keep[T any](store *[]T, p []T, minCap int) []T {
	if len(p) == 0 {
		return nil
	}
	s := *store
	if cap(s)-len(s) < len(p) {
		s = make([]T, 0, max(2*cap(s), len(p), minCap))
	}
	n := len(s)
	s = append(s, p...)
	*store = s
	return s[n:len(s):len(s)]
}

// sorted returns the records in time order (stable: records of one ring keep their order).
func (b *batch) sorted() []perfabi.Record {
	sort.SliceStable(b.recs, func(i, j int) bool { return recordTime(b.recs[i]) < recordTime(b.recs[j]) })
	return b.recs
}
