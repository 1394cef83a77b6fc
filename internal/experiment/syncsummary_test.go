package experiment

import (
	"reflect"
	"testing"
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
	if len(got.Sync) != 0 || !reflect.DeepEqual(got.SyncSummary, full.SyncSummary) || !reflect.DeepEqual(got.Warnings, full.Warnings) {
		t.Errorf("summed when read: %+v %q\nsummed after reading: %+v %q", got.SyncSummary, got.Warnings, full.SyncSummary, full.Warnings)
	}
	if n := got.SyncSummary.Events(); n != 7 {
		t.Errorf("the sites stand for %d waits, want 7", n)
	}
	s := got.SyncSummary.Sites
	if len(s) != 5 || s[0].Tid != 7 || s[0].Events != 2 || s[0].Wait != 15 || s[1].Tid != 8 || s[1].Wait != 30 ||
		s[2].Wait != 40 || s[3].Wait != 50 || s[4].Tid != 7 || s[4].Stack != 0 || s[4].Events != 2 || s[4].Wait != 130 ||
		got.SyncSummary.Last != 700 {
		t.Errorf("sites %+v, last %d", s, got.SyncSummary.Last)
	}
}
