package gprofng

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/experiment"
)

// TestReadOverview: the records of the samples fixture (testdata/README.md), as gprofng wrote
// them: getrusage's times and counts at each of its 4 sample points.
func TestReadOverview(t *testing.T) {
	file := filepath.Join(fixture(t, "samples"), overviewFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	recs, w, err := ReadOverview(file, b)
	if err != nil || w != "" || len(recs) != 4 {
		t.Fatalf("ReadOverview: %d records, warning %q, %v", len(recs), w, err)
	}
	want := []Usage{
		{Tstamp: 87005_275351643, Create: 87005_275351643, UTime: 8504000, STime: 8504000, MinFlt: 3203, MajFlt: 2, OutBlock: 56},
		{Tstamp: 87006_275954094, Create: 87005_275351643, RTime: 1000602451, UTime: 981407000, STime: 35906000, MinFlt: 3215, MajFlt: 4, OutBlock: 96, InvolCtxSw: 6},
		{Tstamp: 87007_283944026, Create: 87005_275351643, RTime: 2008592383, UTime: 1937507000, STime: 79577000, MinFlt: 3222, MajFlt: 4, OutBlock: 96, InvolCtxSw: 69},
		{Tstamp: 87008_285631873, Create: 87005_275351643, RTime: 3010280230, UTime: 2918121000, STime: 99674000, MinFlt: 3224, MajFlt: 4, OutBlock: 96, InvolCtxSw: 74},
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, recs[i], want[i])
		}
	}
}

// TestOpenOverview: Open gives each of log.xml's sample points its record's usage, numbered
// from 1, at the log's times, with gprofng's labels; the samples between the points use what
// gprofng display text -sample_detail shows (User CPU 0.973, 0.956, 0.981 s).
func TestOpenOverview(t *testing.T) {
	d := open(t, "samples")
	want := []experiment.OverviewSample{
		{Time: 49634, Sample: 1, UserNS: 8504000, SystemNS: 8504000, MinFlt: 3203, MajFlt: 2, Label: "collector_open_experiment"},
		{Time: 1000652085, Sample: 2, UserNS: 981407000, SystemNS: 35906000, MinFlt: 3215, MajFlt: 4, InvolCtxSw: 6, Label: "periodic"},
		{Time: 2008642017, Sample: 3, UserNS: 1937507000, SystemNS: 79577000, MinFlt: 3222, MajFlt: 4, InvolCtxSw: 69, Label: "periodic"},
		{Time: 3010329864, Sample: 4, UserNS: 2918121000, SystemNS: 99674000, MinFlt: 3224, MajFlt: 4, InvolCtxSw: 74, Label: "collector_close_experiment"},
	}
	if len(d.Overview) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(d.Overview), len(want), d.Overview)
	}
	for i, w := range want {
		w.Pid, w.MemoryUnknown = d.Log.Pid, true
		if d.Overview[i] != w {
			t.Errorf("point %d:\n got %+v\nwant %+v", i, d.Overview[i], w)
		}
	}
	if d.Log.EndTime != 3010329864 {
		t.Errorf("end %d, want the last point's time", d.Log.EndTime)
	}
	// log.xml's sample_period="1" and its cwarn 207, as gprofng display text -header shows them.
	period, warned := "", ""
	for _, st := range d.Log.Settings {
		if st.Name == "sample_period_ns" {
			period = st.Value
		}
	}
	for _, e := range d.Log.Events {
		if e.Kind == "warning" {
			warned = e.Text
		}
	}
	if period != "1000000000" || warned != "gprofng cwarn: Collection interval timer period was changed (1000 -> 0); profile data may be unreliable" {
		t.Errorf("sample period %q, warning %q", period, warned)
	}
	for _, w := range d.Warnings {
		if strings.Contains(w, overviewFile) {
			t.Errorf("warning %q", w)
		}
	}
}

// usageRecord builds a 64-bit overview record with the user time, the minor faults and the
// real time given.
func usageRecord(user, rtime int64, minflt uint64) []byte {
	b := make([]byte, usageSize)
	le := binary.LittleEndian
	le.PutUint64(b[8+16*3:], uint64(rtime/1e9))
	le.PutUint64(b[8+16*3+8:], uint64(rtime%1e9))
	le.PutUint64(b[8+16*4:], uint64(user/1e9))
	le.PutUint64(b[8+16*4+8:], uint64(user%1e9))
	le.PutUint64(b[8+20*16:], minflt)
	return b
}

