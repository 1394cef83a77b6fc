package experiment

import (
	"bytes"
	"er/internal/events"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is intended):\n%s", name, got)
	}
}

func testLog() Log {
	return Log{
		FormatVersion:    FormatVersion,
		CollectorVersion: "er 0.1",
		Host:             "host1",
		OS:               "Linux 6.1.0-13-amd64",
		Arch:             "x86_64",
		CPUs:             2,
		PageSize:         4096,
		WordSize:         64,
		ClockHz:          100,
		MemoryBytes:      8 << 30,
		Command:          []string{"./a.out", "two words", "\"quoted\"", "bad\xffbyte", "tab\tnl\ncr\r<&>"},
		Cwd:              "/home/u",
		Pid:              4242,
		StartTime:        1700000000123456789,
		StartPerfNS:      987654321,
		EndTime:          2500000000,
		ExitStatus:       139,
		ExitSignal:       11,
		CountedCPUNS:     2480000000,
		Exited:           true,
		KernelStacks:     true,
		Settings:         []Setting{{"clock", "on"}, {"interval_ns", "10000000"}, {"size_limit_mb", ""}},
		Counters: []Counter{
			{Name: "cycles", Metric: "cycles", Title: "CPU Cycles", Type: 0, Config: 0, Interval: 9999991, Unit: "CPU-cycles"},
			{Name: "cpu/event=0xd1,umask=0x20/", Metric: "cpu_event_0xd1_umask_0x20", Title: "cpu event=0xd1,umask=0x20", Type: 4,
				Config: 0x20d1, Config1: 3, Config2: 1 << 63, Interval: 1000003, Unit: "events", MemOp: "load", Backtrack: true},
		},
		Events: []Event{
			{Time: 0, Kind: "start", Pid: 4242, Text: "target started"},
			{Time: 2500000000, Kind: "exit", Pid: 4242, Text: "killed by SIGSEGV\nsecond line"},
			{Time: 5, Kind: "warning", Text: "nul \x00 byte"},
		},
		ThreadNames: []ThreadName{{Time: 30576715, Pid: 4242, Tid: 4250, Name: "GC Thread#0"}, {Time: 40000000, Pid: 4242, Tid: 4250, Name: "renamed \"x\""}},
	}
}

