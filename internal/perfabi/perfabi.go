// Package perfabi holds the perf_event ABI (perf_event.h): record types and their decoding, for live rings and perf.data files alike.
package perfabi

import "fmt"

// Record types (PERF_RECORD_*): the kernel's are below RecordUserTypeStart; perf's tools number
// theirs (in perf.data files only) from it.
const (
	RecordMmap          uint32 = 1
	RecordLost          uint32 = 2
	RecordComm          uint32 = 3
	RecordExit          uint32 = 4
	RecordThrottle      uint32 = 5
	RecordUnthrottle    uint32 = 6
	RecordFork          uint32 = 7
	RecordRead          uint32 = 8
	RecordSample        uint32 = 9
	RecordMmap2         uint32 = 10
	RecordAux           uint32 = 11
	RecordItraceStart   uint32 = 12
	RecordLostSamples   uint32 = 13
	RecordSwitch        uint32 = 14
	RecordSwitchCPUWide uint32 = 15
	RecordNamespaces    uint32 = 16
	RecordKsymbol       uint32 = 17
	RecordBPFEvent      uint32 = 18
	RecordCgroup        uint32 = 19
	RecordTextPoke      uint32 = 20
	RecordAuxOutputHWID uint32 = 21

	RecordUserTypeStart uint32 = 64 // PERF_RECORD_USER_TYPE_START: the first of perf's own types
)

// recordNames names the kernel's record types as perf does (PERF_RECORD_ less).
var recordNames = [...]string{RecordMmap: "MMAP", RecordLost: "LOST", RecordComm: "COMM", RecordExit: "EXIT",
	RecordThrottle: "THROTTLE", RecordUnthrottle: "UNTHROTTLE", RecordFork: "FORK", RecordRead: "READ",
	RecordSample: "SAMPLE", RecordMmap2: "MMAP2", RecordAux: "AUX", RecordItraceStart: "ITRACE_START",
	RecordLostSamples: "LOST_SAMPLES", RecordSwitch: "SWITCH", RecordSwitchCPUWide: "SWITCH_CPU_WIDE",
	RecordNamespaces: "NAMESPACES", RecordKsymbol: "KSYMBOL", RecordBPFEvent: "BPF_EVENT", RecordCgroup: "CGROUP",
	RecordTextPoke: "TEXT_POKE", RecordAuxOutputHWID: "AUX_OUTPUT_HW_ID"}

// RecordName names a kernel record type in messages: MMAP, SAMPLE, ..., type-N for one without a name here.
func RecordName(t uint32) string {
	if t < uint32(len(recordNames)) && recordNames[t] != "" {
		return recordNames[t]
	}
	return fmt.Sprintf("type-%d", t)
}

// The misc field of a record's header: the CPU mode in its low bits, and bits whose meaning
// depends on the record's type.
const (
	CPUModeMask        uint16 = 7 // PERF_RECORD_MISC_CPUMODE_MASK
	CPUModeUnknown     uint16 = 0
	CPUModeKernel      uint16 = 1
	CPUModeUser        uint16 = 2
	CPUModeHypervisor  uint16 = 3
	CPUModeGuestKernel uint16 = 4
	CPUModeGuestUser   uint16 = 5

	MiscMmapData         uint16 = 1 << 13 // an MMAP or MMAP2 of data, not code (PERF_RECORD_MISC_MMAP_DATA)
	MiscCommExec         uint16 = 1 << 13 // a COMM at exec (PERF_RECORD_MISC_COMM_EXEC)
	MiscSwitchOut        uint16 = 1 << 13 // a SWITCH of the task out (PERF_RECORD_MISC_SWITCH_OUT)
	MiscExactIP          uint16 = 1 << 14 // a SAMPLE's IP is the event's own instruction (PERF_RECORD_MISC_EXACT_IP)
	MiscSwitchOutPreempt uint16 = 1 << 14 // a SWITCH out while runnable (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
	MiscMmapBuildID      uint16 = 1 << 14 // an MMAP2 with a build id in place of the device and inode (PERF_RECORD_MISC_MMAP_BUILD_ID)
)

// Header is what every record has: its perf_event_header (type, misc bits and size) and, where its
// reader knows them, where it was read and which of the reader's events it is of.
type Header struct {
	Type   uint32 // RecordSample, RecordMmap2, ...
	Misc   uint16 // the CPU mode and the type's Misc* bits
	Size   uint16 // bytes, the header's 8 included
	Offset int64  // where the record begins in its file (perfdata); 0 from a ring
	// Event is the index of the record's event among its reader's (perfdata: in File.Attrs; -1
	// where no event precedes the record); 0 from a ring, whose records are all of one format.
	Event int
}

// Head returns the record's header.
func (h *Header) Head() *Header { return h }

// CPUMode is the misc field's CPU mode: CPUModeUser, CPUModeKernel, ...
func (h *Header) CPUMode() uint16 { return h.Misc & CPUModeMask }

