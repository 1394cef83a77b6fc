package web

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// compareServer serves two copies of the test experiment, web.1.er and web.2.er, to compare.
func compareServer(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	a := writeTestExperiment(t, dir)
	b := filepath.Join(dir, "web.2.er")
	if err := os.Rename(writeTestExperiment(t, t.TempDir()), b); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	t.Cleanup(ts.Close)
	return ts
}

// TestCompare checks the side-by-side function list of two experiments: one has thread 2's samples
// removed by a second copy with fewer events, so the changes are known.
func TestCompare(t *testing.T) {
	ts := compareServer(t)
	var res struct {
		Table       table    `json:"table"`
		Experiments []string `json:"experiments"`
	}
	get(t, ts, "/api/compare", 200, &res)
	if len(res.Experiments) != 2 || res.Experiments[0] != "web.1.er" || res.Experiments[1] != "web.2.er" {
		t.Errorf("experiments %v", res.Experiments)
	}
	if len(res.Table.Columns) != 5 {
		t.Fatalf("columns %+v", res.Table.Columns)
	}
	total := res.Table.Rows[0]
	if total.Cells[0].V != 450*period || total.Cells[2].V != 450*period || total.Cells[4].V != 0 {
		t.Errorf("totals %+v", total.Cells)
	}
	leafA := findRow(t, res.Table.Rows, "leafA")
	if leafA.Cells[0].V != 100*period || leafA.Cells[2].V != 100*period || leafA.Cells[4].V != 0 {
		t.Errorf("leafA %+v", leafA.Cells)
	}
	// The overview offers the comparison; a filter applies to both experiments.
	var o struct {
		Views []string `json:"views"`
	}
	get(t, ts, "/api/overview", 200, &o)
	if o.Views[len(o.Views)-1] != "compare" {
		t.Errorf("views %v", o.Views)
	}
	post(t, ts, "/api/filter", `{"range":[0,500000000]}`, 200, nil)
	get(t, ts, "/api/compare", 200, &res)
	if got := res.Table.Rows[0].Cells; got[0].V != 110*period || got[2].V != 110*period {
		t.Errorf("filtered totals %+v", got)
	}
	// A filter on the call stack, each experiment's functions found in its own profile: leafA's part.
	post(t, ts, "/api/filter", `{"range":[0,0],"expr":"INSTK(leafA)"}`, 200, nil)
	get(t, ts, "/api/compare", 200, &res)
	if got := res.Table.Rows[0].Cells; got[0].V != 100*period || got[2].V != 100*period || got[4].V != 0 {
		t.Errorf("totals under INSTK(leafA) %+v, want leafA's %d in both", got, 100*period)
	}
	var fl struct {
		Rows []struct {
			Name  string `json:"name"`
			Cells []struct {
				V int64 `json:"v"`
			} `json:"cells"`
		} `json:"rows"`
	}
	get(t, ts, "/api/functions", 200, &fl)
	if len(fl.Rows) == 0 || fl.Rows[0].Cells[0].V != 200*period {
		t.Errorf("function list under INSTK(leafA): %+v, want a total of %d", fl.Rows, 200*period)
	}
}

// TestDiffFlame checks the differential flame graph: er print's compare call tree of the first and
// last experiment, each node with its inclusive value in both, a parent before its children, and the
// filter applied.
func TestDiffFlame(t *testing.T) {
	ts := compareServer(t)
	var res struct {
		Nodes       []diffNode `json:"nodes"`
		Experiments []string   `json:"experiments"`
		Totals      []int64    `json:"totals"`
	}
	get(t, ts, "/api/diffflame", 200, &res)
	if len(res.Experiments) != 2 || res.Experiments[0] != "web.1.er" || res.Experiments[1] != "web.2.er" {
		t.Errorf("experiments %v", res.Experiments)
	}
	if len(res.Nodes) < 3 || res.Nodes[0].Name != "<Total>" || res.Nodes[0].A != 450*period || res.Nodes[0].B != 450*period ||
		res.Totals[0] != 450*period || res.Totals[1] != 450*period {
		t.Fatalf("root %+v, totals %v", res.Nodes, res.Totals)
	}
	// Each node's children add up to at most its value, in both; leafA's boxes hold its 100 samples.
	kids := make([][2]int64, len(res.Nodes))
	var leafA [2]int64
	for i, n := range res.Nodes[1:] {
		if n.Parent < 0 || n.Parent > i || n.Depth != res.Nodes[n.Parent].Depth+1 {
			t.Fatalf("node %d: %+v", i+1, n)
		}
		kids[n.Parent][0] += n.A
		kids[n.Parent][1] += n.B
		if n.Name == "leafA" {
			leafA[0] += n.A
			leafA[1] += n.B
		}
	}
	for i, n := range res.Nodes {
		if kids[i][0] > n.A || kids[i][1] > n.B {
			t.Errorf("node %s: %d, %d; its children %v", n.Name, n.A, n.B, kids[i])
		}
	}
	if leafA != [2]int64{100 * period, 100 * period} {
		t.Errorf("leafA %v, want 100 samples in each", leafA)
	}
	post(t, ts, "/api/filter", `{"range":[0,500000000]}`, 200, nil)
	get(t, ts, "/api/diffflame", 200, &res)
	if res.Nodes[0].A != 110*period || res.Nodes[0].B != 110*period {
		t.Errorf("filtered root %+v", res.Nodes[0])
	}
}
