package erprint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"er/internal/analysis"
	"er/internal/experiment"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The synthetic program: a PIE executable /home/user/demo/demo, libc, libm, and the kernel, with
// real-looking symbols, a C++ function, a PLT stub, a <static> frame (libc's code before main has
// no symbol), and a frame in no mapping.
const (
	progPath = "/home/user/demo/demo"
	libcPath = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	libmPath = "/usr/lib/x86_64-linux-gnu/libm.so.6"
	libzPath = "/usr/lib/x86_64-linux-gnu/libz.so.1"

	progBase = 0x555555554000 // load address: runtime = progBase + link-time address
	libcBase = 0x7ffff7d9a000
	libmBase = 0x7ffff7f00000
	libzBase = 0x7ffff7f80000
	period   = 10007000 // ns: -p on
)

type object struct {
	path string
	base uint64
	syms []experiment.Symbol
}

var objects = []object{
	{progPath, progBase, []experiment.Symbol{
		{Name: "printf@plt", Addr: 0x1030, Size: 0x10, Kind: experiment.SymPLT},
		{Name: "main", Addr: 0x1100, Size: 0x80},
		{Name: "compute", Addr: 0x1180, Size: 0x100},
		{Name: "_ZN4geom6Circle4areaEv", Addr: 0x1280, Size: 0x60},
		{Name: "_Z3sumPKdi", Addr: 0x12e0, Size: 0x40},
		{Name: "worker", Addr: 0x1320, Size: 0x40},
		{Name: "fib", Addr: 0x1360, Size: 0x40},
		{Name: "extra", Addr: 0x13a0, Size: 0x40},
		{Name: "leaky", Addr: 0x13e0, Size: 0x20},
		{Name: "good", Addr: 0x1400, Size: 0x40},
		{Name: "grow", Addr: 0x1440, Size: 0x60},
	}},
	{libcPath, libcBase, []experiment.Symbol{
		{Name: "__libc_init_first", Addr: 0x27000, Size: 0x100},
		{Name: "__libc_start_main", Addr: 0x27280, Size: 0x100},
		{Name: "printf", Addr: 0x60100, Size: 0xc0},
		{Name: "fprintf", Addr: 0x60200, Size: 0xc0},
		{Name: "fopen", Addr: 0x7a000, Size: 0x300},
		{Name: "fclose", Addr: 0x7a400, Size: 0x200},
		{Name: "start_thread", Addr: 0x89000, Size: 0x300},
		{Name: "malloc", Addr: 0xa0000, Size: 0x200},
		{Name: "calloc", Addr: 0xa0400, Size: 0x200},
		{Name: "realloc", Addr: 0xa0800, Size: 0x200},
		{Name: "free", Addr: 0xa0c00, Size: 0x200},
		{Name: "pthread_mutex_lock", Addr: 0xa1000, Size: 0x200},
		{Name: "pthread_join", Addr: 0xa1400, Size: 0x200},
		{Name: "open", Addr: 0x10d000, Size: 0x200},
		{Name: "read", Addr: 0x10d400, Size: 0x200},
		{Name: "close", Addr: 0x10d800, Size: 0x200},
		{Name: "write", Addr: 0x10e280, Size: 0x90},
		{Name: "clone3", Addr: 0x117000, Size: 0x40},
	}},
	{libmPath, libmBase, []experiment.Symbol{
		{Name: "sqrt", Addr: 0x2bd20, Size: 0x20},
	}},
}

var kernelSyms = []experiment.Symbol{
	{Name: "vfs_write", Addr: 0xffffffff813f0000, Kind: experiment.SymKernel},
	{Name: "ksys_write", Addr: 0xffffffff81400000, Kind: experiment.SymKernel},
	{Name: "do_syscall_64", Addr: 0xffffffff81e00000, Kind: experiment.SymKernel},
	{Name: "entry_SYSCALL_64", Addr: 0xffffffff82000000, Kind: experiment.SymKernel},
}

