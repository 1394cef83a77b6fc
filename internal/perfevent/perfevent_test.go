package perfevent

import (
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestAttr(t *testing.T) {
	o := TaskClock(2000000)
	a, err := o.attr(128 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	wantBits := uint64(unix.PerfBitInherit | unix.PerfBitSampleIDAll | unix.PerfBitMmap | unix.PerfBitMmap2 |
		unix.PerfBitComm | unix.PerfBitCommExec | unix.PerfBitTask | unix.PerfBitUseClockID |
		unix.PerfBitExcludeCallchainKernel | unix.PerfBitWatermark)
	if a.Bits != wantBits {
		t.Errorf("bits %#x, want %#x", a.Bits, wantBits)
	}
	wantST := uint64(unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU |
		unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_CALLCHAIN)
	if a.Type != unix.PERF_TYPE_SOFTWARE || a.Config != unix.PERF_COUNT_SW_TASK_CLOCK || a.Sample != 2000000 ||
		a.Sample_type != wantST || a.Clockid != unix.CLOCK_MONOTONIC || a.Wakeup != 128*4096/4 ||
		a.Size != uint32(unsafe.Sizeof(*a)) {
		t.Errorf("attr %+v", a)
	}

	o = TaskClock(1000)
	o.KernelCallchain, o.Disabled, o.EnableOnExec, o.ContextSwitch, o.BuildID = true, true, true, true, true
	o.SampleRegsUser, o.SampleStackUser, o.MaxStack, o.WakeupEvents = RegsAMD64All, 8192, 64, 10
	a, err = o.attr(4096)
	if err != nil {
		t.Fatal(err)
	}
	for name, bit := range map[string]uint64{"disabled": unix.PerfBitDisabled, "enable_on_exec": unix.PerfBitEnableOnExec,
		"context_switch": unix.PerfBitContextSwitch, "build_id": bitBuildID} {
		if a.Bits&bit == 0 {
			t.Errorf("%s not set", name)
		}
	}
	if a.Bits&(unix.PerfBitExcludeCallchainKernel|unix.PerfBitWatermark|unix.PerfBitExcludeKernel) != 0 {
		t.Errorf("bits %#x: kernel callchain, wakeup events and kernel samples were asked for", a.Bits)
	}
	if a.Sample_type&(unix.PERF_SAMPLE_REGS_USER|unix.PERF_SAMPLE_STACK_USER) != unix.PERF_SAMPLE_REGS_USER|unix.PERF_SAMPLE_STACK_USER ||
		a.Sample_regs_user != RegsAMD64All || a.Sample_stack_user != 8192 || a.Sample_max_stack != 64 || a.Wakeup != 10 {
		t.Errorf("attr %+v", a)
	}

	o = TaskClock(1000)
	o.ExcludeKernel, o.KernelCallchain = true, true
	a, _ = o.attr(4096)
	if a.Bits&unix.PerfBitExcludeKernel == 0 || a.Bits&unix.PerfBitExcludeCallchainKernel == 0 {
		t.Errorf("ExcludeKernel must also exclude kernel call chains: bits %#x", a.Bits)
	}
}

func TestAttrErrors(t *testing.T) {
	tests := []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.PeriodNS = 0 }, "sample period 0"},
		{func(o *Options) { o.PeriodNS = 1 << 63 }, "sample period 9223372036854775808"},
		{func(o *Options) { o.SampleStackUser = 100 }, "SampleStackUser 100: must be a multiple of 8"},
		{func(o *Options) { o.SampleStackUser = 65536 }, "SampleStackUser 65536"},
		{func(o *Options) { o.Type = 1 << 32 }, "does not fit in 32 bits"},
	}
	for _, tt := range tests {
		o := TaskClock(1e6)
		tt.edit(&o)
		if _, err := o.attr(4096); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
	for _, n := range []int{-1, 3, 100, 1 << 21} {
		o := Options{RingPages: n}
		if _, err := o.ringPages(); err == nil {
			t.Errorf("RingPages %d accepted", n)
		}
	}
	if n, err := (&Options{}).ringPages(); n != DefaultRingPages || err != nil {
		t.Errorf("default ring pages %d, %v", n, err)
	}
}

func TestRegIndex(t *testing.T) {
	mask := uint64(1<<RegAMD64BP | 1<<RegAMD64SP | 1<<RegAMD64IP)
	if RegIndex(mask, RegAMD64BP) != 0 || RegIndex(mask, RegAMD64SP) != 1 || RegIndex(mask, RegAMD64IP) != 2 ||
		RegIndex(mask, RegAMD64AX) != -1 || RegIndex(mask, 64) != -1 {
		t.Error("RegIndex on BP|SP|IP")
	}
	if RegIndex(RegsAMD64All, RegAMD64R8) != 12 || RegIndex(RegsAMD64All, RegAMD64R15) != 19 || RegIndex(RegsAMD64All, 12) != -1 {
		t.Error("RegIndex on RegsAMD64All")
	}
}

func TestEventName(t *testing.T) {
	for _, tt := range []struct {
		typ, cfg uint64
		want     string
	}{
		{unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_TASK_CLOCK, "task-clock"},
		{unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_CLOCK, "cpu-clock"},
		{unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES, "cycles"},
		{unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_REF_CPU_CYCLES, "ref-cycles"},
		{unix.PERF_TYPE_RAW, 0x1c2, "type 4 config 0x1c2"},
	} {
		if got := EventName(tt.typ, tt.cfg); got != tt.want {
			t.Errorf("EventName(%d, %d) = %q, want %q", tt.typ, tt.cfg, got, tt.want)
		}
	}
}
