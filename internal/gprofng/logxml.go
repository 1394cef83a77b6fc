package gprofng

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Log is what a gprofng log.xml says: the system, the process, the data files with the layouts of
// their packets, the settings and the events.
type Log struct {
	Version   string // the experiment's version, "12.4"
	Collector string // "2.40.00"
	Host, OS  string
	Arch      string
	PageSize  int
	NPages    int64 // physical memory, in pages
	CPUs      int
	ClockMHz  int // of the last CPU listed
	Pid, Ppid uint32
	Cwd       string
	WordSize  int    // 32 or 64
	Command   string // the target's command line, its words joined by blanks
	// Start is the high-resolution time (ns) of the start of the run, to which packets' TSTAMPs
	// are relative; StartWall the wall clock then, in Unix seconds.
	Start, StartWall int64
	// Exit is the time of the process's exit (ns since Start); -1 when the log has none.
	Exit int64
	// Last is the time of the last sample point or exit (ns since Start).
	Last int64
	// Samples are the sample points, in the log's order; the overview file holds their usage.
	Samples  []SamplePoint
	Profiles []Profile
	Settings []Setting
	Events   []Event
}

// Profile is one <profile> element: a kind of data ("profile" for clock profiling, "heaptrace",
// "synctrace", "iotrace", "hwcounter", "jprofile", "omptrace", ...), its attributes, its data
// file and the layouts of its packets.
type Profile struct {
	Name    string
	Attrs   map[string]string
	File    string // the data file (profdata fname), "" when none
	Packets []PacketDesc
}

// PacketDesc is a <profpckt>: the layout of the packets of one kind.
type PacketDesc struct {
	Kind   int
	Title  string
	Fields []Field
}

// Field is one field of a packet: its name (TSTAMP, FRINFO, HSIZE, ...), byte offset and type
// (INT32, UINT32, INT64, UINT64, STRING: a NUL-terminated string to the end of the packet).
type Field struct {
	Name   string
	Offset int
	Type   string
}

// SamplePoint is an <event kind="sample">: a sample point's number (0 for the first), time (ns
// since Start) and label ("collector_open_experiment", "periodic", "collector_close_experiment",
// or the name given to a signal's or the program's sample).
type SamplePoint struct {
	ID    int
	Time  int64
	Label string
}

// Setting is one <setting> element's attribute.
type Setting struct{ Name, Value string }

// Event is an event of the log other than the run, samples and exit: a collector warning or
// error ("cwarn", "cerror"), a comment, a descendant's start.
type Event struct {
	Time int64 // ns since Start
	Kind string
	Text string
}

// Field returns the field named name of the packet layout, and whether it has one.
func (p *PacketDesc) Field(name string) (Field, bool) {
	for _, f := range p.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Profile returns the profile named name, or nil.
func (l *Log) Profile(name string) *Profile {
	for i := range l.Profiles {
		if l.Profiles[i].Name == name {
			return &l.Profiles[i]
		}
	}
	return nil
}

// maxXMLSize bounds log.xml and map.xml: gprofng writes them in 64 KiB steps, and a text file of
// more than this was not written by it.
const maxXMLSize = 256 << 20

// element is an XML element with its attributes and text, and the names of the elements it is in.
type element struct {
	name    string
	attrs   map[string]string
	text    string
	parents []string
	end     bool // its end tag was read (fn is called at the start and at the end)
}

// scanXML reads the elements of a gprofng XML file: a sequence of elements (not one root; log.xml
// closes <experiment> at once and goes on), padded with NUL bytes up to the size the collector
// grew it to (and a last newline). fn is called at each start tag (text empty) and each end tag (with the element's
// text). An XML file that ends in the middle (an experiment still being written, or cut) ends the
// scan with truncated true; other errors name the file and the byte offset.
func scanXML(file string, b []byte, fn func(e *element) error) (truncated bool, err error) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		if bytes.IndexFunc(b[i:], func(r rune) bool { return r != 0 && r != '\n' && r != ' ' }) >= 0 {
			return false, fmt.Errorf("%s: offset %d: a NUL byte before the end of the text: not a gprofng XML file, or damaged", file, i)
		}
		b = b[:i]
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var stack []*element
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			return len(stack) > 0, nil
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) && strings.Contains(se.Msg, "unexpected EOF") {
				return true, nil
			}
			return false, fmt.Errorf("%s: offset %d: %v", file, off, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := &element{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			for _, p := range stack {
				e.parents = append(e.parents, p.name)
			}
			stack = append(stack, e)
			if err := fn(e); err != nil {
				return false, fmt.Errorf("%s: offset %d: %v", file, off, err)
			}
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		case xml.EndElement:
			e := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			e.text = strings.TrimSpace(e.text)
			e.end = true
			if err := fn(e); err != nil {
				return false, fmt.Errorf("%s: offset %d: %v", file, off, err)
			}
		}
	}
}

// parseTime reads a gprofng time, "SECONDS.NANOSECONDS" (the fraction has 9 digits), as ns.
func parseTime(s string) (int64, error) {
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n < 0 || n > 1<<32 {
		return 0, fmt.Errorf("bad time %q", s)
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			return 0, fmt.Errorf("bad time %q", s)
		}
		f, err := strconv.ParseInt(frac, 10, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("bad time %q", s)
		}
		for range 9 - len(frac) {
			f *= 10
		}
		ns = f
	}
	return n*1e9 + ns, nil
}