func TestReadOverviewErrors(t *testing.T) {
	good := append(usageRecord(1_500_000_000, 0, 7), usageRecord(2_250_000_001, 1e9, 9)...)
	recs, w, err := ReadOverview("overview", good)
	if err != nil || w != "" || len(recs) != 2 || recs[1].UTime != 2_250_000_001 || recs[1].RTime != 1e9 || recs[1].MinFlt != 9 || recs[0].UTime != 1_500_000_000 {
		t.Fatalf("ReadOverview: %+v, %q, %v", recs, w, err)
	}
	recs, w, err = ReadOverview("overview", good[:usageSize+100])
	if err != nil || len(recs) != 1 || w != "overview: ends with 100 bytes of a 504-byte record, left out: the experiment was not finished" {
		t.Errorf("a cut record: %d records, %q, %v", len(recs), w, err)
	}
	badNS := append([]byte(nil), good...)
	binary.LittleEndian.PutUint64(badNS[usageSize+8+16*5+8:], 1e9) // record 1's stime: 1e9 ns
	badCount := append([]byte(nil), good...)
	binary.LittleEndian.PutUint64(badCount[8+20*16+8*9:], 1<<63) // record 0's ictx
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{badNS, "overview: offset 592: record 1: pr_stime 0 s 1000000000 ns: not a time"},
		{badCount, "overview: offset 400: record 0: pr_ictx 9223372036854775808: out of range"},
	} {
		if _, _, err := ReadOverview("overview", tc.b); err == nil || err.Error() != tc.want {
			t.Errorf("ReadOverview: %v, want %q", err, tc.want)
		}
	}
}

// TestReadOverviewPoints: the points of log.xml and the records of the overview file are paired
// by number; what has no partner is left out with a warning.
func TestReadOverviewPoints(t *testing.T) {
	dir := t.TempDir()
	write := func(b []byte) {
		if err := os.WriteFile(filepath.Join(dir, overviewFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := &Log{Pid: 42, WordSize: 64, Samples: []SamplePoint{{0, 10, "collector_open_experiment"}, {1, 1e9, "periodic"}, {2, 2e9, "collector_close_experiment"}}}
	write(append(usageRecord(1e6, 0, 1), usageRecord(5e8, 1e9, 3)...))
	ov, warns, err := readOverview(dir, l)
	if err != nil || len(ov) != 2 || ov[1] != (experiment.OverviewSample{Time: 1e9, Pid: 42, Sample: 2, UserNS: 5e8, MinFlt: 3, MemoryUnknown: true, Label: "periodic"}) {
		t.Fatalf("readOverview: %+v, %v", ov, err)
	}
	if strings.Join(warns, "|") != "overview: 1 of log.xml's 3 sample points have no record in it; they are left out" {
		t.Errorf("warnings %q", warns)
	}
	l.Samples = l.Samples[:1]
	if ov, warns, _ = readOverview(dir, l); len(ov) != 1 || strings.Join(warns, "|") != "overview: 1 of its 2 records have no sample point in log.xml; they are left out" {
		t.Errorf("a record too many: %+v, %q", ov, warns)
	}
	l.WordSize = 32
	if ov, warns, _ = readOverview(dir, l); len(ov) != 0 || strings.Join(warns, "|") != "overview: the records of a 32-bit process, which er does not read: the usage at the sample points is unknown" {
		t.Errorf("32 bits: %+v, %q", ov, warns)
	}
	write(usageRecord(1e6, 0, 1)[:10])
	l.WordSize = 64
	if ov, warns, _ = readOverview(dir, l); len(ov) != 0 || len(warns) != 2 || !strings.HasPrefix(warns[0], "overview: ends with 10 bytes") {
		t.Errorf("a cut file: %+v, %q", ov, warns)
	}
	os.Remove(filepath.Join(dir, overviewFile))
	if ov, warns, err = readOverview(dir, l); err != nil || len(ov) != 0 || strings.Join(warns, "|") != "overview: missing; the usage at the 1 sample points is unknown" {
		t.Errorf("no file: %+v, %q, %v", ov, warns, err)
	}
}

func FuzzReadOverview(f *testing.F) {
	f.Add(usageRecord(1e6, 0, 1))
	f.Add(append(usageRecord(1e6, 0, 1), 1, 2, 3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _, err := ReadOverview("overview", b)
		if err == nil && len(recs) != len(b)/usageSize {
			t.Errorf("%d records of %d bytes", len(recs), len(b))
		}
		for _, r := range recs {
			if r.UTime < 0 || r.MinFlt < 0 {
				t.Errorf("negative: %+v", r)
			}
		}
	})
}
