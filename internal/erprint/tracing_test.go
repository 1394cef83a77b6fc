package erprint

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"er/internal/experiment"
)

// heapExp is a heap-tracing experiment (with clock profiling on) of a program like gprofng's
// heap example: leaky() leaks 1000 bytes from three call sites, good() frees what it allocates,
// grow() reallocates a block five times and frees it, main leaks a calloc block, and printf leaks
// its buffer. One block is freed twice.
func heapExp() *experiment.Data {
	b := newBuilder("heap.1.er", 6060, progPath, libcPath)
	start := []string{"<static>", "__libc_start_main"}
	with := func(fs ...string) []string { return append(append([]string(nil), start...), fs...) }
	var t int64
	h := func(op experiment.HeapOp, addr, size, old uint64, funcs ...string) {
		t += 100000
		var st uint32
		if len(funcs) > 0 {
			st = b.stackOf(with(funcs...)...)
		}
		b.d.AddHeap([]experiment.HeapEvent{{Time: t, Pid: 6060, Tid: 6060, Stack: st, Op: op, Addr: addr, Size: size, Old: old}})
	}
	h(experiment.HeapMalloc, 0x1000, 1000, 0, "main+0x0e", "leaky+0x09", "malloc+0xc7")
	h(experiment.HeapMalloc, 0x2000, 1000, 0, "main+0x18", "leaky+0x09", "malloc+0xc7")
	h(experiment.HeapMalloc, 0x3000, 1000, 0, "main+0x22", "leaky+0x09", "malloc+0xc7")
	for range 10 {
		h(experiment.HeapMalloc, 0x4000, 100, 0, "main+0x27", "good+0x0d", "malloc+0xc7")
		h(experiment.HeapFree, 0, 0, 0x4000)
	}
	h(experiment.HeapMalloc, 0x5000, 10, 0, "main+0x2c", "grow+0x0a", "malloc+0xc7")
	old := uint64(0x5000)
	for i, addr := range []uint64{0x6000, 0x6000, 0x7000, 0x7000, 0x8000} {
		h(experiment.HeapRealloc, addr, uint64(20*(i+1)), old, "main+0x2c", "grow+0x1b", "realloc+0xd2")
		old = addr
	}
	h(experiment.HeapFree, 0, 0, old)
	h(experiment.HeapCalloc, 0x9000, 100, 0, "main+0x31", "calloc+0x40")
	h(experiment.HeapMalloc, 0xa000, 4096, 0, "main+0x3b", "printf+0x50", "malloc+0xc7")
	h(experiment.HeapFree, 0, 0, 0x4000) // a double free
	b.add(3, 6060, experiment.ModeUser, with("main", "good")...)
	b.add(2, 6060, experiment.ModeUser, with("main", "grow")...)
	b.d.Log = demoLog(6060, b.t+5000000)
	b.d.Log.Command = []string{"./h"}
	b.d.Log.Settings = append(b.d.Log.Settings, experiment.Setting{Name: "heap_tracing", Value: "on"})
	return b.d
}

