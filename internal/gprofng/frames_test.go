package gprofng

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
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

// chainTable is a crafted data.frameinfo: stack uids 1 to n, uid k holding the one frame
// 0x1000+k and linked to uid k-1, so that the stack of uid k has k frames, and frame infos 1 to n
// naming them. 64 bytes a stack: a 6 MB file of them names stacks of 4.8 billion frames.
func chainTable(n int) []byte {
	var b []byte
	for k := 1; k <= n; k++ {
		b = append(b, uidPacket(uint64(k), uint64(k-1), 0x1000+uint64(k))...)
		b = append(b, framePacket(uint64(k), uint64(k), 0)...)
	}
	return b
}

// chainStack is the stack of uid k of chainTable, leaf first.
func chainStack(k int) []uint64 {
	pcs := make([]uint64, k)
	for i := range pcs {
		pcs[i] = 0x1000 + uint64(k-i)
	}
	return pcs
}

// TestStacksBounded: the stacks that a small table names are resolved once each, and only up to
// maxResolved frames whole: after that each is cut to its first cutFrames frames. A crafted
// 6 MB experiment (a chain of 54,000 linked uids, each the stack of an event) ran er print out of
// memory resolving 1.46 billion frames, again for each event.
func TestStacksBounded(t *testing.T) {
	defer func(m int) { maxResolved = m }(maxResolved)
	maxResolved = 100_000
	const n = 2000
	s := readStacksOf(t, chainTable(n))
	// Asked in order, uid k resolves to the k frames of k-1's stack and its own, and counts k of
	// the 100,000: the first 447 stacks are whole (447*448/2 = 100,128 frames), the other 1,553
	// cut, 65 frames with <Truncated-stack>.
	const whole = 447
	total := 0
	for k := 1; k <= n; k++ {
		pcs, end, ok := s.Stack(uint64(k))
		total += len(pcs)
		want, wantEnd := chainStack(k), EndComplete
		if k > whole {
			want, wantEnd = want[:cutFrames], EndTruncated
		}
		if !ok || end != wantEnd || !slices.Equal(pcs, want) {
			t.Fatalf("stack %d: %d frames %#x..., %v, %v; want %d frames, %v", k, len(pcs), pcs[:min(len(pcs), 3)], end, ok, len(want), wantEnd)
		}
	}
	if want := whole*(whole+1)/2 + (n-whole)*cutFrames; total != want {
		t.Errorf("%d frames in the %d stacks, want %d", total, n, want)
	}
	frames, cut := s.Resolved()
	if want := whole*(whole+1)/2 + (n-whole)*(cutFrames+1); frames != want || cut != n-whole {
		t.Errorf("Resolved() = %d frames, %d cut; want %d, %d", frames, cut, want, n-whole)
	}

	// Asked from the deepest: uid 2000 resolves the whole chain in one array, which every other
	// stack is a suffix of; 2000+1999+...+1950 frames (100,725) are counted whole, the count is
	// then past 100,000, and uids 1949 to 65 are copied cut (65 entries each), 64 to 1 whole.
	s = readStacksOf(t, chainTable(n))
	for k := n; k >= 1; k-- {
		s.Stack(uint64(k))
	}
	frames, cut = s.Resolved()
	if want := 100_725 + 1885*(cutFrames+1) + 64*65/2; frames != want || cut != 1885 {
		t.Errorf("deepest first: Resolved() = %d frames, %d cut; want %d, 1885", frames, cut, want)
	}
	if pcs, _, _ := s.Stack(1999); !slices.Equal(pcs, chainStack(1999)) {
		t.Errorf("stack 1999 has %d frames, want 1999", len(pcs))
	}
}

// TestStacksMemoized: a stack is resolved when it is first asked for, and asking again costs no
// allocation (it cost a map and a copy of every frame, for each event).
func TestStacksMemoized(t *testing.T) {
	s := readStacksOf(t, chainTable(500))
	s.Stack(500)
	if a := testing.AllocsPerRun(100, func() { s.Stack(500); s.Stack(250) }); a != 0 {
		t.Errorf("%v allocations a call of Stack for a stack resolved before, want 0", a)
	}
	if pcs, _, _ := s.Stack(250); !slices.Equal(pcs, chainStack(250)) {
		t.Errorf("stack 250: %d frames", len(pcs))
	}
}