// Record is one decoded record: *Sample, *Mmap, *Comm, *Fork, *Exit, *Read, *Lost, *LostSamples,
// *Throttle, *Switch or *Unknown; perfdata adds the records perf writes in its files.
type Record interface {
	Head() *Header
}

// Time returns the time perf orders a record by (CLOCK_MONOTONIC or the event's clock, in ns): a
// sample's, the sample_id's of the others, or the record's own where it has one and no sample_id
// time (FORK, EXIT, THROTTLE); 0 for a record without a time.
func Time(r Record) uint64 {
	switch r := r.(type) {
	case *Sample:
		return r.Time
	case *Mmap:
		return r.Time
	case *Comm:
		return r.Time
	case *Fork:
		return orTime(r.SampleIDTime, r.Time)
	case *Exit:
		return orTime(r.SampleIDTime, r.Time)
	case *Read:
		return r.Time
	case *Lost:
		return r.Time
	case *LostSamples:
		return r.Time
	case *Throttle:
		return orTime(r.SampleIDTime, r.Time)
	case *Switch:
		return r.Time
	case *Unknown:
		return r.Time
	}
	return 0
}

func orTime(a, b uint64) uint64 {
	if a != 0 {
		return a
	}
	return b
}

// Sample is a PERF_RECORD_SAMPLE: the fields its event's sample type has, the others zero. The
// fields of the sample types the live rings have are here; the others, in More.
//
// From a Decoder's Decode, the record and its slices are the decoder's until the next record;
// Stack (and More's Raw and Aux) point into the record's bytes.
type Sample struct {
	Header
	IP       uint64 // the interrupted instruction (PERF_SAMPLE_IP)
	Pid, Tid uint32 // process and thread (PERF_SAMPLE_TID)
	Time     uint64 // the event's clock, in ns (PERF_SAMPLE_TIME)
	Addr     uint64 // the data address (PERF_SAMPLE_ADDR): a page fault's faulting address
	ID       uint64 // the event's id (PERF_SAMPLE_ID or PERF_SAMPLE_IDENTIFIER)
	CPU      uint32 // the CPU it ran on (PERF_SAMPLE_CPU)
	// Leader, with PERF_SAMPLE_READ of a group (PERF_FORMAT_GROUP), is whether the sample's event
	// leads the group.
	Leader bool
	Period uint64 // events (for the clocks, nanoseconds) this sample stands for (PERF_SAMPLE_PERIOD)
	// Count is PERF_SAMPLE_READ: the value of the sample's event (in a group, the one of its ID;
	// the leader's where no value has its ID); Siblings, of a group, its events' values in its
	// order, the leader's first. More.Read has them all, with their ids and times.
	Count     uint64
	Siblings  []uint64
	Callchain []uint64 // raw, with PERF_CONTEXT_* markers, leaf first; see SplitCallchain (PERF_SAMPLE_CALLCHAIN)
	// RegsABI is PERF_SAMPLE_REGS_ABI_* of the user registers: 0 without them (a kernel thread).
	RegsABI uint64
	Regs    []uint64 // the user registers of the mask (Format.SampleRegsUser), in increasing register number; nil when RegsABI is 0
	// Stack is the copy of the user stack from its pointer up (PERF_SAMPLE_STACK_USER): only its
	// first StackDynSize bytes were filled by the kernel.
	Stack        []byte
	StackDynSize uint64
	// More is the fields of the other sample types (nil where the format has none of them, and
	// PERF_SAMPLE_READ).
	More *SampleMore
}

// SampleMore is the fields of a sample that er's own events do not ask for: set apart, the
// samples of the live rings are half the size (they are copied as they are read).
type SampleMore struct {
	StreamID uint64      // the id of the event it was inherited from (PERF_SAMPLE_STREAM_ID)
	Read     []ReadValue // PERF_SAMPLE_READ: the sample's event's value, or one for each event of its group
	Raw      []byte      // PERF_SAMPLE_RAW
	// Branches is PERF_SAMPLE_BRANCH_STACK, BranchHWIndex its hw_idx (with PERF_SAMPLE_BRANCH_HW_INDEX).
	Branches      []Branch
	BranchHWIndex uint64
	Weight        uint64 // PERF_SAMPLE_WEIGHT, or the PERF_SAMPLE_WEIGHT_STRUCT word
	DataSrc       uint64 // PERF_SAMPLE_DATA_SRC
	Transaction   uint64 // PERF_SAMPLE_TRANSACTION
	IntrRegsABI   uint64 // PERF_SAMPLE_REGS_INTR: the registers at the interrupt, of Format.SampleRegsIntr
	IntrRegs      []uint64
	PhysAddr      uint64 // PERF_SAMPLE_PHYS_ADDR
	Cgroup        uint64 // PERF_SAMPLE_CGROUP
	DataPageSize  uint64 // PERF_SAMPLE_DATA_PAGE_SIZE
	CodePageSize  uint64 // PERF_SAMPLE_CODE_PAGE_SIZE
	Aux           []byte // PERF_SAMPLE_AUX
}

