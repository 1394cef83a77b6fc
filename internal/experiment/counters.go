package experiment

import (
	"er/internal/events"
)

// Counter overflow samples (-h) as an event table: the records of profile.hwc, read into rows of
// CounterSchema. A row stands for one overflow; its count is 1 and its duration 0 (the table keeps
// neither), its columns say how many events it stands for, the data address, which counter and
// where the thread was.

// CounterSchema is the table of the counter samples (CounterTable).
var CounterSchema = &events.Schema{Name: "counters", File: CountersFile, Columns: []events.Column{
	{Name: "hwcval", Title: "events the sample stands for: the counter's interval", Unit: "events", Type: events.I64},
	{Name: "hwcaddr", Title: "the data address of the event (a counter given with +); 0 when unknown", Type: events.U64},
	{Name: "hwctag", Title: "the counter: its index in the experiment's counters (header)", Type: events.U8},
	{Name: "hwcmode", Title: "where the thread was: 1 user, 2 kernel", Type: events.U8},
}}

// The columns of CounterSchema.
const (
	CounterColValue = iota
	CounterColAddr
	CounterColCounter
	CounterColMode
)

// CounterTable returns d's counter samples (nil when it has none).
func (d *Data) CounterTable() *events.Table { return d.Tables[CounterSchema.Name] }

// CounterAt returns counter sample i of d.
func (d *Data) CounterAt(i int) CounterSample {
	t := d.CounterTable()
	return CounterSample{Time: t.Time[i], Value: t.Cols[CounterColValue].At(i), Addr: uint64(t.Cols[CounterColAddr].At(i)),
		Pid: t.Pid[i], Tid: t.Tid[i], CPU: uint32(t.CPUAt(i)), Stack: t.Stack[i], Counter: uint8(t.Cols[CounterColCounter].At(i)),
		Mode: Mode(t.Cols[CounterColMode].At(i))}
}

// addCounter adds s to t, a table of CounterSchema.
func addCounter(t *events.Table, s *CounterSample) {
	t.AddHeader(s.Time, 0, 1, s.Pid, s.Tid, int32(s.CPU), s.Stack)
	t.Cols[CounterColValue].Append(s.Value)
	t.Cols[CounterColAddr].Append(int64(s.Addr))
	t.Cols[CounterColCounter].Append(int64(s.Counter))
	t.Cols[CounterColMode].Append(int64(s.Mode))
}

// AddCounters adds samples to d's counter table, made at the first, and puts it in time order
// (stably).
func (d *Data) AddCounters(samples []CounterSample) {
	if len(samples) == 0 {
		return
	}
	t := d.table(CounterSchema)
	for i := range samples {
		addCounter(t, &samples[i])
	}
	sortTable(t)
}
