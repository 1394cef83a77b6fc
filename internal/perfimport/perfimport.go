// Package perfimport converts a perf.data file (perf record) into an er experiment.
package perfimport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfdata"
	"er/internal/ranges"
	"er/internal/report"
	"er/internal/version"
)

// Result says what an import made.
type Result struct {
	Dir            string
	ClockSamples   int64 // clock samples written (cpu-clock, task-clock)
	CounterSamples int64 // counter samples written (other events)
	Experiments    int   // the founder and its subexperiments
	Warnings       []string
}

// Import converts the perf.data file at path (pipe mode too; "-" reads standard input) into a new
// experiment directory dir, which must not exist.
func Import(path, dir string) (*Result, error) {
	var rd *perfdata.Reader
	var f *perfdata.File
	var mtime int64
	input := path
	if path == "-" {
		var err error
		if f, rd, err = perfdata.NewPipe(os.Stdin, "standard input"); err != nil {
			return nil, err
		}
		input = "standard input"
	} else {
		var err error
		if f, err = perfdata.Open(path); err != nil {
			return nil, err
		}
		defer f.Close()
		rd = f.Records()
		if st, err := os.Stat(path); err == nil {
			mtime = st.ModTime().UnixNano()
		}
	}
	c := newConverter(f, dir, input)
	c.rd = rd
	err := perfdata.Ordered(rd, c.handle)
	if cut := rd.Cut(); cut != nil && err == nil {
		c.warn("%s: %v", input, cut)
	}
	if mtime == 0 { // a pipe: recorded until now
		mtime = time.Now().UnixNano()
	}
	if err == nil {
		err = c.finish(mtime)
	} else {
		c.abandon()
	}
	if err != nil {
		return nil, err
	}
	return &Result{Dir: dir, ClockSamples: c.clockSamples, CounterSamples: c.counterSamples, Experiments: c.experiments, Warnings: c.warnings}, nil
}

// image is one process image: a process from its start (or from the first record of it) to its
// exit or exec. Each image with samples gets an experiment: the founder's, or a subexperiment named
// by lineage (_f2.er, _f2_x1.er) as er collect names them.
type image struct {
	pid, ppid    uint32
	lineage      string
	parent       *image
	forks, execs int
	comm         string
	command      []string // its command line, where known: the founder's from perf's, a forked child's its parent's
	start        int64
	how          string // how it began, for its log
	w            *experiment.Writer
	live         ranges.Map[liveMapping] // its mappings in force
	samples      int64
	stack        experiment.Stack
	exited       bool // its EXIT was seen
}

// liveMapping is a mapping in force in an image, and the image that mapped it: a forked child's
// are its parent's (or an ancestor's) until it maps something over them.
type liveMapping struct {
	m     experiment.Mapping
	owner *image
}

// Cut is the part [start, end) of the mapping.
func (l liveMapping) Cut(start, end uint64) liveMapping {
	l.m.Offset += start - l.m.Start
	l.m.Start, l.m.End = start, end
	return l
}

// converter turns the records of one perf.data file into an experiment.
type converter struct {
	f          *perfdata.File
	dir, input string
	start      uint64 // the perf clock at the experiment's start: the first record's time
	last       uint64
	founder    *image
	rootPid    uint32 // the process perf record started (THREAD_MAP), 0 when unknown
	cur        map[uint32]*image
	images     []*image
	comms      map[uint32]string // the processes' names, from COMM records
	failed     error             // the first experiment write error
	stacks     *stacker
	counters   map[*perfdata.Attr]uint8
	log        experiment.Log
	ready      bool // setup ran
	kernel     bool
	used       map[string]bool // paths in mappings of experiments
	kernelPCs  map[uint64]struct{}
	warnings   []string
	lost       uint64
	lostSample uint64
	pastEnd    int   // mappings that ran past the end of the user address space
	pastEndAt  int64 // the offset of the first
	rd         *perfdata.Reader
	inherited  int64 // inherited mappings written to the experiments of forked children
	notInherit int   // experiments written without theirs (maxInherited), and the mappings
	notMaps    int64
	skipped    map[string]int64 // samples not imported, by why
	unknownPid map[uint32]bool
	objects    map[string]found  // the files of load objects, by path and build id (object)
	offsets    map[string]uint64 // the largest file offset each path is mapped from
	buildIDs   map[string]string // the build id of each path, from the last mapping of it that has one

	clockSamples, counterSamples int64
	experiments                  int
}

