package browsertests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The shared fixture: er built from this checkout, one experiment of testdata/guiprog.c, and
// er analyzer serving it.
var (
	tmp      string
	erBin    string
	expDir   string
	url      string
	setupErr error
	chromium string
)

func TestMain(m *testing.M) {
	code := func() int {
		var err error
		tmp, err = os.MkdirTemp("", "er-browser-")
		if err != nil {
			setupErr = err
			return m.Run()
		}
		defer os.RemoveAll(tmp)
		chromium = findChromium()
		if chromium != "" {
			var stop func()
			stop, setupErr = setup()
			if stop != nil {
				defer stop()
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// setup builds er and the test program, collects the experiment and starts er analyzer.
func setup() (func(), error) {
	prog := filepath.Join(tmp, "guiprog")
	if out, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-pthread", "-o", prog, "testdata/guiprog.c").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gcc: %v\n%s", err, out)
	}
	expDir = filepath.Join(tmp, "gui.1.er")
	// The collector library: built by make beside er in bin/; er collect finds it there.
	if out, err := exec.Command("make", "-C", "..", "build").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("make build: %v\n%s", err, out)
	}
	erBin = filepath.Join("..", "bin", "er")
	if abs, err := filepath.Abs(erBin); err == nil {
		erBin = abs
	}
	if out, err := exec.Command(erBin, "collect", "-o", expDir, "-p", "hi", prog, "0.5").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("er collect: %v\n%s", err, out)
	}
	cmd := exec.Command(erBin, "analyzer", "--no-browser", expDir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "http://") {
				lines <- sc.Text()
			}
		}
	}()
	select {
	case l := <-lines:
		f := strings.Fields(l)
		url = f[len(f)-1]
	case <-time.After(60 * time.Second):
		return stop, fmt.Errorf("er analyzer printed no URL in 60 s; stderr: %s", stderr.String())
	}
	return stop, nil
}

// need skips or fails the test when the fixture is missing.
func need(t *testing.T) {
	t.Helper()
	if chromium == "" {
		msg := "no chromium: install it with apt-get install -y chromium"
		if os.Getenv("ER_BROWSER_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// browser starts a headless Chromium and returns its context; JavaScript exceptions and console
// errors fail the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 900), chromedp.Flag("hide-scrollbars", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	var mu sync.Mutex
	var errs []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			errs = append(errs, "exception: "+ev.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value))
				}
				errs = append(errs, "console.error: "+strings.Join(parts, " "))
			}
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelT()
		cancelC()
		cancelA()
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			t.Errorf("in the page: %s", e)
		}
	})
	return ctx
}

// run runs actions, failing the test on error.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS polls a JavaScript expression until it is true.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	for {
		var ok bool
		if err := chromedp.Run(ctx, chromedp.Evaluate(expr, &ok)); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s (%s): %v", what, expr, ctx.Err())
		case <-time.After(40 * time.Millisecond):
		}
	}
}

// waitView waits until the view has drawn its data and no request is in flight.
func waitView(t *testing.T, ctx context.Context, view string) {
	t.Helper()
	waitJS(t, ctx, view, fmt.Sprintf(`document.querySelector("#view-%s").dataset.ready === "1" && document.body.dataset.busy === "0"`, view))
}

// tab clicks a view's tab and waits for it.
func tab(t *testing.T, ctx context.Context, view string) {
	t.Helper()
	run(t, ctx, "click tab "+view, chromedp.Click(fmt.Sprintf(`#tabs button[data-view="%s"]`, view), chromedp.ByQuery))
	waitView(t, ctx, view)
}

// screenshot saves the page as name.png in $ER_SCREENSHOTS (or the test's temporary directory).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("ER_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	run(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot(&buf))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pageRow is a row of a metrics table as the page shows it.
type pageRow struct {
	ID    int               `json:"id"`
	Name  string            `json:"name"`
	Cells map[string]string `json:"cells"` // data-key -> data-value
	Class string            `json:"class"`
}

