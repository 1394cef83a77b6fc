// Package experiment holds the on-disk experiment format: its types, writer and reader.
package experiment

import (
	"sort"

	"er/internal/events"
	"er/internal/heapreplay"
)

// FormatVersion is the version of the experiment format written by this package.
// Readers accept the same major version.
const FormatVersion = "1.2"

// File names inside an experiment directory.
const (
	LogFile      = "log.xml"
	MapFile      = "map.xml"
	OverviewFile = "overview"
	NotesFile    = "notes"
	ClockFile    = "profile.clock"  // clock-profiling events, fixed-size records
	OffCPUFile   = "profile.offcpu" // off-CPU intervals (microstates), records as ClockFile's (format 1.1)
	CountersFile = "profile.hwc"    // counter overflow samples (-h), fixed-size records (format 1.1)
	StacksFile   = "stacks"         // the stack table, variable-size records
	ArchivesDir  = "archives"
)

// Mode is the state a clock event's thread was in: on a CPU in user or kernel mode (a sample), or off
// a CPU (an interval the thread waited in, from the kernel's context switches).
type Mode uint8

// Thread states. The first three are CPU time; the others are off-CPU time.
const (
	ModeUnknown Mode = 0
	ModeUser    Mode = 1
	ModeKernel  Mode = 2
	// ModeWaitCPU: runnable, waiting for a CPU (preempted, or created and not yet run).
	ModeWaitCPU Mode = 3
	// ModeSleep: asleep, in a system call or stopped; the analysis tells a user lock (a futex wait)
	// from other waits by the stack.
	ModeSleep Mode = 4
	// ModeTextFault, ModeDataFault: asleep in a major page fault on text (an executable mapping), or on
	// data.
	ModeTextFault Mode = 5
	ModeDataFault Mode = 6
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeUser:
		return "user"
	case ModeKernel:
		return "kernel"
	case ModeWaitCPU:
		return "wait-cpu"
	case ModeSleep:
		return "sleep"
	case ModeTextFault:
		return "text-fault"
	case ModeDataFault:
		return "data-fault"
	}
	return "unknown"
}

// CPU reports whether an event of the mode is CPU time (a sample), not off-CPU time.
func (m Mode) CPU() bool { return m <= ModeKernel }

// ClockSample is one clock-profiling event: Period nanoseconds of CPU time
// spent by thread Tid of process Pid, ending at Time, with the call stack Stack; or, for an off-CPU
// mode (Mode.CPU false), Period nanoseconds the thread spent in that state, in one interval or in
// several merged ones that end at Time, with the stack it waited at.
type ClockSample struct {
	Time   int64  // ns since the experiment's start (Log.StartPerfNS)
	Pid    uint32 // process id
	Tid    uint32 // thread id
	CPU    uint32 // CPU the sample was taken on
	Mode   Mode   // user or kernel mode at the sample, or the off-CPU state
	Period int64  // ns of CPU time this sample stands for (of off-CPU time, for an off-CPU mode)
	Stack  uint32 // index into the stack table; 0 is the empty stack
}

// CounterSample is one overflow of a counter (-h): the events since the counter's previous sample
// in its thread, at the call stack where it overflowed.
type CounterSample struct {
	Time    int64  // ns since the experiment's start (Log.StartPerfNS)
	Value   int64  // the events it stands for: the counter's interval (its period at the overflow)
	Addr    uint64 // the data address of the event (a counter given with '+'), 0 when unknown
	Pid     uint32 // process id
	Tid     uint32 // thread id
	CPU     uint32 // CPU the sample was taken on
	Stack   uint32 // index into the stack table
	Counter uint8  // the counter: an index into Log.Counters
	Mode    Mode   // ModeUser or ModeKernel: where the thread was at the overflow
}

// Counter is one counter an experiment profiled (-h), as log.xml records it.
type Counter struct {
	Name     string // as given, or its alias: "cycles", "page-faults", "sched:sched_wakeup"
	Metric   string // the name of its metric in er print: Name with ':', '/', ',' and '=' made '_'
	Title    string // "CPU Cycles"
	Type     uint32 // the perf event's type and config
	Config   uint64
	Config1  uint64
	Config2  uint64
	Interval uint64 // a sample every Interval events
	Unit     string // "events", "CPU-cycles" (shown as time at the clock rate) or "ns"
	MemOp    string // "load", "store", "load-store", or "" when not memory-related
	// Backtrack: the samples record data addresses (CounterSample.Addr).
	Backtrack bool
}

