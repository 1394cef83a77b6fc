package analysis

import (
	"strconv"
	"strings"

	"er/internal/experiment"
)

// The fields of the built-in kinds' events that filters read by name (Kind.Columns): their tables'
// declared columns, named as gprofng names them where they mean the same, and SRQST.
func init() {
	// The heap calls' fields are their table's columns (experiment.HeapSchema).
	if j := heapKind.Col("HTYPE"); j >= 0 {
		heapKind.Columns[j].Help = "the heap function: " + codes(12, func(i int) string { return experiment.HeapOp(i).String() })
	}
	// The synchronization waits' STYPE and SOBJ are their table's columns (experiment.SyncSchema).
	if j := syncKind.Col("STYPE"); j >= 0 {
		syncKind.Columns[j].Help = "the synchronization function: " + codes(8, func(i int) string { return experiment.SyncOp(i).String() })
	}
	syncKind.Columns = append(syncKind.Columns, Column{Name: "SRQST", Help: "when the wait began, ns since the experiment's start: TSTAMP - EVT_TIME",
		Get: func(d *experiment.Data, i int) int64 {
			t := d.SyncTable()
			if i >= t.Len() {
				return 0
			}
			return t.Time[i] - t.DurAt(i)
		}})
	// The I/O calls' fields are their table's columns (experiment.IOSchema).
	if j := ioKind.Col("IOOP"); j >= 0 {
		ioKind.Columns[j].Help = "the I/O function: " + codes(int(experiment.IOInherited), func(i int) string { return experiment.IOOp(i).String() })
	}
}

// codes lists the codes 1 to n with their names, "1 malloc, 2 calloc, ...", leaving out those
// with no name of their own ("io_op_21").
func codes(n int, name func(int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if strings.Contains(name(i), "_op_") {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i) + " " + name(i))
	}
	return b.String()
}
