// Package gprofng reads experiments recorded by GNU gprofng (`gprofng collect app`) into er's
// experiment data: clock profiles, heap, synchronization and I/O traces with their stacks.
package gprofng

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"er/internal/experiment"
	"er/internal/regfile"
)

// The files of a gprofng experiment that er reads.
const (
	logFile    = "log.xml"
	mapFile    = "map.xml"
	framesFile = "data.frameinfo"
	archives   = "archives"
)

// Is reports whether dir holds an experiment that gprofng recorded: its log.xml starts with
// gprofng's <experiment version="12.x"> (er's starts with an XML declaration, and is version 1).
func Is(dir string) bool {
	f, _, err := regfile.Open(filepath.Join(dir, logFile))
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := f.Read(head)
	head = bytes.TrimLeft(head[:n], " \t\r\n")
	const prefix = `<experiment version="`
	if !bytes.HasPrefix(head, []byte(prefix)) {
		return false
	}
	major, _, _ := strings.Cut(string(head[len(prefix):]), ".")
	v, err := strconv.Atoi(major)
	return err == nil && v >= 10
}

// unsupported names the kinds of data (log.xml's profiles) that er cannot read, and why.
var unsupported = map[string]string{
	"jprofile":  "Java profiling data (JVM call stacks)",
	"omptrace":  "OpenMP tracing data",
	"hwcounter": "hardware counter profiling data",
	"hwsimctr":  "simulated hardware counter data",
	"datarace":  "data race detection data",
	"deadlock":  "deadlock detection data",
	"mpitrace":  "MPI tracing data",
}

// Open reads the gprofng experiment in dir: its log, mappings, load objects (from the copies in
// its archives/, or else the files themselves), stacks and the data of clock profiling, heap,
// synchronization and I/O tracing. Data it cannot read (Java, OpenMP, hardware counters) is an
// error that names the file; damage is an error that names the file and the offset.
func Open(dir string) (*experiment.Data, error) {
	path := func(name string) string { return filepath.Join(dir, name) }
	d := &experiment.Data{Dir: dir, Archives: map[string]*experiment.Archive{}}
	warn := func(format string, args ...any) { d.Warnings = append(d.Warnings, fmt.Sprintf(format, args...)) }

	b, err := regfile.ReadFile(path(logFile), maxXMLSize, logFile)
	if err != nil {
		return nil, err
	}
	l, truncated, err := ParseLog(path(logFile), b)
	if err != nil {
		return nil, err
	}
	if truncated {
		warn("%s: ends in the middle of an element: the experiment was not finished", logFile)
	}
	for _, p := range l.Profiles {
		if why, ok := unsupported[p.Name]; ok {
			return nil, fmt.Errorf("%s: the gprofng experiment holds %s (profile %q), which er cannot read; record it again without it", path(logFile), why, p.Name)
		}
		switch p.Name {
		case "profile", "heaptrace", "synctrace", "iotrace":
		default:
			return nil, fmt.Errorf("%s: profile %q: a kind of gprofng data that er does not know", path(logFile), p.Name)
		}
	}
	if l.Start == 0 {
		return nil, fmt.Errorf("%s: no <event kind=\"run\">: the start of the run is unknown, so times cannot be read", path(logFile))
	}
	d.Log = convertLog(dir, l)

	m := &Map{}
	b, err = regfile.ReadFile(path(mapFile), maxXMLSize, mapFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		warn("%s: missing; no load objects are known, so addresses cannot be named", mapFile)
	case err != nil:
		return nil, err
	default:
		if m, truncated, err = ParseMap(path(mapFile), b); err != nil {
			return nil, err
		}
		if truncated {
			warn("%s: ends in the middle of an element: the experiment was not finished", mapFile)
		}
	}
	d.Mappings = mappings(m, l.Pid)
	for _, w := range readArchives(d, dir, m) {
		warn("%s", w)
	}

	st, err := readStacks(path(framesFile), l.WordSize)
	if err != nil {
		return nil, err
	}
	if st.Java {
		return nil, fmt.Errorf("%s: the gprofng experiment holds Java call stacks, which er cannot read; record it again with -j off", path(framesFile))
	}
	if st.OpenMP {
		return nil, fmt.Errorf("%s: the gprofng experiment holds OpenMP states and stacks, which er cannot read", path(framesFile))
	}
	c := newConverter(d, l, st)
	d.Stacks = []experiment.Stack{nil}
	for _, p := range l.Profiles {
		if p.File == "" {
			continue
		}
		if err := c.read(dir, &p); err != nil {
			return nil, err
		}
	}
	if _, cut := st.Resolved(); cut > 0 {
		warn("%s: its stacks, which share their callers' frames by links, name more than %d frames of distinct stacks (a damaged or crafted file): "+
			"%d stacks after those are cut to their first %d frames and end in <Truncated-stack>; the exclusive metrics of their functions are right, the inclusive metrics of their callers fall short",
			framesFile, maxResolved, cut, cutFrames)
	}
	if c.missing > 0 {
		warn("%s: %d of the events' frame infos are missing from it; those events have no stack", framesFile, c.missing)
	}
	d.Warnings = append(d.Warnings, c.warnings...)
	ov, warns, err := readOverview(dir, l)
	if err != nil {
		return nil, err
	}
	d.Overview = ov
	d.Warnings = append(d.Warnings, warns...)
	// The tables are in time order already (Data.AddClock, AddHeap, AddSync, AddIO).
	return d, nil
}