// ioExp is a synchronization- and I/O-tracing experiment without clock profiling, of a program
// like gprofng's I/O example: main reads /etc/passwd, writes a line to /tmp/x with fprintf and one
// to the terminal, fails to open a file and to read a bad descriptor; two threads wait for a mutex
// and main joins them.
func ioExp() *experiment.Data {
	b := newBuilder("io.1.er", 7070, progPath, libcPath)
	start := []string{"<static>", "__libc_start_main"}
	with := func(fs ...string) []string { return append(append([]string(nil), start...), fs...) }
	var t int64
	io := func(e experiment.IOEvent, funcs ...string) {
		t += 100000
		e.Time, e.Pid, e.Tid = t, 7070, 7070
		if len(funcs) > 0 {
			e.Stack = b.stackOf(with(funcs...)...)
		}
		if e.FD2 == 0 {
			e.FD2 = -1
		}
		b.d.AddIO([]experiment.IOEvent{e})
	}
	io(experiment.IOEvent{Op: experiment.IOInherited, FD: 1, File: "/dev/pts/0"})
	io(experiment.IOEvent{Op: experiment.IOOpen, FD: 3, Ret: 3, Dur: 6000, File: "/etc/passwd"}, "main+0x16", "open+0x17f")
	io(experiment.IOEvent{Op: experiment.IOReadOp, FD: 3, Ret: 100, Bytes: 100, Dur: 92000}, "main+0x29", "read+0x116")
	io(experiment.IOEvent{Op: experiment.IOClose, FD: 3, Dur: 2000}, "main+0x30", "close+0x105")
	io(experiment.IOEvent{Op: experiment.IOFopen, FD: 3, Dur: 142000, File: "/tmp/x"}, "main+0x43", "fopen+0x2fd")
	io(experiment.IOEvent{Op: experiment.IOFprintf, FD: 3, Ret: 5, Bytes: 5, Dur: 6000}, "main+0x4f", "fprintf+0xa5")
	io(experiment.IOEvent{Op: experiment.IOFclose, FD: 3, Dur: 9000}, "main+0x57", "fclose+0x20")
	io(experiment.IOEvent{Op: experiment.IOWriteOp, FD: 1, Ret: 12, Bytes: 12, Dur: 3000}, "main+0x60", "printf+0x50", "write+0x14")
	io(experiment.IOEvent{Op: experiment.IOOpen, FD: -1, Ret: -1, Err: 2, Dur: 1500, File: "/nonexistent"}, "main+0x6a", "open+0x17f")
	io(experiment.IOEvent{Op: experiment.IOReadOp, FD: 99, Ret: -1, Err: 9, Dur: 500}, "main+0x74", "read+0x116")
	var waits []experiment.SyncEvent
	for i := range 10 {
		tid := uint32(7071 + i%2)
		waits = append(waits, experiment.SyncEvent{Time: int64(2000000 + i*1100000), Pid: 7070, Tid: tid, Op: experiment.SyncMutexLock,
			Wait: 1000000 + int64(i%2)*100000, Object: 0x555555558040,
			Stack: b.stackOf("clone3", "start_thread", "worker+0x1c", "pthread_mutex_lock+0x5e")})
	}
	for i, w := range []int64{5000000, 1000000} {
		waits = append(waits, experiment.SyncEvent{Time: int64(14000000 + i*1000000), Pid: 7070, Tid: 7070, Op: experiment.SyncJoin,
			Wait: w, Object: uint64(7071 + i), Stack: b.stackOf(with("main+0x7c", "pthread_join+0x22")...)})
	}
	b.d.AddSync(waits)
	b.d.Log = demoLog(7070, 16000000)
	b.d.Log.Command = []string{"./io"}
	b.d.Log.Settings = []experiment.Setting{
		{Name: "clock_profiling", Value: "off"},
		{Name: "sync_tracing", Value: "on (calibrated threshold)"},
		{Name: "collector.sync_threshold_ns", Value: "1650"},
		{Name: "io_tracing", Value: "on"},
		{Name: "sample_period_ns", Value: "0"},
		// The read and write system calls the kernel counted (io.c): those of the calls traced and
		// one of each made inside stdio.
		{Name: "collector.io_syscalls", Value: "3 2"},
	}
	return b.d
}

