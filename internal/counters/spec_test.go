package counters

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	e := testEnv(t, "intel")
	cs, err := e.Parse("cycles,hi,+dcrm,insts,123,page-faults,1,sched:sched_wakeup,cpu/event=0xd1,umask=0x20/,lo,r1c2,mem-loads")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		name     string
		typ      uint32
		config   uint64
		interval uint64
		back     bool
	}
	wants := []want{
		{"cycles", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES, DefaultCycles / 10, false},
		{"dcrm", unix.PERF_TYPE_HW_CACHE, 0x10000, DefaultMisses, true},
		{"insts", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS, 123, false},
		{"page-faults", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_PAGE_FAULTS, 1, false},
		{"sched:sched_wakeup", unix.PERF_TYPE_TRACEPOINT, 321, 1, false},
		{"cpu/event=0xd1,umask=0x20/", 4, 0x20d1, DefaultRaw * 10, false},
		{"r1c2", unix.PERF_TYPE_RAW, 0x1c2, DefaultRaw, false},
		{"mem-loads", 4, 0x1cd, DefaultRaw, false},
	}
	if len(cs) != len(wants) {
		t.Fatalf("%d counters, want %d: %+v", len(cs), len(wants), cs)
	}
	for i, w := range wants {
		c := cs[i]
		if c.Name != w.name || c.Type != w.typ || c.Config != w.config || c.Interval != w.interval || c.Backtrack != w.back {
			t.Errorf("counter %d: %+v, want %+v", i, c, w)
		}
	}
	if cs[0].Unit != CPUCycles || !cs[0].Time() || cs[2].Time() {
		t.Errorf("units: cycles %q, insts %q", cs[0].Unit, cs[2].Unit)
	}
	if cs[1].Precise != 2 || cs[0].Precise != 0 {
		t.Errorf("precise_ip of +dcrm %d, of cycles %d; want 2 and 0", cs[1].Precise, cs[0].Precise)
	}
	if cs[7].MemOp != Load || cs[7].Config1 != 3 {
		t.Errorf("mem-loads: %+v", cs[7])
	}
	if got := cs[4].MetricName(); got != "sched_sched_wakeup" {
		t.Errorf("metric name of sched:sched_wakeup: %q", got)
	}
	if got := cs[5].MetricName(); got != "cpu_event_0xd1_umask_0x20" {
		t.Errorf("metric name of cpu/event=0xd1,umask=0x20/: %q", got)
	}
	if auto, err := e.Parse("auto"); err != nil || len(auto) != 2 || auto[0].Name != "cycles" || auto[1].Name != "insts" {
		t.Errorf("auto: %+v, %v", auto, err)
	}
	if off, err := e.Parse("off"); err != nil || off != nil {
		t.Errorf("off: %+v, %v", off, err)
	}
	if c, err := e.Parse("cycles/1,on"); err != nil || c[0].Name != "cycles" || c[0].Interval != DefaultCycles {
		t.Errorf("a register suffix: %+v, %v", c, err)
	}
}

func TestParseErrors(t *testing.T) {
	e := testEnv(t, "amd")
	for _, tc := range []struct{ arg, want string }{
		{"nosuch", "unknown counter \"nosuch\""},
		{"cycles,0", "a positive number"},
		{"cycles,-5", "a positive number"},
		{"cycles,12x", "a positive number"},
		{"on", "follows no counter"},
		{"cycles,cycles", "given twice"},
		{"+cycles", "gives no data addresses"},
		{"+context-switches", "gives no data addresses"},
		{"cpu/event=0x76", "no closing '/'"},
		{"nopmu/event=1/", "no PMU \"nopmu\""},
		{"cpu/colour=1/", "no field \"colour\""},
		{"sched:nosuch", "no tracepoint sched:nosuch"},
		{"cycles,,insts", "empty counter name"},
		{"a,b,c,d,e,f,g,h,i", "unknown counter"},
		{"cycles,insts,brm,branches,cache-misses,cache-refs,dcrm,icm,dtlbm", "at most 8"},
	} {
		_, err := e.Parse(tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.arg, err, tc.want)
		}
	}
	if _, err := e.Parse("nosuch"); !errors.Is(err, ErrUnknown) {
		t.Errorf("an unknown name's error is not ErrUnknown: %v", err)
	}
}