// Stack is one entry of the stack table: absolute instruction addresses,
// leaf first. Frame 0 is the interrupted PC; the others are return addresses.
// Kernel addresses (>= KernelBase) come before user addresses.
type Stack []uint64

// KernelBase is the lowest kernel address on x86-64 Linux.
const KernelBase = 0xffff800000000000

// Symbolic frames. A frame that is not a PC (a Java method and a bytecode index, an interpreter's
// function and position) is a value in x86-64's non-canonical range, between the user half and the
// kernel half, which no PC can be: SymbolicBase | table<<48 | method<<16 | pos. The table says whose
// frame it is (a kind's numbering of its methods), the method which of its methods, pos where in it.
// A symbolic mapping names the methods of such a range, for a time, as a Mapping names a load
// object's code: SymbolicMapping.
const (
	SymbolicBase     uint64 = 0x8000000000000000
	MaxSymbolicTable        = 0x7ffe // (0x7fff would reach KernelBase)
)

// SymbolicFrame is the frame of position pos of method in table (1 to MaxSymbolicTable).
func SymbolicFrame(table uint16, method uint32, pos uint16) uint64 {
	return SymbolicBase | uint64(table&0x7fff)<<48 | uint64(method)<<16 | uint64(pos)
}

// IsSymbolic says whether frame pc is a symbolic frame.
func IsSymbolic(pc uint64) bool { return pc >= SymbolicBase && pc < KernelBase }

// SplitSymbolic returns the table, method and position of symbolic frame pc.
func SplitSymbolic(pc uint64) (table uint16, method uint32, pos uint16, ok bool) {
	if !IsSymbolic(pc) {
		return 0, 0, 0, false
	}
	return uint16(pc>>48) & 0x7fff, uint32(pc >> 16), uint16(pc), true
}

// SymbolicMapping is the mapping that names method of table: its frames, at any position, are
// function name of the pseudo-object path ("[java]"), in source file source, from load to unload (ns
// since the start; unload -1 while it lasts), with the source line of each position where lines
// gives it (pos ascending: a position's line is that of the last entry at or before it).
func SymbolicMapping(pid uint32, table uint16, method uint32, path, name, source string, lines []PosLine, load, unload int64) Mapping {
	return Mapping{Pid: pid, Start: SymbolicFrame(table, method, 0), End: SymbolicFrame(table, method, 0) + 1<<16,
		Path: path, Func: name, Source: source, Lines: lines, LoadTime: load, UnloadTime: unload}
}

// DynamicPath is the pseudo-object of the dynamic functions that a runtime other than a JVM
// named: in its perf map (/tmp/perf-PID.map) or through the collector API (collector_func_load).
// Such a mapping has Func, its function's name, and a user-space range: its code.
const DynamicPath = "<DYNAMIC_FUNCTIONS>"

// IsDynamic says whether m is a dynamic function: code in the process's address space that a
// runtime generated and named (not a symbolic mapping, not a load object's code).
func (m *Mapping) IsDynamic() bool { return m.Func != "" && !IsSymbolic(m.Start) }

// PosLine says that a method's positions from Pos on are source line Line.
type PosLine struct {
	Pos  uint16
	Line uint32
}

// Mapping is one executable mapping of a load object into a process, from
// /proc/PID/maps at the start or from a PERF_RECORD_MMAP2 afterwards; or a symbolic mapping, which
// names a method whose frames are symbolic (SymbolicMapping).
type Mapping struct {
	Pid        uint32 // process id; 0 for the kernel
	Start, End uint64 // address range [Start, End)
	Offset     uint64 // file offset of Start
	Path       string // absolute path, or "[vdso]", "[kernel]", "[anon]", ...
	BuildID    string // hex GNU build id, when known
	LoadTime   int64  // ns since start; 0 when present at start
	UnloadTime int64  // ns since start; -1 while still mapped
	// A symbolic mapping's method: its name, source file and the lines of its positions.
	Func   string
	Source string
	Lines  []PosLine
}

