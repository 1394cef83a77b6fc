// Package perfevent opens Linux perf events from Go, reads their mmap'd ring buffers and decodes the records (with perfabi).
package perfevent

import (
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Options describes the event that OpenTask opens on every online CPU.
// The zero value is not useful: start from TaskClock or HardwareCounter.
type Options struct {
	Type, Config uint64 // perf event type and config (PERF_TYPE_*, PERF_COUNT_*)
	// PeriodNS is the sample period: nanoseconds for the clock events,
	// events for the hardware counters. It must be nonzero.
	PeriodNS        uint64
	Callchain       bool   // PERF_SAMPLE_CALLCHAIN
	KernelCallchain bool   // include kernel frames in the callchain (false sets exclude_callchain_kernel)
	ExcludeKernel   bool   // count and sample in user mode only (exclude_kernel)
	SampleRegsUser  uint64 // PERF_SAMPLE_REGS_USER register mask (0 = off); see RegsAMD64All
	SampleStackUser uint32 // PERF_SAMPLE_STACK_USER bytes (0 = off); a multiple of 8, below 65535
	MaxStack        uint16 // sample_max_stack (0 = the kernel's default, kernel.perf_event_max_stack)
	EnableOnExec    bool   // start counting when the task calls exec
	Disabled        bool   // open disabled; call Group.Enable to start
	ContextSwitch   bool   // also emit PERF_RECORD_SWITCH records (decoded as *perfabi.Switch)
	BuildID         bool   // ask for build ids instead of device/inode in MMAP2 records (Linux 5.12+)
	InheritStat     bool   // a PERF_RECORD_READ with its own count when each inherited thread exits
	// ReadCount asks each sample for its event's count in the sampled thread (PERF_SAMPLE_READ,
	// perfabi.Sample.Count): with inherit, that thread's own count on the sample's CPU. Kernels before a 2024
	// change ("perf: Support PERF_SAMPLE_READ with inherit") refuse it: see CountInSamples.
	ReadCount bool
	// ReadGroup, with ReadCount, asks each sample for the counts of the event's siblings too
	// (PERF_FORMAT_GROUP with PERF_FORMAT_ID: perfabi.Sample.Siblings): the thread's on the sample's CPU, as
	// Count. Kernels that refuse it refuse the event (see SiblingsInSamples).
	ReadGroup bool
	// RingPages is the number of data pages in each CPU's ring buffer, a
	// power of 2; 0 means DefaultRingPages. Samples with a user stack copy
	// need more: each sample takes about SampleStackUser bytes.
	RingPages int
	// Siblings are events opened in the event's group on each CPU, inherited with it, writing into its
	// rings: with InheritStat, each exiting thread reports their counts too, in Read records whose ID
	// tells which (Group.SiblingIDs); SiblingCounts gives their totals. A sampling sibling's samples
	// have the event's sample layout, and their ID tells which sibling took them. At most MaxSiblings.
	Siblings []Sibling
	// SampleAddr asks each sample for its data address (PERF_SAMPLE_ADDR, perfabi.Sample.Addr): the faulting
	// address of a page-fault event, 0 for the clocks.
	SampleAddr bool
	// WakeupEvents, when nonzero, wakes Wait after that many samples.
	// When zero, Wait wakes when a quarter of the ring is full (a watermark);
	// callers should also wake on a timeout and Drain, as Group.Wait allows.
	WakeupEvents uint32
}

// Sibling is an event of type Type and config Config in the group of Options (see Options.Siblings):
// counting only, or sampling every Period events, or Freq times a second (the kernel adjusts the
// period of each thread's event at every tick to keep that rate).
type Sibling struct {
	Type, Config     uint64
	Config1, Config2 uint64 // a raw event's further configuration (sysfs formats in config1, config2)
	Period, Freq     uint64 // both 0: counting only
	// Precise asks for the event's exact instruction (precise_ip, 0 to 3): a hardware event's samples
	// are then taken with PEBS or IBS, where the PMU has it, and can give data addresses.
	Precise uint8
	// StackUser, when nonzero and below the event's SampleStackUser, is the user stack a sampling
	// sibling copies (a multiple of 8).
	StackUser uint32
}

// Sampling reports whether the sibling takes samples.
func (sb Sibling) Sampling() bool { return sb.Period != 0 || sb.Freq != 0 }

// MaxSiblings is the most Options.Siblings: the clock's microstate samplers and runtime count, and
// the counters of -h.
const MaxSiblings = 16

// readGroupFormat is the read format of Options.ReadGroup: the values of every event in the group, each
// with its id.
const readGroupFormat = unix.PERF_FORMAT_GROUP | unix.PERF_FORMAT_ID

// DefaultRingPages is the number of data pages per CPU ring when Options.RingPages is 0.
const DefaultRingPages = 128

// TaskClock returns options for the software task clock (PERF_COUNT_SW_TASK_CLOCK)
// with a sample every periodNS nanoseconds of CPU time, with call chains.
// The task clock runs only while the task is on a CPU, so each sample stands
// for Period nanoseconds of CPU time (user and system).
func TaskClock(periodNS uint64) Options {
	return Options{
		Type:      unix.PERF_TYPE_SOFTWARE,
		Config:    unix.PERF_COUNT_SW_TASK_CLOCK,
		PeriodNS:  periodNS,
		Callchain: true,
	}
}

// Dummy returns options for the software dummy event: it never samples, but like every event it
// brings the fork, exec, exit and mapping records of the task and its descendants.
func Dummy() Options {
	return Options{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_DUMMY, PeriodNS: 1}
}

// HardwareCounter returns options for a generic hardware event
// (config is one of unix.PERF_COUNT_HW_*) sampled every period events, with call chains.
func HardwareCounter(config, period uint64) Options {
	return Options{
		Type:      unix.PERF_TYPE_HARDWARE,
		Config:    config,
		PeriodNS:  period,
		Callchain: true,
	}
}

// x86-64 register numbers in a PERF_SAMPLE_REGS_USER mask (arch/x86/include/uapi/asm/perf_regs.h).
// perfabi.Sample.Regs holds the registers of the mask in increasing register number.
const (
	RegAMD64AX  = 0
	RegAMD64BX  = 1
	RegAMD64CX  = 2
	RegAMD64DX  = 3
	RegAMD64SI  = 4
	RegAMD64DI  = 5
	RegAMD64BP  = 6
	RegAMD64SP  = 7
	RegAMD64IP  = 8
	RegAMD64R8  = 16
	RegAMD64R15 = 23

	// RegsAMD64All selects every general-purpose register, IP, flags, CS and SS
	// (the segment registers DS, ES, FS and GS are rejected on x86-64).
	RegsAMD64All = 0xff0fff
)

// RegIndex returns the index in perfabi.Sample.Regs of register reg sampled with mask,
// or -1 when the mask does not include it.
func RegIndex(mask uint64, reg int) int {
	if reg < 0 || reg > 63 || mask&(1<<uint(reg)) == 0 {
		return -1
	}
	return bits.OnesCount64(mask & (1<<uint(reg) - 1))
}

// Attribute flag bits of perf_event_attr not named in x/sys.
const (
	bitBuildID = 1 << 34
)

// sampleType returns the PERF_SAMPLE_* bits that OpenTask asks for.
func (o *Options) sampleType() uint64 {
	st := uint64(unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME |
		unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_IDENTIFIER)
	if o.Callchain {
		st |= unix.PERF_SAMPLE_CALLCHAIN
	}
	if o.SampleRegsUser != 0 {
		st |= unix.PERF_SAMPLE_REGS_USER
	}
	if o.SampleStackUser != 0 {
		st |= unix.PERF_SAMPLE_STACK_USER
	}
	if o.ReadCount {
		st |= unix.PERF_SAMPLE_READ
	}
	if o.SampleAddr {
		st |= unix.PERF_SAMPLE_ADDR
	}
	return st
}

// ringPages returns the number of data pages per ring, or an error when invalid.
func (o *Options) ringPages() (int, error) {
	n := o.RingPages
	if n == 0 {
		n = DefaultRingPages
	}
	if n < 1 || n&(n-1) != 0 || n > 1<<20 {
		return 0, fmt.Errorf("perfevent: RingPages %d: must be a power of 2 between 1 and %d", o.RingPages, 1<<20)
	}
	return n, nil
}

// attr builds the perf_event_attr for o, with a ring of dataBytes bytes.
func (o *Options) attr(dataBytes int) (*unix.PerfEventAttr, error) {
	if o.Type > math.MaxUint32 {
		return nil, fmt.Errorf("perfevent: event type %d does not fit in 32 bits", o.Type)
	}
	if o.PeriodNS == 0 || o.PeriodNS > math.MaxInt64 {
		return nil, fmt.Errorf("perfevent: sample period %d: must be between 1 and %d", o.PeriodNS, uint64(math.MaxInt64))
	}
	if len(o.Siblings) > MaxSiblings {
		return nil, fmt.Errorf("perfevent: %d sibling events: at most %d", len(o.Siblings), MaxSiblings)
	}
	if o.SampleStackUser%8 != 0 || o.SampleStackUser >= 65535 {
		return nil, fmt.Errorf("perfevent: SampleStackUser %d: must be a multiple of 8 below 65535", o.SampleStackUser)
	}
	a := &unix.PerfEventAttr{
		Type:              uint32(o.Type),
		Config:            o.Config,
		Sample:            o.PeriodNS,
		Sample_type:       o.sampleType(),
		Sample_regs_user:  o.SampleRegsUser,
		Sample_stack_user: o.SampleStackUser,
		Sample_max_stack:  o.MaxStack,
		Clockid:           unix.CLOCK_MONOTONIC,
	}
	if o.ReadCount && o.ReadGroup {
		a.Read_format = readGroupFormat
	}
	a.Size = uint32(unsafe.Sizeof(*a))
	// mmap must be set with mmap2: the kernel emits mapping records only
	// while some event has mmap (or mmap_data), and then as MMAP2 for events with mmap2.
	a.Bits = unix.PerfBitInherit | unix.PerfBitSampleIDAll | unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm |
		unix.PerfBitCommExec | unix.PerfBitTask | unix.PerfBitUseClockID
	if o.Disabled {
		a.Bits |= unix.PerfBitDisabled
	}
	if o.EnableOnExec {
		a.Bits |= unix.PerfBitEnableOnExec
	}
	if o.ExcludeKernel {
		a.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv
	}
	if !o.KernelCallchain || o.ExcludeKernel {
		a.Bits |= unix.PerfBitExcludeCallchainKernel
	}
	if o.ContextSwitch {
		a.Bits |= unix.PerfBitContextSwitch
	}
	if o.InheritStat {
		a.Bits |= unix.PerfBitInheritStat
	}

	if o.BuildID {
		a.Bits |= bitBuildID
	}
	if o.WakeupEvents != 0 {
		a.Wakeup = o.WakeupEvents
	} else {
		a.Bits |= unix.PerfBitWatermark
		a.Wakeup = uint32(max(dataBytes/4, 8))
	}
	return a, nil
}

// EventName names the event of type typ and config cfg the way perf does
// ("task-clock", "cycles"), or "type T config 0xC" when it has no name.
func EventName(typ, cfg uint64) string {
	var names []string
	switch typ {
	case unix.PERF_TYPE_SOFTWARE:
		names = []string{"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
			"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy", "bpf-output", "cgroup-switches"}
	case unix.PERF_TYPE_HARDWARE:
		names = []string{"cycles", "instructions", "cache-references", "cache-misses", "branch-instructions",
			"branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles"}
	}
	if cfg < uint64(len(names)) {
		return names[cfg]
	}
	return fmt.Sprintf("type %d config %#x", typ, cfg)
}

// isHardware reports whether events of type typ are counted by a PMU.
func isHardware(typ uint64) bool {
	switch typ {
	case unix.PERF_TYPE_SOFTWARE, unix.PERF_TYPE_TRACEPOINT, unix.PERF_TYPE_BREAKPOINT:
		return false
	}
	return true
}
