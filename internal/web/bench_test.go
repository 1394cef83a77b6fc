package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"er/internal/synth"
)

// BenchmarkViews1M measures each view's answer on an experiment of 1 million samples and 20,000
// functions (internal/synth: a realistic call graph, 16 threads, 60 s, five phases): the time from request to the last byte of JSON, with the profile already analysed
// (as after the page's first view). Aim: every view under 300 ms. "filter" is a time range set
// and the function list computed again under it, which analyses the experiment again.
func BenchmarkViews1M(b *testing.B) {
	s, ts := benchServer(b, bigExperiment(b, 1_000_000))
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

// bigExperiment writes the benchmarks' synthetic experiment of n samples by 16 threads over 60 s,
// in 20,000 functions and 50,000 distinct stacks, and returns its path.
func bigExperiment(b *testing.B, n int) string {
	exp := filepath.Join(b.TempDir(), "big.1.er")
	if err := synth.Write(exp, synth.Spec{Samples: n, Functions: 20_000, Threads: 16, Stacks: 50_000,
		Seed: 1, Duration: 60_000_000_000, Interval: 1_009_000}); err != nil {
		b.Fatal(err)
	}
	return exp
}

// benchServer opens exp and serves it, each request carrying the token.
func benchServer(b *testing.B, exp string) (*Server, *httptest.Server) {
	s, err := Open([]string{exp})
	if err != nil {
		b.Fatal(err)
	}
	return s, httptest.NewServer(tokened(s))
}

// BenchmarkFilterDelay measures how long one page's costly filter holds up another page. Page A
// posts a 7 KB filter of 200 FNAME(...) SOME IN USTACK terms, on an experiment of 1.2 million
// samples in 20,000 functions and 50,000 stacks (internal/synth), or on the experiment
// $ER_FILTER_EXP (the terms then name its hottest functions); meanwhile page B asks for its views
// (functions, call tree, callers, overview, flame graph, timeline) and page C sets time ranges, over
// and over. It prints A's filter time and, for each of the others' requests, its answer time
// (median, slowest, how many) alone, during A's filter, and beside a goroutine that only spins for
// as long (what A's CPU time alone costs them: on this project's shared machine that is most of it);
// and the delay, the largest median during A's filter less the same beside the spinner: what A
// holds the others up by, besides taking a CPU (aim, under 100 ms); and how long goroutines waited
// on locks in all while A's filter ran. Run it with -benchtime=1x.
func BenchmarkFilterDelay(b *testing.B) {
	exp := os.Getenv("ER_FILTER_EXP")
	if exp == "" {
		exp = bigExperiment(b, 1_200_000)
	}
	s, ts := benchServer(b, exp)
	defer ts.Close()
	do := func(id, method, path, body string) time.Duration {
		t0 := time.Now()
		code, ans, err := clientDo(http.DefaultClient, ts, id, method, path, body)
		if err != nil || code != 200 {
			b.Fatalf("page %s: %s %s: %d %.300s %v", id, method, path, code, ans, err)
		}
		return time.Since(t0)
	}
	var fl table
	if code, ans, err := clientDo(http.DefaultClient, ts, "", "GET", "/api/functions", ""); err != nil || code != 200 || json.Unmarshal([]byte(ans), &fl) != nil {
		b.Fatalf("%d %.300s %v", code, ans, err)
	}
	var terms []string
	if os.Getenv("ER_FILTER_EXP") == "" {
		verbs := []string{"parse", "process", "lookup", "insert", "remove", "flush", "encode", "decode", "read", "write"}
		for i := range 200 {
			terms = append(terms, fmt.Sprintf(`FNAME(".*%s%d") SOME IN USTACK`, verbs[i%len(verbs)], i))
		}
	} else {
		for i, r := range fl.Rows[1:] {
			if len(terms) == 200 {
				break
			}
			n := r.Name
			if len(n) > 16 {
				n = n[:16]
			}
			terms = append(terms, fmt.Sprintf(`FNAME("%s.*%d.*") SOME IN USTACK`, regexp.QuoteMeta(n), i%10))
		}
	}
	expr := strings.Join(terms, " || ")
	body, _ := json.Marshal(map[string]string{"expr": expr})
	b.Logf("%s: %d functions; the filter: %d terms, %d bytes", filepath.Base(exp), fl.Matched-1, len(terms), len(body))
	top := fl.Rows[1].ID
	// Page B looks at its views, whose answers it has (a user going from tab to tab); page C sets a
	// new time range each time, and B's views are computed again for it.
	views := [][4]string{
		{"page-bbbb", "GET", "/api/functions", ""},
		{"page-bbbb", "GET", "/api/tree?node=0&hot=1", ""},
		{"page-bbbb", "GET", fmt.Sprintf("/api/callers?f=%d", top), ""},
		{"page-bbbb", "GET", "/api/overview", ""},
		{"page-bbbb", "GET", "/api/flame", ""},
		{"page-bbbb", "GET", "/api/timeline?t0=0&t1=60000000000&w=1200", ""},
		{"page-cccc", "POST", "/api/filter", ""},
	}
	dur := s.duration()
	k := 0
	// bRequest makes the next request of B or C and returns how long it took and which it was.
	bRequest := func() (time.Duration, string) {
		v := views[k%len(views)]
		k++
		if v[1] == "POST" {
			a := dur / 100 * int64(k%50)
			v[3] = fmt.Sprintf(`{"range":[%d,%d]}`, a, a+dur/10)
		}
		return do(v[0], v[1], v[2], v[3]), v[1] + " " + v[2]
	}
	type sample struct {
		d    time.Duration
		what string
	}
	// until makes B's requests until done is closed (or n of them, when done is nil).
	until := func(done <-chan struct{}, n int) []sample {
		var out []sample
		for i := 0; done != nil || i < n; i++ {
			if done != nil {
				select {
				case <-done:
					return out
				default:
				}
			}
			d, w := bRequest()
			out = append(out, sample{d, w})
		}
		return out
	}
	// summary is the median and the slowest of the samples of one request (what; "" for all).
	summary := func(ss []sample, what string) (median, slowest time.Duration, n int) {
		var ds []time.Duration
		for _, x := range ss {
			if what == "" || x.what == what {
				ds = append(ds, x.d)
			}
		}
		if len(ds) == 0 {
			return 0, 0, 0
		}
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)-1], len(ds)
	}
	defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(1)) // every wait on a lock, for mutexWait
	for b.Loop() {
		until(nil, 2*len(views)) // warm: every view computed once
		alone := until(nil, 5*len(views))
		aDone, aTime := make(chan struct{}), time.Duration(0)
		waited := mutexWait()
		go func() { aTime = do("page-aaaa", "POST", "/api/filter", string(body)); close(aDone) }()
		during := until(aDone, 0)
		waited = mutexWait() - waited
		// B again, beside a goroutine that only spins as long as A's filter ran: the CPU that A took
		// from B, without anything A holds.
		spinDone := make(chan struct{})
		go func() {
			time.Sleep(aTime)
			close(spinDone)
		}()
		go func() {
			for n := 0; ; n++ {
				if n%1024 == 0 {
					select {
					case <-spinDone:
						return
					default:
					}
				}
			}
		}()
		spin := until(spinDone, 0)
		b.Logf("page A's filter: %.3f s", aTime.Seconds())
		worst, worstWhat := time.Duration(0), ""
		for _, v := range append([][4]string{{"", "", "", ""}}, views...) {
			what := strings.TrimSpace(v[1] + " " + v[2])
			am, ax, an := summary(alone, what)
			dm, dx, dn := summary(during, what)
			sm, sx, sn := summary(spin, what)
			if what == "" {
				what = "every request"
			} else if dm-sm > worst {
				worst, worstWhat = dm-sm, what
			}
			b.Logf("%s: alone %.1f ms median, %.1f ms slowest (%d); during A's filter %.1f, %.1f (%d); beside the spinner %.1f, %.1f (%d)",
				what, ms(am), ms(ax), an, ms(dm), ms(dx), dn, ms(sm), ms(sx), sn)
		}
		_, dx, _ := summary(during, "")
		_, sx, _ := summary(spin, "")
		_, ax, _ := summary(alone, "")
		b.Logf("A's filter delayed the other pages' requests by %.1f ms at most (%s, medians during A's filter less beside the spinner); their slowest answer: %.1f ms during A's filter, %.1f ms beside the spinner, %.1f ms alone",
			ms(worst), worstWhat, ms(dx), ms(sx), ms(ax))
		b.Logf("while A's filter ran, goroutines waited %.3f ms in all on locks (sync.Mutex, RWMutex: the mutex profile)", ms(waited))
		b.ReportMetric(aTime.Seconds(), "A-filter-s")
		b.ReportMetric(ms(worst), "delay-ms")
		b.ReportMetric(ms(waited), "lock-wait-ms")
		b.ReportMetric(ms(dx), "B-during-max-ms")
		b.ReportMetric(ms(sx), "B-spin-max-ms")
		if code, _, _ := clientDo(http.DefaultClient, ts, "page-aaaa", "POST", "/api/filter", `{}`); code != 200 {
			b.Fatal("clearing page A's filter")
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// mutexWait is how long the process's goroutines have waited on sync.Mutex and RWMutex so far, from
// the mutex profile (which the caller has record every event: runtime.SetMutexProfileFraction(1)).
func mutexWait() time.Duration {
	var buf strings.Builder
	pprof.Lookup("mutex").WriteTo(&buf, 1)
	var cycles, perSecond float64
	for _, l := range strings.Split(buf.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "cycles/second="); ok {
			perSecond, _ = strconv.ParseFloat(v, 64)
			continue
		}
		if f := strings.Fields(l); len(f) > 2 && f[2] == "@" {
			c, _ := strconv.ParseFloat(f[0], 64)
			cycles += c
		}
	}
	if perSecond == 0 {
		return 0
	}
	return time.Duration(cycles / perSecond * 1e9)
}
