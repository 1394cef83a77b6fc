package collect

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

func TestParseWaiting(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want waiting
		ok   bool
	}{
		{"202 0x7f00 0x80 0x2 0x0 0x0 0x0 0x7ffc1000 0x7f0012345\n", waiting{nr: 202, sp: 0x7ffc1000, pc: 0x7f0012345}, true},
		{"-1 0x7ffc2000 0x401000\n", waiting{nr: -1, sp: 0x7ffc2000, pc: 0x401000}, true},
		{"running\n", waiting{}, false},
		{"1 2 3\n", waiting{nr: 1, sp: 2, pc: 3}, true},
		{"x 0x1 0x2\n", waiting{}, false},
		{"-1 0x0 0x401000\n", waiting{}, false},
		{"", waiting{}, false},
	} {
		got, ok := parseWaiting(tc.in)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseWaiting(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFramePointer: a stack whose leaf function (without a frame pointer) was called by one with a
// frame pointer: the slot where that one saved its caller's frame pointer, under its return address, is
// found past locals that look like neither; a stack without such a slot gives 0.
func TestFramePointer(t *testing.T) {
	const sp = 0x7ffc0000
	isCode := func(a uint64) bool { return a >= 0x400000 && a < 0x500000 }
	st := make([]byte, 256)
	put := func(addr, v uint64) { binary.LittleEndian.PutUint64(st[addr-sp:], v) }
	put(sp, 0x401100)     // the leaf's return address into F (no frame pointer in the leaf)
	put(sp+8, 0x7ffc0008) // F's locals: a stack address, not followed by code
	put(sp+16, 42)
	put(sp+24, 0x401200) // code, but in a slot that is not 16-aligned after a frame pointer
	put(sp+32, 0x7ffc0060)
	put(sp+40, 0x401300) // F's frame: the saved frame pointer (its caller's, at sp+0x60) and return address
	put(sp+0x60, 0)
	put(sp+0x68, 0x401400)
	if got := framePointer(sp, st, isCode); got != sp+32 {
		t.Errorf("framePointer = %#x, want %#x", got, sp+32)
	}
	if got := framePointer(sp, make([]byte, 64), isCode); got != 0 {
		t.Errorf("framePointer of a stack of zeros = %#x, want 0", got)
	}
}

// TestReadWaiting reads where a sleeping child waits: in a system call, with its stack pointer and
// program counter; and its stack's memory.
func TestReadWaiting(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	pid := uint32(cmd.Process.Pid)
	var w waiting
	ok := false
	// Until sleep waits in its nanosleep (before its exec the child is the Go runtime's fork, which
	// waits in a system call too, on a stack the exec then unmaps).
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if w, ok = readWaiting(pid, pid); ok && (w.nr == unix.SYS_CLOCK_NANOSLEEP || w.nr == unix.SYS_NANOSLEEP) {
			break
		}
	}
	if !ok || w.nr < 0 {
		if _, err := os.ReadFile("/proc/self/syscall"); err != nil {
			t.Skipf("/proc/PID/syscall cannot be read here: %v", err)
		}
		t.Fatalf("readWaiting of a sleeping child = %+v, %v; want a system call", w, ok)
	}
	var b [64]byte
	if n := readMemory(pid, w.sp, b[:]); n != len(b) {
		t.Errorf("readMemory at the child's stack pointer %#x read %d bytes", w.sp, n)
	}
	if n := readMemory(pid, 0, b[:]); n != 0 {
		t.Errorf("readMemory at 0 read %d bytes", n)
	}
	if _, ok := readWaiting(pid, 1<<30); ok {
		t.Error("readWaiting of no such thread succeeded")
	}
}

// TestGrabStack unwinds a waiting thread read from outside: a program built with frame pointers that
// sleeps in inner, called by outer, called by main. Without the frame pointer the unwind stops in the
// C library (its functions have none, inner's frame needs it); with the one found on the stack it
// goes on to _start: 8 frames, ending in the program's code.
func TestGrabStack(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "fp.c")
	if err := os.WriteFile(src, []byte(`#include <time.h>
__attribute__((noinline)) void inner(void) { struct timespec t = {30, 0}; nanosleep(&t, 0); }
__attribute__((noinline)) void outer(void) { inner(); __asm__ volatile(""); }
int main(void) { outer(); return 0; }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "fp")
	if out, err := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls",
		"-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	pid := uint32(cmd.Process.Pid)
	var w waiting
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// (Its nanosleep: before its exec the child is the Go runtime's fork.)
		if got, ok := readWaiting(pid, pid); ok && (got.nr == unix.SYS_CLOCK_NANOSLEEP || got.nr == unix.SYS_NANOSLEEP) {
			w = got
			break
		}
	}
	if w.pc == 0 {
		t.Skip("/proc/PID/syscall gives nothing here")
	}
	st := newStacker()
	maps, err := readMaps(int(pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		st.addMapping(m)
	}
	var mem [grabScan]byte
	n := readMemory(pid, w.sp, mem[:])
	plain := st.stack(grabSample(pid, pid, w, 0, mem[:n]), nil)
	frames := st.grabStack(pid, pid, w, nil)
	t.Logf("without the frame pointer %x; with it %x", plain, frames)
	if last := frames[len(frames)-1]; len(frames) < 8 || last >= experiment.PseudoFrameBase {
		t.Errorf("grabStack = %x: want 8 frames or more, to _start", frames)
	}
	if len(plain) >= len(frames) {
		t.Errorf("the unwind without the frame pointer went as far (%d frames) as with it (%d)", len(plain), len(frames))
	}
}
