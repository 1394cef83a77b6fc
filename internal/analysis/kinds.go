package analysis

import (
	"er/internal/sat"
	"fmt"
	"strconv"
	"strings"

	"er/internal/events"
	"er/internal/experiment"
)

// Data kinds as descriptors.
//
// Everything the analysis, er print and the Analyzer know of one kind of data is its Kind: its
// names, the option and setting that record it, its metrics, how to read an event's thread, time
// and stack, and how an event yields its metric values. Analyze, the filters, the metric lists and
// the views iterate over Kinds; a new kind of data is one descriptor (with its reader in
// internal/experiment and its collector). See docs/architecture.md, "Checklists". Kinds is set up at
// package initialization; a test may add a kind (RegisterKind) and remove it (RemoveKind), but not
// while other tests run in parallel.

// Kind describes one kind of data.
type Kind struct {
	ID      DataKind              // its index in Kinds (RegisterKind sets it)
	Name    string                // in messages: "clock-profiling"
	Title   string                // in lists of the data experiments hold: "Clock profiling"
	Noun    string                // in warnings about its events: "clock", "heap", "synchronization", "I/O"
	Short   string                // a column's title in tables of event counts: "Sync"; "": Title's first word
	Record  string                // how er collect records it: "-p on", "-H on"
	Setting experiment.SettingKey // the setting that says whether an experiment recorded it
	Timed   bool                  // its events last a time (EventInfo.Dur): filters offer it
	HasCPU  bool                  // its events record the CPU they were taken on (EventInfo.CPU)
	// Sampled: its events are samples (clock profiling), not traced calls. Each counts, also one whose
	// values are all zero; metric_list lists its metrics after those of traced kinds, as gprofng does.
	Sampled bool
	View    string // the Analyzer's tab of the kind's own view ("heap"), "" for none
	// Metrics are its metrics, in the order of a profile's value vectors; RegisterKind sets their Data.
	Metrics []Metric
	// Extra are groups of metrics that follow Metrics, in order, each where one of the experiments
	// Has it (the clock's microstates, its OpenMP Work and Wait); a kind's Values then fills them too
	// (its out has room for them).
	Extra []MetricGroup
	// MetricsOf, when set, gives its metrics for the experiments in place of Metrics: a kind whose
	// metrics are what the experiments recorded (the counters of -h). Each has its Data set.
	MetricsOf func(exps []*experiment.Data) []Metric
	// Default are its items of er print's default metric list ("e.%totalcpu"); nil: the exclusive
	// and inclusive value of each metric. DefaultsFor, when set, gives them for the metrics ms of
	// the loaded experiments instead. DefaultRank orders the kinds there (smallest first).
	Default     []string
	DefaultsFor func(ms []Metric) []string
	DefaultRank int

	// Len is the number of its events in d; Info fills ev's Pid, Tid, Time, Dur and CPU (-1: none)
	// with what event i records; Stack is the event's stack id. Count, when set, is the number of
	// calls or samples d holds, where an event of Len sums several (nil: Len).
	Len   func(d *experiment.Data) int
	Count func(d *experiment.Data) int64
	Info  func(d *experiment.Data, i int, ev *EventInfo)
	Stack func(d *experiment.Data, i int) uint32
	// Recorded says whether d's settings say the kind was recorded (nil: its Setting is on).
	Recorded func(d *experiment.Data) bool
	// CPUTime, when set, returns the CPU time each of the kind's events in x stands for, as the
	// views count it (thread_list, cpu_list); nil: its events stand for none.
	CPUTime func(x *ExpIndex) []int64
	// Prepare readies the values of one experiment's selected events for a profile (see KindRun).
	Prepare func(r *KindRun) KindEvents
	// Init gives a new profile that has the kind's metrics what the kind keeps beside them (nil: nothing).
	Init func(p *Profile)
	// Stats returns the kind's lines of er print's statistics of the experiments ds together (one, or
	// all those er print was given), which recorded the kind or have its events. Nil: one line,
	// "<Title> events".
	Stats func(ds []*experiment.Data) []Stat
	// Threaded says whether event i of d is of the thread that Info names, not a pseudo-event of no
	// thread (a clock sample of a process's exit); nil: all are.
	Threaded func(d *experiment.Data, i int) bool

	// Table, when set, is the schema of the event table that holds the kind's events
	// (experiment.Data.Tables): RegisterKind then gives Len, Count, Info and Stack from its header
	// where they are nil, and a Column of each declared column.
	Table *events.Schema
	// Columns are the fields of the kind's events beyond the header that filters read by name
	// (HTYPE, IOFD), and describe lists; an event of another kind has 0 in them.
	Columns []Column
	// Passes are the kind's frame passes (a runtime's: its frames as its users think of them),
	// registered with it and removed with it.
	Passes       []*FramePass
	removePasses []func()
	bind         func(d *experiment.Data) Bound // a table kind's Bind
}