// rows reads the body rows of the metrics table under sel.
func rows(t *testing.T, ctx context.Context, sel string) []pageRow {
	t.Helper()
	var out []pageRow
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].map(tr => ({
		id: tr.dataset.id === undefined ? -1 : +tr.dataset.id,
		name: (tr.querySelector("td.name, td.code") || {textContent: ""}).textContent,
		class: tr.className,
		cells: Object.fromEntries([...tr.querySelectorAll("td[data-key][data-value]")].map(td => [td.dataset.key, td.dataset.value]))}))`, sel)
	run(t, ctx, "read "+sel, chromedp.Evaluate(js, &out))
	return out
}

func value(t *testing.T, r pageRow, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(r.Cells[key], 10, 64)
	if err != nil {
		t.Fatalf("row %q: %s=%q: %v", r.Name, key, r.Cells[key], err)
	}
	return v
}

func findRow(t *testing.T, rs []pageRow, name string) pageRow {
	t.Helper()
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q", name)
	return pageRow{}
}

// printRow is a row of er print -printmode json: its name and values (ns for times) by key.
type printRow struct {
	name string
	v    map[string]int64
}

// erPrint runs er print -printmode json args on the experiment and returns its first table's rows.
func erPrint(t *testing.T, args ...string) []printRow {
	t.Helper()
	cmd := exec.Command(erBin, append(append([]string{"print", "-printmode", "json"}, args...), expDir)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("er print %v: %v", args, err)
	}
	var tbl struct {
		Columns []struct {
			Key string `json:"key"`
		} `json:"columns"`
		Rows []struct {
			Name   string                     `json:"name"`
			Values map[string]json.RawMessage `json:"values"`
		} `json:"rows"`
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	if err := json.Unmarshal(line, &tbl); err != nil {
		t.Fatalf("er print %v: %v: %s", args, err, out)
	}
	var rs []printRow
	for _, r := range tbl.Rows {
		pr := printRow{name: r.Name, v: map[string]int64{}}
		for _, c := range tbl.Columns {
			pr.v[c.Key] = nanos(t, string(r.Values[c.Key]))
		}
		rs = append(rs, pr)
	}
	return rs
}

// nanos reads seconds written with 9 decimals as nanoseconds, exactly.
func nanos(t *testing.T, s string) int64 {
	t.Helper()
	sec, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000000000")[:9]
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("not seconds: %q", s)
	}
	return a*1e9 + b
}

// compareFunctions checks that the page's function list is er print's, row for row, value for value.
func compareFunctions(t *testing.T, page []pageRow, want []printRow) {
	t.Helper()
	if len(page) != len(want) {
		t.Errorf("the page shows %d functions, er print %d", len(page), len(want))
	}
	for i := range min(len(page), len(want)) {
		if page[i].Name != want[i].name {
			t.Errorf("row %d: page %q, er print %q", i, page[i].Name, want[i].name)
			continue
		}
		for key, v := range want[i].v {
			if got := value(t, page[i], key); got != v {
				t.Errorf("%s %s: page %d, er print %d", page[i].Name, key, got, v)
			}
		}
	}
}

// TestFunctionsMatchPrint loads the experiment and checks the Functions view against er print.
func TestFunctionsMatchPrint(t *testing.T) {
	need(t)
	ctx := browser(t)
	run(t, ctx, "open "+url, chromedp.Navigate(url))
	waitView(t, ctx, "functions")
	page := rows(t, ctx, "#view-functions tbody tr")
	want := erPrint(t, "-functions")
	compareFunctions(t, page, want)
	t.Logf("%d rows; <Total> %.3f s of CPU, exactly er print's", len(page), float64(value(t, page[0], "e.totalcpu"))/1e9)
	screenshot(t, ctx, "functions")
	tab(t, ctx, "overview")
	screenshot(t, ctx, "overview")
}

// TestClickThrough selects alpha and follows it through Callers-Callees, Source, Flame Graph and
// Timeline.
func TestClickThrough(t *testing.T) {
	need(t)
	ctx := browser(t)
	run(t, ctx, "open", chromedp.Navigate(url))
	waitView(t, ctx, "functions")
	fl := rows(t, ctx, "#view-functions tbody tr")
	alpha := findRow(t, fl, "alpha")
	sel := fmt.Sprintf(`#view-functions tbody tr[data-id="%d"]`, alpha.ID)
	run(t, ctx, "click alpha", chromedp.Click(sel, chromedp.ByQuery))
	var selName string
	run(t, ctx, "read selection", chromedp.Text("#sel-func", &selName, chromedp.ByQuery))
	if selName != "alpha" {
		t.Errorf("#sel-func %q after clicking alpha", selName)
	}
	// Double-click: Callers-Callees of alpha; its callers' attributed time adds up to its inclusive.
	run(t, ctx, "double-click alpha", chromedp.DoubleClick(sel, chromedp.ByQuery))
	waitJS(t, ctx, "callers view", `document.querySelector("#view-callers").classList.contains("active")`)
	waitView(t, ctx, "callers")
	cc := rows(t, ctx, "#view-callers tbody tr[data-id]")
	var callers int64
	center := pageRow{ID: -1}
	var callerNames []string
	for _, r := range cc {
		switch {
		case strings.Contains(r.Class, "center"):
			center = r
		case strings.Contains(r.Class, "caller"):
			callers += value(t, r, "a.totalcpu")
			callerNames = append(callerNames, r.Name)
		}
	}
	if center.Name != "alpha" || center.ID != alpha.ID {
		t.Errorf("centre row %q (%d), want alpha (%d)", center.Name, center.ID, alpha.ID)
	}
	if callers != value(t, alpha, "i.totalcpu") {
		t.Errorf("alpha's callers add up to %d ns, its inclusive time is %d", callers, value(t, alpha, "i.totalcpu"))
	}
	if len(callerNames) != 1 || callerNames[0] != "main" {
		t.Errorf("alpha's callers: %v, want [main]", callerNames)
	}
	screenshot(t, ctx, "callers")

	// Source: alpha's lines, the hot one is its loop.
	tab(t, ctx, "source")
	lines := rows(t, ctx, "#view-source tbody tr.line")
	hot := rows(t, ctx, "#view-source tbody tr.hot")
	if len(lines) < 5 || len(hot) == 0 {
		t.Fatalf("source: %d lines, %d hot", len(lines), len(hot))
	}
	if !strings.Contains(hot[0].Name, "alpha's loop") {
		t.Errorf("the hot line of alpha is %q, want its loop", hot[0].Name)
	}
	screenshot(t, ctx, "source")
	tab(t, ctx, "disasm")
	if n := len(rows(t, ctx, "#view-disasm tbody tr.line")); n < 5 {
		t.Errorf("disassembly of alpha: %d rows", n)
	}
	screenshot(t, ctx, "disasm")

	// Call tree: the hot path is open.
	tab(t, ctx, "calltree")
	var nodes int
	run(t, ctx, "count nodes", chromedp.Evaluate(`document.querySelectorAll("#view-calltree .node").length`, &nodes))
	if nodes < 5 {
		t.Errorf("call tree: %d nodes shown", nodes)
	}
	screenshot(t, ctx, "calltree")

	// Flame graph: alpha has a box; a click zooms to it.
	tab(t, ctx, "flame")
	box := fmt.Sprintf(`#flame-svg g.frame[data-id="%d"]`, alpha.ID)
	var n int
	run(t, ctx, "count alpha's boxes", chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll(%q).length`, box), &n))
	if n == 0 {
		t.Fatal("no flame graph box for alpha")
	}
	screenshot(t, ctx, "flame")
	run(t, ctx, "click alpha's box", chromedp.Click(box+" rect", chromedp.ByQuery))
	waitJS(t, ctx, "zoom", `document.querySelector("#flame-path").textContent.includes("main")`)
	waitView(t, ctx, "flame")
	var widths []float64
	run(t, ctx, "alpha's width", chromedp.Evaluate(fmt.Sprintf(`[+document.querySelector(%q).getAttribute("width"), +document.querySelector("#flame-svg").getAttribute("width")]`, box+" rect"), &widths))
	if len(widths) != 2 || math.Abs(widths[0]-widths[1]) > 1 {
		t.Errorf("after zooming, alpha's box is %v wide of the graph", widths)
	}
	screenshot(t, ctx, "flame-zoom")

	// Timeline: a canvas with one row per thread; hovering shows a call stack.
	tab(t, ctx, "timeline")
	var size []float64
	run(t, ctx, "canvas size", chromedp.Evaluate(`[document.querySelector("#timeline-canvas").width, document.querySelector("#timeline-canvas").height]`, &size))
	if len(size) != 2 || size[0] < 400 || size[1] < 40 {
		t.Fatalf("timeline canvas %v", size)
	}
	x, y := canvasPoint(t, ctx, 0.25, 0)
	run(t, ctx, "hover", chromedp.MouseEvent(input.MouseMoved, x, y))
	waitJS(t, ctx, "stack", `document.querySelector("#timeline-stack").textContent.includes("main")`)
	screenshot(t, ctx, "timeline")

	for _, v := range []string{"threads", "cpus", "samples", "objects"} {
		tab(t, ctx, v)
		var n int
		run(t, ctx, "rows of "+v, chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll("#view-%s table.metrics tbody tr").length`, v), &n))
		if n == 0 {
			t.Errorf("%s: no rows", v)
		}
		screenshot(t, ctx, v)
	}
}

