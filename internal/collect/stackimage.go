package collect

import (
	"os"
	"strconv"
	"strings"
)

// A stackImage is what the unwind of a thread's last complete deep stack read of it: the sample's
// stack copy and, past its end, the live memory the unwind went on through, as one range of bytes.
// It stands in for the live process when a later sample of the thread is read after the process has
// exited (a reader late on a busy machine): the unwind goes on through the image where the later
// copy's outermost bytes are those the image holds at the same addresses (the StackCopy's own
// check, as for live memory), and the result is kept only if it reaches the outermost frame.
type stackImage struct {
	lo     uint64 // the address of data[0]
	data   []byte
	readAt uint64 // when it was read (perf's clock, ns)
}

// maxStackImage bounds an image, and maxStackImages all the images kept: deeper stacks, and
// threads beyond, are not kept.
const (
	maxStackImage  = 8 << 20
	maxStackImages = 64 << 20
)

// read serves reads inside the image, as unwind.StackCopy.Live.
func (im *stackImage) read(addr uint64, b []byte) bool {
	if addr < im.lo || addr-im.lo > uint64(len(im.data)) || uint64(len(im.data))-(addr-im.lo) < uint64(len(b)) {
		return false
	}
	copy(b, im.data[addr-im.lo:])
	return true
}

// add puts bytes read at addr into the image where they touch or overlap its range; false when
// they do not (or the image would grow too large), and then the image stays as it was.
func (im *stackImage) add(addr uint64, b []byte) bool {
	end := im.lo + uint64(len(im.data))
	if addr > end || addr+uint64(len(b)) < im.lo || addr < im.lo {
		return false
	}
	need := addr - im.lo + uint64(len(b))
	if need > maxStackImage {
		return false
	}
	if need > uint64(len(im.data)) {
		im.data = append(im.data, make([]byte, need-uint64(len(im.data)))...)
	}
	copy(im.data[addr-im.lo:], b)
	return true
}

// imageRecorder reads the live process for a StackCopy and keeps what it read in an image: the
// sample's copy first (taken lazily, at the first live read), then each live read that extends it.
type imageRecorder struct {
	live     func(addr uint64, b []byte) bool
	pid, tid uint32    // the sampled thread, whose stack pointer now threadSP reads (0: none)
	spBuf    [256]byte // for threadSP
	// threadSP, when set, stands for threadSP (tests).
	threadSP func() (uint64, bool)
	// seen is told each stack pointer threadSP gives (the stacker's marks).
	seen func(pid, tid uint32, sp uint64)
	// left and blocked are the last the marks say of the thread between the sample and now: its
	// stack pointer was above the copy's end; it blocked.
	left, blocked bool
	asked         bool // threadSP was asked for this sample
	spKnown       bool // and told it
	refused       bool // the live process is not read: the thread has left the stack past the copy, or may have
	sp            uint64
	copied        []byte
	img           *stackImage // being built; nil until the first live read
	spare         *stackImage // a buffer for the next image
	partial       bool        // a read did not extend the image: it is not whole
}

// begin starts recording the unwind of a sample whose stack copy is data at sp.
func (r *imageRecorder) begin(live func(uint64, []byte) bool, sp uint64, data []byte, pid, tid uint32) {
	if r.img != nil && r.spare == nil {
		r.spare = r.img
	}
	r.live, r.sp, r.copied, r.img, r.partial = live, sp, data, nil, false
	r.asked, r.spKnown, r.refused, r.pid, r.tid = false, false, false, pid, tid
	r.left, r.blocked = false, false
}

// currentSP is the sampled thread's stack pointer now, where the kernel can tell it.
func (r *imageRecorder) currentSP() (uint64, bool) {
	var sp uint64
	var ok bool
	switch {
	case r.threadSP != nil:
		sp, ok = r.threadSP()
	case r.pid != 0:
		sp, ok = threadSP(r.pid, r.tid, r.spBuf[:])
	}
	if ok && r.seen != nil {
		r.seen(r.pid, r.tid, sp)
	}
	return sp, ok
}

// end is the address just past the copy.
func (r *imageRecorder) end() uint64 { return r.sp + uint64(len(r.copied)) }

// read is the StackCopy's Live function while recording.
// The live process is not read at all when its thread's stack pointer is now above the end of the
// copy: the thread has returned into the frames past it, and what is there now is not what was
// there at the sample (deeprec asleep in main between two recursions, its locals over the
// recursion's outer frames, gave stacks of 9,400 frames that looked complete: a chain through the
// thread's current frames). Nor, where /proc does not tell, when the last the records say of the
// thread since the sample is that it was above, or blocked (stackhist.go). The kernel
// tells the stack pointer of a thread that waits (/proc/PID/task/TID/syscall); of a runnable one
// (running, preempted, or woken and not yet run) it does not.
func (r *imageRecorder) read(addr uint64, b []byte) bool {
	if !r.asked {
		r.asked = true
		// What the look at /proc says is the latest; else the last the records say.
		sp, ok := r.currentSP()
		r.spKnown = ok
		r.refused = ok && sp > r.end() || !ok && (r.left || r.blocked)
	}
	if r.refused || !r.live(addr, b) {
		return false
	}
	if r.img == nil {
		r.img = r.spare
		r.spare = nil
		if r.img == nil {
			r.img = &stackImage{}
		}
		r.img.lo = r.sp
		r.img.data = append(r.img.data[:0], r.copied...)
	}
	if !r.img.add(addr, b) {
		r.partial = true
	}
	return true
}

// stillThere looks again, after an unwind that went through live memory, at a thread whose stack
// pointer the first look did not get: false when it is now seen waiting above the copy's end (it was
// on its way there while er read: deeprec going to sleep in pause_scrubbed, whose stack the kernel
// gave 0.5 ms after a look that said "running").
func (r *imageRecorder) stillThere() bool {
	if !r.asked || r.refused || r.spKnown {
		return !r.refused
	}
	sp, ok := r.currentSP()
	return !ok || sp <= r.end()
}

// take returns the image recorded by a complete unwind that read live memory, read at time now,
// which then belongs to the caller; nil when there is none.
func (r *imageRecorder) take(now uint64) *stackImage {
	img := r.img
	if img == nil || r.partial {
		return nil
	}
	r.img = nil
	img.readAt = now
	return img
}

// release gives an image that is no longer wanted back as the next image's buffer.
func (r *imageRecorder) release(img *stackImage) {
	if img != nil && r.spare == nil {
		r.spare = img
	}
}

// threadSP reads the stack pointer of thread tid of process pid from /proc/PID/task/TID/syscall,
// which gives it for a thread that is blocked, in a system call or not ("NR ARGS... SP PC", or "-1
// SP PC"); false for a running thread ("running") or one that is gone.
func threadSP(pid, tid uint32, buf []byte) (uint64, bool) {
	f, err := os.Open(procPath(pid, tid, "syscall"))
	if err != nil {
		return 0, false
	}
	n, _ := f.Read(buf)
	f.Close()
	return parseSyscallSP(buf[:n])
}

// parseSyscallSP parses the stack pointer out of a /proc/PID/task/TID/syscall line.
func parseSyscallSP(b []byte) (uint64, bool) {
	f := strings.Fields(string(b))
	if len(f) < 3 || f[0] == "running" {
		return 0, false
	}
	sp, err := strconv.ParseUint(strings.TrimPrefix(f[len(f)-2], "0x"), 16, 64)
	return sp, err == nil && sp != 0
}
