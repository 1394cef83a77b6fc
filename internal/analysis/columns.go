package analysis

import (
	"strconv"
	"strings"

	"er/internal/experiment"
)

// The fields of the built-in traced kinds' events that filters read by name (Kind.Columns), named
// as gprofng names them where they mean the same. Experiments read summed (experiment.Options.Summed)
// have sites, not events: their fields are 0 there (er print reads summed only where no filter runs).
func init() {
	heap := func(get func(e *experiment.HeapEvent) int64) func(d *experiment.Data, i int) int64 {
		return eventField(func(d *experiment.Data) []experiment.HeapEvent { return d.Heap }, get)
	}
	heapKind.Columns = []Column{
		{"HTYPE", "the heap function: " + codes(12, func(i int) string { return experiment.HeapOp(i).String() }),
			heap(func(e *experiment.HeapEvent) int64 { return int64(e.Op) })},
		{"HSIZE", "bytes requested (munmap: the length unmapped)", heap(func(e *experiment.HeapEvent) int64 { return int64(e.Size) })},
		{"HVADDR", "address of the block returned; 0 for free and for failures", heap(func(e *experiment.HeapEvent) int64 { return int64(e.Addr) })},
		{"HOVADDR", "address of the block freed: free's and realloc's argument, munmap's address",
			heap(func(e *experiment.HeapEvent) int64 { return int64(e.Old) })},
	}
	// The synchronization waits' STYPE and SOBJ are their table's columns (experiment.SyncSchema).
	if j := syncKind.Col("STYPE"); j >= 0 {
		syncKind.Columns[j].Help = "the synchronization function: " + codes(8, func(i int) string { return experiment.SyncOp(i).String() })
	}
	syncKind.Columns = append(syncKind.Columns, Column{"SRQST", "when the wait began, ns since the experiment's start: TSTAMP - EVT_TIME",
		func(d *experiment.Data, i int) int64 {
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

// eventField is a Column's Get of a field of the events evs gives: 0 past them (an experiment read
// summed has sites, not events).
func eventField[E any](evs func(d *experiment.Data) []E, get func(e *E) int64) func(d *experiment.Data, i int) int64 {
	return func(d *experiment.Data, i int) int64 {
		if s := evs(d); i < len(s) {
			return get(&s[i])
		}
		return 0
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
