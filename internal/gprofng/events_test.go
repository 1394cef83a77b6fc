package gprofng

import (
	"testing"

	"er/internal/experiment"
)

func TestIOOpFits(t *testing.T) {
	for _, tc := range []struct {
		op   experiment.IOOp
		typ  int64
		want bool
	}{
		{experiment.IOPread, ioRead, true}, {experiment.IOFread, ioRead, true}, {experiment.IOWriteOp, ioRead, false},
		{experiment.IOFprintf, ioWrite, true}, {experiment.IOOpenat, ioOpen, true}, {experiment.IODup2, ioOpen, true},
		{experiment.IOLseek, ioOpen, false}, {experiment.IOFclose, ioClose, true}, {experiment.IOOpen, ioClose, false},
		{experiment.IOLseek, ioOther, true}, {experiment.IOFflush, ioOther, true}, {experiment.IOClose, ioOther, false},
		{experiment.IODup, ioOther, false}, {experiment.IOReadOp, ioOther, false},
	} {
		if got := ioOpFits(tc.op, tc.typ); got != tc.want {
			t.Errorf("ioOpFits(%s, %d) = %v", tc.op, tc.typ, got)
		}
	}
	if ioOps["pread64"] != uint8(experiment.IOPread) || ioOps["fopen"] != uint8(experiment.IOFopen) {
		t.Errorf("ioOps: pread64 %d, fopen %d", ioOps["pread64"], ioOps["fopen"])
	}
}

func TestSameHeapClass(t *testing.T) {
	for _, tc := range []struct {
		op, kind experiment.HeapOp
		want     bool
	}{
		{experiment.HeapCalloc, experiment.HeapMalloc, true}, {experiment.HeapValloc, experiment.HeapMalloc, true},
		{experiment.HeapRealloc, experiment.HeapMalloc, false}, {experiment.HeapReallocarray, experiment.HeapRealloc, true},
		{experiment.HeapMunmap, experiment.HeapMmap, false}, {experiment.HeapFree, experiment.HeapFree, true},
	} {
		if got := sameHeapClass(tc.op, tc.kind); got != tc.want {
			t.Errorf("sameHeapClass(%s, %s) = %v", tc.op, tc.kind, got)
		}
	}
}

// TestClockModes: Linux's CPU time is er's unknown mode (Total CPU alone); the Solaris states
// keep their meaning.
func TestClockModes(t *testing.T) {
	c := newConverter(&experiment.Data{Stacks: []experiment.Stack{nil}}, &Log{Pid: 7, Start: 1000}, newStacks())
	p := &Profile{File: "profile", Attrs: map[string]string{"ptimer": "1000"}}
	rec := func(mstate, ntick int64) Record {
		return Record{Ints: map[string]uint64{"TSTAMP": 5000, "LWPID": 9, "MSTATE": uint64(mstate), "NTICK": uint64(ntick)}}
	}
	c.clock(p, []Record{rec(lmsLinuxCPU, 2), rec(lmsUser, 1), rec(lmsWaitCPU, 1), rec(42, 1), rec(lmsUser, 0)})
	want := []experiment.ClockSample{
		{Time: 4000, Pid: 7, Tid: 9, Mode: experiment.ModeUnknown, Period: 2e6},
		{Time: 4000, Pid: 7, Tid: 9, Mode: experiment.ModeUser, Period: 1e6},
		{Time: 4000, Pid: 7, Tid: 9, Mode: experiment.ModeWaitCPU, Period: 1e6},
	}
	if c.d.ClockTable().Len() != len(want) {
		t.Fatalf("samples %+v", c.d.ClockSamples())
	}
	for i := range want {
		if experiment.ClockAt(c.d.ClockTable(), i) != want[i] {
			t.Errorf("sample %d: %+v, want %+v", i, experiment.ClockAt(c.d.ClockTable(), i), want[i])
		}
	}
	if c.missing != 5 || len(c.warnings) != 1 {
		t.Errorf("missing %d, warnings %q", c.missing, c.warnings)
	}
}
