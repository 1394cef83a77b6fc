package browsertests

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The shared fixture, made once by TestMain: er built from this checkout, testdata/guiprog.c
// compiled, one experiment of it, and er analyzer serving that experiment.
var (
	tmp       string // the fixture's directory
	erBin     string // TMP/er
	expDir    string // TMP/gui.1.er
	serverURL string // er analyzer's URL
	chromium  string // the browser's path; "" when there is none
	setupErr  error  // why the fixture could not be made
	withCXX   bool   // the program has the C++ template (g++ was there)

	// phase holds the program's two phases, [start, end] in ns since the experiment's start:
	// phase[0] runs alpha on the main thread, phase[1] beta.
	phase [2][2]int64
)

// The view tabs every experiment has (the contract's list; heap, sync and io come with their data).
var allViews = []string{"overview", "functions", "callers", "calltree", "flame", "source", "disasm", "timeline",
	"threads", "cpus", "samples", "objects"}

const installHint = "install it with: apt-get install -y chromium"

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	chromium = findChromium()
	if chromium == "" {
		return m.Run() // every test skips, or fails under ER_BROWSER_TESTS=1
	}
	var err error
	if tmp, err = os.MkdirTemp("", "er-browsertests-"); err != nil {
		setupErr = err
		return m.Run()
	}
	defer os.RemoveAll(tmp)
	stop, err := setup()
	setupErr = err
	if stop != nil {
		defer stop()
	}
	return m.Run()
}

