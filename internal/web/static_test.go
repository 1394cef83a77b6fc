package web

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestWriteStatic checks that a static report holds the page and the answers of its views, the
// same as the server gives.
func TestWriteStatic(t *testing.T) {
	s, ts, _ := testServer(t)
	dir := filepath.Join(t.TempDir(), "report")
	if _, err := s.WriteStatic(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.html", "app.js", "style.css", "data.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "data.js"))
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	start := strings.Index(js, "window.ER_STATIC = ")
	if start < 0 {
		t.Fatalf("data.js: %.200s", js)
	}
	js = strings.TrimSuffix(strings.TrimSpace(js[start+len("window.ER_STATIC = "):]), ";")
	var data map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &data); err != nil {
		t.Fatal(err)
	}
	var fl table
	if err := json.Unmarshal(data["/api/functions"], &fl); err != nil {
		t.Fatal(err)
	}
	var live table
	get(t, ts, "/api/functions", 200, &live)
	if len(fl.Rows) != len(live.Rows) || fl.Rows[0].Cells[0].V != live.Rows[0].Cells[0].V {
		t.Errorf("static function list %d rows (total %d), live %d", len(fl.Rows), fl.Rows[0].Cells[0].V, len(live.Rows))
	}
	work := findRow(t, fl.Rows, "work")
	for _, key := range []string{"/api/overview", "/api/flame", "/api/tree?node=0&hot=1", "/api/timeline?t0=0&t1=2000002001&w=1200",
		"/api/table?cmd=thread_list", "/api/callers?f=" + strconv.Itoa(work.ID), "/api/source?f=" + strconv.Itoa(work.ID)} {
		if _, ok := data[key]; !ok {
			t.Errorf("no %s in the report", key)
		}
	}
	// The synthetic program has no file: its source view is an error the page shows.
	if !strings.Contains(string(data["/api/source?f="+strconv.Itoa(work.ID)]), `"error"`) {
		t.Errorf("source of work: %s", data["/api/source?f="+strconv.Itoa(work.ID)])
	}
	// The timeline's hover: the event nearest each pixel is the one /api/event finds there.
	var evs staticEvents
	if err := json.Unmarshal(data["timeline-events"], &evs); err != nil {
		t.Fatal(err)
	}
	if evs.T0 != 0 || evs.T1 != 2000002001 || evs.W != 1200 || len(evs.Rows) == 0 {
		t.Fatalf("timeline events: t0 %d t1 %d w %d, %d rows", evs.T0, evs.T1, evs.W, len(evs.Rows))
	}
	checked := 0
	tol := int64(math.Round(float64(evs.T1-evs.T0) / float64(evs.W) * 2))
	for ri, px := range evs.Rows {
		for x := 0; x < evs.W; x += 97 {
			tm := evs.T0 + int64(math.Round((float64(x)+0.5)/float64(evs.W)*float64(evs.T1-evs.T0)))
			var live struct {
				Found  bool    `json:"found"`
				Time   int64   `json:"time"`
				Frames []frame `json:"frames"`
			}
			get(t, ts, fmt.Sprintf("/api/event?row=%d&t=%d&tol=%d", ri, tm, tol), 200, &live)
			k := px[x]
			if !live.Found {
				if k >= 0 {
					t.Errorf("row %d pixel %d: the report has event %d, the server none", ri, x, k)
				}
				continue
			}
			checked++
			if k < 0 || evs.Events[k].Time != live.Time || !slices.Equal(evs.Stacks[evs.Events[k].Stack], live.Frames) {
				t.Errorf("row %d pixel %d: the report has event %d, the server %+v", ri, x, k, live)
			}
		}
	}
	if checked == 0 {
		t.Error("no pixel of the timeline has an event")
	}
	var o struct {
		Static bool `json:"static"`
	}
	json.Unmarshal(data["/api/overview"], &o)
	if !o.Static {
		t.Error("the report's overview does not say it is static")
	}
}

