package experiment

import (
	"bytes"
	"reflect"
	"testing"
)

// mergeTrace gives a trace's events in the order of a full read after its stable sort: by time, those
// of the same time in file order, across blocks written out of time order, one of them not in order
// inside, whole and in parts side by side.
func TestMergeTrace(t *testing.T) {
	sync := func(tid uint32, at uint64, object uint64) []byte {
		return rec(recSync, 1, tid, base+100+at, uint32(0), uint32(0), uint64(tid), object)
	}
	var blocks [][][]byte
	for b := range uint64(12) {
		var blk [][]byte
		for i := range uint64(30) {
			// Later blocks hold earlier times, and two blocks at a time the same times; one in four
			// blocks is not in time order inside.
			at := (11-b/2)*100 + i*7%90
			if b%4 != 1 {
				at = (11-b/2)*100 + i*3
			}
			blk = append(blk, sync(uint32(b%3+1), at, b*1000+i))
		}
		blocks = append(blocks, blk)
	}
	file := traceFile(2, 42, 1000, base, 4096, blocks...)
	full := &Data{Stacks: []Stack{nil}}
	tr := newTraceReader(full, func(string) {})
	tr.begin()
	if err := tr.readFile(SyncTraceFile, SyncTraceFile, bytes.NewReader(file), int64(len(file)), -1); err != nil {
		t.Fatal(err)
	}
	tr.finish()
	fullSync := syncEvents(full.SyncTable())
	if len(fullSync) != 12*30 {
		t.Fatalf("%d events read, want %d", len(fullSync), 12*30)
	}
	for _, parts := range []int{1, 2, 5} {
		tf, err := openTrace(SyncTraceFile, bytes.NewReader(file), int64(len(file)), -1)
		if err != nil {
			t.Fatal(err)
		}
		m := &traceReader{d: &Data{}, base: base, parts: parts, minPart: 4096}
		var got []SyncEvent
		var sk skipped
		if _, err := mergeTrace(m, tf, &sk, syncMergeEvents, func(e *SyncEvent) int64 { return e.Time },
			func(e *SyncEvent) { got = append(got, *e) }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, fullSync) {
			t.Errorf("%d parts: the merge differs from the full read's order", parts)
		}
	}
}
