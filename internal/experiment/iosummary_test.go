package experiment

import (
	"reflect"
	"testing"
)

// Reading with Summed sums the I/O calls as summing the events read does: each named by the
// descriptors' history in time order across the threads' blocks (here written out of time order),
// and summed per thread, stack, operation, outcome and file.
func TestIOSummary(t *testing.T) {
	ioTrace := traceFile(3, 42, 0, base, 4096,
		[][]byte{ // thread 8, later: writes to the file thread 7 opened and dup2'd to 9
			ioRec(IOWriteOp, 8, base+300, 1, 30, 9, -1, 10, 10, 0, ""),
			ioRec(IOWriteOp, 8, base+400, 1, 40, 9, -1, 20, 20, 0, ""),
			ioRec(IOWriteOp, 8, base+500, 1, 50, 9, -1, -1, 0, 5, ""), // failed
		},
		[][]byte{ // thread 7
			ioRec(IOInherited, 7, base+1, 0, 0, 1, -1, 0, 0, 0, "/dev/pts/0"),
			ioRec(IOOpen, 7, base+100, 2, 10, 3, -1, 3, 0, 0, "/tmp/f"),
			ioRec(IODup2, 7, base+200, 2, 5, 3, 9, 9, 0, 0, ""),
			ioRec(IOWriteOp, 7, base+250, 1, 25, 1, -1, 6, 6, 0, ""),
			ioRec(IOClose, 7, base+450, 2, 5, 9, -1, 0, 0, 0, ""),
			ioRec(IOWriteOp, 7, base+600, 1, 60, 9, -1, -1, 0, 9, ""), // after the close: an unknown descriptor
		})
	stacks := traceFile(5, 42, 0, base, 4096, [][]byte{stackRec(1, 0x400100), stackRec(2, 0x400200)})
	dir := traceDir(t, map[string][]byte{IOTraceFile: ioTrace, TraceStacksFile: stacks})
	full, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	full.SummarizeIO()
	got, err := OpenWith(dir, Options{Summed: true})
	if err != nil {
		t.Fatal(err)
	}
	gt, ft := got.IOTable(), full.IOTable()
	if !reflect.DeepEqual(gt, ft) || !reflect.DeepEqual(got.Warnings, full.Warnings) {
		t.Fatalf("summed when read: %+v %q\nsummed after reading: %+v %q", gt, got.Warnings, ft, full.Warnings)
	}
	if n := gt.Events(); n != 9 {
		t.Errorf("the rows stand for %d calls, want 9", n)
	}
	sizes := IOSizes(gt)
	if len(sizes) != gt.Len() {
		t.Fatalf("%d size histograms for %d rows", len(sizes), gt.Len())
	}
	writes := -1
	files := map[string]int64{}
	for i := range gt.Len() {
		e := IOAt(gt, i)
		files[e.File] += gt.CountAt(i)
		if e.Tid == 8 && e.Op == IOWriteOp && e.Err == 0 {
			writes = i
		}
	}
	if writes < 0 {
		t.Fatal("no row of thread 8's writes")
	}
	if e := IOAt(gt, writes); e.File != "/tmp/f" || e.FD != 9 || gt.CountAt(writes) != 2 || e.Bytes != 30 || e.Dur != 70 ||
		sizes[writes].Count != 2 || sizes[writes].Longest != 40 {
		t.Errorf("thread 8's writes: %+v, %d calls, sizes %+v", e, gt.CountAt(writes), sizes[writes])
	}
	if files["/tmp/f"] != 5 || files["/dev/pts/0"] != 2 || gt.Len() != 8 || gt.LastTime() != 600 {
		t.Errorf("calls by file %v, %d rows, last %d: want /tmp/f 5, /dev/pts/0 2, 8 rows, 600", files, gt.Len(), gt.LastTime())
	}
}