func testMappings() []Mapping {
	return []Mapping{
		{Pid: 4242, Start: 0x400000, End: 0x401000, Offset: 0, Path: "/tmp/a.out", BuildID: "0123abcd", LoadTime: 0, UnloadTime: -1},
		{Pid: 4242, Start: 0x7f0000001000, End: 0x7f0000180000, Offset: 0x26000, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6", LoadTime: 0, UnloadTime: 2500000000},
		{Pid: 0, Start: KernelBase, End: ^uint64(0), Path: "[kernel]", LoadTime: 0, UnloadTime: -1},
		{Pid: 4242, Start: 0x1000, End: 0x2000, Path: "/odd path/\xfe\"x\"", LoadTime: 7, UnloadTime: -1},
		{Pid: 4242, Start: 0x7f2db8025d00, End: 0x7f2db80262d8, Path: DynamicPath, Func: "JS:*alpha /x/spin.js:20:15", UnloadTime: -1},
	}
}

func TestLogGolden(t *testing.T) {
	b := encodeLog(testLog())
	golden(t, "log.xml", b)
	if !bytes.Equal(b, encodeLog(testLog())) {
		t.Error("encodeLog is not deterministic")
	}
}

func TestMapGolden(t *testing.T) {
	golden(t, "map.xml", encodeMap(testMappings()))
}

func TestLogRoundTrip(t *testing.T) {
	want := testLog()
	got, files, err := decodeLog("log.xml", encodeLog(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if wantFiles := []string{ClockFile, OffCPUFile, CountersFile, StacksFile, OverviewFile}; !reflect.DeepEqual(files, wantFiles) {
		t.Errorf("described files %v, want %v", files, wantFiles)
	}
	// The zero Log gets the current version and reads back with nothing else set.
	got, _, err = decodeLog("log.xml", encodeLog(Log{}))
	if err != nil || !reflect.DeepEqual(got, Log{FormatVersion: FormatVersion}) {
		t.Errorf("zero log: %+v, %v", got, err)
	}
}

func TestLastThreadNames(t *testing.T) {
	l := testLog()
	names := l.LastThreadNames()
	if got := names[[2]uint32{4242, 4250}]; got != `renamed "x"` {
		t.Errorf("thread 4250's name %q, want its last", got)
	}
	if got := names[[2]uint32{4243, 4250}]; got != "" {
		t.Errorf("another process's thread: %q", got)
	}
}

func TestMapRoundTrip(t *testing.T) {
	want := testMappings()
	got, err := decodeMap("map.xml", encodeMap(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	got, err = decodeMap("map.xml", encodeMap(nil))
	if err != nil || got != nil {
		t.Errorf("empty map: %v, %v", got, err)
	}
}

func TestQstr(t *testing.T) {
	for _, s := range []string{"", "plain", `"starts with quote`, "ends with quote\"", "\xff", "\x00\x01", "\ufffe", "é ü 中", "a\tb\nc\rd", "\U0001F600"} {
		b, err := qstr(s).MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got qstr
		if err := got.UnmarshalText(b); err != nil || string(got) != s {
			t.Errorf("%q -> %q -> %q, %v", s, b, got, err)
		}
		if !xmlSafe(string(b)) {
			t.Errorf("%q stored as %q, which XML cannot hold", s, b)
		}
	}
	if b, _ := qstr("plain").MarshalText(); string(b) != "plain" {
		t.Errorf("plain string stored as %q", b)
	}
	var q qstr
	if err := q.UnmarshalText([]byte(`"unterminated`)); err == nil {
		t.Error("bad quoting accepted")
	}
}

func TestHex64(t *testing.T) {
	var h hex64
	for _, s := range []string{"400000", "0x", "0xg", "-0x1", "0x1_0"} {
		if err := h.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("%q accepted as %#x", s, uint64(h))
		}
	}
	if err := h.UnmarshalText([]byte("0xFFff800000000000")); err != nil || h != KernelBase {
		t.Errorf("got %#x, %v", uint64(h), err)
	}
}

func TestXMLErrors(t *testing.T) {
	logOK := string(encodeLog(testLog()))
	tests := []struct {
		name, file, text string
		off              int64
		msg              string
	}{
		{"syntax", LogFile, "<?xml version=\"1.0\"?>\n<experiment version=\"1.0\">\n<system cpus=\"2\"\n", 66, "line 4: unexpected EOF"},
		{"empty", LogFile, "", 0, "line 1: no XML element"},
		{"root", LogFile, `<map version="1.0"></map>`, 19, "line 1: expected element type <experiment> but have <map>"},
		{"int", LogFile, "<experiment version=\"1.0\">\n <system cpus=\"two\"></system></experiment>", 47, `line 2: strconv.ParseInt: parsing "two": invalid syntax`},
		{"version", LogFile, `<experiment version="2.1"></experiment>`, -1, `format version "2.1"; this reader reads 1.x`},
		{"no version", LogFile, `<experiment></experiment>`, -1, "no format version in the root element"},
		{"quote", LogFile, strings.Replace(logOK, `host="host1"`, `host="&#34;x"`, 1), 328, `line 5: bad quoted string "\"x"`},
		{"address", MapFile, "<map version=\"1.0\">\n<mapping start=\"12\"></mapping></map>", 40, `line 2: bad address "12", want 0x and hex digits`},
		{"range", MapFile, `<map version="1.0"><mapping start="0x2" end="0x1" path="/x"></mapping></map>`, -1, "mapping 1 (/x): start 0x2 is above end 0x1"},
		{"dynamic function", MapFile, `<map version="1.0"><mapping start="0x8000000000000000" end="0x8000000000000010" path="&lt;DYNAMIC_FUNCTIONS&gt;" func="f"></mapping></map>`, -1, `mapping 1 (<DYNAMIC_FUNCTIONS>): a dynamic function (func "f") must be below 0x8000000000000000, not at [0x8000000000000000, 0x8000000000000010)`},
		{"map version", MapFile, `<map version="x"></map>`, -1, `format version "x"; this reader reads 1.x`},
	}
	for _, tt := range tests {
		var err error
		if tt.file == LogFile {
			_, _, err = decodeLog(tt.file, []byte(tt.text))
		} else {
			_, err = decodeMap(tt.file, []byte(tt.text))
		}
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		fe := asFormatError(t, err)
		if fe.File != tt.file || fe.Offset != tt.off || fe.Msg != tt.msg || fe.Hint == "" {
			t.Errorf("%s: got %+v, want offset %d and %q", tt.name, fe, tt.off, tt.msg)
		}
	}
}

// Newer minor versions may add elements and attributes; this reader ignores them.
func TestLogUnknownElements(t *testing.T) {
	text := `<experiment version="1.3" future="x"><system cpus="4" gpu="yes"></system><hwc name="cycles"></hwc></experiment>`
	l, _, err := decodeLog(LogFile, []byte(text))
	if err != nil || l.CPUs != 4 || l.FormatVersion != "1.3" {
		t.Errorf("got %+v, %v", l, err)
	}
}

func FuzzReadLog(f *testing.F) {
	f.Add(encodeLog(testLog()))
	f.Add(encodeLog(Log{}))
	f.Add(encodeLog(Log{Tables: []*events.Schema{{Name: "toy", File: "toytrace", Columns: []events.Column{{Name: "units", Title: "\"q\x00", Unit: "<u>", Type: events.U32}}}}}))
	f.Add([]byte(`<experiment version="1.0"><target><arg>"\x00"</arg></target></experiment>`))
	f.Add([]byte(`<experiment version="1.0"></experiment><experiment version="1.0"></experiment>`))
	f.Add([]byte(`<experiment version="1.0"></experiment>junk<!-- c -->`))
	f.Add([]byte(`<experiment version="1.0"><end time="-1" countedCPU="9223372036854775807"><thread tid="1" cpuNS="-2"></thread></end></experiment>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, _, err := decodeLog(LogFile, b)
		if err != nil {
			asFormatError(t, err)
			return
		}
		l2, _, err := decodeLog(LogFile, encodeLog(l))
		if err != nil || !reflect.DeepEqual(l, l2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, l, l2)
		}
	})
}

func FuzzReadMap(f *testing.F) {
	f.Add(encodeMap(testMappings()))
	f.Add(encodeMap(nil))
	f.Add(append(encodeMap(nil), `<map version="1.0"></map>`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMap(MapFile, b)
		if err != nil {
			asFormatError(t, err)
			return
		}
		m2, err := decodeMap(MapFile, encodeMap(m))
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, m, m2)
		}
	})
}

// An XML file has one root element: a second one, or text after it, is damage (before, the
// decoder stopped after the first root element and ignored the rest). Comments, processing
// instructions and blanks may follow it.
func TestXMLOneRoot(t *testing.T) {
	logOK := `<experiment version="1.0"><system cpus="2"></system></experiment>`
	mapOK := `<map version="1.0"><mapping start="0x1" end="0x2" path="/x"></mapping></map>`
	tests := []struct {
		name, file, text string
		off              int64
		msg              string // "" when the text is read
	}{
		{"second log", LogFile, logOK + "\n" + `<experiment version="1.0"><system cpus="999"></system></experiment>`, 66,
			"line 2: a second root element <experiment>: an XML file has one root element"},
		{"log text after", LogFile, logOK + "\njunk", 66, `line 2: text "junk" after the root element`},
		{"log cdata after", LogFile, logOK + "<![CDATA[x]]>", 65, `line 1: text "x" after the root element`},
		{"second map", MapFile, mapOK + "<map version=\"1.0\"></map>", 76, "line 1: a second root element <map>: an XML file has one root element"},
		{"map end tag after", MapFile, mapOK + "</map>", 76, "line 1: unexpected end element </map>"},
		{"log comment after", LogFile, logOK + "\n<!-- c --><?pi x?>\n \t\r\n", 0, ""},
		{"map blanks after", MapFile, mapOK + "\n\n", 0, ""},
	}
	for _, tt := range tests {
		var err error
		if tt.file == LogFile {
			_, _, err = decodeLog(tt.file, []byte(tt.text))
		} else {
			_, err = decodeMap(tt.file, []byte(tt.text))
		}
		if tt.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		fe := asFormatError(t, err)
		if fe.File != tt.file || fe.Offset != tt.off || fe.Msg != tt.msg || fe.Hint == "" {
			t.Errorf("%s: got %+v, want offset %d and %q", tt.name, fe, tt.off, tt.msg)
		}
	}
}

// Numbers of log.xml that er print sums or multiplies must lie in the ranges that the format gives:
// a negative or absurd one is damage.
func TestLogNumberRanges(t *testing.T) {
	const head = `<experiment version="1.0"><system cpus="2"></system>`
	tests := []struct {
		name, text string
		msg        string // the error; "" when the log is read
	}{
		{"ok", head + `<end time="2000000000" countedCPU="3000000000"><thread tid="5" cpuNS="1900000000"></thread></end></experiment>`, ""},
		{"negative end", head + `<end time="-1"></end></experiment>`, "end time -1 ns: want 0 to 4611686018427387904 ns"},
		{"huge end", head + `<end time="9223372036854775807"></end></experiment>`, "end time 9223372036854775807 ns: want 0 to 4611686018427387904 ns"},
		{"negative counted", head + `<end time="1000" countedCPU="-5"></end></experiment>`, "end countedCPU -5 ns: want 0 to 4611686018427387904 ns"},
		{"negative thread", head + `<end time="1000"><thread tid="5" cpuNS="-5"></thread></end></experiment>`, "thread 5: cpuNS -5 ns: want 0 to 4611686018427387904 ns"},
		{"negative event", head + `<events><event time="-7" kind="x"></event></events></experiment>`, "event 1: time -7 ns: want 0 to 4611686018427387904 ns"},
		{"cpus", `<experiment version="1.0"><system cpus="-2"></system></experiment>`, "system cpus -2: want 0 to 65536"},
	}
	for _, tt := range tests {
		l, _, err := decodeLog(LogFile, []byte(tt.text))
		if tt.msg == "" {
			if err != nil || l.CountedCPUNS != 3000000000 || len(l.ThreadCPU) != 1 {
				t.Errorf("%s: %v, %+v", tt.name, err, l)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", tt.name, tt.msg)
			continue
		}
		if fe := asFormatError(t, err); fe.Msg != tt.msg || fe.Offset != -1 {
			t.Errorf("%s: got %+v, want %q", tt.name, fe, tt.msg)
		}
	}
}

// TestSymbolicMappingXML: a symbolic mapping keeps its method, source and lines through map.xml; bad
// lines, and a method outside the symbolic range, are errors that say which mapping and why.
func TestSymbolicMappingXML(t *testing.T) {
	want := []Mapping{SymbolicMapping(7, 1, 5, "[java]", "Foo.bar(I)V", "Foo.java", []PosLine{{0, 10}, {4, 12}}, 5, 900)}
	b := encodeMap(want)
	if !bytes.Contains(b, []byte(`func="Foo.bar(I)V" source="Foo.java" lines="0:10 4:12"`)) {
		t.Errorf("map.xml:\n%s", b)
	}
	got, err := decodeMap("map.xml", b)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
	for _, c := range []struct{ from, to, why string }{
		{`lines="0:10 4:12"`, `lines="4:10 0:12"`, "mapping 1 ([java]): lines: position 0 does not follow 4: positions must ascend"},
		{`lines="0:10 4:12"`, `lines="0-10"`, `mapping 1 ([java]): lines: "0-10" is not pos:line`},
		{`lines="0:10 4:12"`, `lines="70000:1"`, `"70000:1" is not pos:line`},
		{`start="0x8001000000050000"`, `start="0x400000"`, "a method (func \"Foo.bar(I)V\") must be in the symbolic range"},
	} {
		bad := bytes.Replace(b, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(bad, b) {
			t.Fatalf("%s is not in map.xml:\n%s", c.from, b)
		}
		if _, err := decodeMap("map.xml", bad); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want an error saying %q", c.to, err, c.why)
		}
	}
}