func newConverter(f *perfdata.File, dir, input string) *converter {
	c := &converter{f: f, dir: dir, input: input, cur: map[uint32]*image{}, comms: map[uint32]string{},
		counters: map[*perfdata.Attr]uint8{}, used: map[string]bool{}, kernelPCs: map[uint64]struct{}{},
		skipped: map[string]int64{}, unknownPid: map[uint32]bool{}, offsets: map[string]uint64{}, buildIDs: map[string]string{}}
	c.stacks = newStacker(c)
	return c
}

// rel is a perf time as ns since the experiment's start.
func (c *converter) rel(t uint64) int64 {
	if t == 0 || t < c.start {
		return 0
	}
	return int64(t - c.start)
}

func (c *converter) warn(format string, args ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, args...))
}

// maxInherited bounds the mappings that the experiments of forked children inherit, in all: a
// million, and one for each byte of the file read. Each child's experiment holds its own map.xml,
// the mappings in force when it began as well as its own: a file of n mappings and n forks would
// make n² of them (a crafted file of 136 KB, 1000 of each, made 161 MB of experiments). A variable
// for the tests.
var maxInherited int64 = 1 << 20

// maxTime is the latest time a record may have, as an experiment's times are: 2^62 ns, 146 years
// (perf's clocks count from boot, or from 1970 with perf record -k realtime).
const maxTime = 1 << 62

// handle takes one record, in time order.
func (c *converter) handle(r perfabi.Record) error {
	h, tm := r.Head(), perfabi.Time(r)
	if tm > maxTime {
		return &perfdata.FormatError{File: c.f.Name, Offset: h.Offset, Msg: fmt.Sprintf("%s record: its time %d ns is past 2^62 ns (146 years), later than perf's clocks can be: the file is damaged",
			perfdata.RecordName(h.Type), tm)}
	}
	if tm != 0 {
		if c.start == 0 {
			c.start = tm
		}
		c.last = max(c.last, tm)
	}
	t := c.rel(tm)
	switch r := r.(type) {
	case *perfdata.ThreadMap:
		if len(r.Threads) > 0 && c.rootPid == 0 && r.Threads[0].Pid > 0 && r.Threads[0].Pid < 1<<31 {
			c.rootPid = uint32(r.Threads[0].Pid)
		}
	case *perfabi.Comm:
		if r.Pid != r.Tid {
			return nil
		}
		c.comms[r.Pid] = r.Comm
		p := c.image(r.Pid, t)
		if !r.Exec {
			if p.w == nil {
				p.comm = r.Comm
			}
			return nil
		}
		c.exec(p, r.Comm, t)
	case *perfabi.Fork:
		if r.Pid == r.Ppid {
			return nil // a new thread
		}
		parent := c.image(r.Ppid, t)
		c.fork(parent, r.Pid, t)
	case *perfabi.Exit:
		if r.Pid != r.Tid {
			return nil
		}
		if p := c.cur[r.Pid]; p != nil {
			p.exited = true
			if p.w != nil {
				p.w.ProcessExit(r.Pid, t)
				p.w.Event(experiment.Event{Time: t, Kind: "exit", Pid: r.Pid, Text: "exited (perf.data does not hold exit statuses: er print shows 0)"})
			}
			delete(c.cur, r.Pid)
			c.stacks.gone(r.Pid)
		}
	case *perfabi.Mmap:
		c.mmap(r, t)
	case *perfabi.Sample:
		return c.sample(r, t)
	case *perfabi.Lost:
		c.lost += r.Lost
	case *perfabi.LostSamples:
		c.lostSample += r.Lost
	}
	return c.failed
}

// image returns the current image of process pid, making one for a process not seen before: the
// founder if it is the first (or the one perf record started), else a child of the founder.
func (c *converter) image(pid uint32, t int64) *image {
	if p := c.cur[pid]; p != nil {
		return p
	}
	if c.founder == nil && (c.rootPid == 0 || c.rootPid == pid) {
		p := &image{pid: pid, comm: c.comms[pid], start: t, how: "imported from " + c.input}
		c.founder = p
		c.cur[pid] = p
		c.images = append(c.images, p)
		return p
	}
	if c.founder == nil { // records of other processes before those of the one perf record started
		c.founder = &image{pid: c.rootPid, comm: c.comms[c.rootPid], how: "imported from " + c.input}
		c.cur[c.rootPid] = c.founder
		c.images = append(c.images, c.founder)
	}
	if !c.unknownPid[pid] {
		c.unknownPid[pid] = true
	}
	p := c.newImage(pid, 0, c.founder, 'f', t)
	p.how = fmt.Sprintf("a process whose start the file does not hold, counted under %s", nameOr(c.founder.lineage, "the founder"))
	return p
}

