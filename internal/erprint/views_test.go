package erprint

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"er/internal/experiment"
)

// TestGoldenViews runs each view on the synthetic experiments and compares the output with
// testdata/NAME.golden (go test -update rewrites them).
func TestGoldenViews(t *testing.T) {
	one := "demo.1.er"
	cases := []struct {
		name string
		args []string
	}{
		{"functions", []string{"-functions", one}},
		{"functions_two_experiments", []string{"-functions", one, "demo.2.er"}},
		{"functions_metrics", []string{"-metrics", "e.%totalcpu:i.totalcpu:e.user:e.%system:size:address", "-sort", "i.totalcpu", "-functions", one}},
		{"functions_sort_name_limit", []string{"-limit", "5", "-sort", "name", "-functions", one}},
		{"functions_name_short_soname", []string{"-name", "short:soname", "-functions", one}},
		{"functions_name_mangled", []string{"-name", "mangled", "-limit", "6", "-functions", one}},
		{"functions_csv", []string{"-printmode", "csv", "-functions", one}},
		{"fsummary", []string{"-limit", "3", "-fsummary", one}},
		{"fsingle", []string{"-fsingle", "geom::Circle::area", "-fsingle", "vfs_write", one}},
		{"fsingle_csv", []string{"-printmode", "csv", "-fsingle", "main", one}},
		{"callers_callees", []string{"-callers-callees", one}},
		{"csingle", []string{"-csingle", "compute", one}},
		{"csingle_recursion", []string{"-csingle", "fib", one}},
		{"fragment", []string{"-csingle", "compute", "-cprepend", "worker", "-cappend", "_Z3sumPKdi", "-crmfirst", "-crmlast", one}},
		{"crmlast_alone", []string{"-csingle", "compute", "-crmlast", one}},
		{"calltree", []string{"-calltree", one}},
		{"calltree_tthresh", []string{"-tthresh", "5", "-calltree", "-tthresh", "0", "-metrics", "e.user", "-calltree", one}},
		{"calltree_json", []string{"-printmode", "json", "-limit", "4", "-calltree", one}},
		{"objects", []string{"-objects", "-object_list", one, "demo.2.er"}},
		{"lobjects", []string{"-lobjects", one}},
		{"header", []string{"-header", one, "demo.2.er"}},
		{"header_2", []string{"-header", "2", one, "demo.2.er"}},
		{"header_bad_id", []string{"-header", "3", one, "demo.2.er"}},
		{"statistics", []string{"-statistics", one, "demo.2.er"}},
		{"overview", []string{"-overview", one, "demo.2.er"}},
		{"lists", []string{"-experiment_list", "-thread_list", "-cpu_list", "-sample_list", one, "demo.2.er"}},
		{"metric_list", []string{"-metric_list", "-cmetric_list", "-metrics", "i.user:e.%totalcpu", "-metric_list", "-cmetric_list", one}},
		{"metrics_errors", []string{"-metrics", "e.bogus", one}},
		{"metrics_attributed", []string{"-metrics", "a.totalcpu", one}},
		{"sort_error", []string{"-sort", "x.y", one}},
		{"fsingle_unknown", []string{"-fsingle", "nosuch", one}},
		{"fsingle_bad_n", []string{"-fsingle", "main", "7", one}},
		{"help", []string{"-help"}},
		{"name_error", []string{"-name", "full", one}},
		{"printmode_error", []string{"-printmode", "html", one}},
	}
	for _, c := range cases {
		got, _ := runCase(c.args, "")
		checkGolden(t, c.name, got)
	}
}

func TestAmbiguousFunction(t *testing.T) {
	// Two experiments of programs with a function "compute" in different load objects: it is
	// ambiguous, and N chooses.
	got, code := runCase([]string{"-fsingle", "dup", "demo.1.er"}, "")
	if code != exitUsage || !strings.Contains(got, `no function named "dup"`) {
		t.Errorf("exit %d\n%s", code, got)
	}
	s := newSession(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, testEnv())
	if err := s.load([]string{"demo.1.er"}); err != nil {
		t.Fatal(err)
	}
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	// Make a second function named compute in libc by renaming printf.
	for f := range p.Functions {
		if p.Functions[f].Name == "printf" {
			p.Functions[f].Name = "compute"
		}
	}
	_, err = s.findFunction(p, "fsingle", []string{"compute"})
	want := `fsingle: 2 functions are named "compute"; choose one with "fsingle compute N":
  1) compute [/home/user/demo/demo] 2:0x00001180
  2) compute [/usr/lib/x86_64-linux-gnu/libc.so.6] 1:0x00060100`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	f, err := s.findFunction(p, "fsingle", []string{"compute", "2"})
	if err != nil || p.Functions[f].Addr != 0x60100 {
		t.Errorf("compute 2: %d %v", f, err)
	}
}

func TestJSONFunctions(t *testing.T) {
	out, _ := runOut(t, []string{"-printmode", "json", "-functions", "demo.1.er"}...)
	tab := jsonDoc(t, out)[0].Tables[0]
	if tab.Rows[0].Name != "<Total>" || cell(t, tab, 0, "e.totalcpu").V != 1330931000 || tab.Rows[1].Name != "compute" {
		t.Errorf("rows %+v", tab.Rows[:2])
	}
}

