package experiment

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// xmlComment follows the XML declaration of log.xml and map.xml.
const xmlComment = "<!-- er experiment; the format is described in docs/experiment-format.md -->\n"

// qstr is a string stored in XML exactly: as itself when XML can hold it
// and it does not start with a double quote, otherwise Go-quoted in ASCII.
type qstr string

// QString is qstr for the other XML files of an experiment (the archive index): a string attribute
// or text stored exactly, as docs/experiment-format.md says ("Strings in XML").
type QString = qstr

// MarshalText implements encoding.TextMarshaler.
func (s qstr) MarshalText() ([]byte, error) {
	if xmlSafe(string(s)) && !strings.HasPrefix(string(s), `"`) {
		return []byte(s), nil
	}
	return []byte(strconv.QuoteToASCII(string(s))), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *qstr) UnmarshalText(b []byte) error {
	if !bytes.HasPrefix(b, []byte(`"`)) {
		*s = qstr(b)
		return nil
	}
	u, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("bad quoted string %.40q", b)
	}
	*s = qstr(u)
	return nil
}

// xmlSafe reports whether XML 1.0 can hold s as text.
func xmlSafe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20, r >= 0xd800 && r < 0xe000, r == 0xfffe, r == 0xffff:
			return false
		}
	}
	return true
}

// hex64 is a uint64 written in hexadecimal with a 0x prefix.
type hex64 uint64

