// Package counters holds what er collect -h profiles: hardware, cache, raw PMU and software events and tracepoints by name, their default intervals and units, and the -h syntax.
package counters

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Class is the kind of perf event a counter is.
type Class uint8

// Counter classes.
const (
	Hardware   Class = iota + 1 // a generic hardware event (PERF_TYPE_HARDWARE)
	Cache                       // a generic cache event (PERF_TYPE_HW_CACHE)
	Raw                         // a PMU's own event: r<hex>, pmu/terms/, or a name from sysfs
	Software                    // a software event (PERF_TYPE_SOFTWARE)
	Tracepoint                  // a tracepoint (PERF_TYPE_TRACEPOINT)
)

// String names the class as the lists do.
func (c Class) String() string {
	switch c {
	case Hardware:
		return "hardware"
	case Cache:
		return "cache"
	case Raw:
		return "raw"
	case Software:
		return "software"
	case Tracepoint:
		return "tracepoint"
	}
	return "unknown"
}

// Units of what a counter counts (the second word of the manual's type information). Counters in
// CPUCycles are shown as time, at the recorded clock rate; Nanoseconds (the software clocks) are time.
const (
	Events      = "events"
	CPUCycles   = "CPU-cycles"
	Nanoseconds = "ns"
)

// Memory operations a counter counts (the first word of the manual's type information): such a
// counter, given with '+', records the data address of each event, for the data-space views.
const (
	Load      = "load"
	Store     = "store"
	LoadStore = "load-store"
)

// Counter is one counter to profile: a perf event, and the overflow interval at which a sample is
// taken.
type Counter struct {
	Name  string // as given, or its alias: "cycles", "page-faults", "sched:sched_wakeup", "r1c2", "cpu/event=0x3c/"
	Title string // "CPU Cycles"
	Class Class
	// Type, Config, Config1 and Config2 are the perf_event_attr's type and config fields.
	Type                     uint32
	Config, Config1, Config2 uint64
	Interval                 uint64 // the overflow interval: a sample every Interval events
	Default                  uint64 // the interval of "on"
	Unit                     string // Events, CPUCycles or Nanoseconds
	MemOp                    string // Load, Store, LoadStore, or "" when not memory-related
	// Backtrack: given with '+', it records each event's data address (precise hardware events, page
	// faults).
	Backtrack bool
	// Precise is the precise_ip a backtracking hardware counter is sampled at (2: the exact
	// instruction, with its data address, where the PMU samples precisely); 0 for the others, or where
	// the PMU cannot (er collect lowers it and says so).
	Precise uint8
	Raw     string // what an alias names, for the lists: "PERF_COUNT_HW_CPU_CYCLES"
}

// MetricName returns the name er print gives the counter's metric: the counter's name with the
// characters a metric list uses (':', '/', ',', '=') and blanks made '_'.
func (c *Counter) MetricName() string {
	return MetricName(c.Name)
}

// MetricName returns the metric name of a counter named name (see Counter.MetricName).
func MetricName(name string) string {
	b := []byte(name)
	for i, ch := range b {
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '_', ch == '-', ch == '.':
		default:
			b[i] = '_'
		}
	}
	return strings.Trim(string(b), "_")
}

// Time says whether the counter's values are shown as time: it counts CPU cycles, or nanoseconds.
func (c *Counter) Time() bool { return c.Unit == CPUCycles || c.Unit == Nanoseconds }

// The default intervals: the manual's for the aliased cycle and instruction counters (9999991) and raw
// counters (1000003); cache misses are rarer (100003); software events are counted one by one where
// they are rare, and every 101st minor fault (a program touching new memory takes hundreds of
// thousands a second).
const (
	DefaultCycles  = 9999991
	DefaultMisses  = 100003
	DefaultRaw     = 1000003
	DefaultFaults  = 101
	DefaultClockNS = 9999991
)

// alias is an aliased counter of the catalog.
type alias struct {
	names    []string // the alias, then the perf names that mean the same
	title    string
	typ      uint32
	config   uint64
	def      uint64
	unit     string
	memOp    string
	raw      string
	software bool
}