// MetricGroup is a group of a kind's metrics that the profiles of some experiments have.
type MetricGroup struct {
	Metrics []Metric
	Has     func(d *experiment.Data) bool
}

// Bound is a kind's accessors of one experiment's events (Kind.Bind). A kind's Info and Stack take
// the experiment, and a table kind's find its table in it at every call (a map lookup by name: 7%
// of er print's time over 4,000,000 heap events); the bound ones find it once.
type Bound struct {
	Info  func(i int, ev *EventInfo)
	Stack func(i int) uint32
}

// Bind returns k's accessors of d's events. The tables of d must not change while they are used.
func (k *Kind) Bind(d *experiment.Data) Bound {
	if k.bind != nil {
		return k.bind(d)
	}
	info, stack := k.Info, k.Stack
	return Bound{Info: func(i int, ev *EventInfo) { info(d, i, ev) }, Stack: func(i int) uint32 { return stack(d, i) }}
}

// Column is a field of a kind's events in filter expressions.
type Column struct {
	Name string // in upper case: "HSIZE"
	Help string // for describe
	Get  func(d *experiment.Data, i int) int64
	// Bind, when set, returns Get of d's events with d's table found once (a table's column).
	Bind func(d *experiment.Data) func(i int) int64
}

// Of returns c's values of experiment d's events, by index: Bind's, or Get's.
func (c *Column) Of(d *experiment.Data) func(i int) int64 {
	if c.Bind != nil {
		return c.Bind(d)
	}
	get := c.Get
	return func(i int) int64 { return get(d, i) }
}

// tableDefaults fills k's event accessors that are nil from its table's header, and adds a
// Column for each of the table's declared columns.
func (k *Kind) tableDefaults() {
	s := k.Table
	if s == nil {
		return
	}
	name := s.Name
	if k.Len == nil {
		k.Len = func(d *experiment.Data) int { return d.Tables[name].Len() }
	}
	if k.Count == nil {
		k.Count = func(d *experiment.Data) int64 { return d.Tables[name].Events() }
	}
	tableInfo := func(t *events.Table, i int, ev *EventInfo) {
		ev.Pid, ev.Tid, ev.Time, ev.Dur, ev.CPU = t.Pid[i], t.Tid[i], t.Time[i], t.DurAt(i), int64(t.CPUAt(i))
	}
	ownInfo, ownStack := k.Info, k.Stack
	if k.Info == nil {
		k.Info = func(d *experiment.Data, i int, ev *EventInfo) { tableInfo(d.Tables[name], i, ev) }
	}
	if k.Stack == nil {
		k.Stack = func(d *experiment.Data, i int) uint32 { return d.Tables[name].Stack[i] }
	}
	k.bind = func(d *experiment.Data) Bound {
		t := d.Tables[name]
		b := Bound{Info: func(i int, ev *EventInfo) { tableInfo(t, i, ev) }, Stack: func(i int) uint32 { return t.Stack[i] }}
		if ownInfo != nil {
			b.Info = func(i int, ev *EventInfo) { ownInfo(d, i, ev) }
		}
		if ownStack != nil {
			b.Stack = func(i int) uint32 { return ownStack(d, i) }
		}
		return b
	}
	for j, c := range s.Columns {
		if c.Type == events.Str {
			continue // a string: no value for a filter's arithmetic
		}
		help := c.Title
		if c.Unit != "" {
			help += " (" + c.Unit + ")"
		}
		k.Columns = append(k.Columns, Column{Name: strings.ToUpper(c.Name), Help: help,
			Get: func(d *experiment.Data, i int) int64 {
				if t := d.Tables[name]; i < t.Len() {
					return t.Cols[j].At(i)
				}
				return 0
			},
			Bind: func(d *experiment.Data) func(i int) int64 {
				t := d.Tables[name]
				if t == nil {
					return func(int) int64 { return 0 }
				}
				col, n := &t.Cols[j], t.Len()
				return func(i int) int64 {
					if i < n {
						return col.At(i)
					}
					return 0
				}
			}})
	}
}

