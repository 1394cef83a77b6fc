package gprofng

// gprofngHeap gives heap blocks the addresses that make er's replay of the events free the blocks
// that gprofng's display frees. gprofng keeps every block allocated at an address, in the order
// they were allocated, and a free of the address frees the oldest; er's replay keeps one block per
// address. So a block allocated at the address of a block still allocated gets an address of its
// own, outside the user address space, and a free gets the address of the block it frees.
type gprofngHeap struct {
	blocks map[uint64][]int    // the blocks allocated at an address (their events), oldest first
	given  map[int]uint64      // the address each block was given
	taken  map[uint64]struct{} // the addresses given to blocks still allocated
	next   uint64              // the next address of one's own
}

// ownBase is the first address of the blocks given one of their own: in the kernel's half of the
// address space, where no block of a program is.
const ownBase = 0xffff_f000_0000_0000

func newGprofngHeap() *gprofngHeap {
	return &gprofngHeap{blocks: map[uint64][]int{}, given: map[int]uint64{}, taken: map[uint64]struct{}{}, next: ownBase}
}

// alloc records block i allocated at addr and returns the address it gets.
func (h *gprofngHeap) alloc(i int, addr uint64) uint64 {
	h.blocks[addr] = append(h.blocks[addr], i)
	a := addr
	if _, ok := h.taken[a]; ok {
		a = h.next
		h.next += 16
	}
	h.taken[a] = struct{}{}
	h.given[i] = a
	return a
}

// free records a free of addr and returns the address of the block it frees: that of the oldest
// block allocated at addr, or addr itself when none is (a free that frees nothing).
func (h *gprofngHeap) free(addr uint64) uint64 {
	q := h.blocks[addr]
	if len(q) == 0 {
		return addr
	}
	i := q[0]
	if len(q) == 1 {
		delete(h.blocks, addr)
	} else {
		h.blocks[addr] = q[1:]
	}
	a := h.given[i]
	delete(h.given, i)
	delete(h.taken, a)
	return a
}
