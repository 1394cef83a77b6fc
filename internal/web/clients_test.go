package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientDo sends one request as the page named id ("": none) and returns its status and body.
func clientDo(c *http.Client, ts *httptest.Server, id, method, path, body string) (int, string, error) {
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if id != "" {
		req.Header.Set("X-Er-Client", id)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// viewCase is a view a page sets: its metrics, filter and sort.
type viewCase struct{ metrics, filter, sort string }

// viewCases are 36 views: six filters (none, time ranges, threads, a call stack, both), three
// sorts and two metric lists.
func viewCases() []viewCase {
	var cs []viewCase
	for _, f := range []string{"", `{"range":[0,1000000000]}`, `{"expr":"THRID == 1"}`, `{"expr":"THRID == 2"}`,
		`{"expr":"INSTK(leafA)"}`, `{"range":[1000000000,2000000000],"expr":"THRID == 1"}`} {
		for _, so := range []string{"", "name", "i.totalcpu"} {
			for _, m := range []string{"", `{"spec":"e.%totalcpu:i.totalcpu:name"}`} {
				cs = append(cs, viewCase{m, f, so})
			}
		}
	}
	return cs
}

// viewAnswers are the requests whose answers depend on the view.
var viewAnswers = []string{"/api/functions", "/api/tree?node=0&hot=1", "/api/flame", "/api/overview", "/api/table?cmd=thread_list"}

// setView sets case c in the view of page id.
func setView(c *http.Client, ts *httptest.Server, id string, vc viewCase) error {
	steps := [][3]string{}
	if vc.metrics != "" {
		steps = append(steps, [3]string{"POST", "/api/metrics", vc.metrics})
	}
	if vc.filter != "" {
		steps = append(steps, [3]string{"POST", "/api/filter", vc.filter})
	}
	if vc.sort != "" {
		steps = append(steps, [3]string{"GET", "/api/functions?limit=1&sort=" + vc.sort, ""})
	}
	for _, st := range steps {
		if code, body, err := clientDo(c, ts, id, st[0], st[1], st[2]); err != nil || code != 200 {
			return fmt.Errorf("page %s: %s %s %s: %d %.200s %v", id, st[0], st[1], st[2], code, body, err)
		}
	}
	return nil
}

// TestViewsPerClient has 200 pages at once set their own views (36 of them: filters, sorts, metric
// lists) and, once every page has set its view, ask for the views' data: each must get the answers
// of its own view, as a page alone with that view gets them, whatever the others set. Before, the
// Analyzer had one view: each page saw the filter, sort and metrics that some other page set last.
func TestViewsPerClient(t *testing.T) {
	_, ts, _ := testServer(t)
	cases := viewCases()
	// Each case alone, in a page of its own, one after the other.
	want := make([]map[string]string, len(cases))
	distinct := map[string]bool{}
	for i, vc := range cases {
		id := fmt.Sprintf("alone-%04d", i)
		if err := setView(http.DefaultClient, ts, id, vc); err != nil {
			t.Fatal(err)
		}
		want[i] = map[string]string{}
		for _, p := range viewAnswers {
			code, body, err := clientDo(http.DefaultClient, ts, id, "GET", p, "")
			if err != nil || code != 200 {
				t.Fatalf("page %s alone: GET %s: %d %.200s %v", id, p, code, body, err)
			}
			want[i][p] = body
		}
		distinct[want[i]["/api/functions"]] = true
	}
	if len(distinct) < 20 {
		t.Fatalf("the %d views give only %d distinct function lists: the test cannot tell them apart", len(cases), len(distinct))
	}
	const pages = 200
	var set, asked sync.WaitGroup
	set.Add(pages)
	errs := make(chan string, pages*len(viewAnswers))
	for i := range pages {
		asked.Add(1)
		go func() {
			defer asked.Done()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			id := fmt.Sprintf("page-%04d", i)
			vc := cases[i%len(cases)]
			if err := setView(c, ts, id, vc); err != nil {
				errs <- err.Error()
			}
			set.Done()
			set.Wait() // every page has set its view before any asks for its data
			for _, p := range viewAnswers {
				code, body, err := clientDo(c, ts, id, "GET", p, "")
				if err != nil || code != 200 || body != want[i%len(cases)][p] {
					errs <- fmt.Sprintf("page %s (metrics %s, filter %s, sort %q): GET %s: %d %v; differs from the view alone: %s",
						id, vc.metrics, vc.filter, vc.sort, p, code, err, firstDiff(body, want[i%len(cases)][p]))
				}
			}
		}()
	}
	asked.Wait()
	close(errs)
	reportErrors(t, errs, pages*len(viewAnswers), "answers were not their page's view")
}

// TestViewsBounded: beyond the views' limit the least recently used is dropped; its page is then
// answered 409 {"view": "gone"} (app.js draws a new id and sets its view again), and a new id gets
// a view with the defaults.
func TestViewsBounded(t *testing.T) {
	s, ts, _ := testServer(t)
	s.sh.views.limit = 3
	for i := range 4 {
		id := fmt.Sprintf("page-%04d", i)
		if code, body, err := clientDo(http.DefaultClient, ts, id, "POST", "/api/filter", `{"expr":"THRID == 1"}`); err != nil || code != 200 {
			t.Fatalf("page %s: %d %s %v", id, code, body, err)
		}
	}
	code, body, err := clientDo(http.DefaultClient, ts, "page-0000", "GET", "/api/overview", "")
	if err != nil || code != http.StatusConflict || !strings.Contains(body, `"view":"gone"`) || !strings.Contains(body, "reload the page") {
		t.Errorf("the page whose view was dropped: %d %s %v; want 409 with view gone", code, body, err)
	}
	for _, id := range []string{"page-0003", "page-0001"} {
		if code, body, _ := clientDo(http.DefaultClient, ts, id, "GET", "/api/overview", ""); code != 200 || !strings.Contains(body, `"text":"(THRID == 1)"`) {
			t.Errorf("page %s, kept: %d %.300s", id, code, body)
		}
	}
	if code, body, _ := clientDo(http.DefaultClient, ts, "page-0009", "GET", "/api/overview", ""); code != 200 || !strings.Contains(body, `"text":""`) {
		t.Errorf("a new page: %d %.300s", code, body)
	}
	if n := s.sh.views.lru.Len(); n != 3 {
		t.Errorf("%d views kept, want 3", n)
	}
	for _, bad := range []string{"short", strings.Repeat("x", 65), "has space!", "<script>"} {
		if code, body, _ := clientDo(http.DefaultClient, ts, bad, "GET", "/api/overview", ""); code != 400 || !strings.Contains(body, "is not a client id") {
			t.Errorf("client id %q: %d %s", bad, code, body)
		}
	}
}

// gateCtx is a request's context whose first Err blocks until release is closed, after closing
// entered: erprint looks at the context of the request whose filter it evaluates from inside the
// evaluation, so a test knows when a filter is being evaluated and holds it there. With cancel, Err
// then says the client went away.
type gateCtx struct {
	context.Context
	once             sync.Once
	entered, release chan struct{}
	cancel           bool
}

func newGate(cancel bool) *gateCtx {
	return &gateCtx{Context: context.Background(), entered: make(chan struct{}), release: make(chan struct{}), cancel: cancel}
}

func (c *gateCtx) Err() error {
	c.once.Do(func() { close(c.entered); <-c.release })
	if c.cancel {
		return context.Canceled
	}
	return nil
}

// gatedFilter posts the filter body as page id, in the context gate, to h.
func gatedFilter(h http.Handler, gate *gateCtx, id, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/api/filter", strings.NewReader(body)).WithContext(gate)
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Er-Client", id)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestFilterHoldsUpNoOne holds page A's filter in the middle of its evaluation and has page B set
// a filter of its own and ask for every kind of view (those that refilter, and those computed on
// first use under the analysis' lock: source, disassembly, load objects): each of B's requests
// must be answered while A's filter is still being evaluated. Before, one lock of the server (and
// the analysis' lock during Refilter) was held for the whole of a filter: one 7 KB filter held
// every page for 43 s.
func TestFilterHoldsUpNoOne(t *testing.T) {
	s, ts, _ := testServer(t)
	h := tokened(s)
	var fl table
	get(t, ts, "/api/functions", 200, &fl)
	work := findRow(t, fl.Rows, "work").ID
	gate := newGate(false)
	aDone := make(chan *httptest.ResponseRecorder, 1)
	go func() { aDone <- gatedFilter(h, gate, "page-aaaa", `{"expr":"INSTK(work) && THRID == 1"}`) }()
	released := false
	release := func() {
		if !released {
			released = true
			close(gate.release)
		}
	}
	defer release()
	select {
	case <-gate.entered: // A's filter is being evaluated, and stays so until released
	case rec := <-aDone:
		t.Fatalf("page A's filter was answered (%d %s) without being evaluated under its request's context", rec.Code, rec.Body.String())
	}
	bDone := make(chan []string, 1)
	go func() {
		var errs []string
		for _, rq := range [][3]string{
			{"POST", "/api/filter", `{"expr":"INSTK(leafA)"}`},
			{"GET", "/api/functions", ""},
			{"GET", "/api/tree?node=0&hot=1", ""},
			{"GET", "/api/flame", ""},
			{"GET", fmt.Sprintf("/api/source?f=%d", work), ""},
			{"GET", fmt.Sprintf("/api/disasm?f=%d", work), ""},
			{"GET", "/api/table?cmd=lobjects", ""},
			{"GET", "/api/timeline?t0=0&t1=2000002001&w=50", ""},
			{"POST", "/api/filter", `{"range":[0,1000000000]}`},
			{"GET", "/api/overview", ""},
		} {
			code, body, err := clientDo(http.DefaultClient, ts, "page-bbbb", rq[0], rq[1], rq[2])
			if err != nil || code >= 500 {
				errs = append(errs, fmt.Sprintf("page B: %s %s: %d %.200s %v", rq[0], rq[1], code, body, err))
			}
		}
		bDone <- errs
	}()
	select {
	case errs := <-bDone:
		for _, e := range errs {
			t.Error(e)
		}
	case rec := <-aDone:
		t.Fatalf("page A's filter was answered (%d %s) while held in its evaluation", rec.Code, rec.Body.String())
	case <-time.After(2 * time.Minute): // a deadlock guard, not a figure: B's requests take milliseconds
		t.Fatal("page B's requests were not answered while page A's filter was being evaluated: something A holds keeps B waiting")
	}
	select {
	case rec := <-aDone:
		t.Fatalf("page A's filter was answered (%d %s) while held in its evaluation", rec.Code, rec.Body.String())
	default:
	}
	release()
	rec := <-aDone
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"text":"(INSTK(work) \u0026\u0026 THRID == 1)"`) {
		t.Errorf("page A's filter, released: %d %s", rec.Code, rec.Body.String())
	}
	var a, b struct {
		Filter filterState `json:"filter"`
	}
	if code, body, _ := clientDo(http.DefaultClient, ts, "page-aaaa", "GET", "/api/overview", ""); code != 200 || json.Unmarshal([]byte(body), &a) != nil || a.Filter.Expr != "INSTK(work) && THRID == 1" {
		t.Errorf("page A's view after its filter: %d %.300s", code, body)
	}
	if code, body, _ := clientDo(http.DefaultClient, ts, "page-bbbb", "GET", "/api/overview", ""); code != 200 || json.Unmarshal([]byte(body), &b) != nil || b.Filter.Text != "TSTAMP >= 0 && TSTAMP < 1000000000 && (INSTK(leafA))" {
		t.Errorf("page B's view: %d %.300s", code, body)
	}
}

// TestFilterStopsWhenClientGoes: a filter whose client goes away while it is evaluated stops, is
// answered 503, and leaves the page's view as it was (its filter and profile).
func TestFilterStopsWhenClientGoes(t *testing.T) {
	s, ts, _ := testServer(t)
	h := tokened(s)
	if code, body, _ := clientDo(http.DefaultClient, ts, "page-cccc", "POST", "/api/filter", `{"expr":"THRID == 2"}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	_, before, _ := clientDo(http.DefaultClient, ts, "page-cccc", "GET", "/api/functions", "")
	gate := newGate(true)
	close(gate.release)
	rec := gatedFilter(h, gate, "page-cccc", `{"expr":"INSTK(leafA)"}`)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "the client went away") || !strings.Contains(rec.Body.String(), `the filter stays \"THRID == 2\"`) {
		t.Errorf("a filter whose client went away: %d %s", rec.Code, rec.Body.String())
	}
	var ov struct {
		Filter filterState `json:"filter"`
	}
	if code, body, _ := clientDo(http.DefaultClient, ts, "page-cccc", "GET", "/api/overview", ""); code != 200 || json.Unmarshal([]byte(body), &ov) != nil || ov.Filter.Expr != "THRID == 2" {
		t.Errorf("the view after the filter stopped: %d %.300s", code, body)
	}
	if _, after, _ := clientDo(http.DefaultClient, ts, "page-cccc", "GET", "/api/functions", ""); after != before {
		t.Errorf("the function list after the filter stopped: %s", firstDiff(after, before))
	}
}

// TestViewsReleaseProfiles: a view that maxLive others have been used since drops its profiles
// but keeps its filter, metrics and sort; asked again, it answers as before.
func TestViewsReleaseProfiles(t *testing.T) {
	s, ts, _ := testServer(t)
	if err := setView(http.DefaultClient, ts, "page-0000", viewCase{`{"spec":"e.%totalcpu:i.totalcpu:name"}`, `{"expr":"THRID == 1"}`, "name"}); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, p := range viewAnswers {
		_, before[p], _ = clientDo(http.DefaultClient, ts, "page-0000", "GET", p, "")
	}
	view := func() *Server {
		s.sh.views.mu.Lock()
		defer s.sh.views.mu.Unlock()
		return s.sh.views.byID["page-0000"].Value.(*viewEntry).v
	}
	if view().tree == nil {
		t.Fatal("page 0's view has no call tree after its call tree was asked for")
	}
	for i := 1; i <= maxLive; i++ {
		if code, body, _ := clientDo(http.DefaultClient, ts, fmt.Sprintf("page-%04d", i), "GET", "/api/overview", ""); code != 200 {
			t.Fatalf("page %d: %d %s", i, code, body)
		}
	}
	if v := view(); v.tree != nil || v.eng.Filter() != "(THRID == 1)" {
		t.Errorf("page 0, %d views later: call tree kept %v, filter %q", maxLive, v.tree != nil, v.eng.Filter())
	}
	for _, p := range viewAnswers {
		if _, after, _ := clientDo(http.DefaultClient, ts, "page-0000", "GET", p, ""); after != before[p] {
			t.Errorf("page 0, its profile computed again: GET %s: %s", p, firstDiff(after, before[p]))
		}
	}
}
