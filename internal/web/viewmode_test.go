package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"er/internal/analysis"
)

// joinLeaves is a test frame pass of the user mode: leafA and leafB become one frame, "<leaves>".
var joinLeaves = &analysis.FramePass{Name: "join the leaves", Modes: []analysis.ViewMode{analysis.ViewUser},
	Frames: func(c *analysis.PassContext, fr []int32) []int32 {
		for i, f := range fr {
			if n := c.Function(f).Name; n == "leafA" || n == "leafB" {
				fr[i] = c.ViewFunc(c.Function(f).Object, "<leaves>")
			}
		}
		return fr
	}}

// TestViewModeControl: the View box's POST /api/viewmode sets the page's view mode, which every
// view of that page shows (the functions, the overview's mode) and no other page; a mode that is
// not user, expert or machine is refused.
func TestViewModeControl(t *testing.T) {
	remove := analysis.RegisterPass(joinLeaves)
	defer remove()
	_, ts, _ := testServer(t)
	names := func(id string) []string {
		t.Helper()
		code, body, err := clientDo(http.DefaultClient, ts, id, "GET", "/api/functions", "")
		if err != nil || code != 200 {
			t.Fatalf("page %s: functions: %d %v %.200s", id, code, err, body)
		}
		var tbl table
		if err := json.Unmarshal([]byte(body), &tbl); err != nil {
			t.Fatal(err)
		}
		return rowNames(tbl.Rows)
	}
	mode := func(id string) string {
		t.Helper()
		code, body, err := clientDo(http.DefaultClient, ts, id, "GET", "/api/overview", "")
		if err != nil || code != 200 {
			t.Fatalf("page %s: overview: %d %v", id, code, err)
		}
		var o struct {
			Viewmode string `json:"viewmode"`
		}
		if err := json.Unmarshal([]byte(body), &o); err != nil {
			t.Fatal(err)
		}
		return o.Viewmode
	}
	if n := names("page-aaaa"); !slices.Contains(n, "<leaves>") || slices.Contains(n, "leafA") || mode("page-aaaa") != "user" {
		t.Fatalf("user mode: %v, mode %q", n, mode("page-aaaa"))
	}
	if code, body, err := clientDo(http.DefaultClient, ts, "page-aaaa", "POST", "/api/viewmode", `{"mode":"machine"}`); err != nil || code != 200 || body != `{"mode":"machine"}`+"\n" {
		t.Fatalf("POST machine: %d %q %v", code, body, err)
	}
	if n := names("page-aaaa"); slices.Contains(n, "<leaves>") || !slices.Contains(n, "leafA") || !slices.Contains(n, "leafB") || mode("page-aaaa") != "machine" {
		t.Errorf("machine mode: %v, mode %q", n, mode("page-aaaa"))
	}
	if n := names("page-bbbb"); !slices.Contains(n, "<leaves>") || mode("page-bbbb") != "user" {
		t.Errorf("another page: %v, mode %q; want the user mode still", n, mode("page-bbbb"))
	}
	// The timeline's leaves, and an event's stack, are the page's mode's too.
	timeline := func(id string) []string {
		t.Helper()
		code, body, err := clientDo(http.DefaultClient, ts, id, "GET", "/api/timeline?w=200", "")
		if err != nil || code != 200 {
			t.Fatalf("page %s: timeline: %d %v %.200s", id, code, err, body)
		}
		var tl struct {
			Names map[string]string `json:"names"`
		}
		if err := json.Unmarshal([]byte(body), &tl); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range tl.Names {
			out = append(out, n)
		}
		return out
	}
	if n := timeline("page-aaaa"); slices.Contains(n, "<leaves>") || !slices.Contains(n, "leafA") || !slices.Contains(n, "leafB") {
		t.Errorf("machine mode's timeline: leaves %v", n)
	}
	if n := timeline("page-bbbb"); !slices.Contains(n, "<leaves>") || slices.Contains(n, "leafA") {
		t.Errorf("user mode's timeline: leaves %v", n)
	}
	leafAt := func(id string) map[string]bool {
		t.Helper()
		seen := map[string]bool{}
		for ts0 := int64(0); ts0 < 4e9; ts0 += 5e7 {
			code, body, err := clientDo(http.DefaultClient, ts, id, "GET", fmt.Sprintf("/api/event?row=0&t=%d&tol=50000000", ts0), "")
			if err != nil || code != 200 {
				t.Fatalf("page %s: event: %d %v %.200s", id, code, err, body)
			}
			var ev struct {
				Found  bool `json:"found"`
				Frames []struct {
					Name string `json:"name"`
				} `json:"frames"`
			}
			if err := json.Unmarshal([]byte(body), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Found && len(ev.Frames) > 0 {
				seen[ev.Frames[0].Name] = true
			}
		}
		return seen
	}
	if m, u := leafAt("page-aaaa"), leafAt("page-bbbb"); m["<leaves>"] || !(m["leafA"] || m["leafB"]) || !u["<leaves>"] || u["leafA"] || u["leafB"] {
		t.Errorf("the events' leaves: machine mode %v, user mode %v", m, u)
	}
	if code, body, _ := clientDo(http.DefaultClient, ts, "page-aaaa", "POST", "/api/viewmode", `{"mode":"java"}`); code != 400 || mode("page-aaaa") != "machine" {
		t.Errorf("POST java: %d %s; mode now %q", code, body, mode("page-aaaa"))
	}
}