// pc returns an address inside the named function ("f+0x24": at that offset), or a special address.
func pc(name string) uint64 {
	if n, off, ok := strings.Cut(name, "+"); ok {
		o, err := strconv.ParseUint(off, 0, 64)
		if err != nil {
			panic(err)
		}
		for _, ob := range objects {
			for _, sym := range ob.syms {
				if sym.Name == n {
					return ob.base + sym.Addr + o
				}
			}
		}
		panic("no function " + n)
	}
	switch name {
	case "<static>":
		return libcBase + 0x271c9 // in libc, between __libc_init_first and __libc_start_main
	case "<unmapped>":
		return 0x7fff00001234
	case "<libz>":
		return libzBase + 0x3456
	}
	for _, o := range objects {
		for _, s := range o.syms {
			if s.Name == name {
				return o.base + s.Addr + min(0x10, s.Size/2)
			}
		}
	}
	for _, s := range kernelSyms {
		if s.Name == name {
			return s.Addr + 0x10
		}
	}
	panic("no function " + name)
}

// builder assembles one synthetic experiment.
type builder struct {
	d    *experiment.Data
	t    int64
	cpu  uint32
	pid  uint32
	seen map[string]uint32
}

func newBuilder(dir string, pid uint32, objs ...string) *builder {
	b := &builder{pid: pid, seen: map[string]uint32{}, d: &experiment.Data{
		Dir:      dir,
		Stacks:   []experiment.Stack{nil},
		Archives: map[string]*experiment.Archive{},
	}}
	for _, o := range objects {
		if !contains(objs, o.path) {
			continue
		}
		size := o.syms[len(o.syms)-1].Addr + 0x1000
		b.d.Archives[o.path] = &experiment.Archive{Path: o.path, Kind: "elf", Size: int64(size),
			Segments: []experiment.Segment{{Vaddr: 0, Offset: 0, Filesz: size, Memsz: size}}, Symbols: o.syms}
		b.d.Mappings = append(b.d.Mappings, experiment.Mapping{Pid: pid, Start: o.base, End: o.base + size, Path: o.path, UnloadTime: -1})
	}
	b.d.Archives[analysis.KernelPath] = &experiment.Archive{Path: analysis.KernelPath, Kind: "kernel", Symbols: kernelSyms}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stackOf returns the id of the stack of funcs (root first), adding it when new; none is stack 0.
func (b *builder) stackOf(funcs ...string) uint32 {
	if len(funcs) == 0 {
		return 0
	}
	key := strings.Join(funcs, " ")
	id, ok := b.seen[key]
	if !ok {
		var st experiment.Stack
		for i := len(funcs) - 1; i >= 0; i-- {
			st = append(st, pc(funcs[i]))
		}
		b.d.Stacks = append(b.d.Stacks, st)
		id = uint32(len(b.d.Stacks) - 1)
		b.seen[key] = id
	}
	return id
}

// add records n samples of the stack of funcs (root first) in mode, by thread tid.
func (b *builder) add(n int, tid uint32, mode experiment.Mode, funcs ...string) {
	id := b.stackOf(funcs...)
	for range n {
		b.t += period
		b.cpu = 1 - b.cpu
		b.d.AddClock([]experiment.ClockSample{{Time: b.t, Pid: b.pid, Tid: tid, CPU: b.cpu, Mode: mode, Period: period, Stack: id}})
	}
}

var startTime = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC).UnixNano()

func demoLog(pid uint32, end int64) experiment.Log {
	return experiment.Log{
		FormatVersion: "1.0", CollectorVersion: "er 0.1.0", Host: "buildhost", OS: "Linux 6.1.0-18-amd64", Arch: "x86_64",
		CPUs: 2, PageSize: 4096, WordSize: 64, ClockHz: 2445000000, MemoryBytes: 8 << 30,
		Command: []string{"./demo", "-n", "3"}, Cwd: "/home/user/demo", Pid: pid,
		StartTime: startTime, EndTime: end, Exited: true, KernelStacks: true,
		Settings: []experiment.Setting{
			{Name: "clock_profiling", Value: "on"},
			{Name: "clock_interval_ns", Value: "10007000"},
			{Name: "sample_period_ns", Value: "1000000000"},
			{Name: "duration_limit_ns", Value: "0"},
		},
	}
}

