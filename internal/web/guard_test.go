package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"er/internal/experiment"
)

// rawGet fetches path and returns its status and body; a failed request (the server closed the
// connection) is reported as status 0 with the error.
func rawGet(ts string, path string) (int, string) {
	resp, err := http.Get(ts + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostileGETsDoNotDeadlock sends the two GETs that panicked inside the server's lock (and so
// left every later /api/ request hanging): each must be refused with 400 and a message naming the
// parameter, the lock must be free after it, and a normal request must still be served.
func TestHostileGETsDoNotDeadlock(t *testing.T) {
	s, ts, _ := testServer(t)
	for _, c := range []struct {
		path  string
		code  int
		param string
	}{
		{"/api/functions?limit=9223372036854775807", 400, "limit"},
		{"/api/event?tol=-1", 400, "tol"},
		{"/api/event?row=0&t=9223372036854775807&tol=9223372036854775807", 400, "tol"},
		{"/api/event?row=0&t=9223372036854775807&tol=4611686018427387904", 200, ""},
		{"/api/event?row=0&t=-9223372036854775808&tol=4611686018427387904", 200, ""},
		{"/api/timeline?t0=-9223372036854775808&t1=9223372036854775807", 200, ""},
	} {
		code, body := rawGet(ts.URL, c.path)
		var msg struct {
			Error string `json:"error"`
		}
		json.Unmarshal([]byte(body), &msg)
		if code != c.code || c.param != "" && !strings.Contains(msg.Error, "parameter "+c.param) {
			t.Errorf("GET %s: status %d %q, want %d naming parameter %s", c.path, code, body, c.code, c.param)
		}
		if !s.mu.TryLock() {
			t.Fatalf("after GET %s the server's lock is still held: every later request would hang", c.path)
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/functions", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("after GET %s, GET /api/functions: %v", c.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("after GET %s, GET /api/functions: status %d", c.path, resp.StatusCode)
		}
	}
}

// signalBody is a request body that closes reading once the handler asks for more after it has
// read something: it is then blocked reading the rest.
type signalBody struct {
	io.ReadCloser
	n       int
	reading chan struct{}
}

func (b *signalBody) Read(p []byte) (int, error) {
	if b.n > 0 && b.reading != nil {
		close(b.reading)
		b.reading = nil
	}
	n, err := b.ReadCloser.Read(p)
	b.n += n
	return n, err
}

// TestSlowPostDoesNotHoldLock holds a POST /api/filter's body open half sent: while the handler
// waits for the rest, the server's lock must be free and another request served; the POST is then
// answered once its body is complete.
func TestSlowPostDoesNotHoldLock(t *testing.T) {
	s, _, _ := testServer(t)
	reading := make(chan struct{})
	h := tokened(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			r.Body = &signalBody{ReadCloser: r.Body, reading: reading}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	pr, pw := io.Pipe()
	type answer struct {
		code int
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/api/filter", "application/json", pr)
		if err != nil {
			done <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{code: resp.StatusCode, body: string(b)}
	}()
	if _, err := pw.Write([]byte(`{"range":`)); err != nil {
		t.Fatal(err)
	}
	<-reading
	if !s.mu.TryLock() {
		pw.CloseWithError(io.ErrUnexpectedEOF)
		t.Fatal("the server's lock is held while a POST body is being read: every other request waits for the slowest client")
	}
	s.mu.Unlock()
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 450*period {
		t.Errorf("total %d while the POST is pending, want %d", tbl.Rows[0].Cells[0].V, 450*period)
	}
	pw.Write([]byte(`[0,500000000]}`))
	pw.Close()
	a := <-done
	if a.err != nil || a.code != 200 || !strings.Contains(a.body, `"TSTAMP \u003e= 0 \u0026\u0026 TSTAMP \u003c 500000000"`) {
		t.Errorf("the POST once complete: %d %q %v", a.code, a.body, a.err)
	}
}

// TestEveryParameterChecked sends each endpoint's parameters out of range, of the wrong kind or
// unknown: each is answered 400 (413 or 415 for a body too large or not JSON) with a message naming
// what is wrong, and the state stays as it was.
func TestEveryParameterChecked(t *testing.T) {
	s, ts, _ := testServer(t)
	big := strings.Repeat("x", maxParamLen+1)
	for _, c := range []struct{ path, msg string }{
		{"/api/overview?x=1", `parameter "x": /api/overview takes no parameters`},
		{"/api/functions?limit=-1", "parameter limit=-1 is out of range (0 to 10000000)"},
		{"/api/functions?limit=10000001", "parameter limit=10000001 is out of range"},
		{"/api/functions?limit=ten", `parameter limit="ten" is not an integer`},
		{"/api/functions?sort=name%20name", `parameter sort="name name" is not a column key`},
		{"/api/functions?sort=e.nosuch", `parameter sort="e.nosuch"`},
		{"/api/functions?q=/(", `parameter q="/(" is not a regular expression`},
		{"/api/functions?q=" + big, "parameter q is 1025 bytes long: at most 1024 are allowed"},
		{"/api/functions?limit=1&limit=2", "parameter limit is given 2 times"},
		{"/api/functions?bogus=1", `parameter "bogus": /api/functions takes only sort, q, limit`},
		{"/api/callers", "parameter f is missing: the function, 0 to 6"},
		{"/api/callers?f=-1", "parameter f=-1 is out of range (0 to 6)"},
		{"/api/source?f=7", "parameter f=7 is out of range (0 to 6)"},
		{"/api/disasm?f=0x1", `parameter f="0x1" is not an integer`},
		{"/api/tree?node=-1", "parameter node=-1 is out of range"},
		{"/api/tree?hot=2", `parameter hot="2" is not one of 0, 1`},
		{"/api/flame?root=9223372036854775807", "parameter root=9223372036854775807 is out of range"},
		{"/api/timeline?w=0", "parameter w=0 is out of range (1 to 4096)"},
		{"/api/timeline?w=4097", "parameter w=4097 is out of range (1 to 4096)"},
		{"/api/timeline?t1=9223372036854775808", `parameter t1="9223372036854775808" is not an integer (-9223372036854775808 to 9223372036854775807)`},
		{"/api/timeline?t0=5&t1=5", "parameters t0=5 and t1=5: the time window [t0, t1) is empty"},
		{"/api/event?row=2", "parameter row=2 is out of range (0 to 1)"},
		{"/api/event?tol=4611686018427387905", "parameter tol=4611686018427387905 is out of range (0 to 4611686018427387904)"},
		{"/api/event?t=1.5e9", `parameter t="1.5e9" is not an integer`},
		{"/api/table?cmd=outfile", `parameter cmd="outfile" is not a table the page may ask for (allocs, cpu_list,`},
		{"/api/table", `parameter cmd="" is not a table`},
		{"/api/compare?metric=0", "compare needs two or more experiments"},
		{"/api/processes?x=1", `parameter "x": /api/processes takes no parameters`},
	} {
		code, body := rawGet(ts.URL, c.path)
		var msg struct {
			Error string `json:"error"`
		}
		json.Unmarshal([]byte(body), &msg)
		if code != 400 || !strings.Contains(msg.Error, c.msg) {
			t.Errorf("GET %.80s: %d %s, want 400 and %q", c.path, code, body, c.msg)
		}
	}
	for _, c := range []struct {
		path, ctype, body string
		code              int
		msg               string
	}{
		{"/api/filter", "text/plain", `{"expr":"THRID == 1"}`, 415, "POST /api/filter: the body must be JSON, sent with Content-Type: application/json"},
		{"/api/filter", "application/json", `{"expr":"` + strings.Repeat(" ", maxBody) + `"}`, 413, "POST /api/filter: the body is over 65536 bytes"},
		{"/api/filter", "application/json", `{"rnage":[0,5]}`, 400, `json: unknown field "rnage"`},
		{"/api/filter", "application/json", `{"expr":"THRID == 1"}]`, 400, "the body has more after its JSON object"},
		{"/api/filter", "application/json", `{"range":[0,1,2]}`, 400, "POST /api/filter: range has 3 numbers: give [t0, t1] in ns"},
		{"/api/filter?x=1", "application/json", `{}`, 400, `parameter "x": /api/filter takes no parameters`},
		{"/api/metrics", "application/json; charset=utf-8", `{"spec":"e.totalcpu","x":1}`, 400, `json: unknown field "x"`},
	} {
		resp, err := http.Post(ts.URL+c.path, c.ctype, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var msg struct {
			Error string `json:"error"`
		}
		json.Unmarshal(b, &msg)
		if resp.StatusCode != c.code || !strings.Contains(msg.Error, c.msg) {
			t.Errorf("POST %s %.40s: %d %s, want %d and %q", c.path, c.body, resp.StatusCode, b, c.code, c.msg)
		}
	}
	if f := s.eng.Filter(); f != "" {
		t.Errorf("the refused POSTs set the filter %q", f)
	}
	var tbl table
	get(t, ts, "/api/functions", 200, &tbl)
	if tbl.Rows[0].Cells[0].V != 450*period || tbl.Sort != "e.totalcpu" {
		t.Errorf("after the refusals: total %d, sort %s", tbl.Rows[0].Cells[0].V, tbl.Sort)
	}
}

// TestSlowClientsCutOff holds requests open half sent (a slowloris client): the server must close
// each connection once its timeouts pass rather than keep it, and its goroutine, forever.
func TestSlowClientsCutOff(t *testing.T) {
	s, _, _ := testServer(t)
	to := defaultTimeouts
	to.readHeader, to.read = 100*time.Millisecond, 200*time.Millisecond
	srv := newHTTPServer(tokened(s), to)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	for _, c := range []struct{ what, send string }{
		{"headers half sent", "GET /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\n"},
		{"body half sent", "POST /api/filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"range\":"},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(c.send)); err != nil {
			t.Fatal(err)
		}
		// The deadline only keeps a failing test from hanging: the server cuts the
		// connection after its timeouts, well before it.
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		got, err := io.ReadAll(conn)
		conn.Close()
		// EOF, or a reset: either way the server ended the connection; only our own
		// deadline means it did not.
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: the server kept the connection open: %v (read %q)", c.what, err, got)
		}
	}
	// The server still answers.
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("overview: status %d", resp.StatusCode)
	}
}

// TestCrossSiteRefused checks that the data of the Analyzer is refused to a request a page of
// another site made (the browser says so in Sec-Fetch-Site, and in Origin for a POST): such a
// page cannot read the answers, but could still make the server work or change its filter.
func TestCrossSiteRefused(t *testing.T) {
	s, _, _ := testServer(t)
	h := tokened(s)
	for _, c := range []struct {
		method, path, site, origin string
		code                       int
	}{
		{"GET", "/api/functions", "", "", 200},
		{"GET", "/api/functions", "same-origin", "", 200},
		{"GET", "/api/functions", "none", "", 200},
		{"GET", "/api/functions", "cross-site", "", 403},
		{"GET", "/api/functions?limit=0", "same-site", "", 403},
		{"GET", "/app.js", "cross-site", "", 200},
		{"POST", "/api/filter", "", "http://127.0.0.1:8080", 200},
		{"POST", "/api/filter", "", "http://evil.example", 403},
		{"POST", "/api/filter", "", "null", 403},
		{"POST", "/api/metrics", "cross-site", "", 403},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(`{}`))
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Content-Type", "application/json")
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("%s %s (Sec-Fetch-Site %q, Origin %q): status %d, want %d: %.200s", c.method, c.path, c.site, c.origin, rec.Code, c.code, rec.Body.String())
		}
	}
}