// findChromium is $ER_CHROMIUM when set (when it is not a file: none), else the Debian package's
// /usr/bin/chromium, else a Chromium on $PATH.
func findChromium() string {
	if p := os.Getenv("ER_CHROMIUM"); p != "" {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
		return ""
	}
	if st, err := os.Stat("/usr/bin/chromium"); err == nil && !st.IsDir() {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func command(dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out, nil
}

// setup builds er and the program, collects the experiment and starts er analyzer on it; stop ends
// er analyzer.
func setup() (stop func(), err error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	erBin = filepath.Join(tmp, "er")
	if _, err := command(root, nil, "go", "build", "-o", erBin, "./cmd/er"); err != nil {
		return nil, err
	}
	prog, err := buildProgram()
	if err != nil {
		return nil, err
	}
	// -p hi needs only perf events; where they are denied er profiles with its collector library,
	// which make builds into ../bin (the er built here is not beside it).
	var env []string
	if lib := filepath.Join(root, "bin", "libercollector.so"); os.Getenv("ER_COLLECTOR_LIB") == "" {
		if _, err := os.Stat(lib); err == nil {
			env = append(env, "ER_COLLECTOR_LIB="+lib)
		}
	}
	expDir = filepath.Join(tmp, "gui.1.er")
	out, err := command(tmp, env, erBin, "collect", "-o", expDir, "-p", "hi", prog, "0.6")
	if err != nil {
		return nil, err
	}
	if err := readPhases(string(out)); err != nil {
		return nil, err
	}
	return startAnalyzer()
}

// buildProgram compiles testdata/guiprog.c, with testdata/guitmpl.cpp when there is a g++.
func buildProgram() (string, error) {
	flags := []string{"-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-pthread"}
	src, err := filepath.Abs("testdata")
	if err != nil {
		return "", err
	}
	prog := filepath.Join(tmp, "guiprog")
	if _, err := exec.LookPath("g++"); err != nil {
		_, err := command(tmp, nil, "gcc", append(flags, "-DNO_CXX", "-o", prog, filepath.Join(src, "guiprog.c"))...)
		return prog, err
	}
	if _, err := command(tmp, nil, "gcc", append(flags, "-c", "-o", "guiprog.o", filepath.Join(src, "guiprog.c"))...); err != nil {
		return "", err
	}
	if _, err := command(tmp, nil, "g++", append(flags, "-c", "-o", "guitmpl.o", filepath.Join(src, "guitmpl.cpp"))...); err != nil {
		return "", err
	}
	if _, err := command(tmp, nil, "g++", "-pthread", "-o", prog, "guiprog.o", "guitmpl.o"); err != nil {
		return "", err
	}
	withCXX = true
	return prog, nil
}

// readPhases reads the program's "phaseN START END" lines (CLOCK_MONOTONIC ns) and makes them
// relative to the experiment's start, log.xml's start@perfNS.
func readPhases(out string) error {
	logXML, err := os.ReadFile(filepath.Join(expDir, "log.xml"))
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`<start\b[^>]*\bperfNS="(\d+)"`).FindSubmatch(logXML)
	if m == nil {
		return fmt.Errorf("no start@perfNS in %s/log.xml", expDir)
	}
	origin, _ := strconv.ParseInt(string(m[1]), 10, 64)
	lines := regexp.MustCompile(`(?m)^phase([12]) (\d+) (\d+)\s*$`).FindAllStringSubmatch(out, -1)
	if len(lines) != 2 {
		return fmt.Errorf("the program printed %d phase lines, want 2:\n%s", len(lines), out)
	}
	for _, l := range lines {
		i, _ := strconv.Atoi(l[1])
		a, _ := strconv.ParseInt(l[2], 10, 64)
		b, _ := strconv.ParseInt(l[3], 10, 64)
		phase[i-1] = [2]int64{a - origin, b - origin}
	}
	if !(0 <= phase[0][0] && phase[0][0] < phase[0][1] && phase[0][1] <= phase[1][0] && phase[1][0] < phase[1][1]) {
		return fmt.Errorf("phases %v (ns since the experiment's start, perfNS %d) out of order:\n%s", phase, origin, out)
	}
	return nil
}

// startAnalyzer runs er analyzer --no-browser on the experiment and reads its URL.
func startAnalyzer() (func(), error) {
	u, stop, err := analyzerOn(expDir)
	serverURL = u
	return stop, err
}

// analyzerOn runs er analyzer --no-browser on the experiments dirs and returns its URL.
func analyzerOn(dirs ...string) (string, func(), error) {
	cmd := exec.Command(erBin, append([]string{"analyzer", "--no-browser"}, dirs...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	urls := make(chan string, 1)
	go func() {
		defer close(urls)
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() { // read to the end, so that er analyzer never blocks on its stdout
			if l := sc.Text(); !found && strings.Contains(l, "http://") {
				f := strings.Fields(l)
				urls <- f[len(f)-1]
				found = true
			}
		}
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			return "", stop, fmt.Errorf("er analyzer ended without printing its URL; stderr:\n%s", stderr.String())
		}
		return u, stop, nil
	case <-time.After(60 * time.Second):
		return "", stop, fmt.Errorf("er analyzer printed no URL in 60 s; stderr:\n%s", stderr.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// need skips the test without Chromium (fails it under ER_BROWSER_TESTS=1), and fails it when the
// fixture could not be made.
func need(t *testing.T) {
	t.Helper()
	if chromium == "" {
		msg := "no Chromium for the browser tests (/usr/bin/chromium, or $ER_CHROMIUM): " + installHint
		if os.Getenv("ER_BROWSER_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if setupErr != nil {
		t.Fatalf("setting up the browser tests: %v", setupErr)
	}
}

// ---------- the page ----------

// page is one headless Chromium showing the Analyzer, for one test. JavaScript exceptions and
// console errors in it fail the test.
type page struct {
	t   *testing.T
	ctx context.Context

	mu   sync.Mutex
	errs []string
}

func newPage(t *testing.T) *page {
	t.Helper()
	// Chromium sometimes exits at its start on a busy machine ("chrome failed to start", with nothing
	// of its own said: 2 tests of one `make test` beside two CPU hogs): the browser is tried again,
	// up to three times, and every failed start is logged. What the page then does is the test.
	var err error
	for try := 1; try <= 3; try++ {
		var p *page
		if p, err = startPage(t); err == nil {
			return p
		}
		t.Logf("starting %s, try %d: %v", chromium, try, err)
		time.Sleep(time.Duration(try) * 500 * time.Millisecond)
	}
	t.Fatalf("starting %s: %v", chromium, err)
	return nil
}

// startPage starts a headless Chromium for newPage.
func startPage(t *testing.T) (*page, error) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 900), chromedp.Flag("hide-scrollbars", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	cctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(cctx, 60*time.Second)
	p := &page{t: t, ctx: ctx}
	chromedp.ListenTarget(cctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = ev.ExceptionDetails.Error() // with the exception's description and stack
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.APITypeError && ev.Type != runtime.APITypeAssert {
				return
			}
			var parts []string
			for _, a := range ev.Args {
				if len(a.Value) > 0 {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
		default:
			return
		}
		p.mu.Lock()
		p.errs = append(p.errs, msg)
		p.mu.Unlock()
	})
	if err := chromedp.Run(ctx); err != nil {
		cancelT()
		cancelC()
		cancelA()
		return nil, err
	}
	t.Cleanup(func() {
		p.checkErrors("at the end")
		cancelT()
		cancelC()
		cancelA()
	})
	return p, nil
}

// checkErrors fails the test on the page's JavaScript errors since the last check.
func (p *page) checkErrors(where string) {
	p.t.Helper()
	p.mu.Lock()
	errs := p.errs
	p.errs = nil
	p.mu.Unlock()
	for _, e := range errs {
		p.t.Errorf("JavaScript error in the page (%s): %s", where, e)
	}
}

func (p *page) run(what string, actions ...chromedp.Action) {
	p.t.Helper()
	if err := chromedp.Run(p.ctx, actions...); err != nil {
		p.checkErrors(what)
		p.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression into res.
func (p *page) eval(what, js string, res any) {
	p.t.Helper()
	p.run(what, chromedp.Evaluate(js, res))
}

// waitJS polls a JavaScript expression until it is true, for at most 20 s (generous: no timing
// is tested).
func (p *page) waitJS(what, expr string) {
	p.t.Helper()
	if !p.tryWaitJS(expr, 20*time.Second) {
		p.checkErrors(what)
		p.t.Fatalf("waiting for %s: %s is still false after 20 s", what, expr)
	}
}

// tryWaitJS polls a JavaScript expression for at most d; it says whether it came true.
func (p *page) tryWaitJS(expr string, d time.Duration) bool {
	p.t.Helper()
	end := time.Now().Add(d)
	for {
		var ok bool
		if err := chromedp.Run(p.ctx, chromedp.Evaluate("!!("+expr+")", &ok)); err != nil {
			p.t.Fatalf("evaluating %s: %v", expr, err)
		}
		if ok {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		select {
		case <-p.ctx.Done():
			p.t.Fatalf("evaluating %s: %v", expr, p.ctx.Err())
		case <-time.After(30 * time.Millisecond):
		}
	}
}

// waitView waits until the view has drawn its data and no request is in flight.
func (p *page) waitView(view string) {
	p.t.Helper()
	p.waitJS("view "+view+" ready", fmt.Sprintf(`document.querySelector("#view-%s")?.dataset.ready === "1" && document.body.dataset.busy === "0"`, view))
}

// open loads url and waits for view.
func (p *page) open(url, view string) {
	p.t.Helper()
	p.run("open "+url, chromedp.Navigate(url))
	p.waitView(view)
}

// tab clicks a view's tab and waits for the view.
func (p *page) tab(view string) {
	p.t.Helper()
	p.run("click the tab "+view, chromedp.Click(fmt.Sprintf(`#tabs button[data-view="%s"]`, view), chromedp.ByQuery))
	p.waitView(view)
}

// text is the text content of the element sel.
func (p *page) text(sel string) string {
	p.t.Helper()
	var s string
	p.eval("text of "+sel, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? "<no element>"`, sel), &s)
	return s
}

func (p *page) count(sel string) int {
	p.t.Helper()
	var n int
	p.eval("count "+sel, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
	return n
}

// viewError fails the test when a view shows an error, or the status bar does.
func (p *page) viewError(view string) {
	p.t.Helper()
	var msg string
	p.eval("errors of "+view, fmt.Sprintf(`[...document.querySelectorAll("#view-%s .view-error, #view-%s .error-box, #message.error")].map(e => e.textContent).join("; ")`, view, view), &msg)
	if msg != "" {
		p.t.Errorf("view %s shows an error: %s", view, msg)
	}
}

// shot saves a full-page screenshot as name.png in $ER_SCREENSHOTS (default: the test's temporary
// directory).
func (p *page) shot(name string) {
	p.t.Helper()
	dir := os.Getenv("ER_SCREENSHOTS")
	if dir == "" {
		dir = p.t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	var buf []byte
	p.run("screenshot "+name, chromedp.FullScreenshot(&buf, 100)) // 100: PNG
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// typeInto replaces the text of an input and fires its input event, as typing does.
func (p *page) typeInto(sel, text string) {
	p.t.Helper()
	var ok bool
	p.eval("type into "+sel, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false;
		e.focus(); e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`, sel, text), &ok)
	if !ok {
		p.t.Fatalf("no %s", sel)
	}
}

// pageRow is a body row of a metrics table as the page shows it.
type pageRow struct {
	ID    int               `json:"id"` // data-id, -1 without
	Name  string            `json:"name"`
	HTML  string            `json:"html"` // the name cell's innerHTML
	Code  string            `json:"code"`
	Line  string            `json:"line"` // data-line
	Class []string          `json:"class"`
	Cells map[string]string `json:"cells"` // data-key -> data-value
}

func (r pageRow) is(class string) bool { return slices.Contains(r.Class, class) }

// rows reads the rows sel of a metrics table.
func (p *page) rows(sel string) []pageRow {
	p.t.Helper()
	var out []pageRow
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].map(tr => {
		const name = tr.querySelector("td.name"), code = tr.querySelector("td.code");
		return {
			id: tr.dataset.id === undefined || tr.dataset.id === "" ? -1 : +tr.dataset.id,
			name: name ? name.textContent : "", html: name ? name.innerHTML : "", code: code ? code.textContent : "", line: tr.dataset.line ?? "",
			class: [...tr.classList],
			cells: Object.fromEntries([...tr.querySelectorAll("td[data-key]")].map(td => [td.dataset.key, td.dataset.value ?? ""]))};
	})`, sel)
	p.eval("read "+sel, js, &out)
	return out
}

func (p *page) functions() []pageRow {
	p.t.Helper()
	return p.rows("#view-functions table.metrics tbody tr")
}

// value is the raw value of a cell.
func value(t *testing.T, r pageRow, key string) int64 {
	t.Helper()
	s, ok := r.Cells[key]
	if !ok {
		t.Fatalf("row %q has no cell %s (cells %v)", r.Name, key, r.Cells)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("row %q: data-value of %s is %q, not an integer", r.Name, key, s)
	}
	return v
}

func findRow(t *testing.T, rs []pageRow, name string) pageRow {
	t.Helper()
	if r, ok := lookRow(rs, name); ok {
		return r
	}
	t.Fatalf("no row %q among %d rows", name, len(rs))
	return pageRow{}
}

func lookRow(rs []pageRow, name string) (pageRow, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return pageRow{}, false
}

// ---------- er print ----------

// printRow is a row of er print -printmode json: its name, section and values (raw: ns for
// times) by column key.
type printRow struct {
	name, section string
	v             map[string]int64
}

// erPrint runs `er print -printmode json ARGS EXP` and returns the rows of its first table.
func erPrint(t *testing.T, args ...string) (keys []string, rows []printRow) {
	t.Helper()
	all := append(append([]string{"print", "-printmode", "json"}, args...), expDir)
	out, err := exec.Command(erBin, all...).Output()
	if err != nil {
		t.Fatalf("er %s: %v", strings.Join(all, " "), err)
	}
	var doc []struct { // one document: an entry per command, with its tables
		Tables []struct {
			Columns []struct {
				Key string `json:"key"`
			} `json:"columns"`
			Rows []struct {
				Name    string `json:"name"`
				Section string `json:"section"`
				Cells   []struct {
					V int64 `json:"v"`
				} `json:"cells"`
			} `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc) == 0 || len(doc[0].Tables) == 0 {
		t.Fatalf("er %s: %v:\n%s", strings.Join(all, " "), err, out)
	}
	tbl := doc[0].Tables[0]
	for _, c := range tbl.Columns {
		keys = append(keys, c.Key)
	}
	for _, r := range tbl.Rows {
		pr := printRow{name: r.Name, section: r.Section, v: map[string]int64{}}
		for j, k := range keys {
			pr.v[k] = r.Cells[j].V
		}
		rows = append(rows, pr)
	}
	return keys, rows
}

// raw reads a JSON number of er print: an integer count, or seconds with up to 9 decimals, as
// nanoseconds, exactly.
func raw(t *testing.T, s string) int64 {
	t.Helper()
	sec, frac, dot := strings.Cut(s, ".")
	if !dot {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("not a number: %q", s)
		}
		return v
	}
	if len(frac) > 9 {
		t.Fatalf("more than ns precision: %q", s)
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	if err1 != nil || err2 != nil || strings.HasPrefix(sec, "-") {
		t.Fatalf("not seconds: %q", s)
	}
	return a*1e9 + b
}

// compareRows checks the page's rows against er print's, row for row, value for value.
func compareRows(t *testing.T, what string, page []pageRow, keys []string, want []printRow) {
	t.Helper()
	if len(page) != len(want) {
		t.Errorf("%s: the page shows %d rows, er print %d", what, len(page), len(want))
	}
	bad := 0
	for i := range min(len(page), len(want)) {
		if page[i].Name != want[i].name {
			t.Errorf("%s: row %d is %q in the page, %q in er print", what, i, page[i].Name, want[i].name)
			bad++
		} else {
			for _, k := range keys {
				if got := value(t, page[i], k); got != want[i].v[k] {
					t.Errorf("%s: %s %s: %d in the page, %d in er print", what, page[i].Name, k, got, want[i].v[k])
					bad++
				}
			}
		}
		if bad > 20 {
			t.Fatalf("%s: too many differences", what)
		}
	}
}

// ---------- the tests ----------

// TestFunctionsMatchPrint checks the Functions view against er print -functions: the same rows
// in the same order with exactly the same values; then the same after sorting by a column and
// searching.
func TestFunctionsMatchPrint(t *testing.T) {
	need(t)
	p := newPage(t)
	p.open(serverURL, "functions")
	p.sortBy("e.totalcpu") // er print's default
	page := p.functions()
	keys, want := erPrint(t, "-functions")
	if len(page) == 0 || page[0].ID != 0 || page[0].Name != "<Total>" {
		t.Fatalf("the first row is not <Total> with data-id 0: %+v", page[:min(1, len(page))])
	}
	var heads []string
	p.eval("column keys", `[...document.querySelectorAll("#view-functions table.metrics th[data-key]:not(.name)")].map(th => th.dataset.key)`, &heads)
	if !slices.Equal(heads, keys) {
		t.Errorf("the page's columns %v, er print's %v", heads, keys)
	}
	compareRows(t, "functions", page, keys, want)
	t.Logf("Functions: %d rows, <Total> %d ns of CPU (%.3f s), all equal to er print's", len(page), value(t, page[0], "e.totalcpu"), float64(value(t, page[0], "e.totalcpu"))/1e9)
	for _, name := range []string{"alpha", "beta", "work", "leaf_a", "leaf_b", "leaf_g", "gamma_thread", "main"} {
		findRow(t, page, name)
	}
	// The C++ name is text: <, > and & are escaped in the HTML, and read back literally.
	if withCXX {
		var cxx pageRow
		for _, r := range page {
			if strings.Contains(r.Name, "accumulate<") {
				cxx = r
			}
		}
		switch {
		case cxx.Name == "":
			t.Errorf("no C++ template function accumulate<...> among the functions")
		case !strings.Contains(cxx.Name, "<int, unsigned long>") || !strings.Contains(cxx.Name, "&"):
			t.Errorf("the C++ name reads %q", cxx.Name)
		case !strings.Contains(cxx.HTML, "&lt;") || !strings.Contains(cxx.HTML, "&amp;") || strings.Contains(cxx.HTML, "<int"):
			t.Errorf("the C++ name's HTML is %q, want <, > and & escaped", cxx.HTML)
		default:
			t.Logf("C++ name shown literally: %s", cxx.Name)
		}
	}
	p.shot("functions")

	// Sort by inclusive time: a click on its header, and the order is er print -sort's.
	p.sortBy("i.totalcpu")
	defer p.sortBy("e.totalcpu") // back to the default for what this test does next
	var v []int64
	p.eval("inclusive times", `[...document.querySelectorAll('#view-functions table.metrics tbody tr td[data-key="i.totalcpu"]')].map(td => +td.dataset.value)`, &v)
	if !slices.IsSortedFunc(v, func(a, b int64) int { return cmp.Compare(b, a) }) {
		t.Errorf("sorted by i.totalcpu, the page shows %v", v)
	}
	keys, want = erPrint(t, "-sort", "i.totalcpu", "-functions")
	compareRows(t, "functions by i.totalcpu", p.functions(), keys, want)

	// Search: the rows whose names contain "leaf_", in the same order.
	p.typeInto("#func-search", "leaf_")
	p.waitJS("search leaf_", `(() => { const r = [...document.querySelectorAll("#view-functions table.metrics tbody tr")].filter(tr => tr.dataset.id !== "0");
		return r.length > 0 && r.every(tr => tr.querySelector("td.name").textContent.includes("leaf_")); })()`)
	p.waitView("functions")
	var found []pageRow
	for _, r := range p.functions() {
		if r.ID != 0 {
			found = append(found, r)
		}
	}
	var leaves []printRow
	for _, r := range want {
		if strings.Contains(r.name, "leaf_") {
			leaves = append(leaves, r)
		}
	}
	compareRows(t, `functions matching "leaf_"`, found, keys, leaves)
	p.typeInto("#func-search", "")
	p.waitJS("search cleared", fmt.Sprintf(`document.querySelectorAll("#view-functions table.metrics tbody tr").length === %d`, len(want)))
	p.waitView("functions")

	p.tab("overview")
	if s := p.text("#view-overview"); !strings.Contains(s, "guiprog") {
		t.Errorf("the overview does not name the target guiprog: %.300q", s)
	}
	p.shot("overview")
}

// TestClickThrough selects alpha and follows it through Callers-Callees, Source, Disassembly,
// Call Tree, Flame Graph and Timeline.
func TestClickThrough(t *testing.T) {
	need(t)
	p := newPage(t)
	p.open(serverURL, "functions")
	alpha := findRow(t, p.functions(), "alpha")
	sel := fmt.Sprintf(`#view-functions table.metrics tbody tr[data-id="%d"]`, alpha.ID)
	p.run("click alpha", chromedp.Click(sel+" td.name", chromedp.ByQuery))
	p.waitJS("alpha selected", `document.querySelector("#sel-func").textContent === "alpha"`)
	if n := p.count(`#view-functions tbody tr.selected[data-id="` + strconv.Itoa(alpha.ID) + `"]`); n != 1 {
		t.Errorf("after clicking alpha, %d rows tr.selected with its id", n)
	}

	// Double-click: Callers-Callees of alpha, equal to er print -csingle alpha.
	p.run("double-click alpha", chromedp.DoubleClick(sel+" td.name", chromedp.ByQuery))
	p.waitJS("the callers view", `location.hash.startsWith("#view=callers")`)
	p.waitView("callers")
	cc := p.rows("#view-callers table.metrics tbody tr[data-id]")
	keys, want := erPrint(t, "-csingle", "alpha")
	compareRows(t, "callers-callees of alpha", cc, keys, want)
	class := map[string]string{"Callers": "caller", "Stack Fragment": "center", "Callees": "callee"}
	var callers int64
	var callerNames []string
	center := pageRow{ID: -1}
	for i, r := range cc {
		if i < len(want) && !r.is(class[want[i].section]) {
			t.Errorf("callers-callees row %q has classes %v, er print puts it in %q", r.Name, r.Class, want[i].section)
		}
		switch {
		case r.is("center"):
			center = r
		case r.is("caller"):
			callers += value(t, r, "a.totalcpu")
			callerNames = append(callerNames, r.Name)
		}
	}
	if center.Name != "alpha" || center.ID != alpha.ID {
		t.Errorf("tr.center is %q (data-id %d), want alpha (%d)", center.Name, center.ID, alpha.ID)
	}
	if !slices.Contains(callerNames, "main") {
		t.Errorf("alpha's callers %v lack main", callerNames)
	}
	if callers != value(t, alpha, "i.totalcpu") {
		t.Errorf("alpha's callers' attributed times add up to %d ns, its inclusive time is %d ns", callers, value(t, alpha, "i.totalcpu"))
	}
	t.Logf("callers of alpha %v: %d ns = alpha's inclusive time", callerNames, callers)
	p.shot("callers")
	// A click on the caller main re-centres on it; a click on its callee alpha comes back.
	caller := findRow(t, cc, "main")
	p.run("click main", chromedp.Click(fmt.Sprintf(`#view-callers tbody tr.caller[data-id="%d"] td.name`, caller.ID), chromedp.ByQuery))
	p.waitJS("centred on main", `document.querySelector("#view-callers tr.center td.name")?.textContent === "main"`)
	p.waitView("callers")
	if s := p.text("#sel-func"); s != "main" {
		t.Errorf("#sel-func %q after clicking the caller main", s)
	}
	p.run("click alpha", chromedp.Click(fmt.Sprintf(`#view-callers tbody tr.callee[data-id="%d"] td.name`, alpha.ID), chromedp.ByQuery))
	p.waitJS("centred on alpha", `document.querySelector("#view-callers tr.center td.name")?.textContent === "alpha"`)
	p.waitView("callers")

	// Source: alpha's lines; its own loop is hot.
	p.tab("source")
	lines := p.rows("#view-source table.metrics tbody tr.line")
	var hot []string
	for _, r := range lines {
		if r.is("hot") {
			hot = append(hot, strings.TrimSpace(r.Code))
		}
	}
	if len(lines) < 5 || len(hot) == 0 {
		t.Errorf("source of alpha: %d lines tr.line, %d tr.hot", len(lines), len(hot))
	}
	if !slices.ContainsFunc(hot, func(s string) bool { return strings.Contains(s, "alpha's own loop") }) {
		t.Errorf("the hot lines of alpha %q lack its own loop", hot)
	}
	// Source rows have data-line; the hot line of alpha's own loop is that line of guiprog.c.
	numbered, loopLine := 0, sourceLine(t, "alpha's own loop")
	for _, r := range lines {
		if r.Line != "" {
			numbered++
		}
		if strings.Contains(r.Code, "alpha's own loop") && (r.Line != strconv.Itoa(loopLine) || !r.is("hot")) {
			t.Errorf("the row of alpha's own loop has data-line %q, classes %v; want line %d, hot", r.Line, r.Class, loopLine)
		}
	}
	if numbered < 5 {
		t.Errorf("source of alpha: %d rows with data-line", numbered)
	}
	p.shot("source")
	p.tab("disasm")
	if n, h := p.count("#view-disasm table.metrics tbody tr.line"), p.count("#view-disasm table.metrics tbody tr.hot"); n < 5 || h == 0 {
		t.Errorf("disassembly of alpha: %d rows tr.line, %d tr.hot", n, h)
	}
	p.shot("disasm")

	// Call tree: the hot path is open; the root's twisty closes and opens it.
	p.tab("calltree")
	open := p.count("#view-calltree .tree .node")
	if open < 5 {
		t.Errorf("call tree: %d nodes shown on load", open)
	}
	p.shot("calltree")
	// The hot path is open: the twisty of its first node after the root closes its subtree and
	// opens it again; then the same for the root, <Total>.
	var first string
	p.eval("the hot path's first node", `document.querySelectorAll("#view-calltree .tree .node")[1]?.dataset.node ?? ""`, &first)
	for _, node := range []struct{ name, sel string }{
		{"the first node of the hot path", fmt.Sprintf(`#view-calltree .tree .node[data-node="%s"]`, first)},
		{"the root <Total>", `#view-calltree .tree .node[data-id="0"]`},
	} {
		nodeSel := node.sel
		nodes := `document.querySelectorAll("#view-calltree .tree .node").length`
		before := p.count("#view-calltree .tree .node")
		if p.count(nodeSel) == 0 {
			t.Errorf("call tree: no node of %s among %d", node.name, before)
			continue
		}
		p.run("close "+node.name, chromedp.Click(nodeSel+" .twisty", chromedp.ByQuery))
		if !p.tryWaitJS(fmt.Sprintf("%s < %d", nodes, before), 10*time.Second) {
			t.Errorf("call tree: a click on the twisty of %s (%s .twisty, open, %d nodes shown) did not close it: %d nodes, the twisty reads %q",
				node.name, nodeSel, before, p.count("#view-calltree .tree .node"), p.text(nodeSel+" .twisty"))
			continue
		}
		closed := p.count("#view-calltree .tree .node")
		p.run("open "+node.name, chromedp.Click(nodeSel+" .twisty", chromedp.ByQuery))
		if !p.tryWaitJS(fmt.Sprintf("%s > %d", nodes, closed), 10*time.Second) {
			t.Errorf("call tree: a click on the twisty of %s (closed, %d nodes shown) did not open it", node.name, closed)
		}
		p.waitView("calltree")
		t.Logf("call tree: %d nodes; %s closed %d; open again %d", before, node.name, closed, p.count("#view-calltree .tree .node"))
	}
	p.checkErrors("call tree")

	// Flame graph: alpha has a box; the search marks it; a click zooms to it.
	p.tab("flame")
	box := fmt.Sprintf(`#flame-svg g.frame[data-id="%d"]`, alpha.ID)
	nbox := p.count("#flame-svg g.frame")
	if n := p.count(box); n == 0 {
		t.Fatalf("no flame graph box for alpha among %d boxes", nbox)
	}
	p.typeInto("#flame-search", "alpha")
	p.waitJS("alpha marked", fmt.Sprintf(`document.querySelector(%q)?.classList.contains("match")`, box))
	var marked []string
	p.eval("marked boxes", `[...document.querySelectorAll("#flame-svg g.frame.match")].map(g => g.dataset.id)`, &marked)
	if len(marked) == 0 || slices.ContainsFunc(marked, func(id string) bool { return id != strconv.Itoa(alpha.ID) }) {
		t.Errorf("searching alpha marks the boxes of functions %v, want only %d", marked, alpha.ID)
	}
	p.typeInto("#flame-search", "")
	p.shot("flame")
	width := fmt.Sprintf(`(() => { const b = document.querySelector(%q), s = document.querySelector("#flame-svg");
		return b && s ? b.getBoundingClientRect().width / s.getBoundingClientRect().width : 0; })()`, box+" rect")
	p.run("click alpha's box", chromedp.Click(box+" rect", chromedp.ByQuery))
	p.waitJS("zoomed to alpha", width+" > 0.97")
	p.waitView("flame")
	p.shot("flame-zoom")
	p.run("reset zoom", chromedp.Click("#flame-reset", chromedp.ByQuery))
	p.waitJS("zoom reset", width+" < 0.9")
	p.run("invert", chromedp.Click("#flame-invert", chromedp.ByQuery))
	p.waitView("flame")
	if n := p.count("#flame-svg g.frame"); n != nbox {
		t.Errorf("the icicle graph has %d boxes, the flame graph %d", n, nbox)
	}

	// Timeline: a canvas; hovering in phase 1 over the main thread shows a call stack.
	p.tab("timeline")
	var size []float64
	p.eval("canvas size", `(() => { const c = document.querySelector("#timeline-canvas"), r = c.getBoundingClientRect(); return [c.width, c.height, r.width, r.height]; })()`, &size)
	if len(size) != 4 || size[0] < 200 || size[1] < 40 || size[2] < 200 || size[3] < 40 {
		t.Fatalf("timeline canvas [width height cssWidth cssHeight] %v", size)
	}
	x, y := timelinePoint(p, firstRowEvent(p, phase[0][0], phase[0][1]))
	p.run("hover", chromedp.MouseEvent(input.MouseMoved, x, y))
	if !p.tryWaitJS(`/alpha|gamma_thread/.test(document.querySelector("#timeline-stack").textContent)`, 10*time.Second) {
		t.Errorf("hovering the timeline at (%.0f, %.0f), phase 1, first row: #timeline-stack reads %q", x, y, p.text("#timeline-stack"))
	}
	t.Logf("timeline stack in phase 1: %q", p.text("#timeline-stack"))
	// The program was recorded with microstates (er collect's default): each row has its thread-state
	// strip, whose colors the legend names.
	if !p.tryWaitJS(`/Thread state/.test(document.querySelector("#timeline-legend").textContent) && /User CPU/.test(document.querySelector("#timeline-legend").textContent)`, 5*time.Second) {
		t.Errorf("the timeline's legend does not name the thread states: %q", p.text("#timeline-legend"))
	}
	p.shot("timeline")

	for _, v := range []string{"threads", "cpus", "samples", "objects"} {
		p.tab(v)
		if n := p.count(fmt.Sprintf("#view-%s table.metrics tbody tr", v)); n == 0 {
			t.Errorf("%s: no rows", v)
		}
		p.viewError(v)
		p.shot(v)
	}
	p.tab("threads")
	if n := p.count("#view-threads table.metrics tbody tr"); n < 2 {
		t.Errorf("threads: %d rows, the program has 2 threads", n)
	}
}

// sourceLine is the number of the line of testdata/guiprog.c that contains text.
func sourceLine(t *testing.T, text string) int {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "guiprog.c"))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("no %q in testdata/guiprog.c", text)
	return 0
}

// timelinePoint is the page position over the timeline of time ns (since the experiment's
// start), in the first thread's row. The contract gives no geometry: it reads the page's own
// (TL: the label column, axis and row heights; state.tl.data: the shown time span and width).
func timelinePoint(p *page, ns int64) (float64, float64) {
	p.t.Helper()
	var xy []float64
	js := fmt.Sprintf(`(() => { if (typeof TL !== "object" || !state.tl || !state.tl.data) return [];
		const c = document.querySelector("#timeline-canvas"), d = state.tl.data;
		c.scrollIntoView({block: "nearest", inline: "nearest"});
		const r = c.getBoundingClientRect();
		return [r.left + TL.label + (%d - d.t0) / (d.t1 - d.t0) * d.w, r.top + TL.axis + TL.rowH / 2]; })()`, ns)
	p.eval("timeline geometry", js, &xy)
	if len(xy) != 2 {
		p.t.Fatal("the page has no TL / state.tl.data: the test cannot place the mouse on the timeline")
	}
	return xy[0], xy[1]
}

// firstRowEvent returns the time of the first timeline row's event nearest the middle of [a, b]
// (ns), as the page knows it: from the static report's table of events, or from the server's
// /api/event. The middle itself may fall in a gap between samples (the program was not running then,
// on a busy machine), where the page rightly says "No event here".
func firstRowEvent(p *page, a, b int64) int64 {
	p.t.Helper()
	var ns float64
	js := fmt.Sprintf(`(() => {
		const a = %d, b = %d, mid = Math.round((a + b) / 2);
		if (typeof STATIC === "object" && STATIC && STATIC["timeline-events"]) {
			const S = STATIC["timeline-events"], row = S.rows[0] || [];
			let best = -1;
			for (const k of row) {
				if (k < 0) continue;
				const t = S.events[k].time;
				if (t >= a && t <= b && (best < 0 || Math.abs(t - mid) < Math.abs(best - mid))) best = t;
			}
			return best;
		}
		const x = new XMLHttpRequest();
		x.open("GET", "/api/event?row=0&t=" + mid + "&tol=" + Math.round((b - a) / 2), false);
		x.setRequestHeader("X-Er-Token", TOKEN); // the page's token and view, as its own requests carry them
		x.setRequestHeader("X-Er-Client", CLIENT);
		x.send();
		const e = JSON.parse(x.responseText);
		return e.found ? e.time : -1; })()`, a, b)
	p.eval("an event of the first timeline row", js, &ns)
	if ns < 0 {
		p.t.Fatalf("the first timeline row has no event in [%d, %d] ns", a, b)
	}
	return int64(ns)
}

// sortBy sorts the functions by a column, a click on its header when it is not the sort already.
// The sort is the page's view, kept by er analyzer for this page (this tab) alone.
func (p *page) sortBy(key string) {
	p.t.Helper()
	p.tab("functions")
	sorted := fmt.Sprintf(`#view-functions table.metrics th.sorted[data-key="%s"]`, key)
	if p.count(sorted) == 1 {
		return
	}
	p.run("sort by "+key, chromedp.Click(fmt.Sprintf(`#view-functions table.metrics th[data-key="%s"]`, key), chromedp.ByQuery))
	p.waitJS("sorted by "+key, fmt.Sprintf(`document.querySelector(%q)`, sorted))
	p.waitView("functions")
}

// totals reads the Functions view.
func (p *page) totals() []pageRow {
	p.t.Helper()
	p.tab("functions")
	rs := p.functions()
	if len(rs) == 0 || rs[0].Name != "<Total>" {
		p.t.Fatalf("no <Total> row in %v", rs)
	}
	return rs
}

var rangeText = regexp.MustCompile(`TSTAMP\s*>=?\s*(\d+)\s*&&\s*TSTAMP\s*<=?\s*(\d+)`)

// filterRange reads #filter-text as a time range.
func (p *page) filterRange() (string, int64, int64) {
	p.t.Helper()
	s := p.text("#filter-text")
	m := rangeText.FindStringSubmatch(s)
	if m == nil {
		p.t.Fatalf("#filter-text %q is not a time range TSTAMP >= A && TSTAMP < B", s)
	}
	a, _ := strconv.ParseInt(m[1], 10, 64)
	b, _ := strconv.ParseInt(m[2], 10, 64)
	return s, a, b
}

func inclusive(t *testing.T, rs []pageRow, name string) int64 {
	t.Helper()
	if r, ok := lookRow(rs, name); ok {
		return value(t, r, "i.totalcpu")
	}
	return 0
}

// TestTimeRange filters to phase 1 by typing its range, and to phase 2 by dragging across the
// timeline: Functions then shows what er print shows under the same filter.
func TestTimeRange(t *testing.T) {
	need(t)
	p := newPage(t)
	p.open(serverURL, "functions")
	p.sortBy("e.totalcpu") // er print's default
	all := p.functions()
	keys, want := erPrint(t, "-functions")
	compareRows(t, "functions", all, keys, want)
	full := value(t, all[0], "e.totalcpu")
	alphaAll, betaAll := inclusive(t, all, "alpha"), inclusive(t, all, "beta")

	// Phase 1, typed in seconds with 9 decimals: the filter is that range in ns, exactly.
	a, b := phase[0][0], phase[0][1]
	p.tab("timeline")
	p.run("type phase 1",
		chromedp.SetValue("#range-start", fmt.Sprintf("%d.%09d", a/1e9, a%1e9), chromedp.ByQuery),
		chromedp.SetValue("#range-end", fmt.Sprintf("%d.%09d", b/1e9, b%1e9), chromedp.ByQuery),
		chromedp.Click("#range-apply", chromedp.ByQuery))
	p.waitJS("the filter", `document.querySelector("#filter-text").textContent !== ""`)
	text, fa, fb := p.filterRange()
	if fa != a || fb != b {
		t.Errorf("typed %d..%d ns, the filter is %q", a, b, text)
	}
	p.waitView("timeline")
	p.shot("range")
	rs := p.totals()
	keys, want = erPrint(t, "-filters", fmt.Sprintf("TSTAMP >= %d && TSTAMP <= %d", a, b), "-functions")
	compareRows(t, "functions in phase 1", rs, keys, want)
	part, alpha, beta := value(t, rs[0], "e.totalcpu"), inclusive(t, rs, "alpha"), inclusive(t, rs, "beta")
	t.Logf("phase 1 %q: total %d of %d ns; alpha %d of %d; beta %d of %d", text, part, full, alpha, alphaAll, beta, betaAll)
	if part >= full || alpha < alphaAll*9/10 || beta > betaAll/20 {
		t.Errorf("phase 1: total %d of %d ns, alpha %d of %d, beta %d of %d: want less, nearly all of alpha, little of beta",
			part, full, alpha, alphaAll, beta, betaAll)
	}
	p.shot("functions-range")

	// Clear it: the totals come back.
	p.tab("timeline")
	p.run("clear the range", chromedp.Click("#range-clear", chromedp.ByQuery))
	p.waitJS("no filter", `document.querySelector("#filter-text").textContent === ""`)
	p.waitView("timeline")
	rs = p.totals()
	keys, want = erPrint(t, "-functions")
	compareRows(t, "functions after clearing the range", rs, keys, want)

	// Phase 2 by dragging the mouse across the timeline, from 5% into it to 5% before its end.
	p.tab("timeline")
	n := phase[1][1] - phase[1][0]
	x0, y := timelinePoint(p, phase[1][0]+n/20)
	x1, _ := timelinePoint(p, phase[1][1]-n/20)
	p.run("drag", chromedp.ActionFunc(func(ctx context.Context) error {
		if err := input.DispatchMouseEvent(input.MousePressed, x0, y).WithButton(input.Left).WithButtons(1).WithClickCount(1).Do(ctx); err != nil {
			return err
		}
		for i := 1; i <= 10; i++ {
			x := x0 + (x1-x0)*float64(i)/10
			if err := input.DispatchMouseEvent(input.MouseMoved, x, y).WithButton(input.Left).WithButtons(1).Do(ctx); err != nil {
				return err
			}
		}
		return input.DispatchMouseEvent(input.MouseReleased, x1, y).WithButton(input.Left).WithClickCount(1).Do(ctx)
	}))
	p.waitJS("the filter", `document.querySelector("#filter-text").textContent !== ""`)
	text, fa, fb = p.filterRange()
	if fa < phase[1][0] || fa > phase[1][0]+n/10 || fb < phase[1][1]-n/10 || fb > phase[1][1] {
		t.Errorf("dragged over %d..%d ns, the filter is %q", phase[1][0]+n/20, phase[1][1]-n/20, text)
	}
	p.waitView("timeline")
	p.shot("range-drag")
	rs = p.totals()
	keys, want = erPrint(t, "-filters", text, "-functions")
	compareRows(t, "functions in the dragged range", rs, keys, want)
	part, alpha, beta = value(t, rs[0], "e.totalcpu"), inclusive(t, rs, "alpha"), inclusive(t, rs, "beta")
	t.Logf("dragged %q: total %d of %d ns; alpha %d of %d; beta %d of %d", text, part, full, alpha, alphaAll, beta, betaAll)
	if part >= full || alpha > alphaAll/50 || beta < betaAll*6/10 {
		t.Errorf("dragged over phase 2: total %d of %d ns, alpha %d of %d, beta %d of %d: want less, none of alpha, most of beta",
			part, full, alpha, alphaAll, beta, betaAll)
	}
	p.tab("timeline")
	p.run("clear the range", chromedp.Click("#range-clear", chromedp.ByQuery))
	p.waitJS("no filter", `document.querySelector("#filter-text").textContent === ""`)
	p.waitView("timeline")
	if got := value(t, p.totals()[0], "e.totalcpu"); got != full {
		t.Errorf("after clearing the range: <Total> %d ns, want %d", got, full)
	}
}

// TestViewsRender visits every tab: each view draws (data-ready="1") without an error; the URL's
// hash follows, and restores the view and selection.
func TestViewsRender(t *testing.T) {
	need(t)
	p := newPage(t)
	p.open(serverURL+"#view=overview", "overview")
	var views []string
	p.eval("tabs", `[...document.querySelectorAll("#tabs button[data-view]")].map(b => b.dataset.view)`, &views)
	for _, v := range allViews {
		if !slices.Contains(views, v) {
			t.Errorf("no tab %s among %v", v, views)
		}
	}
	// The views of a function need one selected: alpha, as a user would pick it first.
	p.tab("functions")
	alpha := findRow(t, p.functions(), "alpha")
	p.run("click alpha", chromedp.Click(fmt.Sprintf(`#view-functions tbody tr[data-id="%d"] td.name`, alpha.ID), chromedp.ByQuery))
	p.waitJS("alpha selected", `document.querySelector("#sel-func").textContent === "alpha"`)
	for _, v := range views {
		p.tab(v)
		p.checkErrors("view " + v)
		p.viewError(v)
		var shown []string
		p.eval("shown views", `[...document.querySelectorAll("main section[id^=view-]")].filter(s => s.getClientRects().length > 0).map(s => s.id)`, &shown)
		if !slices.Equal(shown, []string{"view-" + v}) {
			t.Errorf("with tab %s the sections shown are %v", v, shown)
		}
		if h := p.text("#view-" + v); strings.TrimSpace(h) == "" {
			t.Errorf("view %s is empty", v)
		}
		var hash string
		p.eval("hash", `location.hash`, &hash)
		if !strings.HasPrefix(hash, "#view="+v) {
			t.Errorf("after opening %s the URL's hash is %q", v, hash)
		}
		p.shot(v)
	}
	// Loading a URL with a hash restores the view and the selection.
	p.run("reload at callers of alpha", chromedp.Navigate(fmt.Sprintf("%s#view=callers&f=%d", serverURL, alpha.ID)), chromedp.Reload())
	p.waitView("callers")
	if s := p.text("#view-callers tr.center td.name"); s != "alpha" {
		t.Errorf("the callers view loaded from the URL centres on %q", s)
	}
	if s := p.text("#sel-func"); s != "alpha" {
		t.Errorf("#sel-func %q after loading the URL with f=%d", s, alpha.ID)
	}
}

// TestStaticReport writes a static report and checks, from the file system, that it shows the
// same function list and a flame graph.
func TestStaticReport(t *testing.T) {
	need(t)
	dir := filepath.Join(t.TempDir(), "report")
	if out, err := exec.Command(erBin, "analyzer", "--html", dir, expDir).CombinedOutput(); err != nil {
		t.Fatalf("er analyzer --html: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.open("file://"+filepath.Join(dir, "index.html"), "functions")
	keys, want := erPrint(t, "-functions")
	page := p.functions()
	compareRows(t, "static report functions", page, keys, want)
	t.Logf("static report: %d function rows equal to er print's", len(page))
	p.shot("static-functions")
	p.tab("flame")
	if n := p.count("#flame-svg g.frame"); n < 5 {
		t.Errorf("static report's flame graph: %d boxes", n)
	}
	if n := p.count(`#flame-svg g.frame[data-id="` + strconv.Itoa(findRow(t, page, "alpha").ID) + `"]`); n == 0 {
		t.Errorf("static report's flame graph has no box for alpha")
	}
	p.viewError("flame")
	p.shot("static-flame")
	p.tab("timeline")
	p.viewError("timeline")
	// Hover works from the report's table of the event nearest each pixel: phase 1, main thread.
	x, y := timelinePoint(p, firstRowEvent(p, phase[0][0], phase[0][1]))
	p.run("hover", chromedp.MouseEvent(input.MouseMoved, x, y))
	if !p.tryWaitJS(`/alpha/.test(document.querySelector("#timeline-stack").textContent)`, 10*time.Second) {
		t.Errorf("static report: hovering the timeline in phase 1: #timeline-stack reads %q", p.text("#timeline-stack"))
	}
	t.Logf("static report: timeline stack in phase 1: %q", p.text("#timeline-stack"))
	p.shot("static-timeline")
}

// TestCompareView: er analyzer given two experiments of the program, the second with phases twice as
// long, shows the Compare view's differential flame graph: every box carries its call path's values in
// both experiments as er print's compare call tree gives them, and the colour of their change (red
// grew); every path with 1% of the second's total has its box.
func TestCompareView(t *testing.T) {
	need(t)
	second := filepath.Join(tmp, "gui.2.er")
	if _, err := os.Stat(second); err != nil {
		if out, err := command(tmp, nil, erBin, "collect", "-o", second, "-p", "hi", filepath.Join(tmp, "guiprog"), "1.2"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	u, stop, err := analyzerOn(expDir, second)
	if stop != nil {
		defer stop()
	}
	if err != nil {
		t.Fatal(err)
	}
	// er print's compare call tree, by the path of names from the root.
	out, err := exec.Command(erBin, "print", "-printmode", "json", "-compare", "on", "-metrics", "i.totalcpu", "-tthresh", "0", "-calltree", expDir, second).Output()
	if err != nil {
		t.Fatalf("er print -compare on -calltree: %v", err)
	}
	var doc []struct {
		Tables []struct {
			Rows []struct {
				Name  string `json:"name"`
				Depth int    `json:"depth"`
				Cells []struct {
					V int64 `json:"v"`
				} `json:"cells"`
			} `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc) == 0 || len(doc[0].Tables) == 0 {
		t.Fatalf("er print -compare on -calltree: %v\n%s", err, out)
	}
	want := map[string][2]int64{}
	var path []string
	for _, r := range doc[0].Tables[0].Rows {
		path = append(path[:r.Depth], r.Name)
		want[strings.Join(path, "/")] = [2]int64{r.Cells[0].V, r.Cells[1].V}
	}
	total := want["<Total>"]
	p := newPage(t)
	p.open(u+"#view=compare", "compare")
	p.waitJS("the differential flame graph", `document.querySelector("#diff-flame-svg") !== null`)
	var boxes []struct {
		Path, Title, Class string
	}
	p.eval("the boxes", `[...document.querySelectorAll("#diff-flame-svg g.frame")].map(g => ({Path: g.dataset.path, Title: g.querySelector("title").textContent, Class: g.getAttribute("class")}))`, &boxes)
	secs := func(ns int64) string { // as the page writes seconds
		if ns == 0 {
			return "0."
		}
		return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64)
	}
	drawn := map[string]bool{}
	for _, b := range boxes {
		drawn[b.Path] = true
		w, ok := want[b.Path]
		if !ok {
			t.Errorf("a box for %s, which er print's compare call tree has not", b.Path)
			continue
		}
		lines := strings.Split(b.Title, "\n")
		name := b.Path[strings.LastIndex(b.Path, "/")+1:]
		if len(lines) < 3 || lines[0] != name || lines[1] != "gui.1.er: "+secs(w[0])+" s" || lines[2] != "gui.2.er: "+secs(w[1])+" s" {
			t.Errorf("%s's box says %q; er print's compare call tree %s s and %s s", b.Path, b.Title, secs(w[0]), secs(w[1]))
		}
		class := "same"
		switch {
		case w[1] > w[0]:
			class = "up"
		case w[1] < w[0]:
			class = "down"
		}
		if !strings.Contains(b.Class, class) {
			t.Errorf("%s's box is of class %q; er print: %s s, then %s s", b.Path, b.Class, secs(w[0]), secs(w[1]))
		}
	}
	for path, w := range want {
		if w[1] >= total[1]/100 && !drawn[path] {
			t.Errorf("no box for %s (%s s of %s s in gui.2.er)", path, secs(w[1]), secs(total[1]))
		}
	}
	alpha := want["<Total>/_start/__libc_start_main/__libc_start_call_main/main/alpha"]
	t.Logf("%d boxes, each with er print's values; totals %s s and %s s, main -> alpha %s s and %s s", len(boxes),
		secs(total[0]), secs(total[1]), secs(alpha[0]), secs(alpha[1]))
	p.shot("compare")
}

// TestPagesOwnViews opens two pages (two browsers: two tabs of their own) on the same er analyzer:
// a filter and a sort set in one change nothing in the other, each shows what er print shows for its
// own view, and a reload keeps a page's view. A page opened without the URL's token gets 403 and no
// data.
func TestPagesOwnViews(t *testing.T) {
	need(t)
	one, two := newPage(t), newPage(t)
	one.open(serverURL, "functions")
	two.open(serverURL, "functions")
	one.run("filter thread 1", chromedp.SetValue("#filter-expr", "THRID == 1", chromedp.ByQuery), chromedp.Click("#filter-apply", chromedp.ByQuery))
	one.waitJS("the filter", `document.querySelector("#filter-text").textContent === "(THRID == 1)"`)
	one.waitView("functions")
	two.sortBy("name")
	keys, want := erPrint(t, "-filters", "THRID == 1", "-functions")
	compareRows(t, "page one, THRID == 1", one.totals(), keys, want)
	// Page two: no filter, by name; page one kept its sort.
	two.tab("overview")
	two.tab("functions")
	if f := two.text("#filter-text"); f != "" {
		t.Errorf("page two shows the filter %q that page one set", f)
	}
	keys, want = erPrint(t, "-sort", "name", "-functions")
	compareRows(t, "page two, by name", two.functions(), keys, want)
	var sorted string
	one.run("reload page one", chromedp.Reload())
	one.waitView("functions")
	one.eval("page one's sort", `document.querySelector("#view-functions table.metrics th.sorted")?.dataset.key ?? ""`, &sorted)
	if sorted != "e.totalcpu" {
		t.Errorf("page one is sorted by %q after page two sorted by name, want e.totalcpu", sorted)
	}
	if f := one.text("#filter-text"); f != "(THRID == 1)" {
		t.Errorf("page one shows the filter %q after a reload, want (THRID == 1)", f)
	}
	// Without the token.
	bare := serverURL[:strings.Index(serverURL, "?")]
	three := newPage(t)
	three.run("open without the token", chromedp.Navigate(bare))
	var body string
	three.eval("the answer", `document.body.innerText`, &body)
	if !strings.Contains(body, "does not carry this server's token") || strings.Contains(body, "alpha") {
		t.Errorf("the page without the token shows %q", body)
	}
}

// TestPageRestoresDroppedView: when the server answers that it dropped the page's view (409
// {"view": "gone"}: more than 256 pages, or idle for an hour), the page draws a new id, sets its
// filter and sort again and asks once more: it goes on showing its own view. The test makes the
// server's answer the first time the page asks for the function list.
func TestPageRestoresDroppedView(t *testing.T) {
	need(t)
	p := newPage(t)
	p.open(serverURL, "functions")
	p.run("filter thread 1", chromedp.SetValue("#filter-expr", "THRID == 1", chromedp.ByQuery), chromedp.Click("#filter-apply", chromedp.ByQuery))
	p.waitJS("the filter", `document.querySelector("#filter-text").textContent === "(THRID == 1)"`)
	p.waitView("functions")
	var before string
	p.eval("the page's id", `CLIENT`, &before)
	var ok bool
	p.eval("the server drops the view", `(() => {
		const real = window.fetch;
		let once = true;
		window.fetch = (u, o) => {
			if (once && String(u).startsWith("/api/functions")) {
				once = false;
				return Promise.resolve(new Response(JSON.stringify({error: "this page's view was dropped", view: "gone"}), {status: 409}));
			}
			return real(u, o);
		};
		return true; })()`, &ok)
	p.sortBy("name")
	var after string
	p.eval("the page's id", `CLIENT`, &after)
	if after == before || after == "" {
		t.Errorf("the page's id is %q after its view was dropped, before %q", after, before)
	}
	if f := p.text("#filter-text"); f != "(THRID == 1)" {
		t.Errorf("the page shows the filter %q after its view was dropped", f)
	}
	keys, want := erPrint(t, "-filters", "THRID == 1", "-sort", "name", "-functions")
	compareRows(t, "functions after the view was dropped", p.functions(), keys, want)
}

// TestViewModeBox: the View box sets the page's view mode: the function list is er print's in that
// mode, and the page shows the mode again after a reload (the server keeps the page's view).
func TestViewModeBox(t *testing.T) {
	need(t)
	p := newPage(t)
	p.open(serverURL, "functions")
	var mode string
	p.eval("the view mode shown", `document.querySelector("#viewmode").value`, &mode)
	if mode != "user" {
		t.Errorf("the View box shows %q, want user", mode)
	}
	var ok bool
	p.eval("choose machine", `(() => { const s = document.querySelector("#viewmode"); s.value = "machine"; s.dispatchEvent(new Event("change")); return true; })()`, &ok)
	p.waitJS("the machine mode", `state.viewmode === "machine"`)
	p.waitView("functions")
	keys, want := erPrint(t, "-viewmode", "machine", "-functions")
	compareRows(t, "functions in the machine mode", p.totals(), keys, want)
	p.run("reload", chromedp.Reload())
	p.waitView("functions")
	p.eval("the view mode shown", `document.querySelector("#viewmode").value`, &mode)
	if mode != "machine" {
		t.Errorf("after a reload the View box shows %q, want machine", mode)
	}
}