// demo1 is the main test experiment: pid 4242 with two threads.
func demo1() *experiment.Data {
	b := newBuilder("demo.1.er", 4242, progPath, libcPath, libmPath)
	const u, k = experiment.ModeUser, experiment.ModeKernel
	start := []string{"<static>", "__libc_start_main", "main"}
	with := func(fs ...string) []string { return append(append([]string(nil), start...), fs...) }
	b.add(40, 4242, u, with("compute")...)
	b.add(25, 4242, u, with("compute", "_Z3sumPKdi")...)
	b.add(15, 4242, u, with("compute", "_ZN4geom6Circle4areaEv")...)
	b.add(10, 4242, u, with("compute", "sqrt")...)
	b.add(2, 4242, u, with("printf@plt")...)
	b.add(3, 4242, u, with("printf")...)
	b.add(6, 4242, k, with("write", "entry_SYSCALL_64", "do_syscall_64", "ksys_write", "vfs_write")...)
	b.add(5, 4242, u, with("fib", "fib", "fib")...)
	b.add(2, 4242, u, with("fib")...)
	b.add(1, 4242, u, with("<unmapped>")...)
	b.add(20, 4243, u, "clone3", "start_thread", "worker", "compute")
	b.add(4, 4243, u, "clone3", "start_thread", "worker", "compute", "_Z3sumPKdi")
	end := b.t + 5000000
	b.d.Log = demoLog(4242, end)
	b.d.Notes = "tuned build\nsecond line of notes\n"
	for _, c := range b.d.ClockSamples() {
		b.d.Log.CountedCPUNS += c.Period
	}
	b.d.Log.CountedCPUNS += 7000000 // what the threads ran after their last sample
	b.d.Log.Events = []experiment.Event{
		{Time: 0, Kind: "start", Pid: 4242, Text: "target started"},
		{Time: 0, Kind: "comment", Text: "first run"},
		{Time: 612000000, Kind: "warning", Pid: 4242, Text: "3 samples lost: ring buffer full"},
		{Time: end, Kind: "exit", Pid: 4242, Text: "exit status 0"},
	}
	b.d.Overview = []experiment.OverviewSample{
		{Time: 0, Pid: 4242, Sample: 1, RSSBytes: 1 << 20, NumThreads: 1, Label: "start"},
		{Time: 1000000000, Pid: 4242, Sample: 2, UserNS: 950000000, SystemNS: 40000000, MinFlt: 120, MajFlt: 2, VolCtxSw: 3, InvolCtxSw: 40, RSSBytes: 5 << 20, NumThreads: 2, Label: "periodic"},
		{Time: end, Pid: 4242, Sample: 3, UserNS: 1270000000, SystemNS: 60000000, MinFlt: 150, MajFlt: 2, VolCtxSw: 5, InvolCtxSw: 52, RSSBytes: 6 << 20, NumThreads: 1, Label: "end"},
	}
	return b.d
}

// demo2 is a second run of the same program, with a library that has no archive.
func demo2() *experiment.Data {
	b := newBuilder("demo.2.er", 5151, progPath, libcPath)
	b.d.Mappings = append(b.d.Mappings, experiment.Mapping{Pid: 5151, Start: libzBase, End: libzBase + 0x20000, Path: libzPath, UnloadTime: -1})
	const u = experiment.ModeUser
	start := []string{"<static>", "__libc_start_main", "main"}
	with := func(fs ...string) []string { return append(append([]string(nil), start...), fs...) }
	b.add(10, 5151, u, with("compute")...)
	b.add(5, 5151, u, with("compute", "_Z3sumPKdi")...)
	b.add(4, 5151, u, with("extra")...)
	b.add(3, 5151, u, with("<libz>")...)
	b.d.Log = demoLog(5151, 0) // still running: no end time
	b.d.Log.Exited = false
	b.d.Log.StartTime += 60e9
	b.d.Warnings = []string{"profile.clock: incomplete last block at offset 8192 (40 of 512 bytes); skipped"}
	b.d.Overview = []experiment.OverviewSample{
		{Time: 0, Pid: 5151, Sample: 1, RSSBytes: 1 << 20, NumThreads: 1, Label: "start"},
	}
	return b.d
}