// MarshalText implements encoding.TextMarshaler.
func (h hex64) MarshalText() ([]byte, error) {
	return []byte("0x" + strconv.FormatUint(uint64(h), 16)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *hex64) UnmarshalText(b []byte) error {
	s, ok := strings.CutPrefix(string(b), "0x")
	v, err := strconv.ParseUint(s, 16, 64)
	if !ok || err != nil {
		return fmt.Errorf("bad address %.40q, want 0x and hex digits", b)
	}
	*h = hex64(v)
	return nil
}

type xmlLog struct {
	XMLName   xml.Name     `xml:"experiment"`
	Version   string       `xml:"version,attr"`
	Collector xmlCollector `xml:"collector"`
	System    xmlSystem    `xml:"system"`
	Target    xmlTarget    `xml:"target"`
	Start     xmlStart     `xml:"start"`
	Settings  []xmlSetting `xml:"settings>setting"`
	Counters  []xmlCounter `xml:"counters>counter"`
	Data      xmlData      `xml:"data"`
	Events    []xmlEvent   `xml:"events>event"`
	Names     *xmlNames    `xml:"threadNames,omitempty"`
	End       xmlEnd       `xml:"end"`
}

func (x *xmlLog) namedThreads() []xmlName {
	if x.Names == nil {
		return nil
	}
	return x.Names.Threads
}

type xmlNames struct {
	Threads []xmlName `xml:"thread"`
}

// xmlName is a name a thread took (PR_SET_NAME, pthread_setname_np).
type xmlName struct {
	Time int64  `xml:"time,attr"`
	Pid  uint32 `xml:"pid,attr"`
	Tid  uint32 `xml:"tid,attr"`
	Name qstr   `xml:"name,attr"`
}

type xmlCollector struct {
	Version qstr `xml:"version,attr"`
}

type xmlSystem struct {
	Host        qstr  `xml:"host,attr"`
	OS          qstr  `xml:"os,attr"`
	Arch        qstr  `xml:"arch,attr"`
	CPUs        int   `xml:"cpus,attr"`
	PageSize    int   `xml:"pageSize,attr"`
	WordSize    int   `xml:"wordSize,attr"`
	ClockHz     int64 `xml:"clockHz,attr"`
	MemoryBytes int64 `xml:"memoryBytes,attr"`
}

type xmlTarget struct {
	Pid      uint32 `xml:"pid,attr"`
	Ppid     uint32 `xml:"ppid,attr,omitempty"`
	Lineage  qstr   `xml:"lineage,attr,omitempty"`
	Attached bool   `xml:"attached,attr,omitempty"`
	Cwd      qstr   `xml:"cwd,attr"`
	Args     []qstr `xml:"arg"`
}

type xmlStart struct {
	Time   int64 `xml:"time,attr"`
	PerfNS int64 `xml:"perfNS,attr"`
}

type xmlSetting struct {
	Name  qstr `xml:"name,attr"`
	Value qstr `xml:"value,attr"`
}

type xmlCounter struct {
	Name      qstr   `xml:"name,attr"`
	Metric    qstr   `xml:"metric,attr"`
	Title     qstr   `xml:"title,attr"`
	Type      uint32 `xml:"type,attr"`
	Config    hex64  `xml:"config,attr"`
	Config1   hex64  `xml:"config1,attr,omitempty"`
	Config2   hex64  `xml:"config2,attr,omitempty"`
	Interval  uint64 `xml:"interval,attr"`
	Unit      qstr   `xml:"unit,attr"`
	MemOp     qstr   `xml:"memop,attr,omitempty"`
	Backtrack bool   `xml:"backtrack,attr,omitempty"`
}

type xmlData struct {
	KernelStacks bool            `xml:"kernelStacks,attr"`
	Files        []xmlDescriptor `xml:"dataDescriptor"`
}

// xmlDescriptor describes the records of one binary file.
type xmlDescriptor struct {
	File       string     `xml:"file,attr"`
	Kind       string     `xml:"kind,attr"`
	Name       string     `xml:"name,attr,omitempty"` // an event table's schema name
	Version    string     `xml:"version,attr"`
	RecordSize uint32     `xml:"recordSize,attr"`
	Fields     []xmlField `xml:"field"`
}

type xmlField struct {
	Name   string `xml:"name,attr"`
	Type   string `xml:"type,attr"`
	Offset int    `xml:"offset,attr"`
	Desc   qstr   `xml:"description,attr"`
	Unit   qstr   `xml:"unit,attr,omitempty"` // an event table's column's unit
}

type xmlEvent struct {
	Time int64  `xml:"time,attr"`
	Kind qstr   `xml:"kind,attr"`
	Pid  uint32 `xml:"pid,attr"`
	Text qstr   `xml:",chardata"`
}

type xmlEnd struct {
	Time       int64            `xml:"time,attr"`
	Exited     bool             `xml:"exited,attr"`
	ExitStatus int              `xml:"exitStatus,attr"`
	ExitSignal int              `xml:"exitSignal,attr"`
	CountedCPU int64            `xml:"countedCPU,attr,omitempty"`
	Stopped    int64            `xml:"stopped,attr,omitempty"`
	Threads    []xmlThreadCount `xml:"thread"`
}

type xmlThreadCount struct {
	Tid      uint32 `xml:"tid,attr"`
	CPUNS    int64  `xml:"cpuNS,attr"`
	Reported bool   `xml:"reported,attr,omitempty"`
}

// descriptors lists the binary files and their record layouts, written into log.xml.
var descriptors = []xmlDescriptor{
	{File: ClockFile, Kind: kindClock.String(), Version: FormatVersion, RecordSize: clockRecordSize, Fields: []xmlField{
		{"time", "i64", 0, "ns since the start of the experiment (perf clock minus log start perfNS)", ""},
		{"period", "i64", 8, "ns of CPU time the sample stands for", ""},
		{"pid", "u32", 16, "process id", ""},
		{"tid", "u32", 20, "thread id", ""},
		{"cpu", "u32", 24, "CPU the sample was taken on", ""},
		{"stack", "u32", 28, "stack id: record number in the stacks file, from 1; 0 is the empty stack", ""},
		{"mode", "u8", 32, "0 unknown, 1 user, 2 kernel", ""},
		{"reserved", "u8[7]", 33, "zero", ""},
	}},
	{File: OffCPUFile, Kind: kindClock.String(), Version: FormatVersion, RecordSize: clockRecordSize, Fields: []xmlField{
		{"time", "i64", 0, "ns since the start of the experiment: the end of the interval (of the last, when merged)", ""},
		{"period", "i64", 8, "ns the thread spent in the state", ""},
		{"pid", "u32", 16, "process id", ""},
		{"tid", "u32", 20, "thread id", ""},
		{"cpu", "u32", 24, "CPU the thread left", ""},
		{"stack", "u32", 28, "stack id: record number in the stacks file, from 1; 0 is the empty stack", ""},
		{"mode", "u8", 32, "3 waiting for a CPU, 4 asleep, 5 asleep in a text page fault, 6 in a data page fault", ""},
		{"reserved", "u8[7]", 33, "zero", ""},
	}},
	{File: CountersFile, Kind: kindHWC.String(), Version: FormatVersion, RecordSize: hwcRecordSize, Fields: []xmlField{
		{"time", "i64", 0, "ns since the start of the experiment", ""},
		{"value", "i64", 8, "events the sample stands for: the counter's interval", ""},
		{"addr", "u64", 16, "data address of the event (counters given with +), 0 when unknown", ""},
		{"pid", "u32", 24, "process id", ""},
		{"tid", "u32", 28, "thread id", ""},
		{"cpu", "u32", 32, "CPU the sample was taken on", ""},
		{"stack", "u32", 36, "stack id: record number in the stacks file, from 1; 0 is the empty stack", ""},
		{"counter", "u8", 40, "the counter: its index in the log's counters", ""},
		{"mode", "u8", 41, "1 user, 2 kernel", ""},
		{"reserved", "u8[6]", 42, "zero", ""},
	}},
	{File: StacksFile, Kind: kindStacks.String(), Version: FormatVersion, RecordSize: 0, Fields: []xmlField{
		{"nframes", "u32", 0, "number of frames", ""},
		{"frames", "u64[nframes]", 4, "absolute instruction addresses, leaf first; kernel frames before user frames", ""},
	}},
	{File: OverviewFile, Kind: kindOverview.String(), Version: FormatVersion, RecordSize: 0, Fields: []xmlField{
		{"time", "i64", 0, "ns since the start of the experiment", ""},
		{"pid", "u32", 8, "process id", ""},
		{"sample", "u32", 12, "sample point number, from 1", ""},
		{"userNS", "i64", 16, "cumulative user CPU time, ns", ""},
		{"systemNS", "i64", 24, "cumulative system CPU time, ns", ""},
		{"minflt", "i64", 32, "minor page faults", ""},
		{"majflt", "i64", 40, "major page faults", ""},
		{"volCtxSw", "i64", 48, "voluntary context switches", ""},
		{"involCtxSw", "i64", 56, "involuntary context switches", ""},
		{"rssBytes", "i64", 64, "resident set size, bytes", ""},
		{"numThreads", "i32", 72, "number of threads", ""},
		{"labelLen", "u16", 76, "length of the label", ""},
		{"label", "u8[labelLen]", 78, "why the sample was taken (start, periodic, end, signal), UTF-8", ""},
	}},
}

// marshalXML renders v with the XML declaration and comment.
func marshalXML(v any) []byte {
	b, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only unsupported types fail, and ours are all supported.
		panic("experiment: " + err.Error())
	}
	out := make([]byte, 0, len(xml.Header)+len(xmlComment)+len(b)+1)
	out = append(out, xml.Header...)
	out = append(out, xmlComment...)
	out = append(out, b...)
	return append(out, '\n')
}

