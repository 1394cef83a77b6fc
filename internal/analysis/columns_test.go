package analysis

import (
	"strings"
	"testing"

	"er/internal/experiment"
)

// TestBuiltinColumns: each traced kind's fields read the event's own values by name, and 0 where
// the experiment holds sites in place of events (read summed).
func TestBuiltinColumns(t *testing.T) {
	d := &experiment.Data{}
	d.AddHeap([]experiment.HeapEvent{{Op: experiment.HeapRealloc, Size: 48, Addr: 0x2000, Old: 0x1000}})
	d.AddIO([]experiment.IOEvent{{Op: experiment.IOPipe, FD: 3, FD2: 4, Ret: -1, Bytes: 0, Err: 24}})
	d.AddSync([]experiment.SyncEvent{{Time: 50, Wait: 20, Op: experiment.SyncJoin, Object: 77}})
	d.AddClock([]experiment.ClockSample{{Time: 10, Mode: experiment.ModeKernel, Period: 1000}})
	for _, c := range []struct {
		k    *Kind
		name string
		want int64
	}{
		{clockKind, "MSTATE", 2}, {clockKind, "period", 1000},
		{heapKind, "htype", 3}, {heapKind, "HSIZE", 48}, {heapKind, "HVADDR", 0x2000}, {heapKind, "HOVADDR", 0x1000},
		{syncKind, "STYPE", 5}, {syncKind, "SOBJ", 77}, {syncKind, "SRQST", 30},
		{ioKind, "IOOP", 19}, {ioKind, "IOFD", 3}, {ioKind, "IOFD2", 4}, {ioKind, "IONBYTE", 0}, {ioKind, "IOERR", 24}, {ioKind, "IORET", -1},
	} {
		j := c.k.Col(c.name)
		if j < 0 {
			t.Errorf("%s has no column %s", c.k.Name, c.name)
			continue
		}
		if got := c.k.Columns[j].Get(d, 0); got != c.want {
			t.Errorf("%s %s = %d, want %d", c.k.Name, c.name, got, c.want)
		}
		// Bound to the experiment's table (Of), the same, and 0 past its events or without one.
		if got, past, none := c.k.Columns[j].Of(d)(0), c.k.Columns[j].Of(d)(9), c.k.Columns[j].Of(&experiment.Data{})(0); got != c.want || past != 0 || none != 0 {
			t.Errorf("%s %s bound: %d, past the events %d, without them %d; want %d, 0, 0", c.k.Name, c.name, got, past, none, c.want)
		}
		if got := c.k.Columns[j].Get(&experiment.Data{}, 0); got != 0 {
			t.Errorf("%s %s of no event = %d, want 0", c.k.Name, c.name, got)
		}
	}
	if h := heapKind.Columns[heapKind.Col("HTYPE")].Help; !strings.Contains(h, "1 malloc, 2 calloc, 3 realloc, 4 free") || !strings.HasSuffix(h, "12 munmap") {
		t.Errorf("HTYPE help %q", h)
	}
	if h := ioKind.Columns[ioKind.Col("IOOP")].Help; !strings.Contains(h, "20 pipe2, 32 fopen") || strings.Contains(h, "io_op_") {
		t.Errorf("IOOP help %q", h)
	}
}