// LineAt returns the source line of position pos of a symbolic mapping's method, 0 where unknown.
func (m *Mapping) LineAt(pos uint16) int {
	i := sort.Search(len(m.Lines), func(i int) bool { return m.Lines[i].Pos > pos })
	if i == 0 {
		return 0
	}
	return int(m.Lines[i-1].Line)
}

// Segment is a loadable ELF segment: how file offsets map to link-time addresses.
type Segment struct {
	Vaddr  uint64 // p_vaddr
	Offset uint64 // p_offset
	Filesz uint64 // p_filesz
	Memsz  uint64 // p_memsz
}

// SymbolKind says what a symbol names.
type SymbolKind uint8

// Symbol kinds.
const (
	SymFunc   SymbolKind = 0 // a function from .symtab or .dynsym
	SymPLT    SymbolKind = 1 // a PLT stub, named "f@plt"
	SymKernel SymbolKind = 2 // a kernel function from kallsyms
	// SymFDE is a function known only by its call frame entry (.eh_frame or .debug_frame): its
	// symbol was stripped. It is named by its object and link-time address, "liblzma.so.5.4.1+0x15a20".
	SymFDE SymbolKind = 3
)

// Symbol is a function-like symbol at a link-time address (for the kernel,
// an absolute address). Name is the raw (mangled) name.
type Symbol struct {
	Name string
	Addr uint64
	Size uint64 // 0 when unknown: the symbol then extends to the next one
	Kind SymbolKind
}

// Archive describes one load object as it was at collection time, so that
// names survive a rebuilt or deleted binary. Stored under archives/.
type Archive struct {
	Path     string    // path of the load object as mapped
	Size     int64     // file size at collection
	Mtime    int64     // modification time, Unix ns
	BuildID  string    // hex GNU build id, "" when none
	Kind     string    // "elf", "kernel", "vdso", "unknown"
	Segments []Segment // PT_LOAD segments (empty for the kernel: addresses are absolute)
	Symbols  []Symbol  // sorted by Addr
}

// OverviewSample is the usage of one process at one sample point (read from
// /proc/PID/stat and /proc/PID/status).
type OverviewSample struct {
	Time       int64 // ns since start
	Pid        uint32
	Sample     uint32 // sample point number, 1-based
	UserNS     int64  // cumulative user CPU time of the process
	SystemNS   int64  // cumulative system CPU time
	MinFlt     int64  // minor faults
	MajFlt     int64  // major faults
	VolCtxSw   int64  // voluntary context switches
	InvolCtxSw int64  // involuntary context switches
	RSSBytes   int64  // resident set size
	NumThreads int32
	Label      string // why the sample was taken: "start", "periodic", "end", "signal"
	// MemoryUnknown says that RSSBytes and NumThreads were not recorded (a point of an experiment
	// that GNU gprofng recorded; never written to an overview file).
	MemoryUnknown bool
}

// Event is something that happened during collection, recorded in log.xml.
type Event struct {
	Time int64  // ns since start
	Kind string // "start", "exit", "warning", "error", "limit", "pause", "resume", "comment"
	Pid  uint32
	Text string
}

// Setting is one collection parameter, as given and as used.
type Setting struct {
	Name  SettingKey
	Value string
}

// SettingKey names a setting of log.xml.
type SettingKey string

