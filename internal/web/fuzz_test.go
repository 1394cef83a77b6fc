package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// fuzzPaths are every path the Analyzer serves, and two it does not.
func fuzzPaths(s *Server) []string {
	var paths []string
	for p := range routes {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return append(paths, "/api/filter", "/api/metrics", "/api/viewmode", "/", "/app.js", "/api/nosuch", "/nosuch.html")
}

var fuzzMethods = []string{"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"}

// FuzzHandlers sends the Analyzer requests to any of its paths with any method, query and body:
// each must be answered with a status below 500 (a 500 is a recovered panic: a bug), the server's
// lock must be free after it, and a normal request must still be served.
func FuzzHandlers(f *testing.F) {
	s, err := Open([]string{writeTestExperiment(f, f.TempDir())})
	if err != nil {
		f.Fatal(err)
	}
	h := tokened(s)
	paths := fuzzPaths(s)
	index := func(p string) uint8 { return uint8(slices.Index(paths, p)) }
	for _, c := range []struct {
		path, method, query, body string
	}{
		{"/api/functions", "GET", "limit=9223372036854775807", ""},
		{"/api/event", "GET", "tol=-1", ""},
		{"/api/event", "GET", "row=1&t=1500000000&tol=5000000", ""},
		{"/api/functions", "GET", "sort=name&q=/^le&limit=2", ""},
		{"/api/callers", "GET", "f=2", ""},
		{"/api/source", "GET", "f=1", ""},
		{"/api/disasm", "GET", "f=3", ""},
		{"/api/tree", "GET", "node=0&hot=1", ""},
		{"/api/flame", "GET", "root=1", ""},
		{"/api/timeline", "GET", "t0=-5&t1=2000002001&w=17", ""},
		{"/api/table", "GET", "cmd=thread_list", ""},
		{"/api/compare", "GET", "metric=1", ""},
		{"/api/overview", "GET", "", ""},
		{"/api/processes", "GET", "", ""},
		{"/api/processes", "GET", "x=1", ""},
		{"/api/filter", "POST", "", `{"range":[0,500000000],"expr":"THRID == 1"}`},
		{"/api/filter", "POST", "", `{}`},
		{"/api/metrics", "POST", "", `{"spec":"i.%user:e.system:name"}`},
		{"/api/metrics", "POST", "", `{"spec":"default"}`},
		{"/api/viewmode", "POST", "", `{"mode":"expert"}`},
		{"/", "GET", "", ""},
	} {
		f.Add(index(c.path), uint8(slices.Index(fuzzMethods, c.method)), c.query, c.body)
	}
	f.Fuzz(func(t *testing.T, path, method uint8, query, body string) {
		p := paths[int(path)%len(paths)]
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		req := httptest.NewRequest(m, "/", strings.NewReader(body))
		req.URL = &url.URL{Path: p, RawQuery: query}
		req.RequestURI = req.URL.RequestURI()
		req.Host = "127.0.0.1"
		if method&0x80 == 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%.200q %.200q: status %d: %.500s", m, p, query, body, rec.Code, rec.Body.String())
		}
		if !s.mu.TryLock() {
			t.Fatalf("%s %s?%.200q: the server's lock is held after the answer", m, p, query)
		}
		s.mu.Unlock()
		req = httptest.NewRequest("GET", "/api/functions", nil)
		req.Host = "127.0.0.1"
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("after %s %s?%.200q %.200q: GET /api/functions: status %d: %.500s", m, p, query, body, rec.Code, rec.Body.String())
		}
	})
}