// testEnv opens the synthetic experiments by name; "broken.er" fails to read.
func testEnv() env {
	open := func(dir string) (*experiment.Data, error) {
		switch dir {
		case "demo.1.er":
			return demo1(), nil
		case "demo.2.er":
			return demo2(), nil
		case "heap.1.er":
			return heapExp(), nil
		case "io.1.er":
			return ioExp(), nil
		}
		return nil, fmt.Errorf("open %s/log.xml: no such file or directory", dir)
	}
	return env{
		open: open,
		loadArchive: func([]*experiment.Data) func(string) (*experiment.Archive, error) {
			return func(path string) (*experiment.Archive, error) {
				return nil, errors.New("open " + path + ": no such file or directory")
			}
		},
		loc: time.UTC,
	}
}

// runCase runs er print with args and stdin, and returns a transcript of exit code and output.
func runCase(args []string, stdin string) (string, int) { return runCaseEnv(args, stdin, testEnv()) }

// summedEnv is e where the commands allow (summable): then the heap, synchronization and I/O events
// are summed, as the reader sums them (experiment.Options.Summed).
func summedEnv(e env) env {
	e.openSummed = func(dir string) (*experiment.Data, error) {
		d, err := e.open(dir)
		if err == nil {
			d.SummarizeHeap()
			d.SummarizeSync()
			d.SummarizeIO()
		}
		return d, err
	}
	return e
}

// runCaseEnv is runCase in environment e.
func runCaseEnv(args []string, stdin string, e env) (string, int) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb, e)
	var b strings.Builder
	fmt.Fprintf(&b, "$ er print %s\n", strings.Join(args, " "))
	if stdin != "" {
		fmt.Fprintf(&b, "--- stdin\n%s", stdin)
		if !strings.HasSuffix(stdin, "\n") {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "--- exit %d\n--- stdout\n%s", code, out.String())
	if errb.Len() > 0 {
		fmt.Fprintf(&b, "--- stderr\n%s", errb.String())
	}
	return b.String(), code
}

// checkGolden compares got with testdata/name.golden, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update after checking):\n%s", name, file, diff(string(want), got))
	}
}

// diff shows the first differing lines.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, w, g)
		}
	}
	return "(same lines)"
}

func TestGoldenInterpreter(t *testing.T) {
	script := filepath.Join(t.TempDir(), "cmds.er")
	if err := os.WriteFile(script, []byte("# a script\nlimit 3\nfunctions\n\ncsingle compute\nquit\nfunctions\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badScript := filepath.Join(t.TempDir(), "bad.er")
	if err := os.WriteFile(badScript, []byte("limit 2\nfrobnicate\nfunctions\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
	}{
		{"unknown_command", []string{"-frobnicate", "demo.1.er"}, "", exitUsage},
		{"missing_argument", []string{"demo.1.er", "-limit"}, "", exitUsage},
		{"no_experiment", []string{"-functions"}, "", exitUsage},
		{"broken_experiment", []string{"-functions", "broken.er"}, "", exitError},
		{"bad_limit", []string{"-limit", "x", "-functions", "demo.1.er"}, "", exitUsage},
		{"interactive", []string{"demo.1.er"}, "limit 2\nfunctions\nbogus\nfsingle nosuch\nname short\nfsingle geom::Circle::area\nquit\nfunctions\n", exitUsage},
		{"interactive_eof", []string{"demo.1.er"}, "limit 1\nsort name\nfunctions", exitOK},
		{"stdin_dash", []string{"-limit", "2", "-", "-version", "demo.1.er"}, "functions\n", exitOK},
		{"stdin_exit", []string{"-", "-version", "demo.1.er"}, "exit\n", exitOK},
		{"script", []string{"-script", "SCRIPT", "demo.1.er"}, "", exitOK},
		{"bad_script", []string{"-script", "BADSCRIPT", "demo.1.er"}, "", exitUsage},
		{"version", []string{"-version"}, "", exitOK},
		{"abbreviated", []string{"-lim", "2", "-func", "demo.1.er"}, "", exitOK},
		{"ambiguous_command", []string{"-f", "demo.1.er"}, "", exitUsage},
	}
	for _, c := range cases {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = strings.NewReplacer("BADSCRIPT", badScript, "SCRIPT", script).Replace(a)
		}
		got, code := runCase(args, c.stdin)
		got = strings.ReplaceAll(strings.ReplaceAll(got, badScript, "bad.er"), script, "cmds.er")
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, got)
		}
		checkGolden(t, c.name, got)
	}
}

