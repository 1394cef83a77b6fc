package perfdata

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Sample type bits (PERF_SAMPLE_*): which fields a sample record holds, in this order.
const (
	SampleIP           uint64 = 1 << 0
	SampleTID          uint64 = 1 << 1
	SampleTime         uint64 = 1 << 2
	SampleAddr         uint64 = 1 << 3
	SampleRead         uint64 = 1 << 4
	SampleCallchain    uint64 = 1 << 5
	SampleID           uint64 = 1 << 6
	SampleCPU          uint64 = 1 << 7
	SamplePeriod       uint64 = 1 << 8
	SampleStreamID     uint64 = 1 << 9
	SampleRaw          uint64 = 1 << 10
	SampleBranchStack  uint64 = 1 << 11
	SampleRegsUser     uint64 = 1 << 12
	SampleStackUser    uint64 = 1 << 13
	SampleWeight       uint64 = 1 << 14
	SampleDataSrc      uint64 = 1 << 15
	SampleIdentifier   uint64 = 1 << 16
	SampleTransaction  uint64 = 1 << 17
	SampleRegsIntr     uint64 = 1 << 18
	SamplePhysAddr     uint64 = 1 << 19
	SampleAux          uint64 = 1 << 20
	SampleCgroup       uint64 = 1 << 21
	SampleDataPageSize uint64 = 1 << 22
	SampleCodePageSize uint64 = 1 << 23
	SampleWeightStruct uint64 = 1 << 24
	sampleKnown               = 1<<25 - 1
)

// Read format bits (PERF_FORMAT_*): what a READ value holds.
const (
	FormatTotalTimeEnabled uint64 = 1 << 0
	FormatTotalTimeRunning uint64 = 1 << 1
	FormatID               uint64 = 1 << 2
	FormatGroup            uint64 = 1 << 3
	FormatLost             uint64 = 1 << 4
)

// Branch sample type bits that change the sample's layout.
const (
	branchHWIndex  uint64 = 1 << 17 // PERF_SAMPLE_BRANCH_HW_INDEX: a u64 before the entries
	branchCounters uint64 = 1 << 19 // PERF_SAMPLE_BRANCH_COUNTERS: a u64 per entry after them
)

// Event types (perf_event_attr.type) and the software configs er maps to clock profiling.
const (
	TypeHardware   uint32 = 0
	TypeSoftware   uint32 = 1
	TypeTracepoint uint32 = 2
	TypeHWCache    uint32 = 3
	TypeRaw        uint32 = 4
	TypeBreakpoint uint32 = 5

	SWCPUClock  uint64 = 0
	SWTaskClock uint64 = 1
)

// attrV0Size is the size of the first perf_event_attr (PERF_ATTR_SIZE_VER0); every attr has at
// least its fields.
const attrV0Size = 64

// Attr is one event of the file (a struct perf_event_attr), with the ids its samples and records
// carry and its name.
type Attr struct {
	Type             uint32
	Size             uint32 // bytes of the attr as the file has it
	Config           uint64
	SamplePeriod     uint64 // a sample every SamplePeriod events; with Freq, the frequency asked for (Hz)
	SampleType       uint64 // Sample* bits
	ReadFormat       uint64 // Format* bits
	Flags            uint64 // the bit fields: disabled, inherit, ..., see the Flag* constants
	WakeupEvents     uint32
	BPType           uint32
	Config1          uint64
	Config2          uint64
	BranchSampleType uint64
	SampleRegsUser   uint64 // the mask of the user registers sampled (perf's x86 numbering)
	SampleStackUser  uint32 // bytes of user stack copied with each sample
	ClockID          int32
	SampleRegsIntr   uint64
	SampleMaxStack   uint16

	IDs  []uint64 // the ids of the event (one per CPU or thread it was opened on)
	Name string   // from the EVENT_DESC feature ("cpu-clock:ppp", "page-faults"), or made from Type and Config
}

// Flag bits of Attr.Flags.
const (
	FlagExcludeUser   uint64 = 1 << 4
	FlagExcludeKernel uint64 = 1 << 5
	FlagFreq          uint64 = 1 << 10
	FlagSampleIDAll   uint64 = 1 << 18
	FlagExcludeCCKern uint64 = 1 << 21 // exclude_callchain_kernel
	FlagExcludeCCUser uint64 = 1 << 22 // exclude_callchain_user
	FlagMmap2         uint64 = 1 << 23
	FlagUseClockID    uint64 = 1 << 25
)

