package unwind

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeLive is a process's memory: the bytes of [base, base+len(mem)), counting reads.
type fakeLive struct {
	base  uint64
	mem   []byte
	reads int
}

func (f *fakeLive) read(addr uint64, b []byte) bool {
	f.reads++
	if addr < f.base || addr-f.base > uint64(len(f.mem)) || uint64(len(f.mem))-(addr-f.base) < uint64(len(b)) {
		return false
	}
	copy(b, f.mem[addr-f.base:])
	return true
}

// words returns n little-endian words 0x1000+i.
func words(n int) []byte {
	b := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(0x1000+i))
	}
	return b
}

func TestStackCopyReads(t *testing.T) {
	s := &StackCopy{}
	s.Reset(0x7000, words(4))
	for addr, want := range map[uint64]uint64{0x7000: 0x1000, 0x7008: 0x1001, 0x7018: 0x1003, 0x7004: 0x0000_1001_0000_0000} {
		if v, ok := s.ReadU64(addr); !ok || v != want {
			t.Errorf("ReadU64(%#x) = %#x, %v; want %#x", addr, v, ok, want)
		}
	}
	for _, addr := range []uint64{0x6ff8, 0x701c, 0x7020, 1<<64 - 4} {
		if _, ok := s.ReadU64(addr); ok {
			t.Errorf("ReadU64(%#x) succeeded outside the copy", addr)
		}
	}
	if s.Beyond(0x6ff8) || s.Beyond(0x7018) || !s.Beyond(0x7020) {
		t.Error("Beyond does not say which reads are past the copy's end")
	}
	if s.UsedLive() {
		t.Error("UsedLive without Live")
	}
}

func TestStackCopyLive(t *testing.T) {
	// The live stack holds 4096 words from 0x7000; the copy has the first 64 (512 bytes).
	live := &fakeLive{base: 0x7000, mem: words(4096)}
	s := &StackCopy{Live: live.read}
	s.Reset(0x7000, words(64))
	if v, ok := s.ReadU64(0x7000 + 8*3000); !ok || v != 0x1000+3000 {
		t.Errorf("live read = %#x, %v; want %#x", v, ok, 0x1000+3000)
	}
	if !s.UsedLive() {
		t.Error("UsedLive is false after a live read")
	}
	// Reads near each other come from the same chunk.
	n := live.reads
	for i := 3001; i < 3100; i++ {
		if v, ok := s.ReadU64(0x7000 + uint64(8*i)); !ok || v != uint64(0x1000+i) {
			t.Fatalf("word %d = %#x, %v", i, v, ok)
		}
	}
	if live.reads != n {
		t.Errorf("%d more live reads for words in one chunk, want 0", live.reads-n)
	}
	// Past the end of live memory the read fails.
	if _, ok := s.ReadU64(0x7000 + 8*4096); ok {
		t.Error("read past the live stack succeeded")
	}

	// When the copy's outer end differs from live memory, the thread has moved on: no live reads.
	changed := words(64)
	changed[len(changed)-1] ^= 0xff
	s.Reset(0x7000, changed)
	if _, ok := s.ReadU64(0x7000 + 8*100); ok || s.UsedLive() {
		t.Error("read on past a copy whose outer end no longer matches the live stack")
	}
	// A difference below the verified tail is not looked at (the leaf frames change freely).
	early := words(64)
	early[0] ^= 0xff
	s.Reset(0x7000, early)
	if _, ok := s.ReadU64(0x7000 + 8*100); !ok {
		t.Error("a change in the copy's inner part stopped the live continuation")
	}
	// A live read that fails (the process exited) stops the unwind.
	s.Live = func(uint64, []byte) bool { return false }
	s.Reset(0x7000, words(64))
	if _, ok := s.ReadU64(0x7000 + 8*100); ok {
		t.Error("read succeeded from a process that is gone")
	}
}

func TestLiveReader(t *testing.T) {
	buf := words(1024)
	read := LiveReader(osGetpid())
	got := make([]byte, 64)
	addr := uint64(uintptr(unsafe.Pointer(&buf[0])))
	if !read(addr+8, got) {
		t.Skip("process_vm_readv on this process failed: not permitted here")
	}
	if binary.LittleEndian.Uint64(got) != 0x1001 || binary.LittleEndian.Uint64(got[56:]) != 0x1008 {
		t.Errorf("LiveReader read % x", got[:16])
	}
	if read(8, got) {
		t.Error("LiveReader read address 8")
	}
	if !read(addr, nil) {
		t.Error("LiveReader failed an empty read")
	}
}

// TestLiveReaderNoting: a read of an unmapped address, or of a process that is gone, is not noted (a
// late reader meets both); one the kernel refuses is, with its error (uid 65534 reading pid 1).
func TestLiveReaderNoting(t *testing.T) {
	if os.Getenv("UNWIND_NOTING_CHILD") != "" {
		var errs []error
		read := LiveReaderNoting(1, func(err error) { errs = append(errs, err) })
		got := make([]byte, 8)
		if read(0x400000, got) || len(errs) != 1 || errs[0] != unix.EPERM {
			fmt.Printf("read pid 1 as uid %d: noted %v, want EPERM\n", os.Getuid(), errs)
			os.Exit(1)
		}
		os.Exit(0)
	}
	var noted []error
	note := func(err error) { noted = append(noted, err) }
	got := make([]byte, 8)
	if LiveReaderNoting(osGetpid(), note)(8, got) {
		t.Error("read address 8")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if LiveReaderNoting(cmd.Process.Pid, note)(8, got) { // reaped: ESRCH
		t.Error("read a process that is gone")
	}
	if len(noted) != 0 {
		t.Errorf("noted %v for an unmapped address and a process that is gone", noted)
	}
	if os.Getuid() != 0 {
		t.Skip("not root: cannot run the refused read as another user")
	}
	// A copy of this test that uid 65534 may run (go test's build directory is root's alone).
	dir, err := os.MkdirTemp("", "noting")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := dir + "/unwind.test"
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(bin, "-test.run=^TestLiveReaderNoting$")
	child.Dir = dir
	child.Env = append(os.Environ(), "UNWIND_NOTING_CHILD=1")
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := child.CombinedOutput(); err != nil {
		t.Errorf("the refused read, as uid 65534: %v\n%s", err, out)
	}
}