// encodeLog renders l as log.xml.
func encodeLog(l Log) []byte {
	x := xmlLog{
		Version:   l.FormatVersion,
		Collector: xmlCollector{qstr(l.CollectorVersion)},
		System: xmlSystem{
			Host: qstr(l.Host), OS: qstr(l.OS), Arch: qstr(l.Arch),
			CPUs: l.CPUs, PageSize: l.PageSize, WordSize: l.WordSize,
			ClockHz: l.ClockHz, MemoryBytes: l.MemoryBytes,
		},
		Target: xmlTarget{Pid: l.Pid, Ppid: l.Ppid, Lineage: qstr(l.Lineage), Attached: l.Attached, Cwd: qstr(l.Cwd)},
		Start:  xmlStart{Time: l.StartTime, PerfNS: l.StartPerfNS},
		Data:   xmlData{KernelStacks: l.KernelStacks, Files: slices.Clip(descriptors)},
		End:    xmlEnd{Time: l.EndTime, Exited: l.Exited, ExitStatus: l.ExitStatus, ExitSignal: l.ExitSignal, CountedCPU: l.CountedCPUNS, Stopped: l.StopTime, Threads: threadCounts(l.ThreadCPU)},
	}
	if x.Version == "" {
		x.Version = FormatVersion
	}
	for _, t := range l.Tables {
		x.Data.Files = append(x.Data.Files, tableDescriptor(t))
	}
	for _, a := range l.Command {
		x.Target.Args = append(x.Target.Args, qstr(a))
	}
	for _, s := range l.Settings {
		x.Settings = append(x.Settings, xmlSetting{qstr(string(s.Name)), qstr(s.Value)})
	}
	for _, c := range l.Counters {
		x.Counters = append(x.Counters, xmlCounter{Name: qstr(c.Name), Metric: qstr(c.Metric), Title: qstr(c.Title), Type: c.Type,
			Config: hex64(c.Config), Config1: hex64(c.Config1), Config2: hex64(c.Config2), Interval: c.Interval,
			Unit: qstr(c.Unit), MemOp: qstr(c.MemOp), Backtrack: c.Backtrack})
	}
	for _, e := range l.Events {
		x.Events = append(x.Events, xmlEvent{Time: e.Time, Kind: qstr(e.Kind), Pid: e.Pid, Text: qstr(e.Text)})
	}
	for _, n := range l.ThreadNames {
		if x.Names == nil {
			x.Names = &xmlNames{}
		}
		x.Names.Threads = append(x.Names.Threads, xmlName{Time: n.Time, Pid: n.Pid, Tid: n.Tid, Name: qstr(n.Name)})
	}
	return marshalXML(&x)
}

