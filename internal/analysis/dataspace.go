package analysis

import (
	"cmp"
	"slices"
	"strings"

	"er/internal/debuginfo"
	"er/internal/experiment"
)

// Data-space profiling: the samples of counters given with '+' carry the data address of their
// event (a page fault's faulting address, a precise hardware event's), and DataSpace attributes them
// to what lies there: a variable at a fixed address (from the DWARF of the load object whose data it
// is), and in a struct, its member; a heap block live at the sample's time (from heap tracing, -H on,
// in the same experiment), by the function that allocated it; or the address's memory objects (its
// page, its cache line). Only the counters that recorded addresses give these views their values.

// DataObject is one data object: a variable, the heap blocks of one allocating function, or a
// pseudo-object for addresses of neither (<Stack>, <Unknown>, ...).
type DataObject struct {
	Name   string // "big_a", "<Heap: alloc_one>", "<Unknown>"
	Type   string // "int[1024]", "struct rec[20]", "heap block"
	Size   uint64 // bytes (a heap object's: its largest block)
	Object string // the load object that defines a variable
	Values []int64
}

// DataLayout is a struct or union type with the values of its members: the events at addresses in
// members of variables of the type (a member of a member is the inner type's too).
type DataLayout struct {
	Type    string
	Size    uint64
	Values  []int64
	Members []DataMember
}

// DataMember is one member of a DataLayout.
type DataMember struct {
	Name   string
	Offset uint64
	Size   uint64
	Type   string
	Values []int64
}

// DataSpace is what data-space profiling found in the selected events.
type DataSpace struct {
	Metrics []int   // the profile's metrics that data addresses give values to
	Total   []int64 // their totals over the events with an address
	Objects []DataObject
	Layouts []DataLayout
	samples []addrSample
}

// addrSample is one event with an address, for the memory objects.
type addrSample struct {
	addr uint64
	slot int   // its metric
	val  int64 // and value
	twin int   // the events metric of a counter shown as time; -1: none
	n    int64 // its events
}

// Names of the pseudo data objects.
const (
	DataUnknown = "<Unknown>" // an address in no known variable or heap block
	DataNoAddr  = "<No address>"
)

// DataSpace returns the data-space view of the profile's selected events, computed on first use.
func (p *Profile) DataSpace() *DataSpace {
	var keeps [][][]bool // the counter events the filter keeps, selected before taking the lock (as refilter does)
	if root := p.Unfiltered(); p.filter != nil && root.b != nil {
		p.viewMu.Lock()
		done := p.dataSpace != nil
		p.viewMu.Unlock()
		if !done {
			keeps = root.selectEvents(p.filter, []DataKind{DataCounters})
		}
	}
	p.viewMu.Lock()
	defer p.viewMu.Unlock()
	if p.dataSpace == nil {
		p.dataSpace = p.buildDataSpace(keeps)
	}
	return p.dataSpace
}

// dataBuilder holds what buildDataSpace keeps while it runs.
type dataBuilder struct {
	p       *Profile
	objects map[string]int // by name
	layouts map[*debuginfo.DataType]int
	vars    map[string][]debuginfo.Variable // by load object path; nil: none
	ds      *DataSpace
}

