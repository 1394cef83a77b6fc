package counters

import "testing"

// TestMetricName: a counter's metric name keeps what a metric list can hold and makes the rest '_'.
func TestMetricName(t *testing.T) {
	for name, want := range map[string]string{
		"cycles": "cycles", "page-faults": "page-faults", "sched:sched_wakeup": "sched_sched_wakeup",
		"cpu/event=0x3c,umask=0x1/": "cpu_event_0x3c_umask_0x1", "r1c2": "r1c2",
	} {
		if got := MetricName(name); got != want {
			t.Errorf("MetricName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestCatalog: the aliases and software events, their classes, units and memory operations.
func TestCatalog(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range append(Aliases(), SoftwareEvents()...) {
		if seen[c.Name] {
			t.Errorf("%s listed twice", c.Name)
		}
		seen[c.Name] = true
		if c.Interval != c.Default || c.Default == 0 || c.Title == "" || c.Raw == "" {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	cyc, _ := lookupAlias("cpu-cycles")
	if cyc.Name != "cycles" || cyc.Class != Hardware || !cyc.Time() || cyc.TypeInfo() != "CPU-cycles" {
		t.Errorf("cpu-cycles: %+v", cyc)
	}
	dcrm, _ := lookupAlias("L1-dcache-load-misses")
	if dcrm.Name != "dcrm" || dcrm.Class != Cache || dcrm.TypeInfo() != "load events" || dcrm.Config != 0x10000 {
		t.Errorf("L1-dcache-load-misses: %+v", dcrm)
	}
	pf, _ := lookupAlias("faults")
	if pf.Name != "page-faults" || pf.Class != Software || pf.MemOp != LoadStore {
		t.Errorf("faults: %+v", pf)
	}
	tc, _ := lookupAlias("task-clock")
	if !tc.Time() || tc.TypeInfo() != "nanoseconds" {
		t.Errorf("task-clock: %+v", tc)
	}
	if _, ok := lookupAlias("nosuch"); ok {
		t.Error("nosuch is an alias")
	}
}
