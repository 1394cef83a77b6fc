package gprofng

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseLog(t *testing.T) {
	file := filepath.Join(fixture(t, "heap"), logFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	l, truncated, err := ParseLog(file, b)
	if err != nil || truncated {
		t.Fatalf("ParseLog: %v, truncated %v", err, truncated)
	}
	if l.Version != "12.4" || l.Collector != "2.40.00" || l.Pid != 12875 || l.Ppid != 12829 || l.Cwd != "/tmp/gp" ||
		l.WordSize != 64 || l.Command != "./heap" || l.CPUs != 2 || l.ClockMHz != 2596 || l.PageSize != 4096 {
		t.Errorf("log %+v", l)
	}
	if l.Start != 85109_882965656 || l.StartWall != 1795863597 || l.Exit != 5003123 || l.Last != 5437309 {
		t.Errorf("start %d (wall %d), exit %d, last %d", l.Start, l.StartWall, l.Exit, l.Last)
	}
	if len(l.Samples) != 2 || l.Samples[0] != (SamplePoint{0, 47501, "collector_open_experiment"}) || l.Samples[1] != (SamplePoint{1, 5437309, "collector_close_experiment"}) {
		t.Errorf("sample points %+v", l.Samples)
	}
	h := l.Profile("heaptrace")
	if h == nil || h.File != "heaptrace" || len(h.Packets) != 1 || h.Packets[0].Kind != 5 {
		t.Fatalf("heaptrace profile %+v", h)
	}
	if f, ok := h.Packets[0].Field("HSIZE"); !ok || f.Offset != 56 || f.Type != "UINT64" {
		t.Errorf("HSIZE field %+v", f)
	}
	if p := l.Profile("profile"); p == nil || p.Attrs["ptimer"] != "10007" || len(p.Packets[0].Fields) != 7 {
		t.Errorf("clock profile %+v", p)
	}
}

// TestParseLogCut: a log cut in the middle of an element is read up to there.
func TestParseLogCut(t *testing.T) {
	l, truncated, err := ParseLog("log.xml", []byte(`<experiment version="12.4"><collector>2.40.00</collector></experiment><event kind="run" tstamp="12.5" time="7"/><profile name="heaptrace"><profdata fname="heaptrace"/><profpckt kind="5"><field name="TSTAMP" offset="32" ty`))
	if err != nil || !truncated {
		t.Fatalf("ParseLog: %v, truncated %v", err, truncated)
	}
	if l.Start != 12_500_000_000 || l.StartWall != 7 || len(l.Profiles) != 1 || l.Profiles[0].File != "heaptrace" {
		t.Errorf("log %+v", l)
	}
}

func TestParseLogErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<experiment version=\"12.4\"></experiment>\x00<x/>", "log.xml: offset 40: a NUL byte"},
		{"<collector>2.40</collector>", "no <experiment version=...>"},
		{`<experiment version="12.4"/><system pagesz="big"/>`, `attribute pagesz="big": not an integer`},
		{`<experiment version="12.4"/><event kind="run" tstamp="1.1234567890"/>`, `bad time "1.1234567890"`},
		{`<experiment version="12.4"/><event kind="sample" tstamp="1.5" id="-1" label="periodic"/>`, "sample id=-1: out of range"},
		{`<experiment version="12.4"/><event kind="sample" tstamp="1.5" id="x"/>`, `attribute id="x": not an integer`},
		{`<experiment version="12.4"/><field name="X" offset="1"/>`, "a <field> outside a <profpckt>"},
		{`<experiment version="12.4"/><a></b>`, "log.xml: offset 31: XML syntax error on line 1: element <a> closed by </b>"},
	} {
		_, _, err := ParseLog("log.xml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLog(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]int64{"0.000047501": 47501, "85109.882965656": 85109882965656, "3": 3e9, "1.5": 1.5e9} {
		if got, err := parseTime(in); err != nil || got != want {
			t.Errorf("parseTime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x.1", "1.-5", "-1.0"} {
		if _, err := parseTime(in); err == nil {
			t.Errorf("parseTime(%q): no error", in)
		}
	}
}

func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`<experiment version="12.4"><collector>2.40.00</collector></experiment><event kind="run" tstamp="12.5" time="7"/>`))
	f.Add([]byte(`<experiment version="12.4"/><profile name="heaptrace"><profdata fname="heaptrace"/><profpckt kind="5"><field name="HSIZE" offset="56" type="UINT64"/></profpckt></profile><event kind="exit" tstamp="0.5"/>`))
	f.Add([]byte("<experiment version=\"12.4\"/>\x00\x00\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, _, err := ParseLog("log.xml", b)
		if err == nil && l.Version == "" {
			t.Errorf("no error and no version")
		}
	})
}
