package experiment

import (
	"reflect"
	"testing"

	"er/internal/events"
)

// Reading with Summed sums the synchronization waits per thread and stack as summing the events
// read does, in the order of their first waits, with the stacks resolved and two ids that resolve to
// the same stack (none: they were never written) summed as one.
func TestSyncSummary(t *testing.T) {
	wait := func(tid uint32, at uint64, stack uint32, ns uint64) []byte {
		return rec(recSync, uint8(SyncMutexLock), tid, base+at, stack, uint32(0), ns, uint64(0xabc))
	}
	syncTrace := traceFile(2, 42, 1000, base, 4096,
		[][]byte{wait(8, 300, 1, 30), wait(8, 400, 2, 40), wait(8, 500, 3, 50)},
		[][]byte{wait(7, 100, 1, 10), wait(7, 300, 1, 5), wait(7, 600, 4, 60), wait(7, 700, 5, 70)}) // stacks 4 and 5 are never written
	stacks := traceFile(5, 42, 0, base, 4096, [][]byte{stackRec(1, 0x400100), stackRec(2, 0x400200), stackRec(3, 0x400200)})
	dir := traceDir(t, map[string][]byte{SyncTraceFile: syncTrace, TraceStacksFile: stacks})
	full, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	full.SummarizeSync()
	got, err := OpenWith(dir, Options{Summed: true})
	if err != nil {
		t.Fatal(err)
	}
	st, ft := got.SyncTable(), full.SyncTable()
	if !reflect.DeepEqual(st, ft) || !reflect.DeepEqual(got.Warnings, full.Warnings) {
		t.Errorf("summed when read: %+v %q\nsummed after reading: %+v %q", st, got.Warnings, ft, full.Warnings)
	}
	if n := st.Events(); n != 7 {
		t.Errorf("the rows stand for %d waits, want 7", n)
	}
	if st.Len() != 5 || st.Tid[0] != 7 || st.Count[0] != 2 || st.Dur[0] != 15 || st.Tid[1] != 8 || st.Dur[1] != 30 ||
		st.Dur[2] != 40 || st.Dur[3] != 50 || st.Tid[4] != 7 || st.Stack[4] != 0 || st.Count[4] != 2 || st.Dur[4] != 130 ||
		st.LastTime() != 700 || st.Cols[SyncColObject].At(0) != 0xabc || st.Cols[SyncColOp].At(0) != int64(SyncMutexLock) {
		t.Errorf("rows %+v, last %d", st, st.LastTime())
	}
	// Summing a summed table again changes nothing.
	again := *full
	again.Tables = map[string]*events.Table{SyncSchema.Name: ft}
	again.SummarizeSync()
	if !reflect.DeepEqual(again.SyncTable(), ft) {
		t.Errorf("summed twice: %+v, want %+v", again.SyncTable(), ft)
	}
}

// syncEvents turns the rows of a table of single waits back into events.
func syncEvents(t *events.Table) []SyncEvent {
	var out []SyncEvent
	for i := range t.Len() {
		out = append(out, SyncEvent{Time: t.Time[i], Pid: t.Pid[i], Tid: t.Tid[i], Stack: t.Stack[i], Op: SyncOp(t.Cols[SyncColOp].At(i)),
			Wait: t.DurAt(i), Object: uint64(t.Cols[SyncColObject].At(i))})
	}
	return out
}