// Kernel reports whether the sample was taken in kernel mode.
func (s *Sample) Kernel() bool { return s.Misc&CPUModeMask == CPUModeKernel }

// ReadValue is one event's value in a READ record or a sample's PERF_SAMPLE_READ (struct
// read_format), with what its read format adds.
type ReadValue struct {
	Value, ID, Lost          uint64
	TimeEnabled, TimeRunning uint64
}

// Branch is one entry of a sample's branch stack.
type Branch struct {
	From, To, Flags, Counters uint64
}

// The sample_id of the records other than samples (with sample_id_all: the sample's TID, TIME, ID,
// STREAM_ID, CPU and IDENTIFIER fields, those the sample type has) is in each type's fields: Pid
// and Tid where the record has none of its own, Time (SampleIDTime where it has its own), ID and CPU.

// Mmap is a PERF_RECORD_MMAP or PERF_RECORD_MMAP2 (Type says which): a mapping made by the task
// (Pid 0xffffffff, -1: the kernel's).
type Mmap struct {
	Header
	Pid, Tid         uint32
	Addr, Len, Pgoff uint64
	Maj, Min         uint32 // MMAP2: the device (zero when BuildID is set)
	Ino, InoGen      uint64 // MMAP2: the inode and its generation (zero when BuildID is set)
	Prot, Flags      uint32 // MMAP2: PROT_* and MAP_* of the mapping
	BuildID          []byte // MMAP2 with MiscMmapBuildID: the file's build id
	Filename         string
	// Executable is whether the mapping is code: not a data mapping (MiscMmapData), and for an
	// MMAP2, mapped with PROT_EXEC.
	Executable bool
	Time       uint64
	ID         uint64
	CPU        uint32
}

// Comm is a PERF_RECORD_COMM: a thread changed its name, or the process called exec (Exec).
type Comm struct {
	Header
	Pid, Tid uint32
	Comm     string
	Exec     bool
	Time     uint64
	ID       uint64
	CPU      uint32
}

// Fork is a PERF_RECORD_FORK: a process or thread Pid/Tid was created by Ppid/Ptid at Time (the
// record's own). A new thread has Pid == Ppid.
type Fork struct {
	Header
	Pid, Ppid, Tid, Ptid uint32
	Time                 uint64
	SampleIDTime         uint64 // the sample_id's time (0 without), which perf orders by
	ID                   uint64
	CPU                  uint32
}

// Exit is a PERF_RECORD_EXIT: thread Tid of process Pid exited at Time (the record's own).
type Exit struct {
	Header
	Pid, Ppid, Tid, Ptid uint32
	Time                 uint64
	SampleIDTime         uint64 // the sample_id's time (0 without), which perf orders by
	ID                   uint64
	CPU                  uint32
}

// Read is a PERF_RECORD_READ: with inherit_stat, the counts of thread Tid of process Pid when it
// exited (one record per CPU's event: sum them).
type Read struct {
	Header
	Pid, Tid uint32
	// Value is the value of the record's event (ID's) in Values: in a group read, the one of its
	// ID, else the first.
	Value  uint64
	Values []ReadValue // the read_format: one value, or the group's
	Time   uint64
	ID     uint64 // the id of the event (the one opened); 0 without PERF_SAMPLE_ID or IDENTIFIER
	CPU    uint32
}

// Lost is a PERF_RECORD_LOST: the ring was full and Lost records of event ID were dropped.
type Lost struct {
	Header
	ID       uint64
	Lost     uint64
	Pid, Tid uint32
	Time     uint64
	CPU      uint32
}

// LostSamples is a PERF_RECORD_LOST_SAMPLES: samples the kernel could not take.
type LostSamples struct {
	Header
	Lost     uint64
	Pid, Tid uint32
	Time     uint64
	ID       uint64
	CPU      uint32
}

// Throttle is a PERF_RECORD_THROTTLE or PERF_RECORD_UNTHROTTLE: the kernel stopped (or resumed)
// sampling event ID because samples came too fast for kernel.perf_event_max_sample_rate.
type Throttle struct {
	Header
	Time         uint64 // the record's own
	ID, StreamID uint64
	Unthrottle   bool
	SampleIDTime uint64 // the sample_id's time (0 without), which perf orders by
	Pid, Tid     uint32
	CPU          uint32
}

// Switch is a PERF_RECORD_SWITCH or PERF_RECORD_SWITCH_CPU_WIDE: thread Pid/Tid (of the sample_id)
// was switched out (Out) or in at Time on CPU; Preempt when it was switched out while runnable.
type Switch struct {
	Header
	Pid, Tid                 uint32
	CPU                      uint32
	Out, Preempt             bool
	NextPrevPid, NextPrevTid uint32 // the other thread (SWITCH_CPU_WIDE only)
	Time                     uint64
	ID                       uint64
}

// Unknown is a record this package does not decode: Data is its body after the 8-byte header
// (for the kernel's types, less the sample_id, whose fields are the others).
type Unknown struct {
	Header
	Data     []byte
	Pid, Tid uint32
	Time     uint64
	ID       uint64
	CPU      uint32
}
