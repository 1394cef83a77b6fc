package collect

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"
)

// A constructed deep stack, for the stacker: a recursion of recDepth frames of 32 bytes under main,
// in code without CFI (the unwinder follows the frame pointers), and the same memory after the
// thread returned to main and went to sleep in pause (a 16 KiB buffer over the recursion's outer
// frames, and usleep's frame below it, at a place where a frame of the old recursion was): the
// old frames below stay in memory, and the chain through them reaches usleep's frame and looks
// complete (TestStacksReadAfterReturn's deeprec, read as it went to sleep).
const (
	recDepth  = 2000
	fakePid   = 7
	codeLo    = 0x400000
	leafPC    = 0x401800
	descendRA = 0x401000
	mainRA    = 0x402000 // main's call of the recursion
	mainRA2   = 0x402100 // main's call of pause
	pauseRA   = 0x404000 // pause's call of usleep
	stackTop  = 0x7ffff0000000
	bpMain    = stackTop - 0x100
	stitchAt  = 520 // the recursion frame whose place usleep's frame takes
)

// bpOf is the frame pointer of recursion frame k (0: the one main called).
func bpOf(k int) uint64 { return bpMain - 32*uint64(k+1) }

// fakeStack is the thread's stack memory, [stackTop-lenStack, stackTop).
type fakeStack struct{ mem []byte }

const lenStack = 128 << 10

func (f *fakeStack) put(addr, v uint64) {
	binary.LittleEndian.PutUint64(f.mem[addr-(stackTop-lenStack):], v)
}

func (f *fakeStack) read(addr uint64, b []byte) bool {
	lo := uint64(stackTop - lenStack)
	if addr < lo || addr+uint64(len(b)) > stackTop {
		return false
	}
	copy(b, f.mem[addr-lo:])
	return true
}

// recursion is the stack during the recursion, its leaf in frame recDepth-1.
func recursion() *fakeStack {
	f := &fakeStack{mem: make([]byte, lenStack)}
	f.put(bpMain, 0) // main's caller: none (a return address of 0 ends the stack)
	f.put(bpMain+8, 0)
	for k := range recDepth {
		caller, ra := uint64(bpMain), uint64(mainRA)
		if k > 0 {
			caller, ra = bpOf(k-1), descendRA
		}
		f.put(bpOf(k), caller)
		f.put(bpOf(k)+8, ra)
	}
	return f
}

// asleep is the memory after the thread returned to main and slept in pause → usleep.
func asleep() *fakeStack {
	f := recursion()
	bpSleep := bpOf(stitchAt)
	bpPause := bpSleep + 0x40
	for a := bpPause + 16; a < bpMain; a += 8 {
		f.put(a, 0x4040404040404040) // pause's buffer
	}
	for a := bpSleep + 16; a < bpPause; a += 8 {
		f.put(a, 0) // usleep's locals
	}
	f.put(bpPause, bpMain)
	f.put(bpPause+8, mainRA2)
	f.put(bpSleep, bpPause)
	f.put(bpSleep+8, pauseRA)
	return f
}

// deepSample is a clock sample at time t in the recursion's leaf, with the kernel's 16 KiB copy.
func deepSample(f *fakeStack, t uint64) *perfabi.Sample {
	bp := bpOf(recDepth - 1)
	sp := bp - 8
	copied := make([]byte, 16384)
	if !f.read(sp, copied) {
		panic("the copy is outside the stack")
	}
	regs := make([]uint64, perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64R15)+1)
	regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64IP)] = leafPC
	regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64SP)] = sp
	regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64BP)] = bp
	return &perfabi.Sample{IP: leafPC, Pid: fakePid, Tid: fakePid, Time: t, RegsABI: unix.PERF_SAMPLE_REGS_ABI_64,
		Regs: regs, Stack: copied, StackDynSize: uint64(len(copied))}
}

// fakeStacker is a stacker of the fake process: its code without CFI, its memory read from *mem (nil:
// the process is gone), its clock at *now, its thread's stack pointer as *sp says (ok false: running).
type fakeThread struct {
	mem *fakeStack
	now uint64
	sp  uint64
	ok  bool
}