// canvasPoint is the page position of the timeline at fraction frac of its time axis, in thread
// row row.
func canvasPoint(t *testing.T, ctx context.Context, frac float64, row int) (float64, float64) {
	t.Helper()
	var p []float64
	js := fmt.Sprintf(`(() => { const r = document.querySelector("#timeline-canvas").getBoundingClientRect();
		const d = state.tl.data; return [r.left + TL.label + %f * d.w, r.top + TL.axis + (%d + 0.5) * TL.rowH]; })()`, frac, row)
	run(t, ctx, "canvas point", chromedp.Evaluate(js, &p))
	return p[0], p[1]
}

// total reads <Total>'s exclusive CPU time in the Functions view.
func total(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	tab(t, ctx, "functions")
	rs := rows(t, ctx, "#view-functions tbody tr")
	if len(rs) == 0 || rs[0].Name != "<Total>" {
		t.Fatalf("no <Total> row: %v", rs)
	}
	return value(t, rs[0], "e.totalcpu")
}

// TestTimeRange selects the first half of the run on the timeline, by typing and by dragging, and
// checks that Functions shows what er print shows under the same filter.
func TestTimeRange(t *testing.T) {
	need(t)
	ctx := browser(t)
	run(t, ctx, "open", chromedp.Navigate(url))
	waitView(t, ctx, "functions")
	all := rows(t, ctx, "#view-functions tbody tr")
	full := value(t, all[0], "e.totalcpu")
	alphaAll := value(t, findRow(t, all, "alpha"), "i.totalcpu")
	betaAll := value(t, findRow(t, all, "beta"), "i.totalcpu")

	var dur float64
	run(t, ctx, "duration", chromedp.Evaluate(`state.overview.duration`, &dur))
	tab(t, ctx, "timeline")
	end := fmt.Sprintf("%.4f", dur/2/1e9)
	run(t, ctx, "type a range",
		chromedp.SetValue("#range-start", "0", chromedp.ByQuery),
		chromedp.SetValue("#range-end", end, chromedp.ByQuery),
		chromedp.Click("#range-apply", chromedp.ByQuery))
	waitJS(t, ctx, "filter text", `document.querySelector("#filter-text").textContent.startsWith("TSTAMP >= 0 &&")`)
	var filter string
	run(t, ctx, "filter text", chromedp.Text("#filter-text", &filter, chromedp.ByQuery))
	screenshot(t, ctx, "range")
	half := total(t, ctx)
	page := rows(t, ctx, "#view-functions tbody tr")
	compareFunctions(t, page, erPrint(t, "-filters", filter, "-functions"))
	alpha := value(t, findRow(t, page, "alpha"), "i.totalcpu")
	var beta int64
	for _, r := range page {
		if r.Name == "beta" {
			beta = value(t, r, "i.totalcpu")
		}
	}
	t.Logf("range %s: total %.3f s of %.3f s; alpha %.3f of %.3f s; beta %.3f of %.3f s", filter,
		float64(half)/1e9, float64(full)/1e9, float64(alpha)/1e9, float64(alphaAll)/1e9, float64(beta)/1e9, float64(betaAll)/1e9)
	if half >= full || alpha < alphaAll*8/10 || beta > betaAll*2/10 {
		t.Errorf("the first half has total %d of %d, alpha %d of %d, beta %d of %d", half, full, alpha, alphaAll, beta, betaAll)
	}
	screenshot(t, ctx, "functions-range")

	// Clear it: the totals come back.
	tab(t, ctx, "timeline")
	run(t, ctx, "clear", chromedp.Click("#range-clear", chromedp.ByQuery))
	waitJS(t, ctx, "no filter", `document.querySelector("#filter-text").textContent === ""`)
	if got := total(t, ctx); got != full {
		t.Errorf("after clearing the range: total %d, want %d", got, full)
	}

	// Drag across the second half of the timeline.
	tab(t, ctx, "timeline")
	x0, y := canvasPoint(t, ctx, 0.5, 0)
	x1, _ := canvasPoint(t, ctx, 0.98, 0)
	run(t, ctx, "drag", chromedp.ActionFunc(func(ctx context.Context) error {
		if err := input.DispatchMouseEvent(input.MousePressed, x0, y).WithButton(input.Left).WithClickCount(1).Do(ctx); err != nil {
			return err
		}
		for i := 1; i <= 10; i++ {
			x := x0 + (x1-x0)*float64(i)/10
			if err := input.DispatchMouseEvent(input.MouseMoved, x, y).WithButton(input.Left).Do(ctx); err != nil {
				return err
			}
		}
		return input.DispatchMouseEvent(input.MouseReleased, x1, y).WithButton(input.Left).WithClickCount(1).Do(ctx)
	}))
	waitJS(t, ctx, "filter text", `document.querySelector("#filter-text").textContent.startsWith("TSTAMP >=")`)
	run(t, ctx, "filter text", chromedp.Text("#filter-text", &filter, chromedp.ByQuery))
	screenshot(t, ctx, "range-drag")
	second := total(t, ctx)
	page = rows(t, ctx, "#view-functions tbody tr")
	compareFunctions(t, page, erPrint(t, "-filters", filter, "-functions"))
	t.Logf("dragged range %s: total %.3f s", filter, float64(second)/1e9)
	if second >= full || second == half {
		t.Errorf("dragged range: total %d (full %d, first half %d)", second, full, half)
	}
	for _, r := range page {
		if r.Name == "alpha" && value(t, r, "i.totalcpu") > alphaAll/10 {
			t.Errorf("alpha has %d ns in the second half", value(t, r, "i.totalcpu"))
		}
	}
	run(t, ctx, "clear filter", chromedp.Click("#filter-clear", chromedp.ByQuery))
	waitJS(t, ctx, "no filter", `document.querySelector("#filter-text").textContent === ""`)
}

