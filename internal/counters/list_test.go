package counters

import (
	"errors"
	"strings"
	"testing"
)

// TestList: the lists of `er collect -h` on a machine with a PMU and on one without.
func TestList(t *testing.T) {
	all := func(*Counter) error { return nil }
	var b strings.Builder
	testEnv(t, "intel").WriteList(&b, all)
	out := b.String()
	for _, want := range []string{
		"Aliased HW counters available for profiling:\ncycles,9999991 ('CPU Cycles', alias for PERF_COUNT_HW_CPU_CYCLES; CPU-cycles)\n",
		"dcrm,100003 ('L1 D$ Read Misses', alias for L1D read miss; load events)\n",
		"Raw HW counters available for profiling:\n",
		"cpu/mem-loads/,1000003 (event=0xcd,umask=0x1,ldlat=3; load events)\n",
		"cpu/cpu-cycles/,1000003 (event=0x3c; CPU-cycles)\n",
		"Software events available for profiling:\npage-faults,101 ('Page Faults', alias for PERF_COUNT_SW_PAGE_FAULTS; load-store events)\n",
		"context-switches,1 ('Context Switches', alias for PERF_COUNT_SW_CONTEXT_SWITCHES; events)\n",
		"task-clock,9999991 ('Task Clock', alias for PERF_COUNT_SW_TASK_CLOCK; nanoseconds)\n",
		"any of the 2 under testdata/tracefs/events",
		"  cpu: any, cmask, edge, event, frontend, in_tx, in_tx_cp, inv, ldlat, offcore_rsp, pc, umask\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the list has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "uncore_imc_0/cas_count_read") {
		t.Error("an uncore PMU's events are listed among the core's")
	}
	// No PMU: the hardware lists say why, and what to use instead; the software events stay.
	noHW := errors.New("perf_event_open: no such file or directory")
	probe := func(c *Counter) error {
		if c.Class == Software {
			return nil
		}
		return noHW
	}
	b.Reset()
	testEnv(t, "vm").WriteList(&b, probe)
	out = b.String()
	for _, want := range []string{
		"Aliased HW counters available for profiling:\n  none: this machine has no hardware performance counters (no CPU PMU in /sys/bus/event_source/devices; a virtual machine",
		"(perf_event_open: no such file or directory); software events (page-faults, context-switches, task-clock, ...) and tracepoints work",
		"Raw HW counters available for profiling:\n  none\n",
		"page-faults,101",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the list without a PMU has no %q:\n%s", want, out)
		}
	}
}