// readStacks reads data.frameinfo; a missing file is an empty table.
func readStacks(file string, wordSize int) (*Stacks, error) {
	f, fi, err := regfile.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return newStacks(), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, _, err := ReadStacks(file, f, fi.Size(), wordSize)
	return st, err
}

// convertLog turns gprofng's log into er's.
func convertLog(dir string, l *Log) experiment.Log {
	el := experiment.Log{
		FormatVersion:    experiment.FormatVersion,
		CollectorVersion: "gprofng " + l.Collector,
		Host:             l.Host,
		OS:               l.OS,
		Arch:             l.Arch,
		CPUs:             l.CPUs,
		PageSize:         l.PageSize,
		WordSize:         l.WordSize,
		ClockHz:          int64(l.ClockMHz) * 1e6,
		MemoryBytes:      l.NPages * int64(l.PageSize),
		Command:          strings.Fields(l.Command),
		Cwd:              l.Cwd,
		Pid:              l.Pid,
		Ppid:             l.Ppid,
		StartTime:        l.StartWall * 1e9,
		StartPerfNS:      l.Start,
		EndTime:          max(l.Last, 1),
		Exited:           l.Exit >= 0,
	}
	if experiment.IsSubexperiment(dir) {
		el.Lineage = strings.TrimSuffix(filepath.Base(filepath.Clean(dir)), ".er")
	}
	on := func(k experiment.SettingKey, v string) {
		el.Settings = append(el.Settings, experiment.Setting{Name: k, Value: v})
	}
	clock := l.Profile("profile")
	if clock != nil {
		on(experiment.SettingClockProfiling, "on")
		if us, err := strconv.ParseInt(clock.Attrs["ptimer"], 10, 64); err == nil && us > 0 {
			on(experiment.SettingClockInterval, strconv.FormatInt(us*1000, 10))
		}
	} else {
		on(experiment.SettingClockProfiling, "off")
	}
	for _, st := range l.Settings {
		if sec, err := strconv.ParseFloat(st.Value, 64); st.Name == "sample_period" && err == nil && sec >= 0 && sec < 1e9 {
			on("sample_period_ns", strconv.FormatInt(int64(sec*1e9), 10))
		}
	}
	if l.Profile("heaptrace") != nil {
		on(experiment.SettingHeapTracing, "on")
	}
	if p := l.Profile("synctrace"); p != nil {
		v := "on (calibrated threshold)"
		if t, err := strconv.ParseInt(p.Attrs["threshold"], 10, 64); err == nil && t >= 0 {
			v = strconv.FormatInt(t, 10)
		}
		on(experiment.SettingSyncTracing, v)
	}
	if l.Profile("iotrace") != nil {
		on(experiment.SettingIOTracing, "on")
	}
	el.Events = append(el.Events, experiment.Event{Kind: "start", Pid: l.Pid, Text: "target started (recorded by gprofng " + l.Collector + ")"})
	for _, e := range l.Events {
		kind := "comment"
		switch e.Kind {
		case "cwarn":
			kind = "warning"
		case "cerror":
			kind = "error"
		case "pause", "resume":
			kind = e.Kind
		}
		text := e.Text
		if e.Kind != "comment" && e.Kind != "pause" && e.Kind != "resume" {
			text = "gprofng " + e.Kind + ": " + text
		}
		el.Events = append(el.Events, experiment.Event{Time: e.Time, Kind: kind, Pid: l.Pid, Text: text})
	}
	if l.Exit >= 0 {
		el.Events = append(el.Events, experiment.Event{Time: l.Exit, Kind: "exit", Pid: l.Pid, Text: "target exited"})
	}
	return el
}

// mappings turns map.xml's segments that hold code into er's mappings of process pid. Those the
// collector listed first, when it started, are mapped from the start: it lists them after the
// process ran for a while. That listing is the file's first event, and all of it has one time; a
// segment mapped while the collector started and listed after it can have an earlier time (on a
// busy machine, data.frameinfo 0.9 ms before the listing), so the listing's time is not the least.
func mappings(m *Map, pid uint32) []experiment.Mapping {
	var first int64 = -1
	if len(m.Segments) > 0 {
		first = m.Segments[0].Time
	}
	var out []experiment.Mapping
	for _, s := range m.Segments {
		if !s.Exec() || s.Size == 0 || s.Vaddr+s.Size < s.Vaddr {
			continue
		}
		load := s.Time
		if load == first {
			load = 0
		}
		out = append(out, experiment.Mapping{Pid: pid, Start: s.Vaddr, End: s.Vaddr + s.Size, Offset: s.Offset,
			Path: s.Name, LoadTime: load, UnloadTime: s.Unmap})
	}
	return out
}

// dirEntries lists dir's names, none when it cannot be read.
func dirEntries(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names
}
