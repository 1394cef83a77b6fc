package web

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

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

func TestIsSortKey(t *testing.T) {
	for key, want := range map[string]bool{
		"name": true, "e.totalcpu": true, "i.user%": true, "a_b.9": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "e.total cpu": false, "name;": false, "é": false,
	} {
		if got := isSortKey(key); got != want {
			t.Errorf("isSortKey(%q) = %v, want %v", key, got, want)
		}
	}
}