// buildDataSpace builds the data-space view; keeps, when not nil, are the events the filter keeps
// (selectEvents), else they are selected here.
func (p *Profile) buildDataSpace(keeps [][][]bool) *DataSpace {
	ds := &DataSpace{Total: make([]int64, p.nm)}
	db := &dataBuilder{p: p, objects: map[string]int{}, layouts: map[*debuginfo.DataType]int{}, vars: map[string][]debuginfo.Variable{}, ds: ds}
	root := p.Unfiltered()
	if root.b == nil || p.base[DataCounters] < 0 {
		return ds
	}
	metrics := map[int]bool{}
	for ei, es := range root.b.exps {
		d := es.d
		n := d.CounterTable().Len()
		if n == 0 {
			continue
		}
		slots := counterSlots(p, d)
		heap := newHeapBlocks(p, es)
		bases := objectBases(d)
		var keep []bool
		if keeps != nil {
			keep = keeps[ei][DataCounters]
		} else {
			keep = newEventSel(p.filter, es, root).keepAll(DataCounters, n)
		}
		for i := range n {
			sample := d.CounterAt(i)
			s := &sample
			if int(s.Counter) >= len(d.Log.Counters) || !d.Log.Counters[s.Counter].Backtrack || slots[s.Counter].main < 0 ||
				keep != nil && !keep[i] {
				continue
			}
			sl := slots[s.Counter]
			a := addrSample{addr: s.Addr, slot: p.base[DataCounters] + sl.main, val: s.Value, twin: -1, n: s.Value}
			if sl.cycles {
				a.val = CyclesNS(s.Value, d.Log.ClockHz)
				if sl.events >= 0 {
					a.twin = p.base[DataCounters] + sl.events
				}
			}
			metrics[a.slot] = true
			if a.twin >= 0 {
				metrics[a.twin] = true
			}
			ds.samples = append(ds.samples, a)
			db.attribute(es, s, a, heap, bases)
			a.add(ds.Total)
		}
	}
	for m := range metrics {
		ds.Metrics = append(ds.Metrics, m)
	}
	slices.Sort(ds.Metrics)
	return ds
}

// add adds the sample's values to vals.
func (a addrSample) add(vals []int64) {
	vals[a.slot] += a.val
	if a.twin >= 0 {
		vals[a.twin] += a.n
	}
}

// object returns the data object named name, made with its type, size and load object.
func (db *dataBuilder) object(name, typ string, size uint64, obj string) *DataObject {
	i, ok := db.objects[name]
	if !ok {
		i = len(db.ds.Objects)
		db.objects[name] = i
		db.ds.Objects = append(db.ds.Objects, DataObject{Name: name, Type: typ, Size: size, Object: obj, Values: make([]int64, db.p.nm)})
	}
	o := &db.ds.Objects[i]
	o.Size = max(o.Size, size)
	return o
}

// attribute gives sample s (with a) to the data object at its address.
func (db *dataBuilder) attribute(es *expState, s *experiment.CounterSample, a addrSample, heap *heapBlocks, bases []objectBase) {
	if s.Addr == 0 {
		a.add(db.object(DataNoAddr, "", 0, "").Values)
		return
	}
	for _, b := range bases {
		if b.pid != s.Pid && b.pid != 0 {
			continue
		}
		if isCollector(b.path) && s.Addr >= b.base && s.Addr-b.base < b.span {
			// The collector library's own data (its buffers, its tables) is er's, as its frames.
			a.add(db.object(CollectorName, "", 0, b.path).Values)
			return
		}
		vars := db.varsOf(es, b.path)
		if len(vars) == 0 || s.Addr < b.base {
			continue
		}
		off := s.Addr - b.base
		k, _ := slices.BinarySearchFunc(vars, off, func(v debuginfo.Variable, off uint64) int { return cmp.Compare(v.Addr, off+1) })
		if k == 0 {
			continue
		}
		v := &vars[k-1]
		if off >= v.Addr+v.Size {
			continue
		}
		typ := ""
		if v.Type != nil {
			typ = v.Type.Name
		}
		a.add(db.object(v.Name, typ, v.Size, b.path).Values)
		if v.Type != nil {
			v.Type.Walk(off-v.Addr, func(st *debuginfo.DataType, m int) { db.member(st, m, a) })
		}
		return
	}
	if name, size, ok := heap.at(s.Addr, s.Time, s.Pid); ok {
		a.add(db.object("<Heap: "+name+">", "heap block", size, "").Values)
		return
	}
	a.add(db.object(DataUnknown, "", 0, "").Values)
}

