package web

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"er/internal/experiment"
)

// writeBigExperiment writes an experiment of nSamples clock samples by 16 threads over 60 s, in an
// executable of nFuncs functions that call each other as a random call graph, with nStacks distinct stacks made by random walks from main,
// 3 to 40 frames deep; half the samples go to a few stacks, as in real programs, the other half
// anywhere.
func writeBigExperiment(tb testing.TB, dir string, nSamples, nFuncs, nStacks int) string {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	const base, fsize = 0x400000, 0x80
	path := filepath.Join(dir, "big.1.er")
	const dur = 60_000_000_000
	lg := experiment.Log{FormatVersion: "1.0", CollectorVersion: "er bench", Host: "bench", OS: "Linux", Arch: "x86_64",
		CPUs: 16, Command: []string{"./big"}, Pid: 1, StartTime: 1_700_000_000_000_000_000, EndTime: dur, Exited: true}
	w, err := experiment.Create(path, lg)
	if err != nil {
		tb.Fatal(err)
	}
	size := uint64(nFuncs+1) * fsize
	w.AddMapping(experiment.Mapping{Pid: 1, Start: base, End: base + size, Path: "/opt/bench/big", UnloadTime: -1})
	a := &experiment.Archive{Path: "/opt/bench/big", Kind: "elf", Size: int64(size), Segments: []experiment.Segment{{Filesz: size, Memsz: size}}}
	for i := range nFuncs {
		name := fmt.Sprintf("fn_%05d_compute", i)
		switch {
		case i == 0:
			name = "main"
		case i%7 == 0:
			name = fmt.Sprintf("_ZN3app6module%dINS_4NodeILi%dEEEE7processERKSt6vectorIiSaIiEE", i%100, i)
		}
		a.Symbols = append(a.Symbols, experiment.Symbol{Name: name, Addr: uint64(i) * fsize, Size: fsize})
	}
	// Each function calls one to four others; main's callees and theirs are few, so the top of
	// the tree is shared by many stacks, as in real programs.
	kids := make([][]int, nFuncs)
	for i := range nFuncs {
		for range 1 + r.IntN(4) {
			j := 1 + r.IntN(nFuncs-1)
			if i < 50 && r.IntN(2) == 0 {
				j = 1 + r.IntN(49)
			}
			kids[i] = append(kids[i], j)
		}
	}
	ids := make([]uint32, nStacks)
	for s := range ids {
		depth := 3 + r.IntN(38)
		var st experiment.Stack // leaf first
		f := 0
		frames := []int{0}
		for len(frames) < depth && len(kids[f]) > 0 {
			f = kids[f][r.IntN(len(kids[f]))]
			frames = append(frames, f)
		}
		for i := len(frames) - 1; i >= 0; i-- {
			off := uint64(0x10)
			if i == len(frames)-1 {
				off = uint64(r.IntN(fsize))
			}
			st = append(st, base+uint64(frames[i])*fsize+off)
		}
		if ids[s], err = w.Stack(st); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range nSamples {
		u := r.Float64()
		if i%2 == 0 {
			u = u * u * u
		}
		s := int(u * float64(nStacks))
		err := w.Clock(experiment.ClockSample{Time: int64(i) * (dur / int64(nSamples)), Pid: 1, Tid: uint32(2 + i%16),
			CPU: uint32(i % 16), Mode: experiment.Mode(1 + i%5/4), Period: 1_000_000, Stack: ids[s]})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := experiment.WriteArchive(path, a); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkViews1M measures each view's answer on an experiment of 1 million samples and 20,000
// functions: the time from request to the last byte of JSON, with the profile already analysed
// (as after the page's first view). Aim: every view under 300 ms. "filter" is a time range set
// and the function list computed again under it, which analyses the experiment again.
func BenchmarkViews1M(b *testing.B) {
	exp := writeBigExperiment(b, b.TempDir(), 1_000_000, 24_000, 200_000)
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