// Col returns the index of k's column named name (case-insensitive), -1 for none.
func (k *Kind) Col(name string) int {
	for i := range k.Columns {
		if strings.EqualFold(k.Columns[i].Name, name) {
			return i
		}
	}
	return -1
}

// Stat is one line of statistics: its values, and how to print them.
type Stat struct {
	Label  string
	Values []int64
	Format func(v []int64) string // nil: the first value, as an integer
}

// Events returns the number of the kind's calls or samples in d (Count, else Len).
func (k *Kind) Events(d *experiment.Data) int64 {
	if k.Count != nil {
		return k.Count(d)
	}
	return int64(k.Len(d))
}

// ShortTitle is the kind's title in a column of event counts: Short, else Title's first word.
func (k *Kind) ShortTitle() string {
	if k.Short != "" {
		return k.Short
	}
	if i := strings.IndexByte(k.Title, ' '); i > 0 {
		return k.Title[:i]
	}
	return k.Title
}

// KindStats returns kind k's statistics lines of the experiments ds together.
func (k *Kind) KindStats(ds []*experiment.Data) []Stat {
	if k.Stats != nil {
		return k.Stats(ds)
	}
	var n int64
	for _, d := range ds {
		n += k.Events(d)
	}
	return []Stat{{Label: k.Title + " events", Values: []int64{n}}}
}

// InStats says whether kind k has lines in the statistics of the experiments ds: one of them
// recorded it or has its events.
func (k *Kind) InStats(ds []*experiment.Data) bool {
	for _, d := range ds {
		if k.Len(d) > 0 || k.recorded(d) {
			return true
		}
	}
	return false
}

// String prints the line's values.
func (st Stat) String() string {
	if st.Format != nil {
		return st.Format(st.Values)
	}
	if len(st.Values) == 0 {
		return ""
	}
	return strconv.FormatInt(st.Values[0], 10)
}

// KindRun is one experiment's events of one kind, being added to a profile.
type KindRun struct {
	P    *Profile
	D    *experiment.Data
	Exp  int    // the experiment's index in the list given to Analyze
	Keep []bool // the events the filter selects; nil: all
	es   *expState
	io   *ioGroups
}

// Periods returns the CPU time each clock sample of the experiment stands for (ClockPeriods).
func (r *KindRun) Periods() []int64 { return r.es.periods }

// KindEvents turns a kind's events into metric values.
type KindEvents struct {
	// Values writes what event i adds to each of the kind's metrics into out (zeroed, one per metric)
	// and returns the time the event stands for in the event list: a clock sample's CPU time, a
	// traced call's duration, 0 for others.
	Values func(i int, out []int64) (dur int64)
	// Added, when set, is called with the whole value vector of each event added to the profile.
	Added func(i int, vals []int64)
	// Done, when set, is called after the experiment's events.
	Done func()
	// Refine, when set, may change what event i adds (out, as Values left it) once its raw stack r
	// in the profile is known (the clock tells a user lock from other sleeps by its functions).
	Refine func(i int, r int32, out []int64)
}

// Kinds are the kinds of data, by DataKind.
var Kinds []*Kind