// member adds a to member m of struct type st in its layout, and to the struct's total.
func (db *dataBuilder) member(st *debuginfo.DataType, m int, a addrSample) {
	i, ok := db.layouts[st]
	if !ok {
		i = len(db.ds.Layouts)
		db.layouts[st] = i
		l := DataLayout{Type: st.Name, Size: st.Size, Values: make([]int64, db.p.nm)}
		for _, mb := range st.Members {
			l.Members = append(l.Members, DataMember{Name: mb.Name, Offset: mb.Offset, Size: mb.Type.Size, Type: mb.Type.Name,
				Values: make([]int64, db.p.nm)})
		}
		db.ds.Layouts = append(db.ds.Layouts, l)
	}
	l := &db.ds.Layouts[i]
	a.add(l.Values)
	a.add(l.Members[m].Values)
}

// varsOf returns the variables of load object path (link-time addresses, sorted), read once.
func (db *dataBuilder) varsOf(es *expState, path string) []debuginfo.Variable {
	if v, ok := db.vars[path]; ok {
		return v
	}
	db.vars[path] = nil
	os := es.objs[path]
	if os == nil {
		return nil
	}
	fs := db.p.Unfiltered().b.fileOf(os)
	if fs == nil || fs.of.Debug == nil {
		return nil
	}
	vi, ok := fs.of.Debug.(interface {
		Variables() ([]debuginfo.Variable, error)
	})
	if !ok {
		return nil
	}
	vars, err := vi.Variables()
	if err != nil {
		return nil
	}
	db.vars[path] = vars
	return vars
}

// objectBase is where a load object of a process is: its link-time address 0 is at base.
type objectBase struct {
	pid  uint32
	path string
	base uint64
	span uint64 // the end of its last segment in memory, link-time
}

// objectBases returns the load bases of the experiment's ELF objects, from their executable
// mappings and the segments of their archives.
func objectBases(d *experiment.Data) []objectBase {
	var out []objectBase
	type key struct {
		pid  uint32
		path string
	}
	seen := map[key]bool{}
	for i := range d.Mappings {
		m := &d.Mappings[i]
		if m.Pid == 0 || !strings.HasPrefix(m.Path, "/") {
			continue
		}
		a := d.Archives[m.Path]
		if a == nil || a.Kind != "elf" {
			continue
		}
		for _, sg := range a.Segments {
			if m.Offset >= sg.Offset && m.Offset < sg.Offset+max(sg.Filesz, 1) {
				k := key{m.Pid, m.Path}
				if !seen[k] {
					seen[k] = true
					var span uint64
					for _, g := range a.Segments {
						span = max(span, g.Vaddr+g.Memsz)
					}
					out = append(out, objectBase{pid: m.Pid, path: m.Path, base: m.Start - (sg.Vaddr + (m.Offset - sg.Offset)), span: span})
				}
				break
			}
		}
	}
	return out
}

// heapBlocks are the blocks an experiment's heap tracing saw, for finding the one at an address.
type heapBlocks struct {
	blocks []heapBlock // by start address
}

type heapBlock struct {
	pid         uint32
	start, end  uint64
	alloc, free int64 // when it was allocated and freed (free 1<<62 when never)
	site        string
}