// Freq reports whether SamplePeriod is a frequency (perf record -F, its default).
func (a *Attr) Freq() bool { return a.Flags&FlagFreq != 0 }

// SampleIDAll reports whether non-sample records carry a sample_id trailer.
func (a *Attr) SampleIDAll() bool { return a.Flags&FlagSampleIDAll != 0 }

// Clock reports whether the event is a CPU clock (cpu-clock or task-clock): its periods are
// nanoseconds.
func (a *Attr) Clock() bool {
	return a.Type == TypeSoftware && (a.Config == SWCPUClock || a.Config == SWTaskClock)
}

// parseAttr decodes a perf_event_attr of n bytes at b[0:n]. Fields past the attr's size are zero.
func parseAttr(b []byte) (*Attr, error) {
	if len(b) < attrV0Size {
		return nil, fmt.Errorf("event attribute of %d bytes is shorter than the first version's %d", len(b), attrV0Size)
	}
	le := binary.LittleEndian
	a := &Attr{Type: le.Uint32(b), Size: le.Uint32(b[4:]), Config: le.Uint64(b[8:]), SamplePeriod: le.Uint64(b[16:]),
		SampleType: le.Uint64(b[24:]), ReadFormat: le.Uint64(b[32:]), Flags: le.Uint64(b[40:]),
		WakeupEvents: le.Uint32(b[48:]), BPType: le.Uint32(b[52:]), Config1: le.Uint64(b[56:])}
	if a.Size != 0 && int(a.Size) < attrV0Size {
		return nil, fmt.Errorf("event attribute says it has %d bytes, fewer than the first version's %d", a.Size, attrV0Size)
	}
	// Later versions' fields, where the attr has them.
	u64 := func(off int) uint64 {
		if off+8 <= len(b) {
			return le.Uint64(b[off:])
		}
		return 0
	}
	u32 := func(off int) uint32 {
		if off+4 <= len(b) {
			return le.Uint32(b[off:])
		}
		return 0
	}
	a.Config2 = u64(64)
	a.BranchSampleType = u64(72)
	a.SampleRegsUser = u64(80)
	a.SampleStackUser = u32(88)
	a.ClockID = int32(u32(92))
	a.SampleRegsIntr = u64(96)
	if 106 <= len(b) {
		a.SampleMaxStack = le.Uint16(b[104:])
	}
	if bad := a.SampleType &^ sampleKnown; bad != 0 {
		return nil, fmt.Errorf("event attribute has sample type bits %#x that this reader does not know", bad)
	}
	return a, nil
}

// defaultName names an event that the file does not name.
func (a *Attr) defaultName() string {
	switch a.Type {
	case TypeHardware:
		names := []string{"cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses", "bus-cycles",
			"stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles"}
		if a.Config < uint64(len(names)) {
			return names[a.Config]
		}
	case TypeSoftware:
		names := []string{"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations", "minor-faults",
			"major-faults", "alignment-faults", "emulation-faults", "dummy", "bpf-output", "cgroup-switches"}
		if a.Config < uint64(len(names)) {
			return names[a.Config]
		}
	}
	return fmt.Sprintf("type%d/config=%#x/", a.Type, a.Config)
}

// sampleIDSize is the bytes of the sample_id trailer that the attr's non-sample records carry.
func (a *Attr) sampleIDSize() int {
	if !a.SampleIDAll() {
		return 0
	}
	return 8 * bits.OnesCount64(a.SampleType&(SampleTID|SampleTime|SampleID|SampleStreamID|SampleCPU|SampleIdentifier))
}

// idPos is the index of the id word in the attr's sample records (-1: none), as perf finds it:
// first with PERF_SAMPLE_IDENTIFIER, else after the fields before PERF_SAMPLE_ID.
func (a *Attr) idPos() int {
	if a.SampleType&SampleIdentifier != 0 {
		return 0
	}
	if a.SampleType&SampleID == 0 {
		return -1
	}
	return bits.OnesCount64(a.SampleType & (SampleIP | SampleTID | SampleTime | SampleAddr))
}

// isPos is the index of the id word in a sample_id trailer counted from its end (1: the last
// word), or -1 without one.
func (a *Attr) isPos() int {
	if a.SampleType&SampleIdentifier != 0 {
		return 1
	}
	if a.SampleType&SampleID == 0 {
		return -1
	}
	return 1 + bits.OnesCount64(a.SampleType&(SampleStreamID|SampleCPU))
}
