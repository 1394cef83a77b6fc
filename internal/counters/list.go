package counters

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// TypeInfo is the type information of the manual's lists: the memory operation, if any, and the unit
// ("load events", "CPU-cycles").
func (c *Counter) TypeInfo() string {
	unit := c.Unit
	if unit == Nanoseconds {
		unit = "nanoseconds"
	}
	if c.MemOp != "" {
		return c.MemOp + " " + unit
	}
	return unit
}

// Probe tries to open a counter on this machine: nil when it can be profiled.
type Probe func(c *Counter) error

// WriteList writes the lists `er collect -h` (and `er collect` alone) print: the aliased hardware
// counters, the raw hardware counters of the core PMUs, the software events, then how to name
// tracepoints and raw encodings. Each counter is listed where probe opens it; noHW says why none of the
// hardware ones can be where none is.
func (e *Env) WriteList(w io.Writer, probe Probe) {
	fmt.Fprintln(w, "Aliased HW counters available for profiling:")
	var hwErr error
	n := 0
	for _, c := range Aliases() {
		if err := probe(&c); err != nil {
			if hwErr == nil {
				hwErr = err
			}
			continue
		}
		fmt.Fprintf(w, "%s,%d ('%s', alias for %s; %s)\n", c.Name, c.Default, c.Title, c.Raw, c.TypeInfo())
		n++
	}
	if n == 0 {
		fmt.Fprintf(w, "  none: %s\n", e.NoHardware(hwErr))
	}
	fmt.Fprintln(w, "Raw HW counters available for profiling:")
	n = 0
	for _, p := range e.CorePMUs() {
		for _, name := range p.EventNames() {
			c, err := e.Lookup(p.Name + "/" + name + "/")
			if err != nil || probe(&c) != nil {
				continue
			}
			fmt.Fprintf(w, "%s,%d (%s; %s)\n", c.Name, c.Default, p.Events[name], c.TypeInfo())
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  none")
	}
	fmt.Fprintln(w, "Software events available for profiling:")
	for _, c := range SoftwareEvents() {
		if probe(&c) != nil {
			continue
		}
		fmt.Fprintf(w, "%s,%d ('%s', alias for %s; %s)\n", c.Name, c.Default, c.Title, c.Raw, c.TypeInfo())
	}
	fmt.Fprintln(w, "Tracepoints:")
	if dir, n := e.tracepoints(); n > 0 {
		fmt.Fprintf(w, "  any of the %d under %s/events, as system:event, one sample per event by default: -h sched:sched_wakeup,1\n", n, dir)
	} else {
		fmt.Fprintf(w, "  none readable (tracefs at %s, as root)\n", strings.Join(e.TraceDirs, " or "))
	}
	fmt.Fprintln(w, "Raw encodings:")
	fmt.Fprintln(w, "  r<hex> (the core PMU's raw config, as perf's rNNNN); pmu/field=value,.../ with a PMU's format fields:")
	for _, p := range e.PMUs {
		if len(p.Formats) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", p.Name, strings.Join(p.fieldNames(), ", "))
		}
	}
	fmt.Fprintln(w, "A counter given with '+' (load, store or load-store types) records each event's data address,")
	fmt.Fprintln(w, "for the data-space views (dataobjects, datalayout, memobj); an interval is on, hi, lo or a number.")
}

// NoHardware says why no hardware counter can be profiled, from the error of opening one (nil: the
// generic reason), with what can be used instead.
func (e *Env) NoHardware(err error) string {
	why := "the kernel cannot open hardware events here"
	if len(e.CorePMUs()) == 0 {
		why = fmt.Sprintf("this machine has no hardware performance counters (no CPU PMU in %s; a virtual machine whose hypervisor gives it no virtual PMU, or a kernel without its PMU driver)", DevicesDir)
	}
	if err != nil {
		why += " (" + err.Error() + ")"
	}
	return why + "; software events (page-faults, context-switches, task-clock, ...) and tracepoints work, and clock profiling (-p) measures time"
}

// tracepoints returns the tracefs directory with events, and how many it has.
func (e *Env) tracepoints() (string, int) {
	for _, d := range e.TraceDirs {
		ids, _ := filepath.Glob(filepath.Join(d, "events", "*", "*", "id"))
		if len(ids) > 0 {
			return d, len(ids)
		}
		if _, err := os.Stat(filepath.Join(d, "events")); err == nil {
			return d, 0
		}
	}
	return "", 0
}