// TestViewsRender visits every tab and checks each draws without a JavaScript error.
func TestViewsRender(t *testing.T) {
	need(t)
	ctx := browser(t)
	run(t, ctx, "open", chromedp.Navigate(url+"#view=overview"))
	waitView(t, ctx, "overview")
	var views []string
	run(t, ctx, "tabs", chromedp.Evaluate(`[...document.querySelectorAll("#tabs button")].map(b => b.dataset.view)`, &views))
	if len(views) < 12 {
		t.Fatalf("tabs %v", views)
	}
	for _, v := range views {
		tab(t, ctx, v)
		var hash string
		run(t, ctx, "hash", chromedp.Evaluate(`location.hash`, &hash))
		if !strings.HasPrefix(hash, "#view="+v) {
			t.Errorf("after opening %s the URL's hash is %q", v, hash)
		}
	}
	// A hash with a function restores the view and the selection.
	run(t, ctx, "open callers by hash", chromedp.Navigate(url+"#view=functions"))
	waitView(t, ctx, "functions")
	alpha := findRow(t, rows(t, ctx, "#view-functions tbody tr"), "alpha")
	run(t, ctx, "reload at callers", chromedp.Navigate(fmt.Sprintf("%s#view=callers&f=%d", url, alpha.ID)), chromedp.Reload())
	waitView(t, ctx, "callers")
	var center string
	run(t, ctx, "centre", chromedp.Text("#view-callers tr.center td.name", &center, chromedp.ByQuery))
	if center != "alpha" {
		t.Errorf("callers view from the URL centres on %q", center)
	}
}

// TestStaticReport writes a static report and checks it shows the same function list, and a flame
// graph, from the file system.
func TestStaticReport(t *testing.T) {
	need(t)
	dir := filepath.Join(t.TempDir(), "report")
	if out, err := exec.Command(erBin, "analyzer", "--html", dir, expDir).CombinedOutput(); err != nil {
		t.Fatalf("er analyzer --html: %v\n%s", err, out)
	}
	ctx := browser(t)
	run(t, ctx, "open the report", chromedp.Navigate("file://"+filepath.Join(dir, "index.html")))
	waitView(t, ctx, "functions")
	compareFunctions(t, rows(t, ctx, "#view-functions tbody tr"), erPrint(t, "-functions"))
	screenshot(t, ctx, "static-functions")
	tab(t, ctx, "flame")
	var n int
	run(t, ctx, "boxes", chromedp.Evaluate(`document.querySelectorAll("#flame-svg g.frame").length`, &n))
	if n < 5 {
		t.Errorf("static flame graph: %d boxes", n)
	}
	tab(t, ctx, "timeline")
	screenshot(t, ctx, "static-timeline")
}
