package analysis

import (
	"fmt"
	"math"

	"er/internal/experiment"
)

// Counter overflow profiling (-h). Its metrics are the counters the experiments recorded, one each,
// by metric name (experiments that counted the same counter add up): the events of the counter, or
// for a counter of CPU cycles its time at the clock rate of the experiment's machine (the manual:
// such counters are shown as time), with a second metric of its events (NAME_events; "e+NAME" in a
// metric list shows it), and for a software clock its nanoseconds.

// EventsSuffix names the events metric of a counter shown as time.
const EventsSuffix = "_events"

// counterMetrics returns the metrics of the counters the experiments recorded, in the order of their
// first appearance.
func counterMetrics(exps []*experiment.Data) []Metric {
	var ms []Metric
	seen := map[string]bool{}
	for _, d := range exps {
		if d == nil {
			continue
		}
		for _, c := range d.Log.Counters {
			if seen[c.Metric] {
				continue
			}
			seen[c.Metric] = true
			m := Metric{Name: c.Metric, Title: c.Title, Short: c.Title, Data: DataCounters}
			switch {
			case c.Unit == "ns":
				m.Time = true
			case c.Unit == "CPU-cycles" && cyclesAsTime(exps, c.Metric):
				m.Time, m.Count = true, c.Metric+EventsSuffix
				ms = append(ms, m, Metric{Name: m.Count, Title: c.Title + " Events", Short: c.Title + " Events", Data: DataCounters})
				continue
			}
			ms = append(ms, m)
		}
	}
	return ms
}

// cyclesAsTime says whether every experiment that counted counter metric knows its clock rate, so
// that its cycles can be shown as time.
func cyclesAsTime(exps []*experiment.Data, metric string) bool {
	for _, d := range exps {
		if d == nil {
			continue
		}
		for _, c := range d.Log.Counters {
			if c.Metric == metric && d.Log.ClockHz <= 0 {
				return false
			}
		}
	}
	return true
}

// CyclesNS converts n cycles at hz cycles a second to nanoseconds, rounded.
func CyclesNS(n, hz int64) int64 {
	if hz <= 0 {
		return 0
	}
	return int64(math.Round(float64(n) * 1e9 / float64(hz)))
}

// counterSlots says where each of an experiment's counters puts its values in a kind's part of a
// value vector: its metric, and for one shown as time its events metric (-1: none).
type counterSlot struct {
	main, events int
	cycles       bool // its main metric is the time of cycles
}

// counterSlots maps d's counters to the profile's counter metrics.
func counterSlots(p *Profile, d *experiment.Data) []counterSlot {
	base := p.base[DataCounters]
	index := map[string]int{}
	for i := base; i >= 0 && i < len(p.Metrics) && p.Metrics[i].Data == DataCounters; i++ {
		index[p.Metrics[i].Name] = i - base
	}
	slots := make([]counterSlot, len(d.Log.Counters))
	for i, c := range d.Log.Counters {
		s := counterSlot{main: -1, events: -1}
		if j, ok := index[c.Metric]; ok {
			s.main = j
			if m := p.Metrics[base+j]; m.Count != "" {
				s.cycles = true
				if k, ok := index[m.Count]; ok {
					s.events = k
				}
			}
		}
		slots[i] = s
	}
	return slots
}

// counterStats are the statistics lines of the counters: per counter, its samples and events.
func counterStats(ds []*experiment.Data) []Stat {
	type sum struct {
		title, name string
		samples     int64
		events      int64
	}
	var order []string
	sums := map[string]*sum{}
	for _, d := range ds {
		for _, c := range d.Log.Counters {
			if sums[c.Metric] == nil {
				sums[c.Metric] = &sum{title: c.Title, name: c.Name}
				order = append(order, c.Metric)
			}
		}
		t := d.CounterTable()
		for i := range t.Len() {
			if c := t.Cols[experiment.CounterColCounter].At(i); int(c) < len(d.Log.Counters) {
				x := sums[d.Log.Counters[c].Metric]
				x.samples++
				x.events += t.Cols[experiment.CounterColValue].At(i)
			}
		}
	}
	var out []Stat
	for _, m := range order {
		x := sums[m]
		out = append(out, Stat{Label: fmt.Sprintf("%s (%s)", x.title, x.name), Values: []int64{x.events, x.samples},
			Format: func(v []int64) string { return fmt.Sprintf("%d events in %d samples", v[0], v[1]) }})
	}
	return out
}

// counterKind is counter overflow profiling.
var counterKind = &Kind{Name: "hwc-profiling", Title: "Counter profiling", Noun: "counter", Record: "-h name",
	Setting: experiment.SettingCounters, HasCPU: true, Sampled: true, DefaultRank: 1, View: "dataspace",
	// Its events are the rows of experiment.CounterSchema's table (profile.hwc).
	Table:    experiment.CounterSchema,
	Recorded: func(d *experiment.Data) bool { return len(d.Log.Counters) > 0 },
	Stats:    counterStats,
}

// (Set here: they refer to DataCounters, which is counterKind's once registered.)
func init() {
	counterKind.MetricsOf = counterMetrics
	counterKind.DefaultsFor = func(ms []Metric) []string {
		var out []string
		for _, m := range ms {
			if m.Data != DataCounters || isEventsTwin(ms, m) {
				continue
			}
			v := "+"
			if m.Time {
				v = "."
			}
			out = append(out, "e"+v+"%"+m.Name, "i"+v+"%"+m.Name)
		}
		return out
	}
	counterKind.Prepare = func(r *KindRun) KindEvents {
		d := r.D
		slots := counterSlots(r.P, d)
		hz := d.Log.ClockHz
		t := d.CounterTable()
		values, counters := &t.Cols[experiment.CounterColValue], &t.Cols[experiment.CounterColCounter]
		return KindEvents{Values: func(i int, out []int64) int64 {
			e := experiment.CounterSample{Value: values.At(i), Counter: uint8(counters.At(i))}
			if int(e.Counter) >= len(slots) {
				return 0
			}
			s := slots[e.Counter]
			if s.main < 0 {
				return 0
			}
			if s.cycles {
				out[s.main] = CyclesNS(e.Value, hz)
				if s.events >= 0 {
					out[s.events] = e.Value
				}
				return 0
			}
			out[s.main] = e.Value
			return 0
		}}
	}
}

// isEventsTwin says whether m is the events metric of a counter shown as time.
func isEventsTwin(ms []Metric, m Metric) bool {
	for _, o := range ms {
		if o.Count == m.Name {
			return true
		}
	}
	return false
}