// The settings er collect records (docs/experiment-format.md).
const (
	SettingClockProfiling SettingKey = "clock_profiling"   // -p as given: "on", "hi", "0.1", "off"
	SettingClockInterval  SettingKey = "clock_interval_ns" // the clock profiling interval
	SettingClockSource    SettingKey = "clock_source"      // "perf", or "sigprof" where the collector library's timers took the samples
	SettingClockPeriods   SettingKey = "clock_periods"     // "counted": each sample stands for its thread's counted CPU time since its previous one
	SettingMicrostates    SettingKey = "microstates"       // "on": off-CPU intervals from context switches, and exact CPU time per thread
	SettingOffCPUStacks   SettingKey = "offcpu_stacks"     // with microstates: "switches" (sampled as threads leave a CPU), or "last-run" (not permitted: where each thread last ran)
	SettingHeapTracing    SettingKey = "heap_tracing"      // "on" or "off"
	SettingSyncTracing    SettingKey = "sync_tracing"      // "off", "on (calibrated threshold)", "all" or a threshold
	SettingOpenMP         SettingKey = "openmp_tracing"    // "on" where OpenMP regions and states were recorded (absent: off)
	SettingJava           SettingKey = "java_profiling"    // "on" where the JVMs' methods and compiled code were recorded (absent: off)
	SettingIOTracing      SettingKey = "io_tracing"        // "on" or "off"
	SettingCounters       SettingKey = "hwc_profiling"     // -h as given ("cycles,on,+dcrm,1000", "page-faults,1"); the counters are in Log.Counters
)

// On says whether a tracing setting's value turns it on: not "off", "0" or empty.
func On(value string) bool { return value != "off" && value != "0" && value != "" }

// Setting returns the value of setting k, and whether the log has it.
func (l *Log) Setting(k SettingKey) (string, bool) {
	for _, s := range l.Settings {
		if s.Name == k {
			return s.Value, true
		}
	}
	return "", false
}

// Log is the content of log.xml.
type Log struct {
	FormatVersion    string
	CollectorVersion string
	Host             string
	OS               string // uname sysname + release
	Arch             string
	CPUs             int
	PageSize         int
	WordSize         int // bits of the target: 64
	ClockHz          int64
	MemoryBytes      int64
	Command          []string // target argv
	Cwd              string
	Pid              uint32 // the target's pid
	Ppid             uint32 // a descendant's parent process; 0 for the founder
	Lineage          string // a descendant's lineage, as in its name (_f3_x1); "" for the founder
	Attached         bool   // collected by attaching to a running process (-P)
	StartTime        int64  // wall clock at start, Unix ns
	StartPerfNS      int64  // perf clock (CLOCK_MONOTONIC) at start; sample times are relative to it
	EndTime          int64  // ns since start at the end of collection; 0 while running
	StopTime         int64  // ns since start when recording stopped early (-t, -L, a write failure) and the target ran on; 0 when it did not
	ExitStatus       int    // exit code, or 128+signal
	ExitSignal       int    // terminating signal, 0 when none
	Exited           bool   // the target's exit was seen
	KernelStacks     bool   // kernel call stacks were recorded
	CountedCPUNS     int64  // CPU time the kernel counted on the clock event while recording, all threads; 0 when unknown
	// ThreadCPU is the CPU time the kernel counted for each thread of the process on the clock event,
	// when recording ran without pause for the whole life of the thread; clock samples of such a
	// thread are weighted so that they add up to its count. Empty when unknown.
	ThreadCPU []ThreadCount
	// Counters are the counters profiled (-h), in the order of CounterSample.Counter.
	Counters []Counter
	// Tables are the schemas of the experiment's event tables (Data.Tables), as its log.xml
	// describes their files.
	Tables   []*events.Schema
	Settings []Setting
	Events   []Event
	// ThreadNames are the names the threads took (PR_SET_NAME, pthread_setname_np: a JVM's "GC
	// Thread#0", "C2 CompilerThre"), in time order.
	ThreadNames []ThreadName
}

// ThreadName says that thread Tid of process Pid took name Name at Time (ns since the start).
type ThreadName struct {
	Time     int64
	Pid, Tid uint32
	Name     string
}

// LastThreadNames returns the last name each thread took, by process and thread id.
func (l *Log) LastThreadNames() map[[2]uint32]string {
	names := make(map[[2]uint32]string, len(l.ThreadNames))
	for _, n := range l.ThreadNames {
		names[[2]uint32{n.Pid, n.Tid}] = n.Name
	}
	return names
}

// ThreadCount is the exact CPU time of one thread, counted by the kernel.
type ThreadCount struct {
	Tid   uint32
	CPUNS int64
	// Reported: the kernel reported the count for this thread itself, at its exit. Otherwise er
	// derived it (the founder's main thread holds what the original events counted beyond the
	// reports), and it may hold the CPU time of threads the kernel neither sampled nor reported.
	Reported bool
}

