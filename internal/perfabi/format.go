package perfabi

import (
	"fmt"
	"math/bits"
)

// Sample type bits (PERF_SAMPLE_*): which fields a sample holds, in this order.
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

	// SampleKnown is every bit above: those a Decoder decodes.
	SampleKnown = 1<<25 - 1
)

// Read format bits (PERF_FORMAT_*): what a read value holds.
const (
	FormatTotalTimeEnabled uint64 = 1 << 0
	FormatTotalTimeRunning uint64 = 1 << 1
	FormatID               uint64 = 1 << 2
	FormatGroup            uint64 = 1 << 3
	FormatLost             uint64 = 1 << 4

	// FormatKnown is every bit above.
	FormatKnown = 1<<5 - 1
)

// Branch sample type bits (PERF_SAMPLE_BRANCH_*) that change a sample's layout.
const (
	BranchHWIndex  uint64 = 1 << 17 // a u64 before the entries
	BranchCounters uint64 = 1 << 19 // a u64 for each entry after them
)

// Format is what of an event's perf_event_attr gives its records' layout.
type Format struct {
	SampleType       uint64 // Sample* bits
	ReadFormat       uint64 // Format* bits
	SampleRegsUser   uint64 // the mask of the user registers sampled
	SampleRegsIntr   uint64 // the mask of the interrupt registers sampled
	BranchSampleType uint64 // Branch* bits (others are ignored)
	SampleIDAll      bool   // records other than samples end with a sample_id
}

// moreBits are the sample type bits whose fields are in SampleMore.
const moreBits = SampleStreamID | SampleRead | SampleRaw | SampleBranchStack | SampleWeight | SampleDataSrc |
	SampleTransaction | SampleRegsIntr | SamplePhysAddr | SampleAux | SampleCgroup | SampleDataPageSize |
	SampleCodePageSize | SampleWeightStruct

// sampleIDBits are the sample type bits a sample_id holds, a word each.
const sampleIDBits = SampleTID | SampleTime | SampleID | SampleStreamID | SampleCPU | SampleIdentifier

// check reports the bits the decoder does not know.
func (f Format) check() error {
	if bad := f.SampleType &^ SampleKnown; bad != 0 {
		return fmt.Errorf("sample type bits %#x are not supported by the decoder", bad)
	}
	if bad := f.ReadFormat &^ FormatKnown; bad != 0 {
		return fmt.Errorf("read format bits %#x are not supported by the decoder", bad)
	}
	return nil
}

// SampleIDSize is the bytes of the sample_id that ends the event's records other than samples
// (0 without sample_id_all).
func (f Format) SampleIDSize() int {
	if !f.SampleIDAll {
		return 0
	}
	return 8 * bits.OnesCount64(f.SampleType&sampleIDBits)
}

// IDPos is the index of the id word in the event's samples (-1: none), as perf finds it: first with
// PERF_SAMPLE_IDENTIFIER, else after the fields before PERF_SAMPLE_ID.
func (f Format) IDPos() int {
	if f.SampleType&SampleIdentifier != 0 {
		return 0
	}
	if f.SampleType&SampleID == 0 {
		return -1
	}
	return bits.OnesCount64(f.SampleType & (SampleIP | SampleTID | SampleTime | SampleAddr))
}

// SampleIDPos is the index of the id word in a sample_id counted from its end (1: the last word),
// or -1 without one.
func (f Format) SampleIDPos() int {
	if f.SampleType&SampleIdentifier != 0 {
		return 1
	}
	if f.SampleType&SampleID == 0 {
		return -1
	}
	return 1 + bits.OnesCount64(f.SampleType&(SampleStreamID|SampleCPU))
}
