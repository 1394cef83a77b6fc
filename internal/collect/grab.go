package collect

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfevent"
)

// Stacks of threads that wait, read from outside.
//
// A context switch that its sampler skipped (see microFreq) leaves the interval it starts without a
// stack of its own. When the interval is still going on as er reads the records (a wait of a few
// milliseconds or more), er reads the waiting thread's stack itself: /proc/PID/task/TID/syscall says
// where it waits (the system call, its stack pointer and program counter; -1 outside a system call),
// and its stack is read from its memory and unwound with the call frame information, as a sample's
// is. The frame pointer, which the file does not give, is found on the stack (framePointer): code
// built with frame pointers needs it. The stack is the interval's if the thread does not come back
// onto a CPU before the reading is done.

// waiting is what /proc/PID/task/TID/syscall says of a thread that is not running.
type waiting struct {
	nr     int // the system call it waits in; -1 outside one (a page fault, a stop)
	sp, pc uint64
}

// readWaiting reads where thread tid of process pid waits; ok is false when it runs (or is gone).
func readWaiting(pid, tid uint32) (w waiting, ok bool) {
	b, err := os.ReadFile(procPath(pid, tid, "syscall"))
	if err != nil {
		return w, false
	}
	return parseWaiting(string(b))
}

// parseWaiting parses the text of /proc/PID/task/TID/syscall: "running", "NR ARG1 .. ARG6 SP PC", or
// "-1 SP PC".
func parseWaiting(s string) (w waiting, ok bool) {
	f := strings.Fields(s)
	if len(f) != 9 && len(f) != 3 {
		return w, false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return w, false
	}
	sp, err1 := strconv.ParseUint(strings.TrimPrefix(f[len(f)-2], "0x"), 16, 64)
	pc, err2 := strconv.ParseUint(strings.TrimPrefix(f[len(f)-1], "0x"), 16, 64)
	if err1 != nil || err2 != nil || sp == 0 || pc == 0 {
		return w, false
	}
	return waiting{nr: nr, sp: sp, pc: pc}, true
}

// grabSample makes a sample of waiting thread tid of process pid at w, for the stacker: the program
// counter, the stack pointer and frame pointer bp (0: not known), and stack, the stack from the stack
// pointer up as read (the stacker reads on from the live process where this still matches it).
func grabSample(pid, tid uint32, w waiting, bp uint64, stack []byte) *perfabi.Sample {
	regs := make([]uint64, perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64R15)+1)
	regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64IP)] = w.pc
	regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64SP)] = w.sp
	regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64BP)] = bp
	if w.nr >= 0 {
		regs[perfevent.RegIndex(perfevent.RegsAMD64All, perfevent.RegAMD64AX)] = negENOSYS
	}
	return &perfabi.Sample{IP: w.pc, Pid: pid, Tid: tid, RegsABI: unix.PERF_SAMPLE_REGS_ABI_64, Regs: regs,
		Stack: stack, StackDynSize: uint64(len(stack))}
}

// grabStack returns the call stack of thread tid of process pid, waiting at w: unwound from its program
// counter and stack pointer, and where that stops at a function that needs the frame pointer, again
// with the one framePointer finds above the stack slot of the last return address unwound (the
// callers that the stop leaves out keep rbp as that function set it).
func (st *stacker) grabStack(pid, tid uint32, w waiting, out experiment.Stack) experiment.Stack {
	st.noteWaiting(pid, tid, st.clock(), w.sp)
	var mem [grabScan]byte
	got := readMemory(pid, w.sp, mem[:])
	if got == 0 {
		return append(out[:0], w.pc, experiment.FrameTruncated)
	}
	out = st.stack(grabSample(pid, tid, w, 0, mem[:got]), out[:0])
	n := len(out)
	if n < 2 || out[n-1] != experiment.FrameTruncated && out[n-1] != experiment.FrameUnwindFailed {
		return out
	}
	ra, slot := out[n-2], -1
	for i := 0; i+8 <= got; i += 8 {
		if binary.LittleEndian.Uint64(mem[i:]) == ra {
			slot = i
			break
		}
	}
	space := st.spaces[pid]
	if slot < 0 || space == nil {
		return out
	}
	isCode := func(a uint64) bool { return space.Find(a) != nil }
	from := slot + 8
	bp := framePointer(w.sp+uint64(from), mem[from:got], isCode)
	if bp == 0 {
		return out
	}
	again := st.stack(grabSample(pid, tid, w, bp, mem[:got]), out[n:])
	if len(again) > n && again[len(again)-1] != experiment.FrameTruncated && again[len(again)-1] != experiment.FrameUnwindFailed {
		return append(out[:0], again...)
	}
	return out
}

// grabScan is how much of a waiting thread's stack framePointer looks through.
const grabScan = 8192

// readMemory reads process pid's memory at addr into b, and returns the bytes read.
func readMemory(pid uint32, addr uint64, b []byte) int {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(int(pid), local, remote, 0)
	if err != nil {
		return 0
	}
	return n
}

// framePointer returns the frame pointer that the innermost function built with one set up, found
// in stack (the thread's stack from sp up), or 0. A function with a frame pointer saves its caller's
// below its return address and points rbp at that: the lowest 16-byte aligned slot A whose next word
// is a return address and whose own word is the caller's frame pointer (0, or a slot above A whose
// next word is a return address too) is taken. A wait in a C library call leaves rbp as its caller
// set it: only a caller built with frame pointers needs it, and the unwinder ignores it for others.
func framePointer(sp uint64, stack []byte, isCode func(uint64) bool) uint64 {
	word := func(addr uint64) (uint64, bool) {
		if addr < sp || addr+8 > sp+uint64(len(stack)) {
			return 0, false
		}
		return binary.LittleEndian.Uint64(stack[addr-sp:]), true
	}
	for a := (sp + 15) &^ 15; a+16 <= sp+uint64(len(stack)); a += 16 {
		ra, _ := word(a + 8)
		if !isCode(ra) {
			continue
		}
		next, _ := word(a)
		if next == 0 {
			return a
		}
		if next <= a || next&15 != 0 {
			continue
		}
		if ra2, ok := word(next + 8); !ok || isCode(ra2) {
			return a
		}
	}
	return 0
}