// RegisterKind adds k to Kinds, numbering it and its metrics, and returns its DataKind.
func RegisterKind(k *Kind) DataKind {
	k.ID = DataKind(len(Kinds))
	k.tableDefaults()
	for _, p := range k.Passes {
		k.removePasses = append(k.removePasses, RegisterPass(p))
	}
	for i := range k.Metrics {
		k.Metrics[i].Data = k.ID
	}
	for _, g := range k.Extra {
		for i := range g.Metrics {
			g.Metrics[i].Data = k.ID
		}
	}
	Kinds = append(Kinds, k)
	return k.ID
}

// RemoveKind removes kind k, the last one registered: a test that adds a kind takes it away.
func RemoveKind(k DataKind) {
	if int(k) != len(Kinds)-1 {
		panic(fmt.Sprintf("analysis: RemoveKind(%d): only the last kind (%d) can be removed", k, len(Kinds)-1))
	}
	for _, remove := range Kinds[k].removePasses {
		remove()
	}
	Kinds[k].removePasses = nil
	Kinds = Kinds[:k]
}

// String names the data kind as er print's messages do.
func (k DataKind) String() string {
	if int(k) < len(Kinds) {
		return Kinds[k].Name
	}
	return "unknown"
}

// recorded says whether experiment d recorded kind k by its settings.
func (k *Kind) recorded(d *experiment.Data) bool {
	if k.Recorded != nil {
		return k.Recorded(d)
	}
	v, ok := d.Log.Setting(k.Setting)
	return ok && experiment.On(v)
}

// DefaultItems returns the kind's items of er print's default metric list, for the metrics ms of the
// loaded experiments.
func (k *Kind) DefaultItems(ms []Metric) []string {
	if k.DefaultsFor != nil {
		return k.DefaultsFor(ms)
	}
	if k.Default != nil {
		return k.Default
	}
	var out []string
	for _, m := range k.Metrics {
		out = append(out, "e."+m.Name, "i."+m.Name)
	}
	return out
}

