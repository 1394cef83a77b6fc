package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ompStateRec and ompRegionRec are the OpenMP trace's records (trace.h).
func ompStateRec(s OMPState, tid uint32, start, end, region uint64) []byte {
	return rec(recOMPState, uint8(s), tid, end, start, region)
}

func ompRegionRec(tid uint32, start, end uint64, stack, team uint32, id, parent, fn uint64) []byte {
	return rec(recOMPRegion, 0, tid, end, stack, team, start, id, parent, fn)
}

// TestReadOMP: the OpenMP trace's states and regions are read into their two tables in time order,
// a region's stack resolved as the other traces' are; records that cannot be are counted, not read.
func TestReadOMP(t *testing.T) {
	dir := writeTraceExperiment(t)
	omp := traceFile(fileOMP, 42, 0, base, 4096, [][]byte{
		ompStateRec(OMPWork, 8, base+100, base+900, 1),
		ompRegionRec(7, base+50, base+1000, 2, 2, 1, 0, 0x400300),
		ompStateRec(OMPWork, 7, base+60, base+950, 1),
		ompStateRec(OMPLockWait, 8, base+200, base+300, 1),
		ompStateRec(OMPLockWait, 8, base+400, base+300, 1), // ends before it starts
		ompStateRec(0, 8, base+400, base+500, 1),           // no state
		ompStateRec(OMPState(NumOMPStates), 8, base+400, base+500, 1),
	})
	if err := os.WriteFile(filepath.Join(dir, OMPTraceFile), omp, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, rt := d.OMPTable(), d.OMPRegions()
	if st.Len() != 3 || rt.Len() != 1 {
		t.Fatalf("%d states, %d regions; want 3 and 1", st.Len(), rt.Len())
	}
	type state struct {
		tid      uint32
		end, dur int64
		s        OMPState
		region   int64
	}
	want := []state{{8, 300, 100, OMPLockWait, 1}, {8, 900, 800, OMPWork, 1}, {7, 950, 890, OMPWork, 1}}
	for i, w := range want {
		got := state{st.Tid[i], st.Time[i], st.DurAt(i), OMPState(st.Cols[OMPColState].At(i)), st.Cols[OMPColRegion].At(i)}
		if got != w {
			t.Errorf("state %d: %+v, want %+v", i, got, w)
		}
	}
	if rt.Tid[0] != 7 || rt.Time[0] != 1000 || rt.DurAt(0) != 950 || rt.Cols[RegColID].At(0) != 1 || rt.Cols[RegColFn].At(0) != 0x400300 ||
		rt.Cols[RegColTeam].At(0) != 2 {
		t.Errorf("region %+v", rt.Row(0))
	}
	if s := d.Stacks[rt.Stack[0]]; len(s) != 2 || s[0] != 0x7f0020 {
		t.Errorf("the region's stack %x, want trace stack 2's", s)
	}
	if all := strings.Join(d.Warnings, "\n"); !strings.Contains(all, OMPTraceFile) {
		t.Errorf("warnings %q say nothing of the 3 records not read", all)
	}
	if OMPCriticalWait.String() != "critical_section_wait" || OMPState(99).String() != "state 99" {
		t.Errorf("names %q %q", OMPCriticalWait, OMPState(99))
	}
	if s, ok := OMPStateOfFrame(OMPStateFrame(OMPIdle)); !ok || s != OMPIdle {
		t.Errorf("state of its frame: %v %v", s, ok)
	}
	if _, ok := OMPStateOfFrame(OMPMarkFrame); ok {
		t.Error("the mark is a state's frame")
	}
}
