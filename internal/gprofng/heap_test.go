package gprofng

import "testing"

// TestGprofngHeap: blocks at the same address are freed oldest first, and get addresses of their
// own while an older one is allocated there.
func TestGprofngHeap(t *testing.T) {
	h := newGprofngHeap()
	steps := []struct {
		alloc bool
		i     int
		addr  uint64
		want  uint64
	}{
		{true, 0, 0x10, 0x10},          // malloc at 0x10
		{true, 1, 0x10, ownBase},       // realloc in place: the block at 0x10 is gprofng's still
		{true, 2, 0x10, ownBase + 16},  // and again
		{false, 0, 0x10, 0x10},         // free(0x10) frees the oldest, block 0
		{true, 3, 0x10, 0x10},          // 0x10 is free again in er's replay
		{false, 0, 0x10, ownBase},      // the next free frees block 1
		{false, 0, 0x20, 0x20},         // a free of a block never allocated
		{true, 4, 0x20, 0x20},          // a new address
		{false, 0, 0x10, ownBase + 16}, // block 2
		{false, 0, 0x10, 0x10},         // block 3
		{false, 0, 0x10, 0x10},         // nothing left at 0x10
		{true, 5, 0x10, 0x10},          // reused
		{true, 6, 0x10, ownBase + 32},  // a new address of its own
	}
	for n, s := range steps {
		var got uint64
		if s.alloc {
			got = h.alloc(s.i, s.addr)
		} else {
			got = h.free(s.addr)
		}
		if got != s.want {
			t.Errorf("step %d (%+v): %#x, want %#x", n, s, got, s.want)
		}
	}
}