// cacheConfig is a PERF_TYPE_HW_CACHE config: cache id, operation and result.
func cacheConfig(cache, op, result uint64) uint64 { return cache | op<<8 | result<<16 }

// aliases are the aliased counters: generic hardware and cache events by the names the manual's lists
// use (with perf's names for the same), then the software events.
var aliases = []alias{
	{names: []string{"cycles", "cpu-cycles"}, title: "CPU Cycles", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_CPU_CYCLES, def: DefaultCycles, unit: CPUCycles, raw: "PERF_COUNT_HW_CPU_CYCLES"},
	{names: []string{"insts", "instructions"}, title: "Instructions Executed", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_INSTRUCTIONS, def: DefaultCycles, unit: Events, raw: "PERF_COUNT_HW_INSTRUCTIONS"},
	{names: []string{"ref-cycles"}, title: "Reference Cycles", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_REF_CPU_CYCLES, def: DefaultCycles, unit: Events, raw: "PERF_COUNT_HW_REF_CPU_CYCLES"},
	{names: []string{"bus-cycles"}, title: "Bus Cycles", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_BUS_CYCLES, def: DefaultRaw, unit: Events, raw: "PERF_COUNT_HW_BUS_CYCLES"},
	{names: []string{"branches", "branch-instructions"}, title: "Branch Instructions", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS, def: DefaultRaw, unit: Events, raw: "PERF_COUNT_HW_BRANCH_INSTRUCTIONS"},
	{names: []string{"brm", "branch-misses"}, title: "Branch Mispredictions", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_BRANCH_MISSES, def: DefaultMisses, unit: Events, raw: "PERF_COUNT_HW_BRANCH_MISSES"},
	{names: []string{"cache-refs", "cache-references"}, title: "Cache References", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_CACHE_REFERENCES, def: DefaultRaw, unit: Events, raw: "PERF_COUNT_HW_CACHE_REFERENCES"},
	{names: []string{"cache-misses"}, title: "Cache Misses", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_CACHE_MISSES, def: DefaultMisses, unit: Events, raw: "PERF_COUNT_HW_CACHE_MISSES"},
	{names: []string{"stalls-fe", "stalled-cycles-frontend"}, title: "Front-end Stall Cycles", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, def: DefaultCycles, unit: CPUCycles, raw: "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND"},
	{names: []string{"stalls-be", "stalled-cycles-backend"}, title: "Back-end Stall Cycles", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_STALLED_CYCLES_BACKEND, def: DefaultCycles, unit: CPUCycles, raw: "PERF_COUNT_HW_STALLED_CYCLES_BACKEND"},
	{names: []string{"dcr", "L1-dcache-loads"}, title: "L1 D$ Reads", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_L1D, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_ACCESS), def: DefaultRaw, unit: Events, memOp: Load, raw: "L1D read access"},
	{names: []string{"dcrm", "L1-dcache-load-misses"}, title: "L1 D$ Read Misses", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_L1D, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS), def: DefaultMisses, unit: Events, memOp: Load, raw: "L1D read miss"},
	{names: []string{"dcwm", "L1-dcache-store-misses"}, title: "L1 D$ Write Misses", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_L1D, unix.PERF_COUNT_HW_CACHE_OP_WRITE, unix.PERF_COUNT_HW_CACHE_RESULT_MISS), def: DefaultMisses, unit: Events, memOp: Store, raw: "L1D write miss"},
	{names: []string{"icm", "L1-icache-load-misses"}, title: "L1 I$ Misses", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_L1I, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS), def: DefaultMisses, unit: Events, raw: "L1I read miss"},
	{names: []string{"llcr", "LLC-loads"}, title: "Last-Level Cache Reads", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_LL, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_ACCESS), def: DefaultRaw, unit: Events, memOp: Load, raw: "LL read access"},
	{names: []string{"llcrm", "LLC-load-misses"}, title: "Last-Level Cache Read Misses", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_LL, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS), def: DefaultMisses, unit: Events, memOp: Load, raw: "LL read miss"},
	{names: []string{"llcwm", "LLC-store-misses"}, title: "Last-Level Cache Write Misses", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_LL, unix.PERF_COUNT_HW_CACHE_OP_WRITE, unix.PERF_COUNT_HW_CACHE_RESULT_MISS), def: DefaultMisses, unit: Events, memOp: Store, raw: "LL write miss"},
	{names: []string{"dtlbm", "dTLB-load-misses"}, title: "D-TLB Read Misses", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_DTLB, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS), def: DefaultMisses, unit: Events, memOp: Load, raw: "DTLB read miss"},
	{names: []string{"itlbm", "iTLB-load-misses"}, title: "I-TLB Misses", typ: unix.PERF_TYPE_HW_CACHE, config: cacheConfig(unix.PERF_COUNT_HW_CACHE_ITLB, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS), def: DefaultMisses, unit: Events, raw: "ITLB read miss"},

	{names: []string{"page-faults", "faults"}, title: "Page Faults", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_PAGE_FAULTS, def: DefaultFaults, unit: Events, memOp: LoadStore, raw: "PERF_COUNT_SW_PAGE_FAULTS", software: true},
	{names: []string{"minor-faults"}, title: "Minor Page Faults", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_PAGE_FAULTS_MIN, def: DefaultFaults, unit: Events, memOp: LoadStore, raw: "PERF_COUNT_SW_PAGE_FAULTS_MIN", software: true},
	{names: []string{"major-faults"}, title: "Major Page Faults", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ, def: 1, unit: Events, memOp: LoadStore, raw: "PERF_COUNT_SW_PAGE_FAULTS_MAJ", software: true},
	{names: []string{"context-switches", "cs"}, title: "Context Switches", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_CONTEXT_SWITCHES, def: 1, unit: Events, raw: "PERF_COUNT_SW_CONTEXT_SWITCHES", software: true},
	{names: []string{"cpu-migrations", "migrations"}, title: "CPU Migrations", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_CPU_MIGRATIONS, def: 1, unit: Events, raw: "PERF_COUNT_SW_CPU_MIGRATIONS", software: true},
	{names: []string{"alignment-faults"}, title: "Alignment Faults", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_ALIGNMENT_FAULTS, def: 1, unit: Events, memOp: LoadStore, raw: "PERF_COUNT_SW_ALIGNMENT_FAULTS", software: true},
	{names: []string{"emulation-faults"}, title: "Emulation Faults", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_EMULATION_FAULTS, def: 1, unit: Events, raw: "PERF_COUNT_SW_EMULATION_FAULTS", software: true},
	{names: []string{"task-clock"}, title: "Task Clock", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_TASK_CLOCK, def: DefaultClockNS, unit: Nanoseconds, raw: "PERF_COUNT_SW_TASK_CLOCK", software: true},
	{names: []string{"cpu-clock"}, title: "CPU Clock", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_CPU_CLOCK, def: DefaultClockNS, unit: Nanoseconds, raw: "PERF_COUNT_SW_CPU_CLOCK", software: true},
}

// counter returns the counter of alias a, named name, at its default interval.
func (a *alias) counter() Counter {
	class := Hardware
	switch {
	case a.software:
		class = Software
	case a.typ == unix.PERF_TYPE_HW_CACHE:
		class = Cache
	}
	return Counter{Name: a.names[0], Title: a.title, Class: class, Type: a.typ, Config: a.config,
		Interval: a.def, Default: a.def, Unit: a.unit, MemOp: a.memOp, Raw: a.raw}
}

// lookupAlias returns the aliased counter named name (the alias or one of its perf names).
func lookupAlias(name string) (Counter, bool) {
	for i := range aliases {
		for _, n := range aliases[i].names {
			if n == name {
				return aliases[i].counter(), true
			}
		}
	}
	return Counter{}, false
}

// Aliases returns the aliased hardware and cache counters, at their default intervals.
func Aliases() []Counter {
	var out []Counter
	for i := range aliases {
		if !aliases[i].software {
			out = append(out, aliases[i].counter())
		}
	}
	return out
}

// SoftwareEvents returns the software events, at their default intervals.
func SoftwareEvents() []Counter {
	var out []Counter
	for i := range aliases {
		if aliases[i].software {
			out = append(out, aliases[i].counter())
		}
	}
	return out
}
