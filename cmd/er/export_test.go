package main

import (
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	pprofile "github.com/google/pprof/profile"

	"er/internal/export/schematest"
	"er/internal/web"
)

// pprofTop runs go tool pprof -top (and the options given) on file and returns each function's (or
// line's, with -lines) flat and cum milliseconds, by its name less pprof's "(inline)" mark.
func pprofTop(t *testing.T, file string, opts ...string) map[string][2]float64 {
	t.Helper()
	out, err := exec.Command("go", append(append([]string{"tool", "pprof", "-top", "-nodecount=1000", "-unit=ms"}, opts...), file)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top %s: %v\n%s", file, err, out)
	}
	ms := func(s string) (float64, bool) { // "250.26ms", or "0"
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "ms"), 64)
		return v, err == nil && (strings.HasSuffix(s, "ms") || s == "0")
	}
	got := map[string][2]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		flat, ok1 := ms(f[0])
		cum, ok2 := ms(f[3])
		if ok1 && ok2 {
			name := strings.Join(f[5:], " ")
			name = strings.TrimSuffix(strings.TrimSuffix(name, " (inline)"), " (partial-inline)")
			got[name] = [2]float64{flat, cum}
		}
	}
	return got
}

// TestExportPprof: the seed example's experiment exported to pprof: go tool pprof -top gives each
// function the exclusive and inclusive time er print -functions gives it, to the ms, and -lines B's
// three lines their time; the folded stacks add up to er print's total (and flamegraph.pl, where
// ER_FLAMEGRAPH names it, renders them); the speedscope file is valid by speedscope's published
// schema; the Chrome trace has the Trace Event Format's structure (issue 16, acceptance 1).
func TestExportPprof(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	prog := cprog(t, "seed002")
	exp, r := collectExp(t, nil, prog)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	dir := t.TempDir()
	pb, folded, ss := filepath.Join(dir, "seed.pb.gz"), filepath.Join(dir, "seed.folded"), filepath.Join(dir, "seed.json")
	trace := filepath.Join(dir, "seed.trace.json")
	for _, out := range []string{pb, folded, ss, trace} {
		if x := er(t, "", nil, "export", "-o", out, exp); x.code != 0 {
			t.Fatalf("er export -o %s: exit %d\n%s", out, x.code, x.stderr)
		}
	}
	excl, incl := functionTimes(t, exp)
	top := pprofTop(t, pb)
	for _, fn := range []string{"main", "A", "B", "C", "E", "F", "G"} {
		got, ok := top[fn]
		if !ok {
			t.Errorf("go tool pprof -top has no %s:\n%v", fn, top)
			continue
		}
		if abs(got[0]-1000*excl[fn]) > 1 || abs(got[1]-1000*incl[fn]) > 1 {
			t.Errorf("%s: pprof flat %.2f ms, cum %.2f ms; er print %.3f s, %.3f s", fn, got[0], got[1], excl[fn], incl[fn])
		}
	}
	// B's lines: the two calls of C and its own work, their flat time B's exclusive time.
	lines := pprofTop(t, pb, "-lines")
	var bFlat float64
	var bLines []string
	for name, v := range lines {
		if strings.HasPrefix(name, "B ") && strings.Contains(name, "seed002.c:") {
			bFlat += v[0]
			bLines = append(bLines, name[strings.LastIndexByte(name, ':')+1:])
		}
	}
	slices.Sort(bLines)
	if abs(bFlat-1000*excl["B"]) > 1 || strings.Join(bLines, " ") != "46 47 48" {
		t.Errorf("pprof -lines: B's lines %v, their flat time %.2f ms; er print's B %.3f s", bLines, bFlat, excl["B"])
	}
	b, err := os.ReadFile(folded)
	if err != nil {
		t.Fatal(err)
	}
	if fg := os.Getenv("ER_FLAMEGRAPH"); fg != "" {
		svg, err := exec.Command(fg, folded).Output()
		var root struct {
			XMLName xml.Name
		}
		if err != nil || xml.Unmarshal(svg, &root) != nil || root.XMLName.Local != "svg" {
			t.Errorf("%s %s: %v; %.200s", fg, folded, err, svg)
		}
	}
	var sum float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// frame;frame;...;frame value: a frame's name may hold spaces ("<Process exit>", a stack of one
		// frame that a run under load has), never an empty one.
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i <= 0 || err != nil || slices.Contains(strings.Split(line[:i], ";"), "") {
			t.Fatalf("folded line %q", line)
		}
		sum += v
	}
	if abs(sum/1e9-excl["<Total>"]) > 0.001 {
		t.Errorf("folded stacks add up to %.4f s, er print's <Total> %.4f s", sum/1e9, excl["<Total>"])
	}
	// speedscope: the fields its file format requires, and the CPU profile's weights adding up.
	b, err = os.ReadFile(ss)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Schema string `json:"$schema"`
		Shared struct {
			Frames []struct {
				Name string `json:"name"`
			} `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Type       string  `json:"type"`
			Name       string  `json:"name"`
			Unit       string  `json:"unit"`
			StartValue *int64  `json:"startValue"`
			EndValue   *int64  `json:"endValue"`
			Samples    [][]int `json:"samples"`
			Weights    []int64 `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Schema == "" || len(f.Profiles) == 0 || len(f.Shared.Frames) == 0 {
		t.Fatalf("speedscope file: %.300s", b)
	}
	cpu := f.Profiles[0]
	var w int64
	for i, s := range cpu.Samples {
		for _, fr := range s {
			if fr < 0 || fr >= len(f.Shared.Frames) {
				t.Fatalf("sample %d: frame %d of %d", i, fr, len(f.Shared.Frames))
			}
		}
		w += cpu.Weights[i]
	}
	if cpu.Type != "sampled" || cpu.Unit != "nanoseconds" || cpu.StartValue == nil || cpu.EndValue == nil || *cpu.EndValue != w ||
		len(cpu.Weights) != len(cpu.Samples) || abs(float64(w)/1e9-excl["<Total>"]) > 0.001 {
		t.Errorf("speedscope's CPU profile: %s, %s, %d samples, weights %d ns; er print's <Total> %.4f s", cpu.Type, cpu.Unit, len(cpu.Samples), w, excl["<Total>"])
	}
	b, err = os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	// Every stretch of main lies within the stretches of its callers, as every stack of main has them
	// (a stretch of _start without main is a sample before main or after it returned).
	n, callers := checkChromeTrace(t, b)
	if n["_start"] < 1 || n["main"] < 1 || n["B"] < 1 {
		t.Errorf("Chrome trace's complete events by function: %v", n)
	}
	if c := callers["main"]; len(c) != 1 || !c["_start;__libc_start_main;__libc_start_call_main"] {
		t.Errorf("Chrome trace: main's stretches within %v, want all within _start;__libc_start_main;__libc_start_call_main", c)
	}
	// Last: it skips the test where python3 or its jsonschema is missing.
	if err := schematest.Speedscope(t, ss); err != nil {
		t.Errorf("speedscope's schema: %v", err)
	}
}

