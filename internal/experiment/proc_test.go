package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// procExperiment writes a founder experiment whose collection did not finish (no end, a .proc/):
// the founder (pid 100), its fork child _f1.er (pid 101, began at 2 s), the image _f1_x1.er that the
// child exec'd (pid 101, at 3 s), and library instances in .proc/ for each, one more for a process
// that has no subexperiment (pid 102), and one of an image of pid 101 that began before any of its
// experiments. Each instance's heap trace holds allocations of a size of its own.
func procExperiment(t *testing.T) string {
	t.Helper()
	const perfNS = 5_000_000_000 // CLOCK_MONOTONIC at the start of the collection
	root := filepath.Join(t.TempDir(), "test.1.er")
	log := Log{FormatVersion: FormatVersion, Pid: 100, StartPerfNS: perfNS}
	w, err := Create(root, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []struct {
		name  string
		start int64
	}{{"_f1.er", 2e9}, {"_f1_x1.er", 3e9}} {
		l := log
		l.Pid, l.Lineage = 101, strings.TrimSuffix(sub.name, ".er")
		l.Events = []Event{{Time: sub.start, Kind: "start", Pid: 101, Text: "started"}}
		l.EndTime = 4e9
		sw, err := Create(filepath.Join(root, sub.name), l)
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []struct {
		pid     uint32
		start   uint64 // CLOCK_MONOTONIC
		founder bool
		size    uint64
	}{
		{100, perfNS + 1e6, true, 1000}, // the founder
		{101, perfNS + 2e9 + 5e5, false, 1001},
		{101, perfNS + 3e9 + 5e5, false, 1002}, // the exec'd image
		{102, perfNS + 1e9, false, 1003},       // no subexperiment
		{101, perfNS + 1e9, false, 1004},       // before pid 101's first image
	} {
		dir := filepath.Join(root, ProcDirName, fmt.Sprintf("%d.%d", in.pid, in.start))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		how := "fork"
		if in.founder {
			how = "founder"
		}
		info := fmt.Sprintf("pid=%d\nppid=1\nstart_ns=%d\nhow=%s\n", in.pid, in.start, how)
		files := map[string][]byte{
			"info": []byte(info),
			HeapTraceFile: traceFile(1, in.pid, 0, in.start, 4096, [][]byte{
				rec(recHeap, uint8(HeapMalloc), in.pid, in.start+10, uint32(1), uint32(in.size), uint64(0x1000))}),
			TraceStacksFile: traceFile(5, in.pid, 0, in.start, 4096, [][]byte{stackRec(1, 0x400000+in.size)}),
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// The trace files an experiment's collection left in .proc/ (er collect was killed, or is still
// running) are read into the experiment of the process image each instance ran in, as er collect
// would have moved them; the warnings say so, and name the data that belongs to no experiment.
// Before, the reader did not look in .proc/: the heap data of the whole run was missing.
func TestOpenProcData(t *testing.T) {
	root := procExperiment(t)
	for _, c := range []struct {
		dir  string
		size uint64 // the allocation read, 0 for none
		warn []string
	}{
		{root, 1000, []string{
			"the experiment was not finished: er collect stopped before the end (it was killed, or the machine stopped), so what is read is what was written until then",
			"the collector library's data of process 101 (.proc/101.6000000000), process 102 (.proc/102.6000000000) is not read: no experiment of that process image exists (er collect had not recorded its start, or does not follow it)",
			"the trace data of process 100 (heaptrace, tracestacks) is read from .proc/100.5001000000: er collect did not move it into the experiment (it stopped before the end: it was killed, or could not move it)",
		}},
		{filepath.Join(root, "_f1.er"), 1001, []string{
			"the trace data of process 101 (heaptrace, tracestacks) is read from .proc/101.7000500000: er collect did not move it into the experiment (it stopped before the end: it was killed, or could not move it)",
		}},
		{filepath.Join(root, "_f1_x1.er"), 1002, []string{
			"the trace data of process 101 (heaptrace, tracestacks) is read from .proc/101.8000500000: er collect did not move it into the experiment (it stopped before the end: it was killed, or could not move it)",
		}},
	} {
		d, err := Open(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if h := d.HeapEvents(); len(h) != 1 || h[0].Size != c.size || !reflect.DeepEqual(d.Stacks[h[0].Stack], Stack{0x400000 + c.size}) {
			t.Errorf("%s: heap %+v, want one allocation of %d bytes with its stack", filepath.Base(c.dir), h, c.size)
		}
		var warn []string
		for _, w := range d.Warnings {
			if !strings.Contains(w, ": missing;") && !strings.Contains(w, ": empty file") {
				warn = append(warn, w)
			}
		}
		if !reflect.DeepEqual(warn, c.warn) {
			t.Errorf("%s: warnings\n%q\nwant\n%q", filepath.Base(c.dir), warn, c.warn)
		}
	}

	// Files the experiment has of its own come first; the instance's fill in the others.
	own := traceFile(1, 100, 0, 5_001_000_000, 4096, [][]byte{
		rec(recHeap, uint8(HeapMalloc), 100, 5_001_000_020, uint32(1), uint32(999), uint64(0x2000))})
	if err := os.WriteFile(filepath.Join(root, HeapTraceFile), own, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if h := d.HeapEvents(); len(h) != 1 || h[0].Size != 999 || !reflect.DeepEqual(d.Stacks[h[0].Stack], Stack{0x400000 + 1000}) {
		t.Errorf("with a heap trace of its own: heap %+v", h)
	}
}

// collectorRunning tells a live collection (a reader holds .control open) from a dead one.
func TestCollectorRunning(t *testing.T) {
	dir := t.TempDir()
	if collectorRunning(dir) {
		t.Error("no .control: running")
	}
	fifo := filepath.Join(dir, ControlName)
	if err := os.WriteFile(fifo, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if collectorRunning(dir) {
		t.Error("a regular .control: running")
	}
	os.Remove(fifo)
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	if collectorRunning(dir) {
		t.Error("a .control FIFO without a reader: running")
	}
	r, err := os.OpenFile(fifo, os.O_RDWR, 0) // as er collect holds it
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !collectorRunning(dir) {
		t.Error("a .control FIFO with a reader: not running")
	}
}
