package gprofng

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// framePacket builds a frame packet of frame-info uid fuid with one native stack part.
func framePacket(fuid, suid uint64, link uint64, pcs ...uint64) []byte {
	kind := uint32(infoStack)
	body := u64(pcs...)
	if link != 0 {
		kind |= compressed
		body = append(body, u64(link)...)
	}
	part := slices.Concat(u32(uint32(16+len(body))), u32(kind), u64(suid), body)
	return packet(pcktFrame, slices.Concat(u32(16), u64(fuid), part)...)
}

// uidPacket builds a uid packet: a partial stack uid, linked to another.
func uidPacket(uid, link uint64, pcs ...uint64) []byte {
	var flags uint32
	body := u64(pcs...)
	if link != 0 {
		flags = compressed
		body = append(body, u64(link)...)
	}
	return packet(pcktUID, slices.Concat(u32(flags), u64(uid), body)...)
}

func readStacksOf(t *testing.T, b []byte) *Stacks {
	t.Helper()
	s, w, err := ReadStacks("data.frameinfo", bytes.NewReader(b), int64(len(b)), 64)
	if err != nil || w != "" {
		t.Fatalf("ReadStacks: %v, %q", err, w)
	}
	return s
}

func TestStacks(t *testing.T) {
	b := slices.Concat(
		uidPacket(0x100, 0, 0x30, 0x40),                     // the outer part, shared
		framePacket(1, 0x200, 0x100, 0x10, 0x20),            // 10 20 -> 30 40
		framePacket(2, 0x300, 0, 0x11, markTruncated),       // cut by the collector
		framePacket(3, 0x400, 0x999, 0x12),                  // a link to nothing
		framePacket(4, 0x200, 0),                            // a reference to stack 0x200
		framePacket(5, 0x500, 0x500, 0x13),                  // a cycle
		framePacket(6, 0x600, 0, 0x14, markLeafCheck, 0x15), // the leaf-check marker is no frame
		framePacket(7, 0x700, 0, 0x16, markFailed),
	)
	s := readStacksOf(t, b)
	for _, tc := range []struct {
		fr   uint64
		pcs  []uint64
		end  End
		okay bool
	}{
		{1, []uint64{0x10, 0x20, 0x30, 0x40}, EndComplete, true},
		{2, []uint64{0x11}, EndTruncated, true},
		{3, []uint64{0x12}, EndTruncated, true},
		{4, []uint64{0x10, 0x20, 0x30, 0x40}, EndComplete, true},
		{5, []uint64{0x13}, EndTruncated, true},
		{6, []uint64{0x14, 0x15}, EndComplete, true},
		{7, []uint64{0x16}, EndFailed, true},
		{8, nil, EndComplete, false},
	} {
		pcs, end, ok := s.Stack(tc.fr)
		if !slices.Equal(pcs, tc.pcs) || end != tc.end || ok != tc.okay {
			t.Errorf("Stack(%d) = %#x, %v, %v; want %#x, %v, %v", tc.fr, pcs, end, ok, tc.pcs, tc.end, tc.okay)
		}
	}
}

// TestStacksFixture: the heap fixture's first malloc (leak_direct's) has the stack gprofng shows:
// malloc in libgp-heap.so, leak_direct, main, libc's __libc_start_call_main.
func TestStacksFixture(t *testing.T) {
	file := filepath.Join(fixture(t, "heap"), framesFile)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	s, w, err := ReadStacks(file, f, fi.Size(), 64)
	if err != nil || w != "" {
		t.Fatal(err, w)
	}
	pcs, end, ok := s.Stack(0x506d397486ed3ef3)
	if want := []uint64{0x7f2322a5f6b7, 0x556c38fee45c, 0x556c38feeabb, 0x7f2322736248}; !ok || end != EndComplete || !slices.Equal(pcs, want) {
		t.Errorf("stack %#x, %v, %v; want %#x", pcs, end, ok, want)
	}
}

func TestStacksDamage(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{packet(pcktFrame, 1, 2, 3, 4), "offset 0: frame packet of 8 bytes"},
		{packet(pcktFrame, slices.Concat(u32(64), u64(1))...), "header size 64 is outside its 16 bytes"},
		{packet(pcktFrame, slices.Concat(u32(16), u64(1), u32(4), u32(1))...), "offset 16: frame packet part of size 4"},
		{packet(pcktFrame, slices.Concat(u32(16), u64(1), u32(12), u32(1), u32(0))...), "stack part of 12 bytes"},
		{uidPacket(5, 0, 1)[:20], "not whole 8-byte addresses"},
		{packet(pcktUID, 0, 0, 0, 0), "uid packet of 8 bytes"},
	} {
		if len(tc.b)%4 == 0 {
			binary.LittleEndian.PutUint16(tc.b, uint16(len(tc.b)))
		}
		_, _, err := ReadStacks("data.frameinfo", bytes.NewReader(tc.b), int64(len(tc.b)), 64)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadStacks(%x): %v, want %q", tc.b, err, tc.want)
		}
	}
}

func TestStacks32(t *testing.T) {
	b := packet(pcktUID, slices.Concat(u32(0), u64(9), u32(0x1000), u32(0xfffffffe))...)
	b = append(b, packet(pcktFrame, slices.Concat(u32(16), u64(1), u32(16), u32(infoStack), u64(9))...)...)
	s, _, err := ReadStacks("f", bytes.NewReader(b), int64(len(b)), 32)
	if err != nil {
		t.Fatal(err)
	}
	if pcs, end, ok := s.Stack(1); !ok || end != EndTruncated || !slices.Equal(pcs, []uint64{0x1000}) {
		t.Errorf("32-bit stack %#x, %v, %v", pcs, end, ok)
	}
}

func FuzzReadStacks(f *testing.F) {
	f.Add(slices.Concat(uidPacket(0x100, 0, 0x30), framePacket(1, 0x200, 0x100, 0x10)))
	f.Add(framePacket(5, 0x500, 0x500, 0x13))
	f.Add(packet(pcktFrame, slices.Concat(u32(16), u64(1), u32(16), u32(infoJava), u64(2))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, _, err := ReadStacks("data.frameinfo", bytes.NewReader(b), int64(len(b)), 64)
		if err != nil {
			return
		}
		for fr := range s.frames {
			if pcs, _, _ := s.Stack(fr); len(pcs) > maxFrames+1<<13 {
				t.Fatalf("stack of %d frames", len(pcs))
			}
		}
	})
}