func TestParseArgs(t *testing.T) {
	steps, dirs, err := parseArgs([]string{"-fsingle", "main", "2", "-header", "x.er", "-limit", "5", "-", "-script", "s", "y.er"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		switch {
		case s.stdin:
			got = append(got, "stdin")
		case s.script != "":
			got = append(got, "script "+s.script)
		default:
			got = append(got, s.cmd.name+" "+strings.Join(s.args, ","))
		}
	}
	if strings.Join(got, "|") != "fsingle main,2|header |limit 5|stdin|script s" || strings.Join(dirs, ",") != "x.er,y.er" {
		t.Errorf("steps %q dirs %q", got, dirs)
	}
	for _, bad := range [][]string{{"-script"}, {"-nosuch"}, {"-fsingle"}} {
		if _, _, err := parseArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSplitWords(t *testing.T) {
	w, err := splitWords(`fsingle "geom::Circle::area()" 2`)
	if err != nil || len(w) != 3 || w[1] != "geom::Circle::area()" {
		t.Errorf("%q %v", w, err)
	}
	if _, err := splitWords(`fsingle "open`); err == nil {
		t.Error("unbalanced quote accepted")
	}
	if got := joinName([]string{"f(int,", "char)", "2"}); len(got) != 2 || got[0] != "f(int, char)" || got[1] != "2" {
		t.Errorf("joinName %q", got)
	}
}

func TestOutfile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	got, code := runCase([]string{"-outfile", out, "-limit", "2", "-functions", "-appendfile", out, "-version", "-outfile", "-", "-version", "demo.1.er"}, "")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, got)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.Contains(text, "Functions sorted by metric") || !strings.HasSuffix(text, "er 0.1.0 (a performance analyzer for Linux)\n") {
		t.Errorf("outfile content:\n%s", text)
	}
	if strings.Count(got, "er 0.1.0") != 1 || strings.Contains(got, "Functions sorted") {
		t.Errorf("stdout:\n%s", got)
	}
	if _, code := runCase([]string{"-outfile", filepath.Join(dir, "no", "such", "x"), "-version"}, ""); code != exitError {
		t.Errorf("outfile in a missing directory: exit %d", code)
	}
}

func TestCommandTable(t *testing.T) {
	names := commandNames()
	if !sort.StringsAreSorted(names) || len(names) < 30 {
		t.Errorf("commands %q", names)
	}
	for _, c := range commands {
		if c.usage == "" || c.help == "" || c.run == nil || !strings.HasPrefix(c.usage, c.name) {
			t.Errorf("command %s is incomplete", c.name)
		}
		if got, err := lookup(c.name); err != nil || got != c {
			t.Errorf("lookup(%s) = %v, %v", c.name, got, err)
		}
		for _, a := range c.aliases {
			if got, err := lookup(a); err != nil || got != c {
				t.Errorf("lookup(%s) = %v, %v", a, got, err)
			}
		}
	}
}

// writeExperiment writes d to a new experiment directory under parent with the real writer.
func writeExperiment(t testing.TB, parent string, d *experiment.Data) string {
	t.Helper()
	dir := filepath.Join(parent, d.Dir)
	w, err := experiment.Create(dir, d.Log)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[uint32]uint32{}
	for i, st := range d.Stacks {
		id, err := w.Stack(st)
		if err != nil {
			t.Fatal(err)
		}
		ids[uint32(i)] = id
	}
	for _, m := range d.Mappings {
		w.AddMapping(m)
	}
	for _, c := range d.ClockSamples() {
		c.Stack = ids[c.Stack]
		if err := w.Clock(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range d.Overview {
		if err := w.Overview(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, a := range d.Archives {
		if err := experiment.WriteArchive(dir, a); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRealExperiment writes the synthetic experiment to disk and reads it back through Main's
// reader: the views must be the same as from memory.
func TestRealExperiment(t *testing.T) {
	parent := t.TempDir()
	writeExperiment(t, parent, demo1())
	t.Chdir(parent)
	args := []string{"-functions", "-callers-callees", "-calltree", "-lobjects", "demo.1.er"}
	var out, errb bytes.Buffer
	e := defaultEnv()
	e.loc = time.UTC
	e.openFile = nil // the synthetic archives describe no real file: reading them would only warn
	if code := run(args, strings.NewReader(""), &out, &errb, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want, _ := runCase(args, "")
	want = want[strings.Index(want, "--- stdout\n")+len("--- stdout\n"):]
	want, _, _ = strings.Cut(want, "--- stderr\n")
	if out.String() != want {
		t.Errorf("from disk:\n%s", diff(want, out.String()))
	}
	// demo.1.er lost 3 samples: every view says so first.
	if want := "er print: warning: demo.1.er: 3 samples lost: ring buffer full\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}

// TestBuildArchiveLinks: the archive er print builds is saved only into an experiment (a
// directory holding log.xml or map.xml), and never through a link in it: er print run by root on
// another user's experiment whose archives/ is a link to another directory writes nothing there.
// Before, it made archives/ in any directory, and wrote where the link pointed.
func TestBuildArchiveLinks(t *testing.T) {
	exe := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(exe); err != nil {
		t.Skip("no libc.so.6 found to build an archive of")
	}
	notExp, exp, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(exp, experiment.LogFile), []byte("<experiment/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(exp, experiment.ArchivesDir)); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{notExp, exp} {
		d := &experiment.Data{Dir: dir, Mappings: []experiment.Mapping{{Path: exe}}}
		if _, err := buildArchive([]*experiment.Data{d})(exe); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{notExp, elsewhere} {
		if es, err := os.ReadDir(dir); err != nil || len(es) != 0 {
			t.Errorf("er print wrote %d entries into %s (%v): want none", len(es), dir, err)
		}
	}
}

// TestBuildArchiveOthers: the archive er print builds of a load object is not saved into another
// user's experiment: that user's map.xml names the object, and would get what root's er print read
// of it (the symbols of a program only root may read). Before, er print run by root saved it there.
func TestBuildArchiveOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: giving an experiment to another user needs root")
	}
	exe := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(exe); err != nil {
		t.Skip("no libc.so.6 found to build an archive of")
	}
	own, other := t.TempDir(), t.TempDir()
	for _, dir := range []string{own, other} {
		if err := os.WriteFile(filepath.Join(dir, experiment.LogFile), []byte("<experiment/>\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{own, other} {
		d := &experiment.Data{Dir: dir, Mappings: []experiment.Mapping{{Path: exe}}}
		if _, err := buildArchive([]*experiment.Data{d})(exe); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(own, experiment.ArchivesDir, experiment.ArchiveName(exe))); err != nil {
		t.Errorf("not saved into the user's own experiment: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, experiment.ArchivesDir)); !os.IsNotExist(err) {
		t.Errorf("another user's experiment got archives/: %v; want none", err)
	}
}

// TestBuildArchive builds the archive of a real ELF file (the C library) when the experiment
// lacks it, and saves it into the experiment.
func TestBuildArchive(t *testing.T) {
	exe := ""
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skip("no libc.so.6 found to build an archive of")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, experiment.LogFile), []byte("<experiment/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &experiment.Data{Dir: dir, Mappings: []experiment.Mapping{{Path: exe}}}
	load := buildArchive([]*experiment.Data{d})
	a, err := load(exe)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != exe || len(a.Symbols) == 0 || len(a.Segments) == 0 {
		t.Errorf("archive of %s: %d symbols, %d segments", exe, len(a.Symbols), len(a.Segments))
	}
	if _, err := os.Stat(filepath.Join(dir, experiment.ArchivesDir, experiment.ArchiveName(exe))); err != nil {
		t.Errorf("archive not saved: %v", err)
	}
	if _, err := load(filepath.Join(dir, "missing.so")); err == nil {
		t.Error("archive of a missing file")
	}
	if a.BuildID != "" {
		d.Mappings[0].BuildID = "00" + a.BuildID
		if _, err := load(exe); err == nil || !strings.Contains(err.Error(), "has changed") {
			t.Errorf("changed build id: %v", err)
		}
	}
}

// zeros is an endless stream of NUL bytes, like /dev/zero.
type zeros struct{ n int64 }

func (z *zeros) Read(b []byte) (int, error) {
	clear(b)
	z.n += int64(len(b))
	return len(b), nil
}

// TestInputLineLimit: scripts and standard input are read a line at a time, a line at most maxLine
// bytes long; a longer one (an endless one: /dev/zero) stops er print with an error naming the input
// and the line, having read no more than a line's worth past the limit.
func TestInputLineLimit(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long.er")
	if err := os.WriteFile(long, []byte("limit 1\n"+strings.Repeat("x", maxLine+1)+"\nfunctions\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"-script", long, "demo.1.er"}, strings.NewReader(""), &out, &errb, testEnv())
	const lost = "er print: warning: demo.1.er: 3 samples lost: ring buffer full\n" // demo.1.er's, said first
	want := lost + "er print: " + long + ": line 2 is longer than 1048576 bytes; er print reads commands a line at a time (is it a script?)\n"
	if code != exitError || errb.String() != want {
		t.Errorf("a script with a 1 MiB line: exit %d, stderr %q; want exit %d, stderr %q", code, errb.String(), exitError, want)
	}

	z := &zeros{}
	out.Reset()
	errb.Reset()
	code = run([]string{"demo.1.er"}, z, &out, &errb, testEnv())
	want = lost + "er print: standard input: line 1 is longer than 1048576 bytes; er print reads commands a line at a time (is it a script?)\n"
	if code != exitError || errb.String() != want {
		t.Errorf("endless zeros on stdin: exit %d, stderr %q; want exit %d, stderr %q", code, errb.String(), exitError, want)
	}
	if z.n > 2*maxLine {
		t.Errorf("read %d bytes of an endless line, want at most %d", z.n, 2*maxLine)
	}

	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero:", err)
	}
	out.Reset()
	errb.Reset()
	code = run([]string{"-script", "/dev/zero", "demo.1.er"}, strings.NewReader(""), &out, &errb, testEnv())
	want = lost + "er print: /dev/zero: line 1 is longer than 1048576 bytes; er print reads commands a line at a time (is it a script?)\n"
	if code != exitError || errb.String() != want {
		t.Errorf("-script /dev/zero: exit %d, stderr %q; want exit %d, stderr %q", code, errb.String(), exitError, want)
	}
}

// TestControlCharactersShownEscaped: a function name, a comment, the notes and the command line of
// an experiment holding terminal escape sequences (ESC[2J clears the screen, BEL rings, C1 CSI) are
// printed with the sequences escaped, in text, in CSV (still valid CSV) and in JSON (still valid
// JSON, decoding to the original name); nothing raw reaches the terminal.
func TestControlCharactersShownEscaped(t *testing.T) {
	evil := "evil\x1b[2J\x07name"
	e := testEnv()
	open := e.open
	e.open = func(dir string) (*experiment.Data, error) {
		d, err := open("demo.1.er")
		if err != nil {
			return nil, err
		}
		a := *d.Archives[progPath]
		a.Symbols = slices.Clone(a.Symbols)
		for i := range a.Symbols {
			if a.Symbols[i].Name == "compute" {
				a.Symbols[i].Name = evil
			}
		}
		d.Archives[progPath] = &a
		d.Log.Events = append(d.Log.Events, experiment.Event{Kind: "comment", Text: "see \x1b]0;title\x07"})
		d.Notes = "note \u009b31m red\n"
		d.Log.Command = []string{"./demo\x1b[31m", "-n"}
		return d, nil
	}
	var out, errb bytes.Buffer
	code := run([]string{"-limit", "3", "-functions", "-header", "-printmode", "csv", "-functions", "-printmode", "json", "-functions",
		"-fsingle", "nosuch\x1b[5m", "demo.1.er"}, strings.NewReader(""), &out, &errb, e)
	if code != exitUsage {
		t.Errorf("exit %d, want %d (fsingle of no function); stderr %q", code, exitUsage, errb.String())
	}
	for name, b := range map[string][]byte{"stdout": out.Bytes(), "stderr": errb.Bytes()} {
		for _, r := range string(b) {
			if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
				t.Errorf("%s holds the raw character %U:\n%s", name, r, b)
				break
			}
		}
	}
	for _, want := range []string{
		`evil\x1b[2J\x07name`,       // the function list and the header's command line
		`see \x1b]0;title\x07`,      // the comment
		`note \u009b31m red`,        // the notes
		`'./demo\x1b[31m' '-n'`,     // the command
		`"evil\x1b[2J\x07name"`,     // the CSV field (quoted or not, the text is the escaped name)
		`"evil\u001b[2J\u0007name"`, // JSON
	} {
		if !strings.Contains(out.String(), strings.Trim(want, `"`)) {
			t.Errorf("stdout lacks %s:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), `nosuch\x1b[5m`) {
		t.Errorf("stderr does not quote the bad name escaped: %q", errb.String())
	}
	// The JSON table decodes to the original name.
	i := strings.Index(out.String(), `{"title"`)
	if i < 0 {
		t.Fatalf("no JSON table in:\n%s", out.String())
	}
	var jt struct {
		Rows []struct{ Name string } `json:"rows"`
	}
	if err := json.NewDecoder(strings.NewReader(out.String()[i:])).Decode(&jt); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range jt.Rows {
		found = found || r.Name == evil
	}
	if !found {
		t.Errorf("no JSON row decodes to %q: %q", evil, jt.Rows)
	}
}

// That a collection was not finished is said once, of the founder, with how many of its
// subexperiments are so; before, each subexperiment said it again (5 lines for a shell and its 4
// children).
func TestUnfinishedSaidOnce(t *testing.T) {
	parent := t.TempDir()
	for _, sub := range []string{"", "_f1", "_f2", "_f3"} {
		d := demo1()
		d.Log.EndTime = 0 // er collect was killed
		if sub != "" {
			d.Dir = filepath.Join(d.Dir, sub+".er")
			d.Log.Lineage = sub
			if sub == "_f3" {
				d.Log.EndTime = 1e9 // ended before er was killed
			}
		}
		writeExperiment(t, parent, d)
	}
	t.Chdir(parent)
	var out, errb bytes.Buffer
	e := defaultEnv()
	e.openFile = nil
	if code := run([]string{"-functions", "demo.1.er"}, strings.NewReader(""), &out, &errb, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var said []string
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, "not finished") {
			said = append(said, l)
		}
	}
	want := "er print: warning: demo.1.er and 2 of its subexperiments: the experiment was not finished: er collect stopped before the end"
	if len(said) != 1 || !strings.HasPrefix(said[0], want) {
		t.Errorf("stderr says %d times that the experiment was not finished:\n%s\nwant once: %q", len(said), errb.String(), want)
	}
	// A subexperiment read alone says it of itself.
	errb.Reset()
	if code := run([]string{"-functions", "demo.1.er/_f1.er"}, strings.NewReader(""), &out, &errb, e); code != 0 ||
		!strings.Contains(errb.String(), "er print: warning: demo.1.er/_f1.er: the experiment was not finished") {
		t.Errorf("a subexperiment alone: exit %d, stderr %q", code, errb.String())
	}
}

// TestStoppable: a filter wrapped by stoppable looks at the session's context every stopCheck
// events; once it is done the filter keeps nothing and is not called again, and stopped says why.
func TestStoppable(t *testing.T) {
	s := newSession(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, testEnv())
	calls := 0
	inner := func(*analysis.EventInfo) bool { calls++; return true }
	if f, stopped := s.stoppable(inner); f == nil || stopped() != nil {
		t.Error("without a context the filter is not the same")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.ctx = ctx
	f, stopped := s.stoppable(inner)
	kept := 0
	for i := range 10 * stopCheck {
		if i == stopCheck+5 {
			cancel()
		}
		if f(&analysis.EventInfo{}) {
			kept++
		}
	}
	if calls != 2*stopCheck || kept != calls || !errors.Is(stopped(), context.Canceled) {
		t.Errorf("the filter was called %d times and kept %d events, stopped %v; want %d, %d, canceled", calls, kept, stopped(), 2*stopCheck, 2*stopCheck)
	}
}
