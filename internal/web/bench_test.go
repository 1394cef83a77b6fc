package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/synth"
)

// BenchmarkViews1M measures each view's answer on an experiment of 1 million samples and 20,000
// functions (internal/synth: a realistic call graph, 16 threads, 60 s, five phases): the time from request to the last byte of JSON, with the profile already analysed
// (as after the page's first view). Aim: every view under 300 ms. "filter" is a time range set
// and the function list computed again under it, which analyses the experiment again.
func BenchmarkViews1M(b *testing.B) {
	exp := filepath.Join(b.TempDir(), "big.1.er")
	err := synth.Write(exp, synth.Spec{Samples: 1_000_000, Functions: 20_000, Threads: 16, Stacks: 50_000,
		Seed: 1, Duration: 60_000_000_000, Interval: 1_009_000})
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open([]string{exp})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	fetch := func(method, path, body string) {
		var resp *http.Response
		var err error
		if method == "GET" {
			resp, err = http.Get(ts.URL + path)
		} else {
			resp, err = http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		}
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		_ = n
	}
	fetch("GET", "/api/overview", "")
	var fl table
	get2 := func(path string, v any) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if err := decodeJSON(resp.Body, v); err != nil {
			b.Fatal(err)
		}
	}
	get2("/api/functions", &fl)
	top := fl.Rows[1].ID
	p, _ := s.eng.Profile()
	b.Logf("%d events, %d functions with events, %d distinct stacks, %d call tree nodes", p.Events, fl.Matched-1, p.NumStacks(), p.CallTree().Len())
	var tree table
	get2("/api/tree?node=0&hot=1", &tree)
	deep := tree.Rows[len(tree.Rows)-1].Node
	views := []struct{ name, method, path, body string }{
		{"overview", "GET", "/api/overview", ""},
		{"functions", "GET", "/api/functions", ""},
		{"functions-search", "GET", "/api/functions?q=module4", ""},
		{"functions-sort-name", "GET", "/api/functions?sort=name", ""},
		{"functions-sort-excl", "GET", "/api/functions?sort=e.totalcpu", ""},
		{"callers", "GET", fmt.Sprintf("/api/callers?f=%d", top), ""},
		{"calltree-hot", "GET", "/api/tree?node=0&hot=1", ""},
		{"calltree-open", "GET", fmt.Sprintf("/api/tree?node=%d", deep), ""},
		{"flame", "GET", "/api/flame", ""},
		{"timeline", "GET", "/api/timeline?t0=0&t1=60000000000&w=1200", ""},
		{"timeline-zoom", "GET", "/api/timeline?t0=1000000000&t1=2000000000&w=1200", ""},
		{"event", "GET", "/api/event?row=3&t=30000000000&tol=100000000", ""},
		{"threads", "GET", "/api/table?cmd=thread_list", ""},
		{"objects", "GET", "/api/table?cmd=lobjects", ""},
		{"source", "GET", fmt.Sprintf("/api/source?f=%d", top), ""},
	}
	for _, v := range views {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if v.name == "source" {
					resp, err := http.Get(ts.URL + v.path) // the program's file is not there: an error answer
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					continue
				}
				fetch(v.method, v.path, v.body)
			}
		})
	}
	b.Run("filter-range+functions", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			fetch("POST", "/api/filter", fmt.Sprintf(`{"range":[%d,%d]}`, int64(i%50)*1_000_000_000, int64(i%50+10)*1_000_000_000))
			fetch("GET", "/api/functions", "")
		}
	})
}

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
