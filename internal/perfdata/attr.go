package perfdata

import (
	"encoding/binary"
	"fmt"

	"er/internal/perfabi"
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
	SampleType       uint64 // perfabi.Sample* bits
	ReadFormat       uint64 // perfabi.Format* bits
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

	index int              // in File.Attrs
	dec   *perfabi.Decoder // of its records, once one is read
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

// Format is the layout of the event's records.
func (a *Attr) Format() perfabi.Format {
	return perfabi.Format{SampleType: a.SampleType, ReadFormat: a.ReadFormat, SampleRegsUser: a.SampleRegsUser,
		SampleRegsIntr: a.SampleRegsIntr, BranchSampleType: a.BranchSampleType, SampleIDAll: a.SampleIDAll()}
}

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
	if bad := a.SampleType &^ perfabi.SampleKnown; bad != 0 {
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