// checkChromeTrace checks a Chrome trace by the Trace Event Format's documented structure (the JSON
// object form): traceEvents, each with a name, a phase, a pid and a tid; complete events ("X") with a
// ts and a positive dur, nesting within each thread; metadata events ("M") naming the processes and
// threads. It returns the number of complete events of each name, and for each name the chains of
// events around its events ("_start;__libc_start_main;__libc_start_call_main" for main's).
func checkChromeTrace(t *testing.T, data []byte) (n map[string]int, callers map[string]map[string]bool) {
	t.Helper()
	var tr struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Ts   *float64       `json:"ts"`
			Dur  *float64       `json:"dur"`
			Pid  *int64         `json:"pid"`
			Tid  *int64         `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil || tr.TraceEvents == nil {
		t.Fatalf("not a trace object with traceEvents: %v", err)
	}
	open := map[[2]int64][]int64{} // per thread: the ends of the complete events around, in ns
	named := map[string]bool{}
	n, callers = map[string]int{}, map[string]map[string]bool{}
	names := map[[2]int64][]string{} // per thread: the names of the events around
	for i, e := range tr.TraceEvents {
		if e.Name == "" || e.Pid == nil || e.Tid == nil {
			t.Fatalf("event %d: no name, pid or tid", i)
		}
		th := [2]int64{*e.Pid, *e.Tid}
		switch e.Ph {
		case "M":
			if e.Name == "process_name" || e.Name == "thread_name" {
				if s, _ := e.Args["name"].(string); s == "" {
					t.Errorf("event %d: %s without args.name", i, e.Name)
				}
				named[e.Name] = true
			}
		case "X":
			if e.Ts == nil || e.Dur == nil || *e.Dur <= 0 {
				t.Fatalf("event %d: a complete event without ts or a positive dur", i)
			}
			// In ns: the µs of the file are ns / 1e3, whose sums a float would round.
			ts := int64(math.Round(*e.Ts * 1e3))
			end := ts + int64(math.Round(*e.Dur*1e3))
			st := open[th]
			nm := names[th]
			for len(st) > 0 && st[len(st)-1] <= ts {
				st, nm = st[:len(st)-1], nm[:len(nm)-1]
			}
			if len(st) > 0 && end > st[len(st)-1] {
				t.Errorf("event %d (%s at %d ns): ends after the event around it", i, e.Name, ts)
			}
			open[th], names[th] = append(st, end), append(nm, e.Name)
			if callers[e.Name] == nil {
				callers[e.Name] = map[string]bool{}
			}
			callers[e.Name][strings.Join(nm, ";")] = true
			n[e.Name]++
		default:
			t.Errorf("event %d: phase %q", i, e.Ph)
		}
	}
	if !named["process_name"] || !named["thread_name"] {
		t.Errorf("process and thread names: %v", named)
	}
	return n, callers
}

// TestExportInlined: a program with a function inlined into two callers, exported to pprof: go tool
// pprof -top gives the inlined function and its callers er print's exclusive and inclusive time, to
// the ms; its locations hold the inlined function's line before its caller's.
func TestExportInlined(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	exp, r := collectExp(t, nil, cbuild(t, "inline2", "-O2", "-g"), "100000000")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	pb := filepath.Join(t.TempDir(), "inline2.pb.gz")
	if x := er(t, "", nil, "export", "-o", pb, exp); x.code != 0 {
		t.Fatalf("er export: exit %d\n%s", x.code, x.stderr)
	}
	excl, incl := functionTimes(t, exp)
	top := pprofTop(t, pb)
	for _, fn := range []string{"hot", "caller1", "caller2", "main"} {
		got, ok := top[fn]
		if !ok || abs(got[0]-1000*excl[fn]) > 1 || abs(got[1]-1000*incl[fn]) > 1 {
			t.Errorf("%s: pprof flat and cum %v ms; er print %.3f s, %.3f s", fn, got, excl[fn], incl[fn])
		}
	}
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := pprofile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	inlined := map[string]bool{}
	for _, l := range p.Location {
		if len(l.Line) == 2 && l.Line[0].Function.Name == "hot" && l.Line[0].Line > 0 && l.Line[1].Line > 0 {
			inlined[l.Line[1].Function.Name] = true
		}
	}
	if !inlined["caller1"] || !inlined["caller2"] {
		t.Errorf("locations with hot inlined, by the function it is inlined into: %v", inlined)
	}
}

// TestCompare: compare delta and ratio in er print on two runs of a program one of whose functions was
// made twice as slow: the slow function's delta is the change its thread CPU clock measured, its ratio
// about 2, the other function's about 1, within 5% of what the runs measured (issue 16, acceptance 3,
// er print's part).
func TestCompare(t *testing.T) {
	needCollect(t)
	prog := cprog(t, "twofuncs")
	var exps []string
	var m []map[string]float64
	for _, k := range []string{"2", "4"} {
		// At -p hi: a sample (1 ms) is 0.5% of the fast function's 0.2 s, well below the tolerance.
		exp, r := collectExp(t, nil, "-p", "hi", prog, k)
		if r.code != 0 {
			t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
		}
		exps = append(exps, exp)
		m = append(m, measured(t, r.stdout))
	}
	read := func(mode string) map[string][]float64 {
		r := er(t, "", nil, append([]string{"print", "-printmode", "csv", "-compare", mode, "-metrics", "e.totalcpu", "-functions"}, exps...)...)
		if r.code != 0 {
			t.Fatalf("er print -compare %s: exit %d\n%s", mode, r.code, r.stderr)
		}
		out := map[string][]float64{}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if want := "e.totalcpu[1]," + mode + ".e.totalcpu[2],name"; lines[0] != want {
			t.Errorf("header %q, want %q", lines[0], want)
		}
		for _, line := range lines[1:] {
			f := strings.Split(line, ",")
			var vals []float64
			for _, x := range f[:len(f)-1] {
				v, _ := strconv.ParseFloat(x, 64)
				vals = append(vals, v)
			}
			out[f[len(f)-1]] = vals
		}
		return out
	}
	delta, ratio := read("delta"), read("ratio")
	wantDelta := m[1]["cpu slow"] - m[0]["cpu slow"]
	wantRatio := m[1]["cpu slow"] / m[0]["cpu slow"]
	t.Logf("slow: delta %.4f s (measured %.4f), ratio %.3f (measured %.3f); fast ratio %.3f", delta["slow"][1], wantDelta,
		ratio["slow"][1], wantRatio, ratio["fast"][1])
	if got := delta["slow"][1]; abs(got-wantDelta) > 0.05*wantDelta {
		t.Errorf("slow's delta %.4f s, the runs measured %.4f s", got, wantDelta)
	}
	if got := ratio["slow"][1]; abs(got-wantRatio) > 0.05*wantRatio {
		t.Errorf("slow's ratio %.3f, the runs measured %.3f", got, wantRatio)
	}
	if got, want := ratio["fast"][1], m[1]["cpu fast"]/m[0]["cpu fast"]; abs(got-want) > 0.05*want {
		t.Errorf("fast's ratio %.3f, the runs measured %.3f", got, want)
	}

	// The other views compare too. view reads a compared view's CSV: its rows' values by name (and,
	// for callers-callees, by the block's function and the section: "main/Callees/slow").
	view := func(mode, metric, v string) map[string][]float64 {
		r := er(t, "", nil, append([]string{"print", "-printmode", "csv", "-compare", mode, "-metrics", metric, "-" + v}, exps...)...)
		if r.code != 0 {
			t.Fatalf("er print -compare %s -%s: exit %d\n%s", mode, v, r.code, r.stderr)
		}
		rows, err := csv.NewReader(strings.NewReader(strings.ReplaceAll(r.stdout, "\n#view,callers-callees\n", "\n"))).ReadAll()
		if err != nil {
			t.Fatalf("-%s: %v\n%s", v, err, r.stdout)
		}
		out := map[string][]float64{}
		block, callers := "", map[string][]float64{}
		for _, f := range rows {
			// A row only the second experiment has leaves the first column blank: 0 there.
			if len(f) < 3 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "totalcpu[1]") {
				continue
			}
			vals := []float64{}
			for _, x := range f[:2] {
				v, _ := strconv.ParseFloat(x, 64) // blank: 0
				vals = append(vals, v)
			}
			name := f[len(f)-1]
			switch v {
			case "callers-callees":
				// A block's callers come before its function.
				switch f[2] {
				case "Callers":
					callers[name] = vals
					continue
				case "Function":
					block = name
					for c, cv := range callers {
						out[block+"/Callers/"+c] = cv
					}
					clear(callers)
				}
				name = block + "/" + f[2] + "/" + name
			case "lines", "pcs":
				name, _, _ = strings.Cut(name, " ")
				name = strings.TrimSuffix(name, ",")
				if old, ok := out[name]; ok {
					vals[0] += old[0]
					vals[1] += old[1]
				}
			}
			out[name] = vals
		}
		return out
	}
	check := func(what string, got, want float64) {
		t.Logf("%s: %.4f (measured %.4f)", what, got, want)
		if abs(got-want) > 0.05*abs(want) {
			t.Errorf("%s: %.4f, the runs measured %.4f", what, got, want)
		}
	}
	check("call tree: slow's delta", view("delta", "i.totalcpu", "calltree")["slow"][1], wantDelta)
	check("call tree: slow's ratio", view("ratio", "i.totalcpu", "calltree")["slow"][1], wantRatio)
	check("callers-callees: main's callee slow, delta", view("delta", "i.totalcpu", "callers-callees")["main/Callees/slow"][1], wantDelta)
	check("callers-callees: slow's caller main, ratio", view("ratio", "i.totalcpu", "callers-callees")["slow/Callers/main"][1], wantRatio)
	check("lines: slow's lines, delta", view("delta", "e.totalcpu", "lines")["slow"][1], wantDelta)
	check("instructions: slow's, delta", view("delta", "e.totalcpu", "pcs")["slow"][1], wantDelta)
	// The annotated source and disassembly of slow: its lines' and instructions' deltas add up to its.
	for _, v := range []string{"source", "disasm"} {
		r := er(t, "", nil, append([]string{"print", "-printmode", "csv", "-compare", "delta", "-metrics", "e.totalcpu", "-" + v, "slow"}, exps...)...)
		if r.code != 0 {
			t.Fatalf("er print -compare delta -%s slow: exit %d\n%s", v, r.code, r.stderr)
		}
		rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
		if err != nil || len(rows) < 2 || rows[0][0] != "e.totalcpu[1]" || rows[0][1] != "delta.e.totalcpu[2]" {
			t.Fatalf("-%s slow: %v\n%s", v, err, r.stdout)
		}
		var sum float64
		for _, row := range rows[1:] {
			d, _ := strconv.ParseFloat(row[1], 64)
			sum += d
		}
		check("annotated "+v+": slow's delta", sum, wantDelta)
	}
	// The program's load object changes by its functions' changes (the function list's).
	fd, od := view("delta", "e.totalcpu", "functions"), view("delta", "e.totalcpu", "lobjects")
	for _, name := range []string{"slow", "fast", "main", "calibrate"} {
		if fd[name] == nil {
			t.Fatalf("compared functions: no %s in %v", name, fd)
		}
	}
	obj := "<" + filepath.Base(prog) + ">"
	if od[obj] == nil {
		t.Fatalf("compared load objects: no %s in %v", obj, od)
	}
	want := fd["slow"][1] + fd["fast"][1] + fd["main"][1] + fd["calibrate"][1]
	check("load objects: the program's delta", od[obj][1], want)

	// The Analyzer's differential flame graph: slow's box under main changes by slow's delta.
	srv, err := web.Open(exps)
	if err != nil {
		t.Fatal(err)
	}
	ts := analyzerServer(t, srv)
	df := apiGet(t, ts, "/api/diffflame")
	nodes := df["nodes"].([]any)
	var a, b float64
	for _, n := range nodes {
		n := n.(map[string]any)
		if n["name"] == "slow" {
			if p := nodes[int(n["p"].(float64))].(map[string]any); p["name"] != "main" {
				t.Errorf("differential flame graph: slow under %v", p["name"])
			}
			a, b = n["a"].(float64)/1e9, n["b"].(float64)/1e9
		}
	}
	check("differential flame graph: slow's change", b-a, wantDelta)
	check("differential flame graph: slow's ratio", b/a, wantRatio)
}
