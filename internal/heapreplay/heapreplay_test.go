package heapreplay

import (
	"slices"
	"testing"
)

// A replay of each kind of call: which blocks live at the end, the live bytes, the ids given back
// when blocks go, and the statistics.
func TestProcess(t *testing.T) {
	sizes := map[int32]int64{}
	var gone []int32
	var st Stats
	p := NewProcess(func(id int32) int64 { return sizes[id] }, func(id int32) { gone = append(gone, id) }, &st)
	ev := func(id int32, e Event) {
		if e.Allocates() {
			sizes[id] = e.Bytes()
		}
		p.Event(e, id)
	}
	ev(1, Event{Op: Alloc, Addr: 0x1000, Size: 10})
	ev(2, Event{Op: Alloc, Addr: 0x2000, Size: 20})
	ev(3, Event{Op: Free, Old: 0x1000})                            // frees 1
	ev(4, Event{Op: Free, Old: 0x1000})                            // double free
	ev(5, Event{Op: Free, Old: 0x9000})                            // never allocated
	ev(6, Event{Op: Realloc, Addr: 0x3000, Size: 30, Old: 0x2000}) // frees 2, allocates 6
	ev(7, Event{Op: Realloc, Addr: 0, Size: 40, Old: 0x3000})      // failed: frees nothing
	ev(8, Event{Op: Alloc, Addr: 0, Size: 8})                      // failed
	ev(9, Event{Op: Alloc, Addr: 0x3000, Size: 5})                 // 6's block reused: a free not seen
	ev(10, Event{Op: Mmap, Addr: 0x100000, Size: 8192})
	ev(11, Event{Op: Mmap, Addr: 0x200000, Size: 4096})
	ev(12, Event{Op: Mmap, Addr: ^uint64(0), Size: 4096})     // MAP_FAILED
	ev(13, Event{Op: Munmap, Old: 0x100000, Size: 8192})      // unmaps 10
	ev(14, Event{Op: Realloc, Addr: 0, Size: 0, Old: 0x3000}) // realloc(p, 0): frees 9
	ev(15, Event{Op: Alloc, Addr: 0x4000, Size: 7})
	var live []int32
	p.EachLive(func(id int32) { live = append(live, id) })
	slices.Sort(live)
	if !slices.Equal(live, []int32{11, 15}) || p.Bytes() != 4096+7 {
		t.Errorf("live %v, %d bytes; want [11 15], %d", live, p.Bytes(), 4096+7)
	}
	if !slices.Equal(gone, []int32{1, 2, 6, 10, 9}) {
		t.Errorf("gone %v, want [1 2 6 10 9]", gone)
	}
	if st.Allocs.Count != 7 || st.Allocs.Bytes != 10+20+30+5+8192+4096+7 || st.FailedAllocs != 3 ||
		st.DoubleFrees != 1 || st.UnknownFrees != 1 {
		t.Errorf("stats %+v", st)
	}
}
