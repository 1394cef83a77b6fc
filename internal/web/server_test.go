package web

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"er/internal/erprint"
)

// testServer opens the test experiment and serves it.
func testServer(t *testing.T) (*Server, *httptest.Server, string) {
	t.Helper()
	exp := writeTestExperiment(t, t.TempDir())
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts, exp
}

// get fetches path and decodes its JSON into v, failing unless the status is want.
func get(t *testing.T, ts *httptest.Server, path string, want int, v any) {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d: %s", path, resp.StatusCode, want, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
}

func post(t *testing.T, ts *httptest.Server, path, body string, want int, v any) {
	t.Helper()
	resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s %s: status %d, want %d: %s", path, body, resp.StatusCode, want, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, b)
		}
	}
}

// printRows runs er print -printmode json with args and returns its first table's rows: each row's
// name and its values in ns (times) or counts, by column key.
func printRows(t *testing.T, args ...string) []printRow {
	t.Helper()
	var out, errb bytes.Buffer
	if code := erprint.Main(append([]string{"-printmode", "json"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("er print %v: exit %d: %s", args, code, errb.String())
	}
	var tbl struct {
		Columns []struct {
			Key string `json:"key"`
		} `json:"columns"`
		Rows []struct {
			Name   string             `json:"name"`
			Values map[string]float64 `json:"values"`
		} `json:"rows"`
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &tbl); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	var rows []printRow
	for _, r := range tbl.Rows {
		pr := printRow{name: r.Name, v: map[string]int64{}}
		for _, c := range tbl.Columns {
			pr.v[c.Key] = int64(math.Round(r.Values[c.Key] * 1e9))
		}
		rows = append(rows, pr)
	}
	return rows
}

type printRow struct {
	name string
	v    map[string]int64
}

// TestFunctionsEqualPrint checks the function list against er print's, row for row and value for
// value, and its known figures.
func TestFunctionsEqualPrint(t *testing.T) {
	_, ts, exp := testServer(t)
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	want := printRows(t, "-functions", exp)
	if len(tbl.Rows) != len(want) {
		t.Fatalf("%d rows, er print %d", len(tbl.Rows), len(want))
	}
	for i, r := range tbl.Rows {
		if r.Name != want[i].name {
			t.Errorf("row %d: %q, er print %q", i, r.Name, want[i].name)
		}
		for j, c := range tbl.Columns {
			if r.Cells[j].V != want[i].v[c.Key] {
				t.Errorf("row %d %s %s: %d, er print %d", i, r.Name, c.Key, r.Cells[j].V, want[i].v[c.Key])
			}
		}
	}
	// 200 samples of each thread and 50 of work itself, 10 ms each.
	if got := tbl.Rows[0].Cells[0].V; got != 450*period {
		t.Errorf("total %d, want %d", got, 450*period)
	}
	byName := map[string]row{}
	for _, r := range tbl.Rows {
		byName[r.Name] = r
	}
	for name, excl := range map[string]int64{cppName: 200 * period, "leafA": 100 * period, "leafB": 100 * period, "work": 50 * period} {
		if got := byName[name].Cells[0].V; got != excl {
			t.Errorf("%s: exclusive %d, want %d", name, got, excl)
		}
	}
	if tbl.Sort != "e.totalcpu" {
		t.Errorf("sorted by %q", tbl.Sort)
	}
}

// TestFunctionsSearchSort checks the search, the sort and the limit of the function list.
func TestFunctionsSearchSort(t *testing.T) {
	_, ts, _ := testServer(t)
	var tbl table
	get(t, ts, "/api/functions?q=LEAF", 200, &tbl)
	if names := rowNames(tbl.Rows); strings.Join(names, ",") != "<Total>,leafA,leafB" || tbl.Matched != 3 {
		t.Errorf("search leaf: %v (%d matched)", names, tbl.Matched)
	}
	get(t, ts, "/api/functions?q=/^(main|work)$", 200, &tbl)
	if names := rowNames(tbl.Rows); strings.Join(names, ",") != "<Total>,work,main" {
		t.Errorf("search /^(main|work)$: %v", names)
	}
	get(t, ts, "/api/functions?q=/(", 400, nil)
	get(t, ts, "/api/functions?sort=name&limit=2", 200, &tbl)
	if names := rowNames(tbl.Rows); strings.Join(names, ",") != "<Total>,foo<int>::bar(std::vector<int, std::allocator<int> > const&),leafA" || tbl.Sort != "name" {
		t.Errorf("sort by name, limit 2: %v, sort %q", names, tbl.Sort)
	}
	if tbl.Matched != 7 {
		t.Errorf("matched %d, want 7 (<Total> and 6 functions)", tbl.Matched)
	}
	get(t, ts, "/api/functions?sort=i.totalcpu", 200, &tbl)
	if tbl.Rows[1].Cells[1].V < tbl.Rows[len(tbl.Rows)-1].Cells[1].V || tbl.Sort != "i.totalcpu" {
		t.Errorf("sort by inclusive: %v", rowNames(tbl.Rows))
	}
	get(t, ts, "/api/functions?sort=bogus", 400, nil)
}

func rowNames(rows []row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func findRow(t *testing.T, rows []row, name string) row {
	t.Helper()
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q in %v", name, rowNames(rows))
	return row{}
}

// TestCallers checks the callers-callees of work: its attributed metrics add up.
func TestCallers(t *testing.T) {
	_, ts, _ := testServer(t)
	var fl table
	get(t, ts, "/api/functions", 200, &fl)
	work := findRow(t, fl.Rows, "work")
	var cc table
	get(t, ts, "/api/callers?f="+strconv.Itoa(work.ID), 200, &cc)
	var callers, callees, center int64
	for _, r := range cc.Rows {
		switch r.Section {
		case "Callers":
			callers += r.Cells[0].V
		case "Callees":
			callees += r.Cells[0].V
		case "Stack Fragment":
			center = r.Cells[0].V
			if r.ID != work.ID {
				t.Errorf("centre is function %d, want %d", r.ID, work.ID)
			}
		}
	}
	if callers != 250*period || callees != 200*period || center != 50*period {
		t.Errorf("callers %d, callees %d, exclusive %d; want %d, %d, %d", callers, callees, center, 250*period, 200*period, 50*period)
	}
	get(t, ts, "/api/callers?f=999", 400, nil)
	get(t, ts, "/api/callers?f=x", 400, nil)
	get(t, ts, "/api/callers", 400, nil)
}

// TestTreeAndFlame checks the call tree's hot path and the flame graph's boxes.
func TestTreeAndFlame(t *testing.T) {
	_, ts, _ := testServer(t)
	var tr table
	get(t, ts, "/api/tree?node=0&hot=1", 200, &tr)
	// <Total>, then its children main and worker; main open: work; work open: leafA, leafB
	// (equal: by name); leafA has no children.
	want := "<Total>,main,work,leafA,leafB,worker"
	if got := strings.Join(rowNames(tr.Rows), ","); got != want {
		t.Errorf("hot path rows %s, want %s", got, want)
	}
	worker := findRow(t, tr.Rows, "worker")
	var kids table
	get(t, ts, "/api/tree?node="+strconv.Itoa(worker.Node), 200, &kids)
	if len(kids.Rows) != 1 || kids.Rows[0].Name != cppName || kids.Rows[0].Cells[1].V != 200*period || kids.Rows[0].Depth != 2 {
		t.Errorf("worker's children: %+v", kids.Rows)
	}
	get(t, ts, "/api/tree?node=100000", 400, nil)

	var fg struct {
		Nodes []flameNode      `json:"nodes"`
		Names map[int]string   `json:"names"`
		Total int64            `json:"total"`
		Path  []map[string]any `json:"path"`
	}
	get(t, ts, "/api/flame", 200, &fg)
	if fg.Total != 450*period || len(fg.Nodes) != 7 || fg.Nodes[0].Value != fg.Total {
		t.Fatalf("flame: total %d, %d nodes: %+v", fg.Total, len(fg.Nodes), fg.Nodes)
	}
	sum := map[int]int64{}
	for i, n := range fg.Nodes[1:] {
		if n.Parent < 0 || n.Parent > i {
			t.Errorf("node %d's parent %d is not before it", i+1, n.Parent)
		}
		sum[n.Parent] += n.Value
	}
	for i, n := range fg.Nodes {
		if sum[i]+n.Self != n.Value {
			t.Errorf("%s: children %d + self %d != %d", fg.Names[n.Func], sum[i], n.Self, n.Value)
		}
	}
	get(t, ts, "/api/flame?root="+strconv.Itoa(worker.Node), 200, &fg)
	if len(fg.Nodes) != 2 || fg.Nodes[0].Value != 200*period || len(fg.Path) != 1 {
		t.Errorf("flame under worker: %+v, path %v", fg.Nodes, fg.Path)
	}
}

// TestTimelineAndRange checks the timeline's bins and stacks, and that a time range filters every view
// as er print's filter does.
func TestTimelineAndRange(t *testing.T) {
	_, ts, exp := testServer(t)
	var tl struct {
		Rows []struct {
			Label string  `json:"label"`
			Tid   uint32  `json:"tid"`
			Leaf  []int32 `json:"leaf"`
			Count []int32 `json:"count"`
		} `json:"rows"`
		Names map[int32]string `json:"names"`
	}
	get(t, ts, "/api/timeline?t0=0&t1=2000002001&w=20", 200, &tl)
	if len(tl.Rows) != 2 || tl.Rows[0].Tid != 100 || tl.Rows[1].Tid != 101 {
		t.Fatalf("rows %+v", tl.Rows)
	}
	r0 := tl.Rows[0]
	// Bins of just over 100 ms: thread 1 has 10 samples of leafA or leafB and 2 or 3 of work in
	// each (the first: 10 to 100 ms, and work at 40 and 80).
	if tl.Names[r0.Leaf[0]] != "leafA" || tl.Names[r0.Leaf[19]] != "leafB" || r0.Count[0] != 12 {
		t.Errorf("thread 1: bin 0 %s (%d events), bin 19 %s", tl.Names[r0.Leaf[0]], r0.Count[0], tl.Names[r0.Leaf[19]])
	}
	var total int32
	for _, c := range r0.Count {
		total += c
	}
	if total != 250 {
		t.Errorf("thread 1 has %d events in its bins, want 250", total)
	}
	get(t, ts, "/api/timeline?w=0", 400, nil)
	get(t, ts, "/api/timeline?t0=5&t1=5", 400, nil)

	var ev struct {
		Found  bool `json:"found"`
		Time   int64
		Frames []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"frames"`
	}
	get(t, ts, "/api/event?row=0&t=1500000000&tol=5000000", 200, &ev)
	if !ev.Found || ev.Time != 1_500_000_000 || len(ev.Frames) != 3 || ev.Frames[0].Name != "leafB" || ev.Frames[2].Name != "main" {
		t.Errorf("event at 1.5 s: %+v", ev)
	}

	var fs filterState
	post(t, ts, "/api/filter", `{"range":[0,500000000]}`, 200, &fs)
	if fs.Range == nil || fs.Text != "TSTAMP >= 0 && TSTAMP < 500000000" {
		t.Errorf("filter state %+v", fs)
	}
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	want := printRows(t, "-filters", "TSTAMP >= 0 && TSTAMP < 500000000", "-functions", exp)
	if tbl.Rows[0].Cells[0].V != want[0].v["e.totalcpu"] || want[0].v["e.totalcpu"] != 49*period+49*period+12*period {
		t.Errorf("total in range %d, er print %d", tbl.Rows[0].Cells[0].V, want[0].v["e.totalcpu"])
	}
	for _, r := range tbl.Rows {
		if r.Name == "leafB" {
			t.Errorf("leafB in the first half: %+v", r)
		}
	}
	// The frames of the timeline name functions of the profile now shown.
	get(t, ts, "/api/event?row=0&t=200000000&tol=5000000", 200, &ev)
	leafA := findRow(t, tbl.Rows, "leafA")
	if ev.Frames[0].ID != leafA.ID {
		t.Errorf("leafA is function %d in the event, %d in the list", ev.Frames[0].ID, leafA.ID)
	}
	// An expression combines with the range; a bad one leaves the filter as it was.
	post(t, ts, "/api/filter", `{"expr":"THRID == 2"}`, 200, &fs)
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 49*period || fs.Text != "TSTAMP >= 0 && TSTAMP < 500000000 && (THRID == 2)" {
		t.Errorf("range and thread 2: total %d, filter %q", tbl.Rows[0].Cells[0].V, fs.Text)
	}
	post(t, ts, "/api/filter", `{"expr":"NOSUCH == 1"}`, 400, nil)
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 49*period {
		t.Errorf("after a bad filter: total %d", tbl.Rows[0].Cells[0].V)
	}
	post(t, ts, "/api/filter", `{}`, 200, &fs)
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 450*period || fs.Text != "" {
		t.Errorf("cleared: total %d, filter %q", tbl.Rows[0].Cells[0].V, fs.Text)
	}
	post(t, ts, "/api/filter", `{"range":`, 400, nil)
}

// TestMetrics checks that the metric list set by the page changes the columns.
func TestMetrics(t *testing.T) {
	_, ts, _ := testServer(t)
	post(t, ts, "/api/metrics", `{"spec":"i.%user:e.system:name"}`, 200, nil)
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	var keys []string
	for _, c := range tbl.Columns {
		keys = append(keys, c.Key)
	}
	if strings.Join(keys, ",") != "i.user,e.system" || tbl.Sort != "i.user" {
		t.Errorf("columns %v, sort %q", keys, tbl.Sort)
	}
	// 20 of thread 1's 200 leaf samples are in the kernel.
	if got := tbl.Rows[0].Cells[1].V; got != 20*period {
		t.Errorf("system CPU %d, want %d", got, 20*period)
	}
	post(t, ts, "/api/metrics", `{"spec":"e.nosuch"}`, 400, nil)
}

// TestTablesAndOverview checks the er print tables the page may ask for, and the overview.
func TestTablesAndOverview(t *testing.T) {
	_, ts, _ := testServer(t)
	var res struct {
		Tables []table `json:"tables"`
	}
	get(t, ts, "/api/table?cmd=thread_list", 200, &res)
	if len(res.Tables) != 1 || len(res.Tables[0].Rows) != 2 {
		t.Errorf("thread_list: %+v", res)
	}
	get(t, ts, "/api/table?cmd=quit", 400, nil)
	get(t, ts, "/api/table?cmd=outfile", 400, nil)
	var o struct {
		Duration    int64    `json:"duration"`
		Events      int64    `json:"events"`
		Views       []string `json:"views"`
		Experiments []struct {
			Command string
			Threads int
		} `json:"experiments"`
		Histogram struct {
			Series map[string][]int64 `json:"series"`
		} `json:"histogram"`
	}
	get(t, ts, "/api/overview", 200, &o)
	if o.Duration != expEnd+2001 || o.Events != 450 || len(o.Experiments) != 1 || o.Experiments[0].Threads != 2 || o.Experiments[0].Command != "./prog 1" {
		t.Errorf("overview %+v", o)
	}
	var n int64
	for _, v := range o.Histogram.Series["clock"] {
		n += v
	}
	if n != 450 {
		t.Errorf("histogram holds %d events, want 450", n)
	}
	if strings.Join(o.Views, ",") != "overview,functions,callers,calltree,flame,source,disasm,timeline,threads,cpus,samples,objects" {
		t.Errorf("views %v", o.Views)
	}
	get(t, ts, "/api/compare", 400, nil)
	get(t, ts, "/api/nosuch", 404, nil)
}

// TestLocalOnly checks that a request naming another host is refused (DNS rebinding), and that the
// page's headers forbid framing.
func TestLocalOnly(t *testing.T) {
	s, _, _ := testServer(t)
	h := s.Handler()
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:80": 200,
		"evil.example:8080": 403, "10.0.0.1": 403, "": 403} {
		req := httptest.NewRequest("GET", "/api/overview", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %q: status %d, want %d", host, rec.Code, want)
		}
		if want == 200 && rec.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("Host %q: no X-Frame-Options", host)
		}
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `<nav id="tabs">`) {
		t.Errorf("the page: %d %.200s", rec.Code, rec.Body.String())
	}
}

// TestNamesEscaped checks that a C++ name travels as JSON text (the page sets it as text): its <, >
// and & are escaped in the answer, and come back intact.
func TestNamesEscaped(t *testing.T) {
	_, ts, _ := testServer(t)
	resp, err := http.Get(ts.URL + "/api/functions")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(body, []byte("<int>")) || !bytes.Contains(body, []byte(`foo\u003cint\u003e::bar(std::vector\u003cint, std::allocator\u003cint\u003e \u003e const\u0026)`)) {
		t.Errorf("the C++ name is not escaped: %s", body)
	}
}