// newImage adds an image of process pid that parent forked (code 'f') or exec replaced ('x').
func (c *converter) newImage(pid, ppid uint32, parent *image, code byte, t int64) *image {
	n := 0
	if code == 'x' {
		parent.execs++
		n = parent.execs
	} else {
		parent.forks++
		n = parent.forks
	}
	p := &image{pid: pid, ppid: ppid, parent: parent, start: t, comm: c.comms[pid],
		lineage: parent.lineage + "_" + string(code) + strconv.Itoa(n)}
	if p.comm == "" {
		p.comm = parent.comm
	}
	c.cur[pid] = p
	c.images = append(c.images, p)
	return p
}

func nameOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// fork makes the image of a new process, with its parent's mappings.
func (c *converter) fork(parent *image, pid uint32, t int64) {
	p := c.newImage(pid, parent.pid, parent, 'f', t)
	p.how = fmt.Sprintf("forked by process %d, %s", parent.pid, nameOr(parent.lineage, "founder"))
	p.command = parent.command
	if parent == c.founder && p.command == nil {
		p.command = c.founderCommand(parent.comm)
	}
	p.live = parent.live // shared: what a child inherits is its parent's until either maps something
	c.stacks.fork(parent.pid, pid)
}

// exec starts a new image in process p.pid. An image without samples has no experiment: the new
// one takes its place and name (the founder's perf-exec before the exec of the program perf ran).
func (c *converter) exec(p *image, comm string, t int64) {
	c.stacks.gone(p.pid)
	if p.w == nil && p.samples == 0 {
		p.comm, p.live = comm, ranges.Map[liveMapping]{}
		if p.start == 0 {
			p.start = t
		}
		return
	}
	if p.w != nil {
		p.w.ProcessExit(p.pid, t)
		p.w.Event(experiment.Event{Time: t, Kind: "exit", Pid: p.pid, Text: "exec started a new image"})
	}
	q := c.newImage(p.pid, p.ppid, p, 'x', t)
	q.comm = comm
	q.how = fmt.Sprintf("exec in process %d, %s", p.pid, nameOr(p.lineage, "founder"))
}

// mmap records an executable mapping of a process (the kernel's once, as process 0).
func (c *converter) mmap(r *perfabi.Mmap, t int64) {
	if !r.Executable || r.Len == 0 {
		return
	}
	if r.Pid == ^uint32(0) || r.Addr >= experiment.KernelBase { // the kernel and its modules
		return
	}
	id := fmt.Sprintf("%x", r.BuildID)
	if id == "" {
		id = c.f.BuildIDOf(r.Filename)
	}
	end := r.Addr + r.Len
	if end < r.Addr || end > experiment.KernelBase { // damage: the user address space ends there
		if c.pastEnd++; c.pastEnd == 1 {
			c.pastEndAt = r.Offset
		}
		end = experiment.KernelBase
	}
	m := experiment.Mapping{Pid: r.Pid, Start: r.Addr, End: end, Offset: r.Pgoff, Path: r.Filename,
		BuildID: id, LoadTime: t, UnloadTime: -1}
	if strings.HasPrefix(m.Path, "//anon") || m.Path == "" {
		m.Path = "[anon]"
	}
	c.offsets[m.Path] = max(c.offsets[m.Path], m.Offset)
	p := c.image(r.Pid, t)
	p.live.Add(m.Start, m.End, liveMapping{m, p})
	if m.BuildID != "" {
		c.buildIDs[m.Path] = m.BuildID
	}
	if p.w != nil {
		p.w.AddMapping(m)
		c.used[m.Path] = true
	}
	c.stacks.addMapping(m)
}

