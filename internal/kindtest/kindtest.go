// Package kindtest holds a toy kind of data for tests: it shows that a kind is a descriptor, a table schema and a collector.
package kindtest

import (
	"testing"

	"er/internal/analysis"
	"er/internal/events"
	"er/internal/experiment"
)

// Units is what each toy event adds to the toy metric (its toyunits column).
const Units = 3

// Schema is the toy kind's event table: its events, in the file toytrace, with two columns of
// their own: toyunits, what the event adds to the toy metric, and toyseq, its number from 0 in the
// order recorded.
var Schema = &events.Schema{Name: "toy", File: "toytrace", Columns: []events.Column{
	{Name: "toyunits", Title: "Toy units of the event", Unit: "units", Type: events.U32},
	{Name: "toyseq", Title: "the event's number, from 0", Type: events.U32},
}}

// Register adds the toy kind until the test ends: its events are the rows of the toy table
// (Record writes them), each worth its toyunits ("toycnt", "Toy Units") at its stack. Everything
// else (its events' process, thread, time, CPU and stack, its filter fields TOYUNITS and TOYSEQ)
// comes from the table.
func Register(t testing.TB) analysis.DataKind {
	t.Helper()
	toy := &analysis.Kind{Name: "toy-tracing", Title: "Toy tracing", Noun: "toy", Record: "-X on",
		Setting: experiment.SettingKey("toy_tracing"), Table: Schema, HasCPU: true,
		Metrics: []analysis.Metric{{Name: "toycnt", Title: "Toy Units", Short: "Toy Units"}},
		Prepare: func(r *analysis.KindRun) analysis.KindEvents {
			units := r.D.Tables[Schema.Name].Column("toyunits")
			return analysis.KindEvents{Values: func(i int, out []int64) int64 { out[0] = units.At(i); return 0 }}
		},
	}
	id := analysis.RegisterKind(toy)
	t.Cleanup(func() { analysis.RemoveKind(id) })
	return id
}

// Record is the toy kind's collector: it adds to the finished experiment in dir a toy table with
// an event at each of its clock samples (their time, process, thread, CPU and stack), worth Units
// each, and returns how many. The experiment's clock samples stay as they were.
func Record(t testing.TB, dir string) int {
	t.Helper()
	d, err := experiment.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows(d)
	if err := experiment.AppendTable(dir, Schema, rows); err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// Rows are the toy events the collector records of experiment d: one at each clock sample.
func Rows(d *experiment.Data) []events.Row {
	var rows []events.Row
	for i, c := range d.ClockSamples() {
		rows = append(rows, events.Row{Time: c.Time, Count: 1, Pid: c.Pid, Tid: c.Tid, CPU: int32(c.CPU), Stack: c.Stack,
			Cols: []int64{Units, int64(i)}})
	}
	return rows
}

// Add gives experiment d, in memory, the toy table that Record writes and the reader reads.
func Add(d *experiment.Data) {
	t := events.New(Schema)
	for _, r := range Rows(d) {
		t.Add(r)
	}
	if d.Tables == nil {
		d.Tables = map[string]*events.Table{}
	}
	d.Tables[Schema.Name] = t
}
