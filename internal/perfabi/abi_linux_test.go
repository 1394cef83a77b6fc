package perfabi

import (
	"testing"

	"golang.org/x/sys/unix"
)

// word is a negative PERF_CONTEXT_* as a call chain holds it.
func word(v int64) uint64 { return uint64(v) }

// TestKernelNumbers: the numbers here are the kernel's, as x/sys has them.
func TestKernelNumbers(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"RecordMmap", uint64(RecordMmap), unix.PERF_RECORD_MMAP},
		{"RecordLost", uint64(RecordLost), unix.PERF_RECORD_LOST},
		{"RecordComm", uint64(RecordComm), unix.PERF_RECORD_COMM},
		{"RecordExit", uint64(RecordExit), unix.PERF_RECORD_EXIT},
		{"RecordThrottle", uint64(RecordThrottle), unix.PERF_RECORD_THROTTLE},
		{"RecordUnthrottle", uint64(RecordUnthrottle), unix.PERF_RECORD_UNTHROTTLE},
		{"RecordFork", uint64(RecordFork), unix.PERF_RECORD_FORK},
		{"RecordRead", uint64(RecordRead), unix.PERF_RECORD_READ},
		{"RecordSample", uint64(RecordSample), unix.PERF_RECORD_SAMPLE},
		{"RecordMmap2", uint64(RecordMmap2), unix.PERF_RECORD_MMAP2},
		{"RecordAux", uint64(RecordAux), unix.PERF_RECORD_AUX},
		{"RecordItraceStart", uint64(RecordItraceStart), unix.PERF_RECORD_ITRACE_START},
		{"RecordLostSamples", uint64(RecordLostSamples), unix.PERF_RECORD_LOST_SAMPLES},
		{"RecordSwitch", uint64(RecordSwitch), unix.PERF_RECORD_SWITCH},
		{"RecordSwitchCPUWide", uint64(RecordSwitchCPUWide), unix.PERF_RECORD_SWITCH_CPU_WIDE},
		{"RecordNamespaces", uint64(RecordNamespaces), unix.PERF_RECORD_NAMESPACES},
		{"CPUModeMask", uint64(CPUModeMask), unix.PERF_RECORD_MISC_CPUMODE_MASK},
		{"CPUModeKernel", uint64(CPUModeKernel), unix.PERF_RECORD_MISC_KERNEL},
		{"CPUModeUser", uint64(CPUModeUser), unix.PERF_RECORD_MISC_USER},
		{"CPUModeHypervisor", uint64(CPUModeHypervisor), unix.PERF_RECORD_MISC_HYPERVISOR},
		{"CPUModeGuestKernel", uint64(CPUModeGuestKernel), unix.PERF_RECORD_MISC_GUEST_KERNEL},
		{"CPUModeGuestUser", uint64(CPUModeGuestUser), unix.PERF_RECORD_MISC_GUEST_USER},
		{"MiscMmapData", uint64(MiscMmapData), unix.PERF_RECORD_MISC_MMAP_DATA},
		{"MiscCommExec", uint64(MiscCommExec), unix.PERF_RECORD_MISC_COMM_EXEC},
		{"MiscSwitchOut", uint64(MiscSwitchOut), unix.PERF_RECORD_MISC_SWITCH_OUT},
		{"MiscExactIP", uint64(MiscExactIP), unix.PERF_RECORD_MISC_EXACT_IP},
		{"MiscSwitchOutPreempt", uint64(MiscSwitchOutPreempt), unix.PERF_RECORD_MISC_SWITCH_OUT_PREEMPT},
		{"MiscMmapBuildID", uint64(MiscMmapBuildID), unix.PERF_RECORD_MISC_MMAP_BUILD_ID},
		{"SampleIP", SampleIP, unix.PERF_SAMPLE_IP},
		{"SampleTID", SampleTID, unix.PERF_SAMPLE_TID},
		{"SampleTime", SampleTime, unix.PERF_SAMPLE_TIME},
		{"SampleAddr", SampleAddr, unix.PERF_SAMPLE_ADDR},
		{"SampleRead", SampleRead, unix.PERF_SAMPLE_READ},
		{"SampleCallchain", SampleCallchain, unix.PERF_SAMPLE_CALLCHAIN},
		{"SampleID", SampleID, unix.PERF_SAMPLE_ID},
		{"SampleCPU", SampleCPU, unix.PERF_SAMPLE_CPU},
		{"SamplePeriod", SamplePeriod, unix.PERF_SAMPLE_PERIOD},
		{"SampleStreamID", SampleStreamID, unix.PERF_SAMPLE_STREAM_ID},
		{"SampleRaw", SampleRaw, unix.PERF_SAMPLE_RAW},
		{"SampleBranchStack", SampleBranchStack, unix.PERF_SAMPLE_BRANCH_STACK},
		{"SampleRegsUser", SampleRegsUser, unix.PERF_SAMPLE_REGS_USER},
		{"SampleStackUser", SampleStackUser, unix.PERF_SAMPLE_STACK_USER},
		{"SampleWeight", SampleWeight, unix.PERF_SAMPLE_WEIGHT},
		{"SampleDataSrc", SampleDataSrc, unix.PERF_SAMPLE_DATA_SRC},
		{"SampleIdentifier", SampleIdentifier, unix.PERF_SAMPLE_IDENTIFIER},
		{"SampleTransaction", SampleTransaction, unix.PERF_SAMPLE_TRANSACTION},
		{"SampleRegsIntr", SampleRegsIntr, unix.PERF_SAMPLE_REGS_INTR},
		{"SamplePhysAddr", SamplePhysAddr, unix.PERF_SAMPLE_PHYS_ADDR},
		{"SampleAux", SampleAux, unix.PERF_SAMPLE_AUX},
		{"SampleCgroup", SampleCgroup, unix.PERF_SAMPLE_CGROUP},
		{"SampleDataPageSize", SampleDataPageSize, unix.PERF_SAMPLE_DATA_PAGE_SIZE},
		{"SampleCodePageSize", SampleCodePageSize, unix.PERF_SAMPLE_CODE_PAGE_SIZE},
		{"SampleWeightStruct", SampleWeightStruct, unix.PERF_SAMPLE_WEIGHT_STRUCT},
		{"FormatTotalTimeEnabled", FormatTotalTimeEnabled, unix.PERF_FORMAT_TOTAL_TIME_ENABLED},
		{"FormatTotalTimeRunning", FormatTotalTimeRunning, unix.PERF_FORMAT_TOTAL_TIME_RUNNING},
		{"FormatID", FormatID, unix.PERF_FORMAT_ID},
		{"FormatGroup", FormatGroup, unix.PERF_FORMAT_GROUP},
		{"BranchHWIndex", BranchHWIndex, unix.PERF_SAMPLE_BRANCH_HW_INDEX},
		{"ContextKernel", ContextKernel, word(unix.PERF_CONTEXT_KERNEL)},
		{"ContextUser", ContextUser, word(unix.PERF_CONTEXT_USER)},
		{"ContextMax", ContextMax, word(unix.PERF_CONTEXT_MAX)},
		{"protExec", protExec, unix.PROT_EXEC},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, the kernel's %#x", c.name, c.got, c.want)
		}
	}
}
