package analysis

import (
	"testing"

	"er/internal/experiment"
)

// TestMemObjects: the data addresses by aligned block, with their values; the events metric of a
// cycle counter beside its time.
func TestMemObjects(t *testing.T) {
	ds := &DataSpace{Total: make([]int64, 3), samples: []addrSample{
		{addr: 0x1000, slot: 0, val: 1, twin: -1, n: 1},
		{addr: 0x1fff, slot: 0, val: 1, twin: -1, n: 1},
		{addr: 0x2040, slot: 1, val: 5, twin: 2, n: 10},
		{addr: 0, slot: 0, val: 1, twin: -1, n: 1}, // no address: no memory object
	}}
	pages := ds.MemObjects(4096)
	if len(pages) != 2 || pages[0].Addr != 0x1000 || pages[0].Values[0] != 2 || pages[1].Addr != 0x2000 ||
		pages[1].Values[1] != 5 || pages[1].Values[2] != 10 {
		t.Errorf("pages %+v", pages)
	}
	if lines := ds.MemObjects(64); len(lines) != 3 || lines[1].Addr != 0x1fc0 {
		t.Errorf("lines %+v", lines)
	}
}

// TestHeapBlocksAt: a block holds its addresses from its allocation to its free, in its process.
func TestHeapBlocksAt(t *testing.T) {
	hb := &heapBlocks{blocks: []heapBlock{
		{pid: 1, start: 0x1000, end: 0x2000, alloc: 10, free: 20, site: "first"},
		{pid: 1, start: 0x1000, end: 0x1800, alloc: 30, free: 1 << 62, site: "again"},
		{pid: 2, start: 0x1800, end: 0x1900, alloc: 0, free: 1 << 62, site: "other"},
	}}
	for _, c := range []struct {
		addr uint64
		t    int64
		pid  uint32
		site string
	}{
		{0x1800, 15, 1, "first"}, {0x1800, 25, 1, ""}, {0x17ff, 35, 1, "again"}, {0x1800, 35, 1, ""},
		{0x1850, 35, 2, "other"}, {0x0fff, 15, 1, ""}, {0x2000, 15, 1, ""},
	} {
		site, _, ok := hb.at(c.addr, c.t, c.pid)
		if ok != (c.site != "") || site != c.site {
			t.Errorf("at(%#x, %d, %d) = %q, %v; want %q", c.addr, c.t, c.pid, site, ok, c.site)
		}
	}
}

// TestObjectBases: a load object's base is where its link-time address 0 is, from its executable
// mapping and the segment that holds the mapping's file offset.
func TestObjectBases(t *testing.T) {
	d := &experiment.Data{
		Mappings: []experiment.Mapping{
			{Pid: 7, Start: 0x555555555000, End: 0x555555556000, Offset: 0x1000, Path: "/bin/prog"},
			{Pid: 7, Start: 0x7ffff7c28000, End: 0x7ffff7dbd000, Offset: 0x28000, Path: "/lib/libc.so.6"},
			{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]"},
		},
		Archives: map[string]*experiment.Archive{
			"/bin/prog": {Kind: "elf", Segments: []experiment.Segment{{Vaddr: 0, Offset: 0, Filesz: 0x800, Memsz: 0x800},
				{Vaddr: 0x1000, Offset: 0x1000, Filesz: 0x500, Memsz: 0x500}, {Vaddr: 0x3db8, Offset: 0x2db8, Filesz: 0x258, Memsz: 0x4000}}},
			"/lib/libc.so.6": {Kind: "elf", Segments: []experiment.Segment{{Vaddr: 0x28000, Offset: 0x28000, Filesz: 0x195000, Memsz: 0x195000}}},
		},
	}
	bs := objectBases(d)
	if len(bs) != 2 || bs[0].base != 0x555555554000 || bs[0].span != 0x7db8 || bs[1].base != 0x7ffff7c00000 {
		t.Errorf("bases %+v", bs)
	}
}

func TestMemoryFunction(t *testing.T) {
	for name, want := range map[string]bool{"malloc": true, "__libc_calloc": true, "_Znwm": true, "<Collector>": true,
		"alloc_one": false, "main": false} {
		if memoryFunction(name) != want {
			t.Errorf("memoryFunction(%q) = %v", name, !want)
		}
	}
}
