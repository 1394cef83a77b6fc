package unwind

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory is the target's memory as the unwinder may read it.
type Memory interface {
	// ReadU64 reads the little-endian word at addr; ok is false when it cannot.
	ReadU64(addr uint64) (v uint64, ok bool)
}

// Bounded is implemented by a Memory that can tell a read that failed only because the copy of
// the stack ended (the stack goes on, but was not copied) from a read of an address that is
// not stack at all. The unwinder then reports Truncated rather than Failed.
type Bounded interface {
	Memory
	// Beyond reports whether addr lies past the end of what could be read.
	Beyond(addr uint64) bool
}

// VerifyBytes is how many bytes at the outer end of a stack copy must still be identical in
// the live process before StackCopy reads on past the copy.
const VerifyBytes = 256

// liveChunk is how many bytes a live read fetches at once (a 10,000-frame recursion then takes
// a few dozen system calls).
const liveChunk = 16 << 10

// StackCopy is the copy of a thread's stack taken with a sample (perf's PERF_SAMPLE_STACK_USER:
// the bytes from the stack pointer up), optionally continued from the live process.
// Reuse one StackCopy for every sample (Reset): it keeps its buffers.
type StackCopy struct {
	SP   uint64 // the address of Data[0]: the sampled stack pointer
	Data []byte // the copied bytes (perf's Stack[:StackDynSize])
	// Live, when not nil, reads the target's memory now (see LiveReader). It lets the unwind go on
	// past the end of the copy, if the copy's outermost VerifyBytes bytes are still unchanged.
	Live func(addr uint64, b []byte) bool

	checked bool // the live check was done
	liveOK  bool // and passed
	used    bool // a read went to the live process
	chunk   []byte
	chAddr  uint64
	chLen   int
	verify  [VerifyBytes]byte
}

// Reset prepares s for another sample, keeping Live and the buffers.
func (s *StackCopy) Reset(sp uint64, data []byte) {
	s.SP, s.Data = sp, data
	s.checked, s.liveOK, s.used = false, false, false
	s.chLen = 0
}

// UsedLive reports whether the last unwind read past the copy, from the live process.
func (s *StackCopy) UsedLive() bool { return s.used }

// end returns the address just past the copy.
func (s *StackCopy) end() uint64 { return s.SP + uint64(len(s.Data)) }

// ReadU64 reads from the copy, and past its end from the live process when allowed.
func (s *StackCopy) ReadU64(addr uint64) (uint64, bool) {
	if addr >= s.SP && addr-s.SP <= uint64(len(s.Data)) && uint64(len(s.Data))-(addr-s.SP) >= 8 {
		return binary.LittleEndian.Uint64(s.Data[addr-s.SP:]), true
	}
	if s.Live == nil || addr < s.end() || addr+8 < addr {
		return 0, false
	}
	if !s.checked {
		s.checked = true
		n := min(len(s.Data), VerifyBytes)
		if n > 0 {
			tail := s.Data[len(s.Data)-n:]
			s.liveOK = s.Live(s.end()-uint64(n), s.verify[:n]) && bytes.Equal(tail, s.verify[:n])
		}
	}
	if !s.liveOK {
		return 0, false
	}
	if s.chLen == 0 || addr < s.chAddr || addr+8 > s.chAddr+uint64(s.chLen) {
		if !s.fill(addr) {
			return 0, false
		}
	}
	s.used = true
	return binary.LittleEndian.Uint64(s.chunk[addr-s.chAddr:]), true
}

// fill reads the chunk of live memory that starts at the page holding addr: liveChunk bytes
// when they are readable, else fewer, halving down to a page (the stack's mapping may end
// sooner); a word that straddles two pages needs both.
func (s *StackCopy) fill(addr uint64) bool {
	if s.chunk == nil {
		s.chunk = make([]byte, liveChunk)
	}
	s.chLen = 0
	base := addr &^ 4095
	need := addr + 8 - base
	for n := uint64(liveChunk); n >= need; n /= 2 {
		if s.Live(base, s.chunk[:n]) {
			s.chAddr, s.chLen = base, int(n)
			return true
		}
		if n <= 4096 {
			break
		}
	}
	return false
}

// Beyond reports whether addr is past the end of the copy (the unwind is then truncated, not
// failed, when the read fails).
func (s *StackCopy) Beyond(addr uint64) bool {
	return addr >= s.end()
}

// LiveReader returns a function that reads process pid's memory with process_vm_readv, for
// StackCopy.Live. It reports false unless it read all of b.
func LiveReader(pid int) func(addr uint64, b []byte) bool {
	return LiveReaderNoting(pid, nil)
}

// LiveReaderNoting is LiveReader, telling failed each error of a read that failed for another reason
// than the address (EFAULT) or the process (ESRCH: it exited), which a late reader meets: a
// permission the kernel refused, say, which leaves stacks truncated and should be said.
func LiveReaderNoting(pid int, failed func(error)) func(addr uint64, b []byte) bool {
	return func(addr uint64, b []byte) bool {
		if len(b) == 0 {
			return true
		}
		local := []unix.Iovec{{Base: unsafe.SliceData(b)}}
		local[0].SetLen(len(b))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil && failed != nil && err != unix.EFAULT && err != unix.ESRCH {
			failed(err)
		}
		return err == nil && n == len(b)
	}
}
