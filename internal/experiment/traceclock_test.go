package experiment

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestTraceClockNS sums the intervals of the clock records of a clocktrace written as the collector
// library writes it: two blocks, the second ended early by a zero word.
func TestTraceClockNS(t *testing.T) {
	const block = 4096
	b := make([]byte, traceHeaderSize+2*block)
	copy(b, traceMagic)
	binary.LittleEndian.PutUint32(b[8:], traceVersion)
	binary.LittleEndian.PutUint32(b[12:], traceFileKinds[ClockTraceFile])
	binary.LittleEndian.PutUint32(b[16:], block)
	binary.LittleEndian.PutUint64(b[24:], 1000) // 1 µs intervals
	rec := func(off int, kind uint8, count uint32) int {
		binary.LittleEndian.PutUint64(b[off:], 4|uint64(kind)<<16) // 32 bytes
		binary.LittleEndian.PutUint32(b[off+20:], count)
		return off + 32
	}
	off := rec(traceHeaderSize, recClock, 3)
	off = rec(off, recStack, 99) // not a sample
	rec(off, recClock, 2)
	rec(traceHeaderSize+block, recClock, 5)
	file := filepath.Join(t.TempDir(), ClockTraceFile)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ns, err := TraceClockNS(file)
	if err != nil || ns != 10000 {
		t.Errorf("TraceClockNS: %d, %v; want 10000 ns", ns, err)
	}
	if ns, err := TraceClockNS(filepath.Join(t.TempDir(), "none")); ns != 0 || err != nil {
		t.Errorf("no file: %d, %v", ns, err)
	}
}