// unmarshalXML decodes b into v, turning errors into a *FormatError with the line and offset. The
// root element must be the only one: after it, only comments, processing instructions and blanks.
func unmarshalXML(name string, b []byte, v any, hint string) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	fail := func(off int64, err error) error {
		line := 1 + bytes.Count(b[:min(int(off), len(b))], []byte("\n"))
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			line = se.Line
		}
		msg := strings.TrimPrefix(err.Error(), "xml: ")
		if se != nil {
			msg = se.Msg
		}
		if errors.Is(err, io.EOF) {
			msg = "no XML element"
		}
		return formatErrorf(name, off, hint, "line %d: %s", line, msg)
	}
	if err := d.Decode(v); err != nil {
		return fail(d.InputOffset(), err)
	}
	for {
		off := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fail(off, err)
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if text := bytes.TrimLeft(t, " \t\r\n"); len(text) > 0 {
				return fail(off+int64(len(t)-len(text)), fmt.Errorf("text %.40q after the root element", bytes.TrimRight(text, " \t\r\n")))
			}
		case xml.StartElement:
			return fail(off, fmt.Errorf("a second root element <%s>: an XML file has one root element", t.Name.Local))
		default:
			return fail(off, errors.New("a <!...> directive after the root element"))
		}
	}
}

// checkVersion checks the version attribute of the root element of an XML file.
func checkVersion(name, v, hint string) error {
	major, _, _ := strings.Cut(v, ".")
	if v == "" {
		return formatErrorf(name, -1, hint, "no format version in the root element")
	}
	if major != strconv.Itoa(formatMajor) {
		return formatErrorf(name, -1, hintVersion, "format version %q; this reader reads %d.x", v, formatMajor)
	}
	return nil
}

// maxCounters is the most counters a log lists: a sample names its counter in a byte.
const maxCounters = 256

const (
	hintLog = "repair the XML by hand, or delete log.xml to read the data without the experiment's settings and events"
	hintMap = "repair the XML by hand, or delete map.xml to read the data without load objects (no function names)"
)

// decodeLog parses log.xml. It also returns the data files the log describes.
func decodeLog(name string, b []byte) (Log, []string, error) {
	var x xmlLog
	if err := unmarshalXML(name, b, &x, hintLog); err != nil {
		return Log{}, nil, err
	}
	if err := checkVersion(name, x.Version, hintLog); err != nil {
		return Log{}, nil, err
	}
	l := Log{
		FormatVersion:    x.Version,
		CollectorVersion: string(x.Collector.Version),
		Host:             string(x.System.Host),
		OS:               string(x.System.OS),
		Arch:             string(x.System.Arch),
		CPUs:             x.System.CPUs,
		PageSize:         x.System.PageSize,
		WordSize:         x.System.WordSize,
		ClockHz:          x.System.ClockHz,
		MemoryBytes:      x.System.MemoryBytes,
		Cwd:              string(x.Target.Cwd),
		Pid:              x.Target.Pid,
		Ppid:             x.Target.Ppid,
		Lineage:          string(x.Target.Lineage),
		Attached:         x.Target.Attached,
		StartTime:        x.Start.Time,
		StartPerfNS:      x.Start.PerfNS,
		EndTime:          x.End.Time,
		StopTime:         x.End.Stopped,
		ExitStatus:       x.End.ExitStatus,
		ExitSignal:       x.End.ExitSignal,
		Exited:           x.End.Exited,
		CountedCPUNS:     x.End.CountedCPU,
		ThreadCPU:        readThreadCounts(x.End.Threads),
		KernelStacks:     x.Data.KernelStacks,
	}
	for _, a := range x.Target.Args {
		l.Command = append(l.Command, string(a))
	}
	for _, s := range x.Settings {
		l.Settings = append(l.Settings, Setting{SettingKey(s.Name), string(s.Value)})
	}
	for _, e := range x.Events {
		l.Events = append(l.Events, Event{Time: e.Time, Kind: string(e.Kind), Pid: e.Pid, Text: string(e.Text)})
	}
	for _, n := range x.namedThreads() {
		l.ThreadNames = append(l.ThreadNames, ThreadName{Time: n.Time, Pid: n.Pid, Tid: n.Tid, Name: string(n.Name)})
	}
	if len(x.Counters) > maxCounters {
		return Log{}, nil, formatErrorf(name, -1, hintLog, "%d counters; a sample names its counter in a byte: at most %d", len(x.Counters), maxCounters)
	}
	metrics := map[string]bool{}
	for _, c := range x.Counters {
		if c.Name == "" || c.Metric == "" {
			return Log{}, nil, formatErrorf(name, -1, hintLog, "a counter without a name or a metric name")
		}
		if metrics[string(c.Metric)] {
			return Log{}, nil, formatErrorf(name, -1, hintLog, "two counters with the metric name %q", c.Metric)
		}
		metrics[string(c.Metric)] = true
		l.Counters = append(l.Counters, Counter{Name: string(c.Name), Metric: string(c.Metric), Title: string(c.Title), Type: c.Type,
			Config: uint64(c.Config), Config1: uint64(c.Config1), Config2: uint64(c.Config2), Interval: c.Interval,
			Unit: string(c.Unit), MemOp: string(c.MemOp), Backtrack: c.Backtrack})
	}
	var files []string
	for _, d := range x.Data.Files {
		files = append(files, d.File)
		if d.Kind == kindTable.String() {
			s, err := tableSchema(name, d)
			if err != nil {
				return Log{}, nil, err
			}
			l.Tables = append(l.Tables, s)
		}
	}
	if err := checkTables(name, l.Tables); err != nil {
		return Log{}, nil, err
	}
	if err := checkLog(name, &l); err != nil {
		return Log{}, nil, err
	}
	return l, files, nil
}