// TestCheckReportDir checks the refusal of a report directory that is not empty: its first names,
// then how many more.
func TestCheckReportDir(t *testing.T) {
	dir := t.TempDir()
	if err := checkReportDir(dir, false); err != nil {
		t.Errorf("empty: %v", err)
	}
	if err := checkReportDir(filepath.Join(dir, "new"), false); err != nil {
		t.Errorf("new: %v", err)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	err := checkReportDir(dir, false)
	if want := "--html " + dir + ": the directory is not empty (it holds a, b, c, and 2 more): name a new or empty directory, or give --force to write over its files"; err == nil || err.Error() != want {
		t.Errorf("five files: %v, want %q", err, want)
	}
	if err := checkReportDir(dir, true); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// TestHotInstructions: a report's disassembly keeps the rows with metrics, the context around them
// and the function's heading; each run of rows left out is one row saying how many.
func TestHotInstructions(t *testing.T) {
	t.Parallel()
	cols := []column{{Key: "e.totalcpu", Value: true}, {Key: "i.totalcpu", Value: true}}
	var in table
	in.Columns = cols
	in.Rows = append(in.Rows, row{ID: -1, Name: "<Function: f>", Cells: []cell{{B: true}, {B: true}}})
	for i := range 100 {
		v := int64(0)
		if i == 50 || i == 53 || i == 99 {
			v = int64(i) * 1000
		}
		in.Rows = append(in.Rows, row{ID: -1, Name: fmt.Sprintf("insn %d", i), Cells: []cell{{V: v}, {V: v}}})
	}
	out := hotInstructions(&in, 4)
	var names []string
	for _, r := range out.Rows {
		names = append(names, r.Name)
	}
	want := []string{"<Function: f>", "... 46 instructions without metrics, not in this report (er print -disasm shows them)"}
	for i := 46; i <= 57; i++ {
		want = append(want, fmt.Sprintf("insn %d", i))
	}
	want = append(want, "... 37 instructions without metrics, not in this report (er print -disasm shows them)")
	for i := 95; i <= 99; i++ {
		want = append(want, fmt.Sprintf("insn %d", i))
	}
	if !slices.Equal(names, want) {
		t.Errorf("rows\n%q\nwant\n%q", names, want)
	}
	for _, r := range out.Rows {
		if strings.HasPrefix(r.Name, "...") && (len(r.Cells) != 2 || !r.Cells[0].B || !r.Cells[1].B) {
			t.Errorf("a gap row has cells %+v, want blank ones", r.Cells)
		}
	}
	if len(in.Rows) != 101 {
		t.Errorf("the table given was changed: %d rows", len(in.Rows))
	}
}

// TestReportMode: a report's files are readable by the group, and by others, only when every file
// it holds the contents of is (a directory: read and searched); the most private one is named.
// An existing directory more open than that is left alone, and said so.
func TestReportMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	mk := func(name string, m os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
		return p
	}
	open, group, mine := mk("open", 0o644), mk("group", 0o640), mk("mine", 0o600)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sub, 0o754); err != nil { // readable, not searchable, by others
		t.Fatal(err)
	}
	for _, c := range []struct {
		held    []string
		file    os.FileMode
		because string
	}{
		{[]string{open, filepath.Join(dir, "gone")}, 0o644, ""},
		{[]string{open, group}, 0o640, group},
		{[]string{group, mine, open}, 0o600, mine},
		{[]string{open, sub}, 0o640, sub},
	} {
		pv := reportMode(c.held)
		if pv.File != c.file || pv.Because != c.because {
			t.Errorf("holding %v: mode %04o because of %q, want %04o because of %q", c.held, pv.File, pv.Because, c.file, c.because)
		}
	}
	var warned strings.Builder
	reportWarnings = &warned
	defer func() { reportWarnings = os.Stderr }()
	existing := filepath.Join(dir, "report")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := makeReportDir(existing, reportMode([]string{mine})); err != nil {
		t.Fatal(err)
	}
	if w := warned.String(); !strings.Contains(w, "the directory is mode 0755, more open than the report's files (0600, as "+mine+" is 0600)") ||
		!strings.Contains(w, "chmod 0700 "+existing) {
		t.Errorf("an existing directory more open than the report: %q", w)
	}
	fresh := filepath.Join(dir, "a", "b")
	if err := makeReportDir(fresh, reportMode([]string{group})); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("a new report directory holding a 0640 file: %v %v, want 0750", fi.Mode().Perm(), err)
	}
}
