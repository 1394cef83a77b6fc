package collect

import (
	"testing"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/perfabi"
)

// TestStackerFallback: without user registers (a kernel thread, or -U 0) the kernel's chain is used, and
// a sample without any chain keeps its IP.
func TestStackerFallback(t *testing.T) {
	st := newStacker()
	r := &perfabi.Sample{IP: 0x401000, Pid: 7, Callchain: []uint64{perfabi.ContextKernel, 0xffffffff81000010,
		perfabi.ContextUser, 0x401000, 0x401234}}
	got := st.stack(r, nil)
	want := experiment.Stack{0xffffffff81000010, 0x401000, 0x401234}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("stack = %#x, want %#x", got, want)
	}
	if got := st.stack(&perfabi.Sample{IP: 0x401000, Pid: 7}, nil); len(got) != 1 || got[0] != 0x401000 {
		t.Errorf("no chain: %#x", got)
	}
	// Registers but no mappings for the process: the chain again, not a failed unwind.
	r.RegsABI, r.Regs = unix.PERF_SAMPLE_REGS_ABI_64, make([]uint64, 20)
	if got := st.stack(r, nil); len(got) != 3 || st.tally.Failed != 0 {
		t.Errorf("unknown process: %#x, %d failed", got, st.tally.Failed)
	}
}

// TestStackerMappings: mappings go to the process's space, a fork copies them, and gone forgets them.
func TestStackerMappings(t *testing.T) {
	st := newStacker()
	st.addMapping(experiment.Mapping{Pid: 3, Start: 0x1000, End: 0x2000, Path: "[anon]"})
	st.addMapping(experiment.Mapping{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]"})
	if st.spaces[3] == nil || st.spaces[3].Find(0x1800) == nil || st.spaces[0] != nil {
		t.Fatalf("spaces after addMapping: %v", st.spaces)
	}
	st.fork(3, 4)
	if st.spaces[4] == nil || st.spaces[4].Find(0x1800) == nil {
		t.Error("fork did not copy the parent's space")
	}
	st.gone(3)
	if st.spaces[3] != nil || st.spaces[4] == nil {
		t.Error("gone removed the wrong space")
	}
}

// TestBatch: copies survive the reuse of the records and buffers they were made from, and come out in time
// order, stable for equal times.
func TestBatch(t *testing.T) {
	var b batch
	buf := []uint64{1, 2, 3}
	stack := []byte{9, 8, 7, 6}
	s := &perfabi.Sample{Time: 30, Callchain: buf, Regs: buf[:2], Stack: stack, StackDynSize: 3}
	b.add(s)
	b.add(&perfabi.Mmap{Time: 10, Filename: "/x", BuildID: []byte{1}})
	b.add(&perfabi.Comm{Time: 30, Comm: "second"})
	b.add(&perfabi.Exit{Time: 20})
	buf[0], stack[0] = 100, 100 // the ring reuses its memory
	recs := b.sorted()
	if len(recs) != 4 || recordTime(recs[0]) != 10 || recordTime(recs[1]) != 20 || recordTime(recs[2]) != 30 {
		t.Fatalf("not in time order: %v", recs)
	}
	cs := recs[2].(*perfabi.Sample)
	if cs.Callchain[0] != 1 || cs.Stack[0] != 9 || len(cs.Stack) != 3 || len(cs.Regs) != 2 {
		t.Errorf("the copy changed with its source: %+v", cs)
	}
	if _, ok := recs[3].(*perfabi.Comm); !ok {
		t.Errorf("equal times lost their order: %T", recs[3])
	}
	// Many copies: growing the store must not move earlier copies.
	for i := 0; i < 10000; i++ {
		b.add(&perfabi.Sample{Time: uint64(i), Callchain: []uint64{uint64(i)}, Stack: make([]byte, 512), StackDynSize: 512})
	}
	if cs.Callchain[0] != 1 || cs.Stack[0] != 9 || cs.Time != 30 {
		t.Errorf("a later copy overwrote an earlier one")
	}
	// Switch records, many: each its own copy, the first unmoved.
	sw := &perfabi.Switch{Time: 5, Tid: 7}
	b.add(sw)
	first := b.recs[len(b.recs)-1].(*perfabi.Switch)
	for i := 0; i < 10000; i++ {
		sw.Time, sw.Tid = uint64(i), uint32(i)
		b.add(sw)
	}
	if first.Time != 5 || first.Tid != 7 || b.recs[len(b.recs)-1].(*perfabi.Switch).Tid != 9999 {
		t.Errorf("switch copies: first %+v, last %+v", first, b.recs[len(b.recs)-1])
	}
	b.reset()
	if len(b.recs) != 0 {
		t.Error("reset kept records")
	}
}