func fakeStacker(th *fakeThread) *stacker {
	st := newStacker()
	st.addMapping(experiment.Mapping{Pid: fakePid, Start: codeLo, End: codeLo + 0x100000, Path: "[anon]"})
	st.live[fakePid] = func(addr uint64, b []byte) bool { return th.mem != nil && th.mem.read(addr, b) }
	st.clock = func() uint64 { return th.now }
	st.rec.threadSP = func() (uint64, bool) { return th.sp, th.ok }
	return st
}

// wrong reports whether a stack has frames the thread had only after the sample (pause, and main's
// call of it).
func wrong(frames experiment.Stack) bool {
	return slices.Contains(frames, pauseRA) || slices.Contains(frames, mainRA2)
}

// whole reports whether a stack is the recursion's, complete: the leaf, recDepth-1 recursion frames
// and main.
func whole(frames experiment.Stack) bool {
	return len(frames) == recDepth+1 && frames[0] == leafPC && frames[len(frames)-1] == mainRA
}

// TestStitchedRefusedBlocked: a sample of the recursion read while its thread, woken from its sleep
// in pause and not yet running, is "running" to /proc (its stack pointer not told): the chain from
// the copy through the old frames into usleep's looks complete. The records say the thread blocked
// after the sample (its switch off the CPU): the live read is refused, and the stack is cut at its
// copy, not completed with pause.
func TestStitchedRefusedBlocked(t *testing.T) {
	th := &fakeThread{mem: asleep(), now: 5000}
	st := fakeStacker(th)
	st.note([]perfabi.Record{&perfabi.Switch{Pid: fakePid, Tid: fakePid, Out: true, Time: 2000}})
	got := st.stack(deepSample(th.mem, 1000), nil)
	if wrong(got) || got[len(got)-1] != experiment.FrameTruncated {
		t.Errorf("a read after the thread blocked: %d frames, ending %#x; want the copy's, cut, without pause", len(got), got[len(got)-3:])
	}
	// Its stack pointer seen above the copy after the sample (a sample in pause's memset) refuses it too.
	th2 := &fakeThread{mem: asleep(), now: 5000}
	st2 := fakeStacker(th2)
	st2.note([]perfabi.Record{deepSampleAt(bpOf(stitchAt)+0x40-0x100, 2000)})
	if got := st2.stack(deepSample(th2.mem, 1000), nil); wrong(got) {
		t.Errorf("a read after the thread's stack pointer was seen above the copy: %d frames with pause", len(got))
	}
	// Seen waiting below the copy's end now, the blocked thread is where it was: the read is taken.
	th3 := &fakeThread{mem: recursion(), now: 5000, sp: bpOf(recDepth-1) - 8, ok: true}
	st3 := fakeStacker(th3)
	st3.note([]perfabi.Record{&perfabi.Switch{Pid: fakePid, Tid: fakePid, Out: true, Time: 2000}})
	if got := st3.stack(deepSample(th3.mem, 1000), nil); !whole(got) {
		t.Errorf("a read of a thread waiting in the recursion: %d frames, want %d, complete", len(got), recDepth+1)
	}
}

// deepSampleAt is a sample (a context switch's, say) whose stack pointer is sp, at time t.
func deepSampleAt(sp, t uint64) *perfabi.Sample {
	regs := make([]uint64, perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64R15)+1)
	regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64SP)] = sp
	return &perfabi.Sample{Pid: fakePid, Tid: fakePid, Time: t, RegsABI: unix.PERF_SAMPLE_REGS_ABI_64, Regs: regs}
}

// TestStitchedRefusedAfter: the first look at the thread says "running" and the second, after the
// unwind went through live memory, finds it waiting above the copy's end (in usleep): it was on its
// way there while er read. The read is refused.
func TestStitchedRefusedAfter(t *testing.T) {
	th := &fakeThread{mem: asleep(), now: 5000}
	st := fakeStacker(th)
	looks := 0
	st.rec.threadSP = func() (uint64, bool) {
		looks++
		if looks == 1 {
			return 0, false
		}
		return bpOf(stitchAt) - 0x20, true
	}
	got := st.stack(deepSample(th.mem, 1000), nil)
	if wrong(got) || looks != 2 {
		t.Errorf("%d looks; stack of %d frames, with pause %v; want two looks and no pause", looks, len(got), wrong(got))
	}
	if st.images[fakePid][fakePid] != nil {
		t.Error("the refused read was kept as the thread's stack image")
	}
}

