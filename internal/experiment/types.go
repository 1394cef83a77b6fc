// Package experiment holds the on-disk experiment format: its types, writer and reader.
package experiment

// FormatVersion is the version of the experiment format written by this package.
// Readers accept the same major version.
const FormatVersion = "1.0"

// File names inside an experiment directory.
const (
	LogFile      = "log.xml"
	MapFile      = "map.xml"
	OverviewFile = "overview"
	NotesFile    = "notes"
	ClockFile    = "profile.clock" // clock-profiling events, fixed-size records
	StacksFile   = "stacks"        // the stack table, variable-size records
	ArchivesDir  = "archives"
)

// Mode is the CPU mode a sample was taken in.
type Mode uint8

// CPU modes.
const (
	ModeUnknown Mode = 0
	ModeUser    Mode = 1
	ModeKernel  Mode = 2
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeUser:
		return "user"
	case ModeKernel:
		return "kernel"
	}
	return "unknown"
}

// ClockSample is one clock-profiling event: Period nanoseconds of CPU time
// spent by thread Tid of process Pid, ending at Time, with the call stack Stack.
type ClockSample struct {
	Time   int64  // ns since the experiment's start (Log.StartPerfNS)
	Pid    uint32 // process id
	Tid    uint32 // thread id
	CPU    uint32 // CPU the sample was taken on
	Mode   Mode   // user or kernel mode at the sample
	Period int64  // ns of CPU time this sample stands for
	Stack  uint32 // index into the stack table; 0 is the empty stack
}

// Stack is one entry of the stack table: absolute instruction addresses,
// leaf first. Frame 0 is the interrupted PC; the others are return addresses.
// Kernel addresses (>= KernelBase) come before user addresses.
type Stack []uint64

// KernelBase is the lowest kernel address on x86-64 Linux.
const KernelBase = 0xffff800000000000

// Mapping is one executable mapping of a load object into a process, from
// /proc/PID/maps at the start or from a PERF_RECORD_MMAP2 afterwards.
type Mapping struct {
	Pid        uint32 // process id; 0 for the kernel
	Start, End uint64 // address range [Start, End)
	Offset     uint64 // file offset of Start
	Path       string // absolute path, or "[vdso]", "[kernel]", "[anon]", ...
	BuildID    string // hex GNU build id, when known
	LoadTime   int64  // ns since start; 0 when present at start
	UnloadTime int64  // ns since start; -1 while still mapped
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
	Name  string // "clock", "interval_ns", "sample_period_s", "duration_limit_s", "size_limit_mb", ...
	Value string
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
	StartTime        int64  // wall clock at start, Unix ns
	StartPerfNS      int64  // perf clock (CLOCK_MONOTONIC) at start; sample times are relative to it
	EndTime          int64  // ns since start at the end of collection; 0 while running
	ExitStatus       int    // exit code, or 128+signal
	ExitSignal       int    // terminating signal, 0 when none
	Exited           bool   // the target's exit was seen
	KernelStacks     bool   // kernel call stacks were recorded
	CountedCPUNS     int64  // CPU time the kernel counted on the clock event while recording, all threads; 0 when unknown
	Settings         []Setting
	Events           []Event
}

// Data is everything read from one experiment directory.
type Data struct {
	Dir      string
	Log      Log
	Mappings []Mapping
	Stacks   []Stack // index is the stack id; Stacks[0] is the empty stack
	Clock    []ClockSample
	Overview []OverviewSample
	Archives map[string]*Archive // by Mapping.Path
	Notes    string
	Warnings []string // what the reader had to skip or repair (a truncated last block, a missing file)
}

// Pseudo-frames: values in a stack that are not addresses. They sit in the last page of the address space,
// which is never mapped, and end a stack (they are its outermost entry).
const (
	// FrameTruncated ends a stack whose unwinding stopped before the outermost frame: the copied stack
	// or the frame limit ran out. Shown as <Truncated-stack>.
	FrameTruncated uint64 = 0xfffffffffffff001
	// FrameUnwindFailed ends a stack whose unwinding could not go on (no unwind information and no valid
	// frame pointer, or an unreadable frame). Shown as <Unwind-failed>.
	FrameUnwindFailed uint64 = 0xfffffffffffff002
	// PseudoFrameBase is the lowest pseudo-frame value.
	PseudoFrameBase uint64 = 0xfffffffffffff000
)