// newHeapBlocks collects the blocks of es's heap events, named by the function that allocated them
// (the first of the allocation stack that is not a memory function).
func newHeapBlocks(p *Profile, es *expState) *heapBlocks {
	d := es.d
	hb := &heapBlocks{}
	t := d.HeapTable()
	if t.Len() == 0 || experiment.HeapSums(t) != nil {
		return hb
	}
	raws := es.raws(DataHeap)
	root := p.Unfiltered()
	live := map[[2]uint64]int{} // (pid, addr) to its block
	end := func(pid uint32, addr uint64, t int64) {
		if i, ok := live[[2]uint64{uint64(pid), addr}]; ok {
			hb.blocks[i].free = t
			delete(live, [2]uint64{uint64(pid), addr})
		}
	}
	for i := range t.Len() {
		ev := experiment.HeapAt(t, i)
		e := &ev
		switch e.Op {
		case experiment.HeapFree:
			end(e.Pid, e.Old, e.Time)
			continue
		case experiment.HeapMunmap:
			for k, j := range live {
				if k[0] == uint64(e.Pid) && k[1] >= e.Old && k[1] < e.Old+e.Size {
					hb.blocks[j].free = e.Time
					delete(live, k)
				}
			}
			continue
		case experiment.HeapRealloc, experiment.HeapReallocarray:
			if e.Addr != 0 {
				end(e.Pid, e.Old, e.Time)
			}
		}
		if e.Addr == 0 {
			continue
		}
		site := "?"
		if raws != nil && raws[i] >= 0 {
			site = root.allocSite(root.raw[raws[i]].stack)
		}
		live[[2]uint64{uint64(e.Pid), e.Addr}] = len(hb.blocks)
		hb.blocks = append(hb.blocks, heapBlock{pid: e.Pid, start: e.Addr, end: e.Addr + max(e.Size, 1), alloc: e.Time, free: 1 << 62, site: site})
	}
	slices.SortStableFunc(hb.blocks, func(a, b heapBlock) int { return cmp.Compare(a.start, b.start) })
	return hb
}

// at returns the allocation site and size of process pid's block live at t that holds addr.
func (hb *heapBlocks) at(addr uint64, t int64, pid uint32) (string, uint64, bool) {
	k, _ := slices.BinarySearchFunc(hb.blocks, addr, func(b heapBlock, addr uint64) int { return cmp.Compare(b.start, addr+1) })
	for j := k - 1; j >= 0; j-- {
		b := &hb.blocks[j]
		if b.pid == pid && addr < b.end && t >= b.alloc && t < b.free {
			return b.site, b.end - b.start, true
		}
		if addr-b.start > 1<<40 { // (blocks this far below cannot hold it)
			break
		}
	}
	return "", 0, false
}

// allocSite names the function of function stack s that called the memory functions: the first
// frame, from the leaf, that is not malloc, calloc, realloc and the like.
func (p *Profile) allocSite(s int32) string {
	if s < 0 {
		return "?"
	}
	funcs, _ := p.stack(int(s))
	for i := len(funcs) - 1; i >= 0; i-- {
		name := p.Functions[funcs[i]].Name
		if !memoryFunction(name) {
			return name
		}
	}
	return "?"
}

// memoryFunction says whether name is an allocator's entry point.
func memoryFunction(name string) bool {
	switch strings.TrimPrefix(name, "__libc_") {
	case "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc", "memalign",
		"valloc", "pvalloc", "mmap", "mmap64", "operator new(unsigned long)", "_Znwm", "_Znam":
		return true
	}
	return strings.HasPrefix(name, "<")
}

// MemObject is one memory object: an aligned block of memory (a page, a cache line, an address) with
// the values of the events whose data address is in it.
type MemObject struct {
	Addr   uint64 // its first byte
	Values []int64
}

// MemObjects returns the memory objects of size bytes (a power of 2; 1: each address) that the data
// addresses fell in, by address.
func (ds *DataSpace) MemObjects(size uint64) []MemObject {
	by := map[uint64]int{}
	var out []MemObject
	n := len(ds.Total)
	for _, s := range ds.samples {
		if s.addr == 0 {
			continue
		}
		a := s.addr &^ (size - 1)
		i, ok := by[a]
		if !ok {
			i = len(out)
			by[a] = i
			out = append(out, MemObject{Addr: a, Values: make([]int64, n)})
		}
		s.add(out[i].Values)
	}
	slices.SortFunc(out, func(a, b MemObject) int { return cmp.Compare(a.Addr, b.Addr) })
	return out
}