// TestGoldenTracing runs the heap, synchronization and I/O views and compares them with
// testdata/NAME.golden (go test -update rewrites them).
func TestGoldenTracing(t *testing.T) {
	heap, io, demo := "heap.1.er", "io.1.er", "demo.1.er"
	cases := []struct {
		name string
		args []string
	}{
		{"heap_functions", []string{"-functions", heap}},
		{"heap_metric_list", []string{"-metric_list", "-cmetric_list", heap}},
		{"heap_leaks", []string{"-leaks", heap}},
		{"heap_allocs", []string{"-allocs", heap}},
		{"heap_heap", []string{"-heap", heap}},
		{"heap_heapstat", []string{"-heapstat", heap}},
		{"heap_leaks_csv", []string{"-printmode", "csv", "-limit", "2", "-leaks", heap}},
		{"heap_heap_json", []string{"-printmode", "json", "-limit", "2", "-heap", heap}},
		{"heap_heapstat_csv", []string{"-printmode", "csv", "-heapstat", heap}},
		{"heap_callers", []string{"-csingle", "malloc", "-calltree", heap}},
		{"heap_metrics", []string{"-metrics", "e+heapalloccnt:i.%heapallocbytes:e+%heapleakcnt", "-sort", "e+heapalloccnt", "-functions", "-fsingle", "grow", heap}},
		{"heap_pcs", []string{"-limit", "6", "-pcs", "-lines", heap}},
		{"heap_header", []string{"-header", "-statistics", heap}},
		{"io_functions", []string{"-functions", io}},
		{"io_metric_list", []string{"-metric_list", io}},
		{"io_ioactivity", []string{"-ioactivity", "-iodetail", io}},
		{"io_iocallstack", []string{"-iocallstack", io}},
		{"io_iostat", []string{"-iostat", io}},
		{"io_ioactivity_metrics", []string{"-metrics", "i+ioreadbytes:e+%iowritebytes:i+ioerrorcnt", "-sort", "iowritebytes", "-ioactivity", io}},
		{"io_ioactivity_csv", []string{"-printmode", "csv", "-iodetail", io}},
		{"io_iocallstack_json", []string{"-printmode", "json", "-limit", "2", "-iocallstack", io}},
		{"io_iostat_csv", []string{"-printmode", "csv", "-iostat", io}},
		{"io_sync", []string{"-metrics", "e.%sync:i.%sync:e+syncn", "-callers-callees", io}},
		{"io_header", []string{"-header", "-statistics", io}},
		{"tracing_absent", []string{"-leaks", "-heapstat", "-ioactivity", "-iostat", demo}},
		{"tracing_absent_csv", []string{"-printmode", "csv", "-leaks", "-iocallstack", demo, "demo.2.er"}},
		{"tracing_absent_heap", []string{"-iostat", "-metrics", "i.sync", heap}},
		{"tracing_two_experiments", []string{"-functions", "-heapstat", "-iostat", "-experiment_list", heap, io}},
	}
	// With the heap events read, and summed where the commands allow (summable): the same.
	summed := summedEnv(testEnv())
	for _, c := range cases {
		got, _ := runCase(c.args, "")
		checkGolden(t, c.name, got)
		if sum, _ := runCaseEnv(c.args, "", summed); sum != got {
			t.Errorf("%s: with the heap events summed:\n%s\nread:\n%s", c.name, sum, got)
		}
	}
}

