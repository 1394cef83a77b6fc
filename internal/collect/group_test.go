package collect

import (
	"testing"

	"er/internal/counters"
	"er/internal/experiment"
	"er/internal/perfabi"
)

// TestUseModules: the modules a group's options bring. Counts in samples make the clock's periods
// counted and move the threads' marks at their exits; counters (-h) are a module whose first sibling
// is where the group put it; kernel stacks add the kernel's mapping.
func TestUseModules(t *testing.T) {
	s := testSession(t, Spec{Interval: IntervalOn})
	s.useCounters(2)
	if s.hwc != nil {
		t.Error("a counters module without counters")
	}
	s.useCounts()
	if _, ok := s.clock.periods.(nominalPeriods); !ok || len(s.mods) != 1 {
		t.Errorf("without counts in samples: periods %T, %d modules; want nominalPeriods, the clock alone", s.clock.periods, len(s.mods))
	}

	s = testSession(t, Spec{Interval: IntervalOn, Counters: []counters.Counter{{Name: "page-faults"}}})
	s.readCount = true
	s.useCounters(2)
	s.useCounts()
	if s.hwc == nil || s.hwc.base != 2 {
		t.Fatalf("counters module %+v, want one at sibling 2", s.hwc)
	}
	if _, ok := s.clock.periods.(countedPeriods); !ok || len(s.mods) != 3 {
		t.Errorf("with counts in samples: periods %T, %d modules; want countedPeriods, 3", s.clock.periods, len(s.mods))
	}
	s.counts.threads = map[uint32]*threadCounts{11: {}}
	s.handle(&perfabi.Exit{Pid: 10, Ppid: 10, Tid: 11, Ptid: 10, Time: 1_000 + 3e6})
	if th := s.counts.threads[11]; th == nil || th.exited != 3e6 {
		t.Errorf("thread 11's counts after its exit: %+v, want exited at 3e6", th)
	}

	s.kernelStacks(true)
	if err := s.w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range d.Mappings {
		found = found || m.Path == "[kernel]" && m.Start == experiment.KernelBase
	}
	if !found || !d.Log.KernelStacks {
		t.Errorf("kernel stacks: mapping found %v, log %v", found, d.Log.KernelStacks)
	}
}