// HeapOp is the memory function a heap-tracing event records.
type HeapOp uint8

// The heap operations (HeapMalloc, ...), as the collector library numbers them in its records,
// are generated from internal/tracedef (tracelayout.go).

// HeapEvent is one call of a memory function (heap tracing).
//
// An allocation that succeeded has Addr != 0 and Size bytes requested. A free, and the old
// block of a successful realloc, has Old != 0. A realloc that fails (Addr == 0 with Size > 0)
// frees nothing. Leaks are the allocations whose block is never freed.
type HeapEvent struct {
	Time  int64 // ns since start, when the call returned
	Pid   uint32
	Tid   uint32
	Stack uint32 // leaf first: the memory function itself, then its callers
	Op    HeapOp
	Addr  uint64 // block returned; 0 for free and failures
	Size  uint64 // bytes requested (for munmap: the length unmapped)
	Old   uint64 // block freed (free's and realloc's argument; munmap's address)
}

// Replay returns what e does to the heap, as a replay of the heap sees it.
func (e *HeapEvent) Replay() heapreplay.Event { return heapReplay(e.Op, e.Addr, e.Size, e.Old) }

// heapReplay is what a call of op, returning addr, of size bytes, freeing old, does to the heap.
func heapReplay(o HeapOp, addr, size, old uint64) heapreplay.Event {
	op := heapreplay.Alloc
	switch o {
	case HeapFree:
		op = heapreplay.Free
	case HeapRealloc, HeapReallocarray:
		op = heapreplay.Realloc
	case HeapMmap:
		op = heapreplay.Mmap
	case HeapMunmap:
		op = heapreplay.Munmap
	}
	return heapreplay.Event{Op: op, Addr: addr, Size: size, Old: old}
}

// SyncOp is the synchronization function a sync-tracing event records.
type SyncOp uint8

// The synchronization operations (SyncMutexLock, ...) that the collector library records are
// generated from internal/tracedef (tracelayout.go); SyncSpinLock is er's own: the library does
// not interpose pthread_spin_lock.
const SyncSpinLock SyncOp = 8

// SyncEvent is one call of a synchronization function that waited at least the threshold
// (synchronization wait tracing), as the trace reader decodes it; an experiment keeps them in its
// table of SyncSchema (Data.SyncTable).
type SyncEvent struct {
	Time   int64 // ns since start, when the call returned
	Pid    uint32
	Tid    uint32
	Stack  uint32 // leaf first: the synchronization function, then its callers
	Op     SyncOp
	Wait   int64  // ns the call took
	Object uint64 // address of the mutex, condition variable, lock, semaphore or barrier; the thread id joined
}

// IOOp is the I/O function an I/O-tracing event records.
type IOOp uint8

// IOClass sorts I/O operations into the metrics they feed.
type IOClass uint8

// I/O classes.
const (
	IORead  IOClass = 1
	IOWrite IOClass = 2
	IOOther IOClass = 3
)

// IOEvent is one call of an I/O function (I/O tracing).
type IOEvent struct {
	Time  int64 // ns since start, when the call returned
	Pid   uint32
	Tid   uint32
	Stack uint32 // leaf first: the I/O function, then its callers
	Op    IOOp
	Dur   int64  // ns the call took
	FD    int32  // file descriptor operated on (a stream's descriptor), or -1
	FD2   int32  // the second descriptor: pipe's write end, dup2's target; -1 when none
	Ret   int64  // the call's result: bytes moved for reads and writes, the new descriptor, the offset
	Bytes int64  // bytes read or written (0 for other operations and errors)
	Err   int32  // errno when the call failed, else 0
	File  string // the file's name: given to open, or known from the descriptor's open
}

