package counters

import (
	"testing"
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