// walked resolves frame info fr as the reader did before it resolved each uid once: following the
// links, markers and all, for each ask. ok is false where the links close a cycle or go past
// maxFrames, which the two resolve differently (both cut the stack).
func walked(s *Stacks, fr uint64) (pcs []uint64, end End, ok bool) {
	seen := map[uint64]bool{}
	for uid := s.frames[fr]; uid != 0; {
		i, found := s.index[uid]
		if !found {
			return pcs, EndTruncated, true
		}
		if seen[uid] || len(pcs) > maxFrames {
			return nil, 0, false
		}
		seen[uid] = true
		n := &s.nodes[i]
		pcs = append(pcs, n.pcs...)
		if n.stop != EndComplete {
			return pcs, n.stop, true
		}
		uid = n.link
	}
	return pcs, EndComplete, true
}

// checkAsWalked fails where a stack of s differs from what walked gives.
func checkAsWalked(t *testing.T, s *Stacks, order []uint64) {
	t.Helper()
	for _, fr := range order {
		pcs, end, _ := s.Stack(fr)
		if want, wantEnd, ok := walked(s, fr); ok && s.frames[fr] != 0 && (!slices.Equal(pcs, want) || end != wantEnd) {
			t.Fatalf("stack of frame info %d: %#x, %v; walked, %#x, %v", fr, pcs, end, want, wantEnd)
		}
	}
}

// TestStacksAsWalked: each stack, resolved once and sharing its callers' arrays, is what following
// its links gives, on random tables of uids linked to each other (trees, chains, links to no uid,
// markers) asked in random orders.
func TestStacksAsWalked(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		n := 1 + r.IntN(40)
		var b []byte
		for k := 1; k <= n; k++ {
			var pcs []uint64
			for range r.IntN(4) {
				pc := 0x1000 + uint64(r.IntN(100))
				switch r.IntN(12) {
				case 0:
					pc = markLeafCheck
				case 1:
					pc = markTruncated
				case 2:
					pc = markFailed
				}
				pcs = append(pcs, pc)
			}
			link := uint64(0)
			if r.IntN(5) > 0 {
				link = uint64(1 + r.IntN(n+2)) // sometimes to no uid, sometimes back: a cycle
			}
			b = append(b, uidPacket(uint64(k), link, pcs...)...)
			b = append(b, framePacket(uint64(k), uint64(k), 0)...)
		}
		s := readStacksOf(t, b)
		order := make([]uint64, n)
		for i := range order {
			order[i] = uint64(i + 1)
		}
		r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		checkAsWalked(t, s, order)
	}
}

func FuzzReadStacks(f *testing.F) {
	f.Add(slices.Concat(uidPacket(0x100, 0, 0x30), framePacket(1, 0x200, 0x100, 0x10)))
	f.Add(framePacket(5, 0x500, 0x500, 0x13))
	f.Add(packet(pcktFrame, slices.Concat(u32(16), u64(1), u32(16), u32(infoJava), u64(2))...))
	f.Add(chainTable(40))
	f.Add(slices.Concat(uidPacket(1, 2), uidPacket(2, 1), framePacket(3, 1, 0))) // a cycle of empty stacks
	f.Add(slices.Concat(uidPacket(1, 0, 0x10, markLeafCheck, markFailed, 0x20), framePacket(2, 3, 1, 0x30), framePacket(4, 1, 0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, w := range []int{64, 32} {
			s, _, err := ReadStacks("data.frameinfo", bytes.NewReader(b), int64(len(b)), w)
			if err != nil {
				continue
			}
			var order []uint64
			for fr := range s.frames {
				order = append(order, fr)
			}
			if len(b) < 4096 {
				checkAsWalked(t, s, order)
			}
			total := 0
			for _, fr := range order {
				pcs, _, _ := s.Stack(fr)
				if len(pcs) > maxFrames {
					t.Fatalf("stack of %d frames", len(pcs))
				}
				total += len(pcs)
			}
			if bound := maxResolved + maxFrames + len(s.frames)*(cutFrames+1); total > bound {
				t.Fatalf("%d frames in %d stacks, more than %d", total, len(s.frames), bound)
			}
		}
	})
}