// Data is everything read from one experiment directory.
type Data struct {
	Dir      string
	Log      Log
	Mappings []Mapping
	Stacks   []Stack // index is the stack id; Stacks[0] is the empty stack
	// heapEvs and mergeHeap, syncEvs and mergeSync, ioEvs and mergeIO: the calls of a block that a
	// merge of a trace reads (Options.Summed, mergeTrace); otherwise the reader adds them to the
	// tables of HeapSchema, SyncSchema and IOSchema.
	heapEvs   []HeapEvent
	mergeHeap bool
	// syncEvs are the synchronization waits of a block that a merge of the trace reads
	// (Options.Summed, mergeTrace: mergeSync); otherwise the reader adds them to the table of
	// SyncSchema (Data.SyncTable).
	syncEvs   []SyncEvent
	mergeSync bool
	// ioEvs and mergeIO are the same for the I/O calls (IOSchema, Data.IOTable).
	ioEvs   []IOEvent
	mergeIO bool
	// Tables are the event tables of kinds that keep their events in one (events.Table), by
	// schema name; the rows in time order.
	Tables   map[string]*events.Table
	Overview []OverviewSample
	Archives map[string]*Archive // by Mapping.Path
	Notes    string
	Warnings []string // what the reader had to skip or repair (a truncated last block, a missing file)
	// TraceStacks are the stacks of the trace events not read (Options.TraceStacksOnly).
	TraceStacks []TraceStack
	// Java is what the JVMTI agent recorded of the experiment's JVM (java.go); nil for another
	// program.
	Java *JavaData
	// DynFuncs are the functions the program generated and named (collector_func_load, dynfunc.go).
	DynFuncs []DynFunc
}

// TraceStack is a stack of the collector library's trace files: of which process and thread, and
// when it was first written (ns since the experiment's start), before the first event that used it.
type TraceStack struct {
	Pid, Tid uint32
	Time     int64
	Stack    uint32 // index in Data.Stacks
}

// LastTime is the time of the experiment's last event or sample point, ns since its start; 0 when
// it has none.
func (d *Data) LastTime() int64 {
	var t int64
	for _, tb := range d.Tables {
		t = max(t, tb.LastTime())
	}
	for i := range d.Overview {
		t = max(t, d.Overview[i].Time)
	}
	return t
}

// Pseudo-frames: values in a stack that are not addresses. They sit in the last page of the address space,
// which is never mapped, and end a stack (they are its outermost entry).
// FrameTruncated and FrameUnwindFailed, the two the collector library writes too, are generated
// from internal/tracedef (tracelayout.go).
const (
	// FrameProcessExit is the one frame of the stack of the clock sample that holds the CPU time the
	// processes spent after the kernel had stopped their clock events: the end of their exit (recent
	// kernels stop a task's perf events before they free its address space), counted
	// from the founder's wait4 less the clock's counts (docs/collecting.md). Shown as <Process exit>.
	FrameProcessExit uint64 = 0xfffffffffffff003
	// FrameUnsampled is the one frame of the stack of a clock sample that holds the CPU time the kernel
	// counted for a thread of which it took no sample (it ended before its first): its time is
	// exact, but no call stack shows where it went. Shown as <Unsampled>.
	FrameUnsampled uint64 = 0xfffffffffffff004
	// PseudoFrameBase is the lowest pseudo-frame value.
	PseudoFrameBase uint64 = 0xfffffffffffff000
)

// ProcessExit says whether clock sample c is the one that holds the CPU time of process exits (its
// stack is the single frame FrameProcessExit, its mode kernel): no thread's code ran in it. The mode
// is looked at first, so that the views' per-sample checks do not read the stack of every sample.
func (d *Data) ProcessExit(c *ClockSample) bool {
	return c.Mode == ModeKernel && d.onlyFrame(c, FrameProcessExit)
}

// Unsampled says whether clock sample c holds the counted CPU time of a thread of which the kernel
// took no sample (its stack is the single frame FrameUnsampled, its mode unknown).
func (d *Data) Unsampled(c *ClockSample) bool {
	return c.Mode == ModeUnknown && d.onlyFrame(c, FrameUnsampled)
}

func (d *Data) onlyFrame(c *ClockSample, pc uint64) bool {
	if int(c.Stack) >= len(d.Stacks) {
		return false
	}
	st := d.Stacks[c.Stack]
	return len(st) == 1 && st[0] == pc
}