// TestImageNotPoisoned: the thread's stack image, read during the recursion, completes the samples of
// the recursion that er reads after the thread went to sleep (they were taken before it) — as
// TestStacksReadAfterReturn's stopped er does — and a read of the sleeping thread's memory never
// becomes the image (it did, and then completed 137 samples with pause). A sample taken after the
// thread blocked is not completed from the image read before.
func TestImageNotPoisoned(t *testing.T) {
	th := &fakeThread{mem: recursion(), now: 1100}
	st := fakeStacker(th)
	if got := st.stack(deepSample(th.mem, 1000), nil); !whole(got) || st.images[fakePid][fakePid] == nil {
		t.Fatalf("the sample read during the recursion: %d frames; image kept %v", len(got), st.images[fakePid][fakePid] != nil)
	}
	// The thread returns and goes to sleep at 3000; er reads the samples of 1200 to 2800 at 5000, the
	// thread "running" (woken, not yet on a CPU) and then asleep in usleep.
	th.mem, th.now = asleep(), 5000
	st.note([]perfabi.Record{&perfabi.Switch{Pid: fakePid, Tid: fakePid, Out: true, Time: 3000}})
	for i, at := range []uint64{1200, 2000, 2800} {
		if i > 0 {
			th.sp, th.ok = bpOf(stitchAt)-0x20, true
		}
		got := st.stack(deepSample(asleep(), at), nil)
		if !whole(got) {
			t.Errorf("the sample at %d, read when the thread slept: %d frames (pause %v), want %d from the image", at, len(got), wrong(got), recDepth+1)
		}
	}
	if st.fromImage != 3 {
		t.Errorf("%d stacks from the image, want 3", st.fromImage)
	}
	// A sample after the block (the thread woke and recursed again; sampled at 4000, handled at 6000):
	// the image, read at 1100, is from before the block, and the live process is asleep again.
	th.now = 6000
	if got := st.stack(deepSample(asleep(), 4000), nil); wrong(got) || whole(got) {
		t.Errorf("a sample after the thread blocked: %d frames (pause %v); want it cut at its copy", len(got), wrong(got))
	}
}

// TestMarks: the last mark of an interval, the blocks in one (in either order), and what is
// forgotten.
func TestMarks(t *testing.T) {
	var tm threadMarks
	tm.add(spMark{10, 0x1000})
	tm.add(spMark{30, blockedSP})
	tm.add(spMark{20, 0x3000}) // a look at /proc, later than records read after it
	tm.add(spMark{20, 0x3000}) // seen again
	if len(tm.marks) != 3 || tm.marks[1].t != 20 {
		t.Fatalf("marks %v", tm.marks)
	}
	for _, c := range []struct {
		from, to uint64
		want     spMark
		ok       bool
	}{
		{0, 5, spMark{}, false},
		{0, 15, spMark{10, 0x1000}, true},
		{0, 25, spMark{20, 0x3000}, true},
		{20, 40, spMark{30, blockedSP}, true},
		{30, 40, spMark{}, false},
	} {
		if m, ok := tm.latest(c.from, c.to); m != c.want || ok != c.ok {
			t.Errorf("latest(%d, %d) = %v, %v; want %v, %v", c.from, c.to, m, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		from, to uint64
		want     bool
	}{{0, 25, false}, {0, 30, true}, {35, 25, true}, {30, 40, false}} {
		if got := tm.blockedIn(c.from, c.to); got != c.want {
			t.Errorf("blockedIn(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	tm.forget(20)
	if len(tm.marks) != 2 {
		t.Errorf("after forget(20): %v", tm.marks)
	}
	var none *threadMarks
	if _, ok := none.latest(0, 100); ok || none.blockedIn(0, 100) {
		t.Error("no marks say something")
	}
	// Beyond maxMarks the oldest go, and nothing is known before them: as if the thread had blocked.
	var full threadMarks
	for i := range maxMarks + 10 {
		full.add(spMark{uint64(100 + i), 0x10})
	}
	if m, ok := full.latest(50, 60); !ok || m.sp != blockedSP || !full.blockedIn(50, 60) || len(full.marks) != maxMarks {
		t.Errorf("before the horizon: latest %v, %v; blocked %v; %d marks", m, ok, full.blockedIn(50, 60), len(full.marks))
	}
}
