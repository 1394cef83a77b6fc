package collect

import (
	"bytes"
	"testing"
)

// An image holds the copy and the live reads that extend it, serves reads inside it only, and
// refuses reads that would leave a gap.
func TestStackImage(t *testing.T) {
	copied := bytes.Repeat([]byte{1}, 64)
	live := func(addr uint64, b []byte) bool {
		if addr < 0x1000 || addr+uint64(len(b)) > 0x2000 {
			return false
		}
		for i := range b {
			b[i] = byte(addr + uint64(i))
		}
		return true
	}
	var r imageRecorder
	r.begin(live, 0x1000, copied, 0, 0)
	if r.take(0) != nil {
		t.Fatal("an image without a live read")
	}
	b := make([]byte, 16)
	if !r.read(0x1040, b) || !r.read(0x1050, b) {
		t.Fatal("live reads failed")
	}
	img := r.take(0)
	if img == nil || img.lo != 0x1000 || len(img.data) != 0x60 {
		t.Fatalf("image %+v", img)
	}
	got := make([]byte, 8)
	if !img.read(0x1000, got) || !bytes.Equal(got, copied[:8]) {
		t.Errorf("read of the copy: %x", got)
	}
	if !img.read(0x1058, got) || got[0] != 0x58 || got[7] != 0x5f {
		t.Errorf("read of the live part: %x", got)
	}
	if img.read(0x105c, got) || img.read(0xff8, got) {
		t.Error("a read beyond the image succeeded")
	}
	// A read that leaves a gap makes the image partial: not taken.
	r.release(img)
	r.begin(live, 0x1000, copied, 0, 0)
	if !r.read(0x1040, b) || !r.read(0x1800, b) || r.take(0) != nil {
		t.Error("an image with a gap was taken")
	}
	// Failed live reads record nothing.
	r.begin(live, 0x1000, copied, 0, 0)
	if r.read(0x3000, b) || r.take(0) != nil {
		t.Error("a failed read made an image")
	}
}

// keepImage keeps one image per thread within the bound of all images, and gone drops a process's.
func TestKeepImage(t *testing.T) {
	st := newStacker()
	a := &stackImage{lo: 0x1000, data: make([]byte, 100)}
	st.keepImage(5, 6, a)
	if st.images[5][6] != a || st.imageBytes != int64(cap(a.data)) {
		t.Fatalf("images %v, %d bytes", st.images, st.imageBytes)
	}
	b := &stackImage{lo: 0x1000, data: make([]byte, 200)}
	st.keepImage(5, 6, b)
	if st.images[5][6] != b || st.imageBytes != int64(cap(b.data)) || st.rec.spare != a {
		t.Fatalf("replaced: images %v, %d bytes, spare %p", st.images, st.imageBytes, st.rec.spare)
	}
	huge := &stackImage{data: make([]byte, maxStackImages)}
	st.keepImage(5, 7, huge)
	if st.images[5][7] != nil {
		t.Error("an image beyond the bound was kept")
	}
	st.gone(5)
	if st.images[5] != nil || st.imageBytes != 0 {
		t.Errorf("after gone: images %v, %d bytes", st.images, st.imageBytes)
	}
}

// The stack pointer of a blocked thread, from /proc/PID/task/TID/syscall; none for a running one.
func TestParseSyscallSP(t *testing.T) {
	for _, tc := range []struct {
		line string
		sp   uint64
		ok   bool
	}{
		{"230 0x0 0x0 0x7fff5936ba60 0x7fff5936baa0 0x0 0x0 0x7fff5936ba48 0x7ffa82289503\n", 0x7fff5936ba48, true},
		{"-1 0x7ffe31353108 0x55d5e2bfc304\n", 0x7ffe31353108, true},
		{"running\n", 0, false},
		{"", 0, false},
		{"-1 0x0 0x0\n", 0, false},
	} {
		if sp, ok := parseSyscallSP([]byte(tc.line)); sp != tc.sp || ok != tc.ok {
			t.Errorf("parseSyscallSP(%q) = %#x, %v; want %#x, %v", tc.line, sp, ok, tc.sp, tc.ok)
		}
	}
}

// A recorder whose thread has left the copied stack (its stack pointer is above the copy's end)
// reads nothing from the live process.
func TestRecorderRefusesLeftStack(t *testing.T) {
	reads := 0
	live := func(addr uint64, b []byte) bool { reads++; return true }
	var r imageRecorder
	r.begin(live, 0x1000, make([]byte, 64), 0, 0)
	r.threadSP = func() (uint64, bool) { return 0x2000, true }
	if r.read(0x1040, make([]byte, 8)) || reads != 0 {
		t.Errorf("read past the copy of a thread that left it: %d live reads", reads)
	}
	r.begin(live, 0x1000, make([]byte, 64), 0, 0)
	r.threadSP = func() (uint64, bool) { return 0x1020, true } // deeper than the copy's end: still there
	if !r.read(0x1040, make([]byte, 8)) || reads != 1 {
		t.Errorf("read of a thread still in its stack: %d live reads", reads)
	}
	r.begin(live, 0x1000, make([]byte, 64), 0, 0)
	r.threadSP = func() (uint64, bool) { return 0, false } // running: not known
	if !r.read(0x1040, make([]byte, 8)) || reads != 2 {
		t.Errorf("read of a running thread: %d live reads", reads)
	}
}