// Ranges of the numbers of log.xml that er print sums or compares (docs/experiment-format.md,
// "Ranges"): times and CPU times are ns from 0 to 2^62 (146 years), CPUs at most 65536.
const (
	maxLogNS   = 1 << 62
	maxLogCPUs = 1 << 16
)

// checkLog checks the numbers of l against their ranges: one outside is damage. (er print uses the
// CPU counts only when they agree with the samples: internal/analysis, countedPeriods.)
func checkLog(name string, l *Log) error {
	bad := func(format string, args ...any) error {
		return formatErrorf(name, -1, hintLog, format, args...)
	}
	ns := func(what string, v int64) error {
		if v < 0 || v > maxLogNS {
			return bad("%s %d ns: want 0 to %d ns", what, v, int64(maxLogNS))
		}
		return nil
	}
	if l.CPUs < 0 || l.CPUs > maxLogCPUs {
		return bad("system cpus %d: want 0 to %d", l.CPUs, maxLogCPUs)
	}
	for _, c := range []struct {
		what string
		v    int64
	}{{"start time", l.StartTime}, {"start perfNS", l.StartPerfNS}, {"end time", l.EndTime}, {"end countedCPU", l.CountedCPUNS}} {
		if err := ns(c.what, c.v); err != nil {
			return err
		}
	}
	for i, e := range l.Events {
		if err := ns(fmt.Sprintf("event %d: time", i+1), e.Time); err != nil {
			return err
		}
	}
	for _, n := range l.ThreadNames {
		if err := ns(fmt.Sprintf("thread %d's name %q: time", n.Tid, n.Name), n.Time); err != nil {
			return err
		}
	}
	for _, t := range l.ThreadCPU {
		if err := ns(fmt.Sprintf("thread %d: cpuNS", t.Tid), t.CPUNS); err != nil {
			return err
		}
	}
	return nil
}

type xmlMap struct {
	XMLName  xml.Name     `xml:"map"`
	Version  string       `xml:"version,attr"`
	Mappings []xmlMapping `xml:"mapping"`
}

type xmlMapping struct {
	Pid     uint32 `xml:"pid,attr"`
	Start   hex64  `xml:"start,attr"`
	End     hex64  `xml:"end,attr"`
	Offset  hex64  `xml:"offset,attr"`
	Load    int64  `xml:"load,attr"`
	Unload  int64  `xml:"unload,attr"`
	BuildID qstr   `xml:"buildID,attr,omitempty"`
	Path    qstr   `xml:"path,attr"`
	// A symbolic mapping's method (Mapping.Func, Source, Lines).
	Func   qstr   `xml:"func,attr,omitempty"`
	Source qstr   `xml:"source,attr,omitempty"`
	Lines  string `xml:"lines,attr,omitempty"`
}

