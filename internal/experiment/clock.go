package experiment

import "er/internal/events"

// Clock samples as an event table. A row is one sample of a thread's CPU time (profile.clock, the
// collector library's clocktrace) or one off-CPU interval (profile.offcpu, microstates).

// ClockSchema is the table of the clock samples (ClockTable): the header's dur is 0; the columns
// are the thread's state and the time the sample stands for.
var ClockSchema = &events.Schema{Name: "clock", File: ClockFile, Columns: []events.Column{
	{Name: "mstate", Title: "the thread's state: 0 unknown, 1 user, 2 system, 3 waiting for a CPU, 4 asleep, 5 in a text page fault, 6 in a data page fault", Type: events.U8},
	{Name: "period", Title: "CPU time the sample stands for; for an off-CPU state, the time in it", Unit: "ns", Type: events.I64},
}}

// The columns of ClockSchema.
const (
	ClockColMode = iota
	ClockColPeriod
)

// ClockTable returns d's clock samples (nil when it has none).
func (d *Data) ClockTable() *events.Table { return d.Tables[ClockSchema.Name] }

// clockTable returns d's clock table, made empty where it has none.
func (d *Data) clockTable() *events.Table { return d.table(ClockSchema) }

// ClockAt returns row i of t, a clock table, as a sample.
func ClockAt(t *events.Table, i int) ClockSample {
	return ClockSample{Time: t.Time[i], Pid: t.Pid[i], Tid: t.Tid[i], CPU: uint32(t.CPUAt(i)), Stack: t.Stack[i],
		Mode: Mode(t.Cols[ClockColMode].At(i)), Period: t.Cols[ClockColPeriod].At(i)}
}

// ClockSamples returns the rows of d's clock table as samples, in table order: for tools and tests
// that look at each sample.
func (d *Data) ClockSamples() []ClockSample {
	t := d.ClockTable()
	out := make([]ClockSample, t.Len())
	for i := range out {
		out[i] = ClockAt(t, i)
	}
	return out
}

// AddClock adds samples to d's clock table, made at the first, and puts it in time order (stably):
// what a reader of another format (gprofng's) gives.
func (d *Data) AddClock(samples []ClockSample) {
	if len(samples) == 0 {
		return
	}
	t := d.clockTable()
	t.Grow(len(samples))
	for i := range samples {
		addClock(t, &samples[i])
	}
	t.SortByTime()
}

// AppendClock appends samples to d's clock table, made at the first, in their order: for tools and
// tests that build an experiment in memory (the reader's tables are in time order; AddClock sorts).
func (d *Data) AppendClock(samples ...ClockSample) {
	t := d.clockTable()
	for i := range samples {
		addClock(t, &samples[i])
	}
}

// SetClock replaces d's clock samples with samples, in their order (none: d has no clock table).
func (d *Data) SetClock(samples []ClockSample) {
	delete(d.Tables, ClockSchema.Name)
	if len(samples) > 0 {
		d.AppendClock(samples...)
	}
}

// addClock adds s to t, a table of ClockSchema.
func addClock(t *events.Table, s *ClockSample) {
	t.AddHeader(s.Time, 0, 1, s.Pid, s.Tid, int32(s.CPU), s.Stack)
	t.Cols[ClockColMode].Append(int64(s.Mode))
	t.Cols[ClockColPeriod].Append(s.Period)
}