// TestConcurrentClients serves 200 clients at once, each with its own connection, mixing every
// endpoint, bad requests and filters that select every event (so that every answer is known): each
// answer must equal the one the same request got alone.
func TestConcurrentClients(t *testing.T) {
	_, ts, _ := testServer(t)
	var fl table
	get(t, ts, "/api/functions", 200, &fl)
	work := findRow(t, fl.Rows, "work").ID
	gets := []string{
		"/api/overview",
		"/api/functions?sort=e.totalcpu",
		"/api/functions?sort=e.totalcpu&q=leaf",
		"/api/functions?sort=e.totalcpu&limit=2",
		"/api/functions?limit=9223372036854775807",
		"/api/callers?f=" + strconv.Itoa(work),
		"/api/source?f=" + strconv.Itoa(work),
		"/api/disasm?f=" + strconv.Itoa(work),
		"/api/tree?node=0&hot=1",
		"/api/tree?node=1",
		"/api/flame",
		"/api/timeline?t0=0&t1=2000002001&w=50",
		"/api/event?row=0&t=1500000000&tol=5000000",
		"/api/event?tol=-1",
		"/api/table?cmd=thread_list",
		"/api/table?cmd=lobjects",
		"/api/compare",
		"/api/processes",
	}
	posts := []string{`{"range":[0,4000000000]}`, `{}`, `{"expr":"NOSUCH == 1"}`, `{"expr":"THRID >= 0"}`}
	type answer struct {
		code int
		body string
	}
	do := func(c *http.Client, method, path, body string) (answer, error) {
		var resp *http.Response
		var err error
		if method == "POST" {
			resp, err = c.Post(ts.URL+path, "application/json", strings.NewReader(body))
		} else {
			resp, err = c.Get(ts.URL + path)
		}
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b)}, err
	}
	// Alone, with no filter and with each filter: the answers must not depend on it (the
	// overview shows the filter: its status only is compared).
	want := map[string]answer{}
	for i, p := range append([]string{""}, posts...) {
		if p != "" {
			if _, err := do(http.DefaultClient, "POST", "/api/filter", p); err != nil {
				t.Fatal(err)
			}
		}
		for _, g := range gets {
			a, err := do(http.DefaultClient, "GET", g, "")
			if err != nil {
				t.Fatal(err)
			}
			if g == "/api/overview" {
				a.body = ""
			}
			if w, ok := want[g]; i > 0 && (!ok || w != a) {
				t.Fatalf("GET %s after POST /api/filter %s: %d %.300s, before %d %.300s", g, p, a.code, a.body, w.code, w.body)
			}
			want[g] = a
		}
	}
	postCode := map[string]int{posts[0]: 200, posts[1]: 200, posts[2]: 400, posts[3]: 200}
	const clients, each = 200, 5
	errs := make(chan string, clients*each)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			for k := range each {
				n := i*each + k
				if n%5 == 4 {
					p := posts[n/5%len(posts)]
					a, err := do(c, "POST", "/api/filter", p)
					if err != nil || a.code != postCode[p] {
						errs <- fmt.Sprintf("client %d: POST /api/filter %s: %d %.200s %v", i, p, a.code, a.body, err)
					}
					continue
				}
				g := gets[n%len(gets)]
				a, err := do(c, "GET", g, "")
				if g == "/api/overview" {
					a.body = ""
				}
				if err != nil || a != want[g] {
					errs <- fmt.Sprintf("client %d: GET %s: %d %v; differs from alone: %s", i, g, a.code, err, firstDiff(a.body, want[g].body))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	reportErrors(t, errs, clients*each, "requests answered wrongly")
}

// reportErrors reports the first 10 of errs and how many of total they were.
func reportErrors(t *testing.T, errs <-chan string, total int, what string) {
	t.Helper()
	n := 0
	for e := range errs {
		if n++; n <= 10 {
			t.Error(e)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d %s", n, total, what)
	}
}

// firstDiff shows where a and b first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return fmt.Sprintf("at byte %d: %q, want %q", i, a[lo:min(len(a), i+80)], b[lo:min(len(b), i+80)])
}

// TestAnswersDoNotDependOnHistory checks that a view's answer does not depend on which request
// came before it: the profile's warnings (in the overview) were printed again into the text of
// whichever view came first after a filter or metrics change.
func TestAnswersDoNotDependOnHistory(t *testing.T) {
	_, ts, _ := testServer(t)
	for _, change := range []struct{ path, body string }{
		{"/api/filter", `{"range":[0,4000000000]}`},
		{"/api/filter", `{}`},
		{"/api/metrics", `{"spec":"default"}`},
	} {
		var before, after struct {
			Text string `json:"text"`
		}
		get(t, ts, "/api/table?cmd=lobjects", 200, &before)
		post(t, ts, change.path, change.body, 200, nil)
		get(t, ts, "/api/table?cmd=lobjects", 200, &after)
		if after.Text != before.Text {
			t.Errorf("after POST %s %s, the load objects' text is %q, before %q", change.path, change.body, after.Text, before.Text)
		}
	}
}

// writeTimesExperiment writes an experiment of thread 1's samples in main -> work at the times
// given (ns), with no recorded end, and returns its path.
func writeTimesExperiment(t *testing.T, times ...int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "times.1.er")
	lg := experiment.Log{FormatVersion: "1.0", CollectorVersion: "er test", Host: "testhost", OS: "Linux", Arch: "x86_64",
		CPUs: 1, PageSize: 4096, WordSize: 64, Command: []string{"./prog"}, Cwd: "/tmp", Pid: 100,
		Settings: []experiment.Setting{{Name: "clock_profiling", Value: "on"}, {Name: "clock_interval_ns", Value: "10000000"}}}
	w, err := experiment.Create(path, lg)
	if err != nil {
		t.Fatal(err)
	}
	w.AddMapping(experiment.Mapping{Pid: 100, Start: progBase, End: progBase + 0x10000, Path: progPath, UnloadTime: -1})
	st, err := w.Stack(stackOf("main", "work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range times {
		if err := w.Clock(experiment.ClockSample{Time: ts, Pid: 100, Tid: 100, Mode: experiment.ModeUser, Period: period, Stack: st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writeProgArchive(t, path)
	return path
}

// TestHugeTimestamps serves an experiment whose events lie beyond 2^53 ns (where float64 loses
// nanoseconds): the overview's histogram put its last event one bin past its end, and panicked.
func TestHugeTimestamps(t *testing.T) {
	const far = 1 << 62
	s, err := Open([]string{writeTimesExperiment(t, far-2*period, far-period, far)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	defer ts.Close()
	var o struct {
		Duration  int64 `json:"duration"`
		Histogram struct {
			Series map[string][]int64 `json:"series"`
		} `json:"histogram"`
	}
	get(t, ts, "/api/overview", 200, &o)
	var n int64
	for _, v := range o.Histogram.Series["clock"] {
		n += v
	}
	if o.Duration != far+1 || n != 3 {
		t.Errorf("duration %d, histogram of %d events; want %d and 3", o.Duration, n, int64(far+1))
	}
	for _, path := range []string{"/api/timeline?w=7", "/api/event?row=0&t=2305843009213693952&tol=2305843009213693952", "/api/functions", "/api/flame"} {
		code, body := rawGet(ts.URL, path)
		if code != 200 && code != 400 {
			t.Errorf("GET %s: %d %.300s", path, code, body)
		}
	}
	if _, err := s.WriteStatic(filepath.Join(t.TempDir(), "r")); err != nil {
		t.Errorf("static report: %v", err)
	}
}

// A GET whose client went away while it waited for the lock (a closed or reloaded page) is not
// worked out when its turn comes; a POST, which changes what the views show, still is.
func TestGoneClientSkipped(t *testing.T) {
	s, _, _ := testServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	h := func(r *http.Request) (any, error) { calls++; return 1, nil }
	b, err := s.locked(httptest.NewRequestWithContext(ctx, "GET", "/api/functions", nil), h)
	var ae *apiError
	if calls != 0 || !errors.As(err, &ae) || ae.code != http.StatusServiceUnavailable {
		t.Errorf("a GET whose client is gone: %d calls, answer %q, error %v; want no call and a 503", calls, b, err)
	}
	if _, err := s.locked(httptest.NewRequestWithContext(ctx, "POST", "/api/filter", nil), h); err != nil || calls != 1 {
		t.Errorf("a POST whose client is gone: %d calls, error %v; want it done", calls, err)
	}
	if b, err := s.locked(httptest.NewRequest("GET", "/api/functions", nil), h); err != nil || calls != 2 || string(b) != "1" {
		t.Errorf("a GET: %d calls, answer %q, error %v", calls, b, err)
	}
}