// writer returns the experiment of image p, made at its first sample.
func (c *converter) writer(p *image) (*experiment.Writer, error) {
	if p.w != nil {
		return p.w, nil
	}
	if !c.ready {
		c.setup()
	}
	if p != c.founder {
		if _, err := c.writer(c.founder); err != nil {
			return nil, err
		}
	}
	log := c.log
	log.Pid, log.Ppid, log.Lineage = p.pid, p.ppid, p.lineage
	log.Command = p.command
	if p == c.founder {
		log.Command = c.founderCommand(p.comm)
	}
	if len(log.Command) == 0 {
		log.Command = []string{nameOr(p.comm, "[unknown]")}
	}
	p.command = log.Command
	log.Settings = append([]experiment.Setting(nil), c.log.Settings...)
	log.Counters = append([]experiment.Counter(nil), c.log.Counters...)
	dir := c.dir
	if p != c.founder {
		dir = filepath.Join(c.dir, p.lineage+".er")
	}
	w, err := experiment.Create(dir, log)
	if err != nil {
		return nil, err
	}
	p.w = w
	c.experiments++
	w.Event(experiment.Event{Time: p.start, Kind: "start", Pid: p.pid, Text: fmt.Sprintf("%s (%s)", strings.Join(log.Command, " "), p.how)})
	if p == c.founder {
		text := "imported from " + c.input
		if len(c.f.Cmdline) > 0 {
			text += ", recorded by: " + strings.Join(c.f.Cmdline, " ")
		}
		w.Event(experiment.Event{Kind: "comment", Pid: p.pid, Text: text})
	}
	if c.kernel {
		w.AddMapping(experiment.Mapping{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]", UnloadTime: -1})
	}
	var n int64
	for lm := range p.live.All() {
		if lm.owner != p {
			n++
		}
	}
	inherit := c.inherited+n <= maxInherited+c.rd.Offset()
	if inherit {
		c.inherited += n
	} else if n > 0 {
		c.notInherit++
		c.notMaps += n
	}
	for lm := range p.live.All() {
		m := lm.m
		if lm.owner != p { // inherited at the fork that began p
			if !inherit {
				continue
			}
			m.Pid, m.LoadTime, m.UnloadTime = p.pid, p.start, -1
		}
		w.AddMapping(m)
		c.used[m.Path] = true
	}
	return w, nil
}

// founderCommand is the command perf record ran, from its command line (after "--" or its options),
// where its name is the founder's; else the founder's name.
func (c *converter) founderCommand(comm string) []string {
	args := c.f.Cmdline
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	if len(args) > 0 && comm != "" && strings.HasPrefix(filepath.Base(args[0]), comm) {
		return append([]string(nil), args...)
	}
	if comm == "" {
		comm = "[unknown]"
	}
	return []string{comm}
}

// sample writes a sample: a clock sample for the CPU clocks, a counter sample for other events.
func (c *converter) sample(s *perfabi.Sample, t int64) error {
	if !c.ready {
		c.setup()
	}
	var mode experiment.Mode
	switch s.CPUMode() {
	case perfabi.CPUModeUser:
		mode = experiment.ModeUser
	case perfabi.CPUModeKernel:
		mode = experiment.ModeKernel
	default:
		c.skipped["guest or hypervisor mode"]++
		return nil
	}
	a := c.f.AttrOf(s)
	if a.SampleType&perfabi.SampleTID == 0 {
		c.skipped["no process id (the event lacks PERF_SAMPLE_TID)"]++
		return nil
	}
	counter, isCounter := uint8(0), !a.Clock()
	if isCounter {
		var ok bool
		if counter, ok = c.counters[a]; !ok {
			c.skipped["of an event beyond the 256 counters an experiment holds"]++
			return nil
		}
	}
	p := c.image(s.Pid, t)
	w, err := c.writer(p)
	if err != nil {
		c.failed = err
		return err
	}
	frames := c.stacks.stack(s, a.SampleRegsUser, p.stack[:0])
	p.stack = frames
	id, err := w.Stack(frames)
	if err != nil {
		c.failed = err
		return err
	}
	for _, pc := range frames {
		if pc >= experiment.KernelBase && pc < experiment.PseudoFrameBase {
			c.kernelPCs[pc] = struct{}{}
		}
	}
	p.samples++
	period := int64(min(s.Period, 1<<62))
	if isCounter {
		c.counterSamples++
		err = w.Counter(experiment.CounterSample{Time: t, Value: period, Addr: s.Addr, Pid: s.Pid, Tid: s.Tid, CPU: s.CPU,
			Stack: id, Counter: counter, Mode: mode})
	} else {
		if period > 60e9 { // a reader refuses longer ones: not a clock's
			c.skipped["of a clock period longer than 60 s"]++
			return nil
		}
		c.clockSamples++
		err = w.Clock(experiment.ClockSample{Time: t, Pid: s.Pid, Tid: s.Tid, CPU: s.CPU, Mode: mode, Period: period, Stack: id})
	}
	if err != nil {
		c.failed = err
	}
	return err
}

// abandon removes what an import that failed had made.
func (c *converter) abandon() {
	for _, p := range c.images {
		if p.w != nil {
			p.w.Close()
		}
	}
	if c.founder != nil && c.founder.w != nil {
		os.RemoveAll(c.dir)
	}
}

// baseLog is the log every experiment of the import starts from.
func (c *converter) baseLog() experiment.Log {
	f := c.f
	l := experiment.Log{CollectorVersion: version.Version + " (er import of perf " + f.PerfVersion + ")", Host: f.Hostname,
		Arch: f.Arch, CPUs: int(f.NrCPUsOnline), PageSize: os.Getpagesize(), WordSize: 64,
		MemoryBytes: int64(min(f.TotalMemKB, 1<<40)) * 1024}
	if f.OSRelease != "" {
		l.OS = "Linux " + f.OSRelease
	}
	l.CPUs = min(max(l.CPUs, 0), 65536)
	return l
}

// setup fills the log's settings and counters from the file's events, once they are known.
func (c *converter) setup() {
	c.ready = true
	c.log = c.baseLog()
	var clock []string
	var counters, dropped []string
	ndropped := 0
	metrics := map[string]bool{}
	for _, a := range c.f.Attrs {
		if a.SampleType&perfabi.SampleCallchain != 0 && a.Flags&perfdata.FlagExcludeCCKern == 0 && a.Flags&perfdata.FlagExcludeKernel == 0 {
			c.kernel = true
		}
		rate := fmt.Sprintf("%d", a.SamplePeriod)
		if a.Freq() {
			rate = fmt.Sprintf("%d Hz", a.SamplePeriod)
		}
		if a.Clock() {
			clock = append(clock, a.Name+" every "+rate)
			if _, ok := c.log.Setting(experiment.SettingClockInterval); !ok {
				ns := a.SamplePeriod
				if a.Freq() && a.SamplePeriod > 0 {
					ns = 1e9 / a.SamplePeriod
				}
				c.log.Settings = append(c.log.Settings, experiment.Setting{Name: experiment.SettingClockProfiling, Value: "on"},
					experiment.Setting{Name: experiment.SettingClockInterval, Value: strconv.FormatUint(ns, 10)},
					experiment.Setting{Name: experiment.SettingClockSource, Value: "perf"})
			}
			continue
		}
		if a.Name == "dummy" || a.Name == "dummy:u" || a.Type == perfdata.TypeSoftware && a.Config == 9 {
			continue // perf's side-band event: no samples
		}
		if len(c.log.Counters) >= 256 {
			if ndropped++; len(dropped) < 3 {
				dropped = append(dropped, a.Name)
			}
			continue
		}
		name := a.Name
		metric := metricName(name)
		for metrics[metric] {
			metric += "_"
		}
		metrics[metric] = true
		interval := a.SamplePeriod
		if a.Freq() {
			interval = 0
		}
		c.counters[a] = uint8(len(c.log.Counters))
		c.log.Counters = append(c.log.Counters, experiment.Counter{Name: name, Metric: metric, Title: name, Type: a.Type,
			Config: a.Config, Config1: a.Config1, Config2: a.Config2, Interval: interval, Unit: "events",
			Backtrack: a.SampleType&perfabi.SampleAddr != 0 && a.Type != perfdata.TypeSoftware})
		counters = append(counters, name+","+rate)
	}
	if ndropped > 0 {
		names := fmt.Sprintf("%q", dropped)
		if ndropped > len(dropped) {
			names = fmt.Sprintf("%q and %d more", dropped, ndropped-len(dropped))
		}
		c.warn("%d events are not imported: an experiment holds at most 256 counters (%s)", ndropped, names)
	}
	if len(clock) == 0 {
		c.log.Settings = append(c.log.Settings, experiment.Setting{Name: experiment.SettingClockProfiling, Value: "off"})
	}
	if len(counters) > 0 {
		c.log.Settings = append(c.log.Settings, experiment.Setting{Name: experiment.SettingCounters, Value: strings.Join(counters, ",")})
	}
	c.log.KernelStacks = c.kernel
}

// metricName is a counter's metric name: its name with the characters er print's metric lists
// cannot hold made '_', and perf's modifiers (":u", ":ppp") dropped.
func metricName(name string) string {
	if i := strings.LastIndex(name, ":"); i > 0 && strings.Trim(name[i+1:], "ukhHGpPSDIWeb") == "" {
		name = name[:i]
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case ':', '/', ',', '=', ' ':
			return '_'
		}
		return r
	}, name)
}