// The command lines that views of totals alone make read heap traces summed.
func TestSummable(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"-leaks", "-allocs", "-heapstat", "-functions", "-calltree", "-statistics"}, true},
		{[]string{"-metrics", "i.heapleakbytes", "-sort", "i.heapleakbytes", "-limit", "5", "-printmode", "csv", "-functions"}, true},
		{[]string{"-filters", "THRID==1", "-leaks"}, false},
		{[]string{"-leaks", "-thread_list"}, false},
		{[]string{"-thread_select", "1", "-functions"}, false},
		{[]string{"-script", "x", "-functions"}, false},
		{[]string{"-leaks", "-"}, false},
		{nil, false},
	} {
		steps, _, err := parseArgs(append(c.args, "heap.1.er"))
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if got := summable(steps); got != c.want {
			t.Errorf("summable(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestTracingJSON reads the JSON of the heap view back: the values are exact.
func TestTracingJSON(t *testing.T) {
	out, _ := runOut(t, []string{"-printmode", "json", "-heap", "heap.1.er"}...)
	doc := jsonDoc(t, out)
	if len(doc) != 1 || doc[0].View != "heap" || len(doc[0].Tables) != 1 {
		t.Fatalf("%s", out)
	}
	tab := doc[0].Tables[0]
	if len(tab.Rows) != 9 { // <Total> and 8 allocation stacks
		t.Fatalf("%d rows", len(tab.Rows))
	}
	want := map[string]int64{"heapalloccnt": 21, "heapallocbytes": 8506, "heapleakcnt": 5, "heapleakbytes": 7196}
	for k, w := range want {
		if v := cell(t, tab, 0, k).V; v != w {
			t.Errorf("<Total> %s = %d, want %d", k, v, w)
		}
	}
	if r := tab.Rows[1]; cell(t, tab, 1, "heapallocbytes").V != 4096 || !strings.HasPrefix(r.Name, "malloc + 0x000000C7; printf + 0x0000004F; main + 0x0000003A") {
		t.Errorf("first stack %+v", r)
	}
}

// TestAnnotateTracing gives each clock sample of the annotated program a synchronization event of
// the same stack and as many nanoseconds: every function, line and instruction must then have the
// same Sync Wait Time as Total CPU Time, exclusive and inclusive, and the annotated source and
// disassembly show it.
func TestAnnotateTracing(t *testing.T) {
	e := annotateEnv()
	open := e.open
	e.open = func(dir string) (*experiment.Data, error) {
		d, err := open(dir)
		if err != nil {
			return nil, err
		}
		var waits []experiment.SyncEvent
		for _, c := range d.ClockSamples() {
			waits = append(waits, experiment.SyncEvent{Time: c.Time, Pid: c.Pid, Tid: c.Tid, Op: experiment.SyncMutexLock, Wait: c.Period, Stack: c.Stack})
		}
		d.AddSync(waits)
		return d, nil
	}
	annotateExperiment(t)
	s := newSession(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, e)
	if err := s.load([]string{"annotate.1.er"}); err != nil {
		t.Fatal(err)
	}
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	cpu, sync, n := metric(p, "totalcpu"), metric(p, "sync"), metric(p, "syncn")
	if sync < 0 || p.Total[sync] != p.Total[cpu] || p.Total[n] != 137 {
		t.Fatalf("metrics %v totals %v", p.Metrics, p.Total)
	}
	same := func(what string, excl, incl []int64) {
		if excl[cpu] != excl[sync] || incl[cpu] != incl[sync] {
			t.Errorf("%s: exclusive %v inclusive %v", what, excl, incl)
		}
	}
	for f := range p.Functions {
		same(p.Functions[f].Name, p.Exclusive(f), p.Inclusive(f))
	}
	lt := p.Lines()
	for i, l := range lt.Lines {
		same(fmt.Sprintf("line %s:%d", l.File, l.Line), lt.Exclusive(i), lt.Inclusive(i))
	}
	pt := p.PCs()
	for i, in := range pt.PCs {
		same(fmt.Sprintf("pc %#x", in.Addr), pt.Exclusive(i), pt.Inclusive(i))
	}
	var out, errb bytes.Buffer
	args := []string{"-pathmap", "/src", ".", "-metrics", "e.sync:i.sync:e+syncn", "-source", "work", "-disasm", "caller2", "annotate.1.er"}
	if code := run(args, strings.NewReader(""), &out, &errb, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	cwd, _ := os.Getwd()
	checkGolden(t, "source_sync", "$ er print "+strings.Join(args, " ")+"\n"+strings.ReplaceAll(out.String(), cwd+"/", ""))
}

// TestTracingOnWithoutEvents: an experiment recorded with heap and I/O tracing on whose target made
// no traced call has the metrics, and its views are empty rather than missing.
func TestTracingOnWithoutEvents(t *testing.T) {
	e := testEnv()
	e.open = func(dir string) (*experiment.Data, error) {
		d := demo1()
		d.Log.Settings = append(d.Log.Settings, experiment.Setting{Name: "heap_tracing", Value: "on"}, experiment.Setting{Name: "io_tracing", Value: "on"})
		return d, nil
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-heapstat", "-leaks", "-iocallstack", "-metric_list", "x.er"}, strings.NewReader(""), &out, &errb, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{"Total allocations                 0\n", "Summary Results: Distinct Leaks = 0, Total Instances = 0, Total Bytes Leaked = 0\n",
		"<Total>\n\n", "Current metrics: i+heapleakbytes:i+heapleakcnt:i+heapallocbytes:i+heapalloccnt:e.%totalcpu:i.%totalcpu:i.ioreadtime:i.iowritetime:i.ioothertime:i.ioerrortime:name\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "Process With Highest Peak") || strings.Contains(got, "no heap-tracing data") {
		t.Errorf("output:\n%s", got)
	}
}