// The kinds of data er records, in the order of a profile's value vectors: clock metrics first.
var (
	clockKind = &Kind{Name: "clock-profiling", Title: "Clock profiling", Noun: "clock", Record: "-p on",
		Setting: experiment.SettingClockInterval, HasCPU: true, Sampled: true, Metrics: ClockMetrics,
		Extra:   []MetricGroup{{MicrostateMetrics, microstatesRecorded}, {OpenMPMetrics, hasOpenMP}},
		Default: []string{"e.%totalcpu", "i.%totalcpu"}, DefaultRank: 1,
		// Its events are the rows of experiment.ClockSchema's table: the samples and off-CPU
		// intervals, the period of each the CPU (or off-CPU) time it stands for.
		Table:   experiment.ClockSchema,
		CPUTime: func(x *ExpIndex) []int64 { return x.ClockCPU() },
		Stats:   clockStats,
		Threaded: func(d *experiment.Data, i int) bool {
			s := experiment.ClockAt(d.ClockTable(), i)
			return !d.ProcessExit(&s)
		},
		Recorded: func(d *experiment.Data) bool {
			v, ok := d.Log.Setting(experiment.SettingClockInterval)
			return ok && experiment.On(v) && clockOn(d)
		},
		Prepare: func(r *KindRun) KindEvents {
			d, periods := r.D, r.Periods()
			t := d.ClockTable()
			modes := &t.Cols[experiment.ClockColMode]
			// Wall Time is the founder's main thread's.
			main := d.Log.Pid
			if d.Log.Lineage != "" {
				main = 0
			}
			omp, states := r.P.kindOffset(0, OpenMPMetrics[0].Name), []uint8(nil) // (0: the clock kind, registered first)
			if r.es.omp != nil {
				states = r.es.omp.stateOf[0]
			}
			ke := KindEvents{Values: func(i int, out []int64) int64 {
				var period int64
				if periods != nil {
					period = periods[i]
				} else {
					period = t.Cols[experiment.ClockColPeriod].At(i)
				}
				clockValues(experiment.Mode(modes.At(i)), period, main != 0 && t.Tid[i] == main && t.Pid[i] == main, out)
				if omp >= 0 {
					ompValues(out, omp, states, i)
				}
				return period
			}}
			if r.P.hasMicrostates() {
				p := r.P
				ke.Refine = func(i int, r int32, out []int64) {
					if experiment.Mode(modes.At(i)) == experiment.ModeSleep && p.rawLockWait(r) {
						userLock(out)
					}
				}
			}
			return ke
		},
	}
	heapKind = &Kind{Name: "heap-tracing", Title: "Heap tracing", Noun: "heap", Record: "-H on", View: "heap",
		Setting: experiment.SettingHeapTracing, Metrics: HeapMetrics,
		Default: []string{"i+heapleakbytes", "i+heapleakcnt", "i+heapallocbytes", "i+heapalloccnt"}, DefaultRank: 0,
		// Its events are the rows of experiment.HeapSchema's table: a call each, or, read with the
		// heap trace replayed (experiment.Options.Summed), the calls of one thread with one stack
		// (a row's count), with their sums in the table's side (experiment.HeapSums).
		Table: experiment.HeapSchema,
		Init:  func(p *Profile) { p.Heap = &HeapStats{} },
		Stats: func(ds []*experiment.Data) []Stat {
			hs := &HeapStats{}
			for _, d := range ds {
				hs.Merge(heapStats(d, 0))
			}
			return []Stat{{Label: "Heap tracing events", Values: []int64{hs.Events}},
				{Label: "Allocations", Values: []int64{hs.Allocs.Count, hs.Allocs.Bytes}, Format: countBytes},
				{Label: "Leaks", Values: []int64{hs.Leaks.Count, hs.Leaks.Bytes}, Format: countBytes}}
		},
		Prepare: func(r *KindRun) KindEvents {
			d := r.D
			t := d.HeapTable()
			if hs := experiment.HeapSums(t); hs != nil {
				// The rows are of all events: a filter selects whole rows.
				st := heapStats(d, r.Exp)
				r.P.Heap.Merge(st)
				if w := heapWarning(d.Dir, st); w != "" {
					r.P.Warnings = append(r.P.Warnings, w)
				}
				return KindEvents{Values: func(i int, out []int64) int64 {
					s := &hs.Sites[i]
					out[0], out[1], out[2], out[3] = s.Bytes, s.Allocs, s.Leaked, s.Leaks
					return 0
				}}
			}
			leaked, st := replayHeap(d, r.Exp, r.Keep)
			r.P.Heap.Merge(st)
			if w := heapWarning(d.Dir, st); w != "" {
				r.P.Warnings = append(r.P.Warnings, w)
			}
			rows := experiment.HeapRowsOf(t)
			return KindEvents{Values: func(i int, out []int64) int64 {
				heapValues(rows.Replay(i), leaked[i], out)
				return 0
			}}
		},
	}
	syncKind = &Kind{Name: "synchronization-tracing", Title: "Synchronization wait tracing", Noun: "synchronization wait", Short: "Sync",
		Record: "-s on", View: "sync", Setting: experiment.SettingSyncTracing, Timed: true, Metrics: SyncMetrics,
		Default: []string{"i.sync", "i+syncn"}, DefaultRank: 2,
		// Its events are the rows of experiment.SyncSchema's table: a wait each, or, read summed
		// (experiment.Options.Summed), the waits of one thread with one stack (a row's count).
		Table: experiment.SyncSchema,
		Stats: func(ds []*experiment.Data) []Stat {
			var n, wait int64
			for _, d := range ds {
				t := d.SyncTable()
				for i := range t.Len() {
					n, wait = sat.Add(n, t.CountAt(i)), sat.Add(wait, t.DurAt(i))
				}
			}
			return []Stat{{Label: "Synchronization wait events", Values: []int64{n}},
				{Label: "Sync Wait Time (sec.)", Values: []int64{wait}, Format: func(v []int64) string { return fmt.Sprintf("%.3f", float64(v[0])/1e9) }}}
		},
		Prepare: func(r *KindRun) KindEvents {
			t := r.D.SyncTable()
			return KindEvents{Values: func(i int, out []int64) int64 {
				out[0], out[1] = t.DurAt(i), t.CountAt(i)
				return t.DurAt(i)
			}}
		},
	}
	ioKind = &Kind{Name: "I/O-tracing", Title: "I/O tracing", Noun: "I/O", Record: "-i on", View: "io",
		Setting: experiment.SettingIOTracing, Timed: true, Metrics: IOMetrics,
		Default: []string{"i.ioreadtime", "i.iowritetime", "i.ioothertime", "i.ioerrortime"}, DefaultRank: 3,
		// Its events are the rows of experiment.IOSchema's table: a call each, or, read summed
		// (experiment.Options.Summed), the calls of one thread with one stack, of one operation on
		// one file, that failed or not (a row's count).
		Table: experiment.IOSchema,
		Init:  func(p *Profile) { p.IO = &IOStats{} },
		Stats: func(ds []*experiment.Data) []Stat {
			var n, calls, dur, bytes, errs int64
			for _, d := range ds {
				t := d.IOTable()
				for i := range t.Len() {
					c := t.CountAt(i)
					if n = sat.Add(n, c); experiment.IOOp(t.Cols[experiment.IOColOp].At(i)).Class() == 0 {
						continue // IOInherited records
					}
					calls = sat.Add(calls, c)
					dur, bytes = sat.Add(dur, t.DurAt(i)), sat.Add(bytes, t.Cols[experiment.IOColBytes].At(i))
					if t.Cols[experiment.IOColErr].At(i) != 0 {
						errs = sat.Add(errs, c)
					}
				}
			}
			return []Stat{{Label: "I/O tracing events", Values: []int64{n}},
				{Label: "I/O calls", Values: []int64{calls, errs}, Format: func(v []int64) string { return fmt.Sprintf("%d (%d failed)", v[0], v[1]) }},
				{Label: "I/O Time (sec.)", Values: []int64{dur}, Format: func(v []int64) string { return strconv.FormatFloat(float64(v[0])/1e9, 'f', 6, 64) }},
				{Label: "I/O bytes read and written", Values: []int64{bytes}}}
		},
		Prepare: func(r *KindRun) KindEvents {
			d, groups := r.D, r.io
			t := d.IOTable()
			var st IOStats
			// A summed table's rows have their file and sizes; a full one's files are found in time
			// order (ioEventFiles).
			sizes, files := experiment.IOSizes(t), r.es.ioFiles
			var e experiment.IOEvent
			return KindEvents{
				Values: func(i int, out []int64) int64 {
					e = experiment.IOAt(t, i)
					n := t.CountAt(i)
					var sz *SizeStats
					if sizes != nil {
						sz = &sizes[i]
					}
					st.add(&e, n, sz)
					ioValues(&e, n, out)
					return e.Dur
				},
				Added: func(i int, vals []int64) {
					if sizes != nil {
						groups.add(ioFile{t.Str(experiment.IOColFile, i), int32(t.Cols[experiment.IOColFD].At(i))}, vals)
						return
					}
					groups.add(files[i], vals)
				},
				Done: func() {
					st.kernelCalls(d)
					r.P.IO.merge(&st)
				},
			}
		},
	}
)

// The built-in kinds, by DataKind, registered in this order (one function, so that the order does not
// depend on the order in which Go initializes the package's variables).
var DataClock, DataHeap, DataSync, DataIO, DataCounters = registerBuiltins()

// registerBuiltins registers clock profiling, heap, synchronization wait and I/O tracing, and counter
// overflow profiling (-h), and returns their DataKinds.
func registerBuiltins() (clock, heap, sync, io, counters DataKind) {
	return RegisterKind(clockKind), RegisterKind(heapKind), RegisterKind(syncKind), RegisterKind(ioKind), RegisterKind(counterKind)
}

// countBytes prints a count and its bytes: "3 (4096 bytes)".
func countBytes(v []int64) string { return fmt.Sprintf("%d (%d bytes)", v[0], v[1]) }

// kindOf returns the kind k, panicking with a clear message for a kind never registered (a bug).
func kindOf(k DataKind) *Kind {
	if int(k) >= len(Kinds) {
		panic(fmt.Sprintf("analysis: data kind %d is not registered", k))
	}
	return Kinds[k]
}