// finish writes the end of every experiment: its end time, the warnings, the archives.
func (c *converter) finish(mtime int64) error {
	if c.founder == nil {
		c.founder = &image{pid: c.rootPid, comm: c.comms[c.rootPid], how: "imported from " + c.input}
		c.images = append(c.images, c.founder)
	}
	if _, err := c.writer(c.founder); err != nil {
		return err
	}
	end := c.rel(c.last)
	wall := max(mtime-end, 0)
	if ck := c.f.Clock; ck.Recorded && ck.WallNS > 0 && ck.WallNS <= maxTime && ck.ClockNS <= maxTime {
		if w := int64(ck.WallNS) - (int64(ck.ClockNS) - int64(c.start)); w >= 0 && w <= maxTime { // else CLOCK_DATA is damaged
			wall = w
		}
	}
	for why, n := range c.skipped {
		c.warn("%d samples were not imported: %s", n, why)
	}
	if c.lost > 0 {
		c.warn("perf lost %d records (its ring buffers were full): the profile is missing their samples", c.lost)
	}
	if c.lostSample > 0 {
		c.warn("the kernel could not take %d samples", c.lostSample)
	}
	if c.notInherit > 0 {
		c.warn("%d experiments of forked processes are written without the %d mappings they inherited: all the forked processes inherit more than er writes for a file of %d bytes (a million, and one for each byte); their samples in what they inherited are not named",
			c.notInherit, c.notMaps, c.rd.Offset())
	}
	if c.pastEnd > 0 {
		c.warn("MMAP records that map past the end of the user address space (%#x): %d, the first at offset %#x; their mappings are cut there (the file is damaged)",
			uint64(experiment.KernelBase), c.pastEnd, c.pastEndAt)
	}
	if text, bad := c.stacks.summary(); bad {
		c.warn("%s", text)
	} else if text != "" {
		c.founder.w.Event(experiment.Event{Time: end, Kind: "comment", Text: text})
	}
	c.warnings = append(c.warnings, c.notImported()...)
	c.warnings = append(c.warnings, c.writeArchives()...)
	var errs []error
	for _, p := range c.images {
		if p.w == nil {
			continue
		}
		w := p.w
		exited := p.exited
		if c.cur[p.pid] == p { // still running: its exit (or exec) unmapped its mappings otherwise
			w.ProcessExit(p.pid, end)
		}
		w.UpdateLog(func(l *experiment.Log) {
			l.StartTime, l.StartPerfNS, l.EndTime, l.Exited = wall, int64(c.start), end, exited
		})
		if p == c.founder {
			for _, text := range c.warnings {
				w.Event(experiment.Event{Time: end, Kind: "warning", Text: report.Clean(text)})
			}
		}
		if err := w.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return nil
}

// notImported lists what the file has that the experiment does not hold.
func (c *converter) notImported() []string {
	var out []string
	var union uint64
	for _, a := range c.f.Attrs {
		union |= a.SampleType
	}
	for _, x := range []struct {
		bit  uint64
		what string
	}{{perfabi.SampleBranchStack, "branch stacks (perf record -b)"}, {perfabi.SampleRaw, "raw tracepoint data"},
		{perfabi.SampleWeight | perfabi.SampleWeightStruct, "sample weights (perf mem)"},
		{perfabi.SampleRegsIntr, "interrupt registers"}, {perfabi.SampleAux, "AUX area data"}} {
		if union&x.bit != 0 {
			out = append(out, "not imported: "+x.what)
		}
	}
	return out
}

// sameMachine reports whether the file was recorded on this machine, running the same kernel:
// then the kernel's symbols and the vdso are this machine's.
func (c *converter) sameMachine() bool {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return false
	}
	host, _ := os.Hostname()
	return c.f.Hostname == host && c.f.OSRelease == unix.ByteSliceToString(uts.Release[:])
}