// encodeLines writes a symbolic mapping's lines as "pos:line pos:line ...".
func encodeLines(ls []PosLine) string {
	var b []byte
	for i, l := range ls {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendUint(b, uint64(l.Pos), 10)
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(l.Line), 10)
	}
	return string(b)
}

// decodeLines reads encodeLines' text; positions must ascend.
func decodeLines(s string) ([]PosLine, error) {
	var out []PosLine
	for _, f := range strings.Fields(s) {
		p, l, ok := strings.Cut(f, ":")
		pos, err1 := strconv.ParseUint(p, 10, 16)
		line, err2 := strconv.ParseUint(l, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q is not pos:line (a position 0-65535, a line 0-4294967295)", f)
		}
		if len(out) > 0 && uint16(pos) <= out[len(out)-1].Pos {
			return nil, fmt.Errorf("position %d does not follow %d: positions must ascend", pos, out[len(out)-1].Pos)
		}
		out = append(out, PosLine{Pos: uint16(pos), Line: uint32(line)})
	}
	return out, nil
}

// encodeMap renders the mappings as map.xml.
func encodeMap(ms []Mapping) []byte {
	x := xmlMap{Version: FormatVersion, Mappings: make([]xmlMapping, len(ms))}
	for i, m := range ms {
		x.Mappings[i] = xmlMapping{
			Pid: m.Pid, Start: hex64(m.Start), End: hex64(m.End), Offset: hex64(m.Offset),
			Load: m.LoadTime, Unload: m.UnloadTime, BuildID: qstr(m.BuildID), Path: qstr(m.Path),
			Func: qstr(m.Func), Source: qstr(m.Source), Lines: encodeLines(m.Lines),
		}
	}
	return marshalXML(&x)
}

// decodeMap parses map.xml.
func decodeMap(name string, b []byte) ([]Mapping, error) {
	var x xmlMap
	if err := unmarshalXML(name, b, &x, hintMap); err != nil {
		return nil, err
	}
	if err := checkVersion(name, x.Version, hintMap); err != nil {
		return nil, err
	}
	var ms []Mapping
	for i, m := range x.Mappings {
		if m.Start > m.End {
			return nil, formatErrorf(name, -1, hintMap, "mapping %d (%s): start %#x is above end %#x", i+1, m.Path, uint64(m.Start), uint64(m.End))
		}
		lines, err := decodeLines(m.Lines)
		if err != nil {
			return nil, formatErrorf(name, -1, hintMap, "mapping %d (%s): lines: %v", i+1, m.Path, err)
		}
		switch {
		case m.Func == "":
		case string(m.Path) == DynamicPath || string(m.Path) == JavaCodePath || string(m.Path) == JavaStubPath: // a dynamic function: user-space code
			if uint64(m.End) > SymbolicBase {
				return nil, formatErrorf(name, -1, hintMap, "mapping %d (%s): a dynamic function (func %q) must be below %#x, not at [%#x, %#x)", i+1, m.Path, string(m.Func), SymbolicBase, uint64(m.Start), uint64(m.End))
			}
		case !(IsSymbolic(uint64(m.Start)) && IsSymbolic(uint64(m.End)-1)):
			return nil, formatErrorf(name, -1, hintMap, "mapping %d (%s): a method (func %q) must be in the symbolic range [%#x, %#x), not at %#x", i+1, m.Path, string(m.Func), SymbolicBase, uint64(KernelBase), uint64(m.Start))
		}
		ms = append(ms, Mapping{
			Pid: m.Pid, Start: uint64(m.Start), End: uint64(m.End), Offset: uint64(m.Offset),
			Path: string(m.Path), BuildID: string(m.BuildID), LoadTime: m.Load, UnloadTime: m.Unload,
			Func: string(m.Func), Source: string(m.Source), Lines: lines,
		})
	}
	return ms, nil
}

func threadCounts(ts []ThreadCount) []xmlThreadCount {
	var out []xmlThreadCount
	for _, t := range ts {
		out = append(out, xmlThreadCount{Tid: t.Tid, CPUNS: t.CPUNS, Reported: t.Reported})
	}
	return out
}

func readThreadCounts(xs []xmlThreadCount) []ThreadCount {
	var out []ThreadCount
	for _, x := range xs {
		out = append(out, ThreadCount{Tid: x.Tid, CPUNS: x.CPUNS, Reported: x.Reported})
	}
	return out
}
