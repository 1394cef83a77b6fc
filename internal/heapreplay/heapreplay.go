// Package heapreplay replays heap-tracing events: the live blocks of a process, its leaks, its peak
// and the statistics of its calls.
package heapreplay

import (
	"math"

	"er/internal/keytable"
	"er/internal/sat"
)

// Op is what a heap call does to the heap.
type Op uint8

// The calls' effects.
const (
	Alloc   Op = iota // malloc, calloc, memalign and the like: Addr allocated, of Size bytes
	Free              // free(Old)
	Realloc           // realloc, reallocarray: frees Old (when it succeeds) and allocates Addr
	Mmap              // an allocation of Size bytes at Addr
	Munmap            // frees the mmap blocks that start in [Old, Old+Size)
)

// Event is one heap call as the replay sees it.
type Event struct {
	Op              Op
	Addr, Size, Old uint64
}

// mapFailed is the block a failed mmap may be recorded with (MAP_FAILED, all bits set).
const mapFailed = ^uint64(0)

// Allocates reports whether e allocated a block: it returned one, and is not a free or munmap.
// A failed mmap may be recorded with the block MAP_FAILED: it allocated nothing.
func (e Event) Allocates() bool {
	return e.Addr != 0 && e.Op != Free && e.Op != Munmap && !(e.Op == Mmap && e.Addr == mapFailed)
}

// Bytes is the size of e's block (requested), as an int64: the largest one for sizes beyond it (a
// corrupt or crafted trace).
func (e Event) Bytes() int64 { return int64(min(e.Size, math.MaxInt64)) }

// Process is the heap of one process during a replay. The caller names each allocation by an id
// of its choosing (an event's index, or a slot of its own), and the process gives the ids back: the
// blocks still allocated at the end (EachLive) and, to a caller that asked, those of blocks freed.
//
// An allocation (a returned block) allocates it; free frees its argument; a realloc that succeeded
// (it returned a block, or was a realloc(p, 0) of a block) frees its old block and allocates the
// new one, so that it is never a leak by itself; a failed realloc frees nothing. munmap frees the
// mmap blocks that start in the range it unmaps. A leak is an allocation whose block is still
// allocated when its process's events end. Frees of blocks that are not allocated are counted and
// ignored: DoubleFrees when the block was freed before, UnknownFrees when it was never seen
// (allocated before tracing began, or by code that is not traced).
type Process struct {
	live  keytable.Table   // allocated block (not mmap) -> its allocation's id
	mmaps map[uint64]int32 // mmap block -> its id
	freed keytable.Table   // blocks freed and not allocated again (the values are 0)
	bytes int64            // bytes of the live blocks
	size  func(id int32) int64
	gone  func(id int32)
	// St receives the statistics of the events replayed (allocations, failures, ignored frees); the
	// caller may point it elsewhere between events.
	St *Stats
}

// NewProcess returns an empty heap whose allocation ids have the sizes size gives; gone, unless nil,
// learns of each id whose block is freed (or found reused).
func NewProcess(size func(id int32) int64, gone func(id int32), st *Stats) *Process {
	return &Process{mmaps: map[uint64]int32{}, size: size, gone: gone, St: st}
}

// Bytes returns the bytes of the live blocks.
func (p *Process) Bytes() int64 { return p.bytes }

// Event replays e; id names its block if it allocates one.
func (p *Process) Event(e Event, id int32) {
	switch {
	case e.Op == Free:
		if e.Old != 0 {
			p.free(e.Old)
		}
		return
	case e.Op == Munmap:
		p.munmap(e.Old, e.Size)
		return
	case e.Op == Realloc:
		if e.Old != 0 && (e.Addr != 0 || e.Size == 0) {
			p.free(e.Old)
		}
	}
	if !e.Allocates() {
		if e.Size > 0 || e.Op != Realloc {
			p.St.FailedAllocs++
		}
		return
	}
	p.St.Allocs.Add(e.Bytes(), 0)
	var old int32
	var reused bool
	if e.Op == Mmap {
		old, reused = p.mmaps[e.Addr]
		p.mmaps[e.Addr] = id
	} else {
		old, reused = p.live.Get(e.Addr)
		p.live.Put(e.Addr, id)
	}
	if reused { // a free we did not see: the block was reused
		p.drop(old)
	}
	p.freed.Del(e.Addr)
	p.bytes = sat.Add(p.bytes, e.Bytes())
}

// drop takes the block of id out of the live bytes.
func (p *Process) drop(id int32) {
	p.bytes = sat.Sub(p.bytes, p.size(id))
	if p.gone != nil {
		p.gone(id)
	}
}

// free frees the block at addr, if it is allocated.
func (p *Process) free(addr uint64) {
	if id, ok := p.live.Del(addr); ok {
		p.drop(id)
		p.freed.Put(addr, 0)
		return
	}
	if _, ok := p.freed.Get(addr); ok {
		p.St.DoubleFrees++
	} else {
		p.St.UnknownFrees++
	}
}

// munmap frees the mmap blocks that start in [addr, addr+size).
func (p *Process) munmap(addr, size uint64) {
	end := addr + size
	if end < addr {
		end = ^uint64(0)
	}
	const page = 4096
	if addr%page == 0 && size/page < uint64(len(p.mmaps)) {
		// Blocks of mmap start on pages: look at each page of the range.
		for a := addr; a < end && a >= addr; a += page {
			if id, ok := p.mmaps[a]; ok {
				delete(p.mmaps, a)
				p.drop(id)
			}
		}
		return
	}
	for a, id := range p.mmaps {
		if a >= addr && a < end {
			delete(p.mmaps, a)
			p.drop(id)
		}
	}
}

// EachLive calls fn with the id of every block still allocated (the leaks, at the end), in no
// particular order.
func (p *Process) EachLive(fn func(id int32)) {
	p.live.Each(func(_ uint64, id int32) { fn(id) })
	for _, id := range p.mmaps {
		fn(id)
	}
}
