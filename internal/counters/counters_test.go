package counters

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testEnv reads the fixture sysfs tree of testdata/NAME (a copy of a machine's
// /sys/bus/event_source/devices: the Intel Skylake and AMD Zen 3 core PMUs' formats and events as the
// kernel shows them, or a virtual machine's without a PMU) with testdata/tracefs.
func testEnv(t *testing.T, name string) *Env {
	t.Helper()
	pmus, err := ReadPMUs("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{PMUs: pmus, TraceDirs: []string{"testdata/no-such-tracefs", "testdata/tracefs"}}
}

func TestReadPMUs(t *testing.T) {
	e := testEnv(t, "intel")
	cpu := e.pmu("cpu")
	if cpu == nil || cpu.Type != 4 {
		t.Fatalf("cpu PMU: %+v", cpu)
	}
	if got := cpu.Events["mem-loads"]; got != "event=0xcd,umask=0x1,ldlat=3" {
		t.Errorf("mem-loads = %q", got)
	}
	if _, ok := cpu.Events["topdown-total-slots.scale"]; ok {
		t.Error("an event's .scale file is read as an event")
	}
	if f := cpu.Formats["offcore_rsp"]; f.Word != 1 || len(f.Bits) != 1 || f.Bits[0] != (bitRange{0, 63}) {
		t.Errorf("offcore_rsp format %+v", f)
	}
	if got := len(e.CorePMUs()); got != 1 {
		t.Errorf("%d core PMUs, want 1 (cpu; not msr, uncore_imc_0, software)", got)
	}
	if len(testEnv(t, "vm").CorePMUs()) != 0 {
		t.Error("the VM fixture has a core PMU")
	}
	if pmus, err := ReadPMUs("testdata/none"); err != nil || pmus != nil {
		t.Errorf("a missing directory: %v, %v", pmus, err)
	}
}

func TestParseFormat(t *testing.T) {
	for _, bad := range []string{"config", "config3:0-7", "config:7-0", "config:0-64", "config:x", "config:0-7,"} {
		if _, err := parseFormat(bad); err == nil {
			t.Errorf("parseFormat(%q) did not fail", bad)
		}
	}
}

// TestEncode: raw events from the formats, as the hardware takes them.
func TestEncode(t *testing.T) {
	intel, amd := testEnv(t, "intel"), testEnv(t, "amd")
	for _, tc := range []struct {
		e     *Env
		pmu   string
		terms string
		want  [3]uint64
	}{
		{intel, "cpu", "event=0x3c", [3]uint64{0x3c}},
		{intel, "cpu", "cpu-cycles", [3]uint64{0x3c}},
		{intel, "cpu", "mem-loads", [3]uint64{0x1cd, 3}},
		{intel, "cpu", "event=0xd1,umask=0x20,inv,cmask=1", [3]uint64{0xd1 | 0x20<<8 | 1<<23 | 1<<24}},
		{intel, "cpu", "event=0xb7,umask=0x1,offcore_rsp=0x10003c0091", [3]uint64{0x1b7, 0x10003c0091}},
		{intel, "cpu", "config=0x5300c0", [3]uint64{0x5300c0}},
		{intel, "msr", "tsc", [3]uint64{0}},
		// AMD's event select has 12 bits: the high 4 in bits 32-35.
		{amd, "cpu", "event=0x1c0", [3]uint64{0x1000000c0}},
		{amd, "cpu", "event=0xfff,umask=0xff", [3]uint64{0xf000000ff | 0xff<<8}},
		{amd, "cpu", "cache-misses", [3]uint64{0x964}},
		{amd, "ibs_op", "cnt_ctl=1", [3]uint64{1 << 19}},
	} {
		got, err := tc.e.pmu(tc.pmu).Encode(tc.terms)
		if err != nil || got != tc.want {
			t.Errorf("%s/%s/ = %#x, %v; want %#x", tc.pmu, tc.terms, got, err, tc.want)
		}
	}
	for _, bad := range []string{"event=0x100", "umask=zz", "colour=1", "ldlat=0x10000"} {
		if _, err := intel.pmu("cpu").Encode(bad); err == nil {
			t.Errorf("cpu/%s/ did not fail", bad)
		}
	}
}

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