// atoi reads an attribute's integer (decimal, or hex with 0x), 0 when absent.
func atoi(attrs map[string]string, name string) (int64, error) {
	s, ok := attrs[name]
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s=%q: not an integer", name, s)
	}
	return v, nil
}

// ParseLog reads a gprofng log.xml (file names it in errors). A log that ends in the middle is
// read up to there; truncated says so.
func ParseLog(file string, b []byte) (l *Log, truncated bool, err error) {
	l = &Log{Exit: -1}
	var prof *Profile
	var pckt *PacketDesc
	truncated, err = scanXML(file, b, func(e *element) error {
		if e.end {
			switch e.name {
			case "collector":
				l.Collector = e.text
			case "process":
				if e.text != "" {
					l.Command = e.text
				}
			case "event":
				switch k := e.attrs["kind"]; k {
				case "cwarn", "cerror", "comment", "desc_start", "desc_started", "exec_start", "exec_error", "pause", "resume":
					t, _ := relTime(e.attrs)
					text := e.text
					if text == "" {
						text = e.attrs["msg"]
					}
					if k == "cwarn" && e.attrs["id"] == "207" { // as gprofng's display words it
						text = "Collection interval timer period was changed (" + text + "); profile data may be unreliable"
					}
					l.Events = append(l.Events, Event{Time: t, Kind: k, Text: text})
				}
			case "profile":
				prof = nil
			case "profpckt":
				pckt = nil
			}
			return nil
		}
		switch e.name {
		case "experiment":
			l.Version = e.attrs["version"]
		case "system":
			l.Host, l.OS, l.Arch = e.attrs["hostname"], e.attrs["os"], e.attrs["arch"]
			ps, err := atoi(e.attrs, "pagesz")
			if err != nil {
				return err
			}
			np, err := atoi(e.attrs, "npages")
			if err != nil {
				return err
			}
			l.PageSize, l.NPages = int(ps), np
		case "cpu":
			l.CPUs++
			clk, err := atoi(e.attrs, "clk")
			if err != nil {
				return err
			}
			l.ClockMHz = int(clk)
		case "process":
			for _, a := range []struct {
				name string
				to   *uint32
			}{{"pid", &l.Pid}, {"ppid", &l.Ppid}} {
				if _, ok := e.attrs[a.name]; ok {
					v, err := atoi(e.attrs, a.name)
					if err != nil {
						return err
					}
					if v < 0 || v > 1<<31 {
						return fmt.Errorf("process %s=%d: out of range", a.name, v)
					}
					*a.to = uint32(v)
				}
			}
			if c, ok := e.attrs["cwd"]; ok {
				l.Cwd = c
			}
			if _, ok := e.attrs["wsize"]; ok {
				w, err := atoi(e.attrs, "wsize")
				if err != nil {
					return err
				}
				l.WordSize = int(w)
			}
		case "setting":
			for k, v := range e.attrs {
				l.Settings = append(l.Settings, Setting{k, v})
			}
		case "event":
			return l.event(e.attrs)
		case "profile":
			l.Profiles = append(l.Profiles, Profile{Name: e.attrs["name"], Attrs: e.attrs})
			prof = &l.Profiles[len(l.Profiles)-1]
		case "profdata":
			if prof != nil {
				prof.File = e.attrs["fname"]
			}
		case "profpckt":
			if prof == nil {
				return errors.New("a <profpckt> outside a <profile>")
			}
			k, err := atoi(e.attrs, "kind")
			if err != nil {
				return err
			}
			prof.Packets = append(prof.Packets, PacketDesc{Kind: int(k), Title: e.attrs["uname"]})
			pckt = &prof.Packets[len(prof.Packets)-1]
		case "field":
			if pckt == nil {
				return errors.New("a <field> outside a <profpckt>")
			}
			off, err := atoi(e.attrs, "offset")
			if err != nil {
				return err
			}
			if off < 0 || off > 1<<16 {
				return fmt.Errorf("field %s: offset %d out of range", e.attrs["name"], off)
			}
			pckt.Fields = append(pckt.Fields, Field{Name: e.attrs["name"], Offset: int(off), Type: e.attrs["type"]})
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if l.Version == "" {
		return nil, false, fmt.Errorf("%s: no <experiment version=...>: not a gprofng log", file)
	}
	return l, truncated, nil
}

// relTime reads an event's tstamp (ns since the start).
func relTime(attrs map[string]string) (int64, error) {
	s, ok := attrs["tstamp"]
	if !ok {
		return 0, nil
	}
	return parseTime(s)
}

// event reads the start of an <event>: the run (the start), the samples and the exit.
func (l *Log) event(attrs map[string]string) error {
	t, err := relTime(attrs)
	if err != nil {
		return err
	}
	switch attrs["kind"] {
	case "run":
		if l.Start == 0 {
			l.Start = t // the run's tstamp is absolute
			w, err := atoi(attrs, "time")
			if err != nil {
				return err
			}
			l.StartWall = w
		}
	case "sample":
		l.Last = max(l.Last, t)
		id, err := atoi(attrs, "id")
		if err != nil {
			return err
		}
		if id < 0 || id > 1<<31 {
			return fmt.Errorf("sample id=%d: out of range", id)
		}
		l.Samples = append(l.Samples, SamplePoint{ID: int(id), Time: t, Label: attrs["label"]})
	case "exit":
		l.Exit = t
		l.Last = max(l.Last, t)
	}
	return nil
}