// bigExperiment is a synthetic experiment "big.er" of nSamples clock samples (8 threads) over nStacks
// random stacks of 10 to 40 frames in nFuncs functions of /bin/big, the same for the same sizes.
func bigExperiment(nFuncs, nStacks, nSamples int) *experiment.Data {
	r := rand.New(rand.NewPCG(5, 6))
	a := &experiment.Archive{Path: "/bin/big", Kind: "elf", Segments: []experiment.Segment{{Filesz: 1 << 30}}}
	for i := range nFuncs {
		a.Symbols = append(a.Symbols, experiment.Symbol{Name: fmt.Sprintf("func%05d", i), Addr: 0x1000 + uint64(i)*0x100, Size: 0xf0})
	}
	d := &experiment.Data{Dir: "big.er", Log: demoLog(1, 1e10),
		Mappings: []experiment.Mapping{{Pid: 1, Start: progBase, End: progBase + 1<<30, Path: "/bin/big", UnloadTime: -1}},
		Archives: map[string]*experiment.Archive{"/bin/big": a}, Stacks: []experiment.Stack{nil}}
	for range nStacks {
		st := make(experiment.Stack, 10+r.IntN(31))
		for i := range st {
			st[i] = progBase + 0x1000 + uint64(r.IntN(nFuncs))*0x100 + 0x20
		}
		d.Stacks = append(d.Stacks, st)
	}
	for i := range nSamples {
		d.AppendClock(experiment.ClockSample{Time: int64(i) * 10000, Pid: 1, Tid: uint32(1 + i%8),
			Mode: experiment.ModeUser, Period: period, Stack: uint32(1 + r.IntN(nStacks))})
	}
	return d
}

// BenchmarkPrintFunctions1M reads an experiment of 1,000,000 clock samples over 10,000 stacks of
// 10 to 40 frames in 20,000 functions from disk and prints the function list.
func BenchmarkPrintFunctions1M(b *testing.B) {
	d := bigExperiment(20_000, 10_000, 1_000_000)
	dir := writeExperiment(b, b.TempDir(), d)
	d = nil
	b.ResetTimer()
	for b.Loop() {
		var out, errb bytes.Buffer
		if code := run([]string{"-limit", "20", "-functions", dir}, strings.NewReader(""), &out, &errb, defaultEnv()); code != 0 {
			b.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), "10007.000 100.00  10007.000 100.00   <Total>") {
			b.Fatalf("not all samples were read:\n%s", out.String())
		}
	}
}

func TestFragmentUnchangedOnError(t *testing.T) {
	s := newSession(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, testEnv())
	if err := s.load([]string{"demo.1.er"}); err != nil {
		t.Fatal(err)
	}
	if err := s.execLine("csingle compute"); err != nil {
		t.Fatal(err)
	}
	before := append([]int(nil), s.fragment...)
	err := s.execLine("cappend <Total>")
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "can only start") {
		t.Errorf("cappend <Total>: %v", err)
	}
	if len(s.fragment) != 1 || s.fragment[0] != before[0] {
		t.Errorf("fragment changed to %v", s.fragment)
	}
	if err := s.execLine("cprepend worker"); err != nil || len(s.fragment) != 2 {
		t.Errorf("cprepend: %v %v", err, s.fragment)
	}
}

// TestHugeValuesSaturate: clock periods of 2^62 ns add up past the largest int64; the function list
// shows the sums stopped there and percentages of at most 100, and statistics no negative time.
func TestHugeValuesSaturate(t *testing.T) {
	e := testEnv()
	open := e.open
	e.open = func(dir string) (*experiment.Data, error) {
		d, err := open("demo.1.er")
		if err != nil {
			return nil, err
		}
		for i := range d.ClockTable().Len() {
			d.ClockTable().Cols[experiment.ClockColPeriod].Set(i, int64(1<<62))
		}
		d.Log.ThreadCPU = nil
		return d, nil
	}
	var out, errb bytes.Buffer
	code := run([]string{"-limit", "4", "-functions", "-statistics", "demo.1.er"}, strings.NewReader(""), &out, &errb, e)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "9223372036.855 100.00  9223372036.855 100.00   <Total>"; !strings.Contains(out.String(), want) {
		t.Errorf("the function list lacks %q:\n%s", want, out.String())
	}
	for _, f := range strings.Fields(out.String()) {
		if v, err := strconv.ParseFloat(f, 64); err == nil && (v < 0 || v > 9223372036.855) {
			t.Errorf("value %s out of range:\n%s", f, out.String())
			break
		}
	}
}

// TestDeepCallTree: a recursion 100,000 frames deep prints its call tree with the branches of at
// most 32 levels drawn and the depth in brackets below that (it took 6.4 GB and failed before).
func TestDeepCallTree(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100,000-frame stack")
	}
	const depth = 100_000
	e := testEnv()
	e.open = func(dir string) (*experiment.Data, error) {
		b := newBuilder("deep.1.er", 4242, progPath, libcPath, libmPath)
		funcs := []string{"main"}
		for range depth {
			funcs = append(funcs, "fib")
		}
		b.add(3, 4242, experiment.ModeUser, funcs...)
		b.d.Log = demoLog(4242, b.t)
		return b.d, nil
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-limit", "0", "-calltree", "deep.1.er"}, strings.NewReader(""), &out, &errb, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if want := "0.030 100.00   [100001] " + strings.Repeat("  ", 31) + "+-fib"; last != want {
		t.Errorf("last line %q, want %q; the first lines:\n%s", last, want, strings.Join(lines[:min(12, len(lines))], "\n"))
	}
	if n := strings.Count(out.String(), "+-fib"); n != depth {
		t.Errorf("%d lines of fib, want %d", n, depth)
	}
}
