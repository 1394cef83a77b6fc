package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
)

// Synthetic programs: an executable /bin/prog mapped at progBase whose functions are 0x100 bytes
// apart from link-time address 0x1000, and optionally libraries and a kernel.
const (
	progBase = 0x555555554000
	progPid  = 100
	symSpan  = 0x100
)

type fake struct {
	d    *experiment.Data
	addr map[string]uint64 // runtime address of each function's first byte
}

// newFake makes an experiment whose executable has the named functions.
func newFake(funcs ...string) *fake {
	fk := &fake{addr: map[string]uint64{}, d: &experiment.Data{
		Dir:      "test.1.er",
		Log:      experiment.Log{Pid: progPid},
		Stacks:   []experiment.Stack{nil},
		Archives: map[string]*experiment.Archive{},
	}}
	fk.addObject("/bin/prog", progBase, 0x1000, funcs...)
	return fk
}

// addObject maps an ELF object at base whose symbols start at link-time address first.
func (fk *fake) addObject(path string, base, first uint64, funcs ...string) *experiment.Archive {
	size := first + uint64(len(funcs)+1)*symSpan
	a := &experiment.Archive{Path: path, Kind: "elf",
		Segments: []experiment.Segment{{Vaddr: 0, Offset: 0, Filesz: size, Memsz: size}}}
	for i, f := range funcs {
		addr := first + uint64(i)*symSpan
		kind := experiment.SymFunc
		if strings.HasSuffix(f, "@plt") {
			kind = experiment.SymPLT
		}
		a.Symbols = append(a.Symbols, experiment.Symbol{Name: f, Addr: addr, Size: symSpan - 0x10, Kind: kind})
		fk.addr[f] = base + addr
	}
	fk.d.Archives[path] = a
	fk.d.Mappings = append(fk.d.Mappings, experiment.Mapping{Pid: progPid, Start: base, End: base + size, Path: path, UnloadTime: -1})
	return a
}

// stack adds a stack of the named functions, given root first, and returns its id. Return
// addresses point just after a call instruction; the leaf PC is inside its function.
func (fk *fake) stack(funcs ...string) uint32 {
	var st experiment.Stack
	for i := len(funcs) - 1; i >= 0; i-- {
		a, ok := fk.addr[funcs[i]]
		if !ok {
			panic("unknown function " + funcs[i])
		}
		if i == len(funcs)-1 {
			st = append(st, a+4)
		} else {
			st = append(st, a+0x20)
		}
	}
	fk.d.Stacks = append(fk.d.Stacks, st)
	return uint32(len(fk.d.Stacks) - 1)
}

// sample adds one clock sample of period units in user mode with the stack of funcs.
func (fk *fake) sample(period int64, funcs ...string) {
	fk.d.AppendClock(experiment.ClockSample{Pid: progPid, Tid: progPid, Mode: experiment.ModeUser,
		Period: period, Stack: fk.stack(funcs...)})
}

func analyze(t testing.TB, ds ...*experiment.Data) *Profile {
	t.Helper()
	p, err := Analyze(ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fn finds the only function named name.
func fn(t testing.TB, p *Profile, name string) int {
	t.Helper()
	fs := p.FindFunctions(name)
	if len(fs) != 1 {
		t.Fatalf("%d functions named %q", len(fs), name)
	}
	return fs[0]
}

// seedExample is seed 002's Figure 2-1: main calls A and B; A calls C(10); B calls C(7.5), works
// 5 units, calls C(7.5); C does 20% itself, 40% in E and 40% in F; F calls G for half of its part.
func seedExample() *fake {
	fk := newFake("main", "A", "B", "C", "E", "F", "G")
	fk.sample(2, "main")
	fk.sample(2, "main", "A", "C")
	fk.sample(4, "main", "A", "C", "E")
	fk.sample(2, "main", "A", "C", "F")
	fk.sample(2, "main", "A", "C", "F", "G")
	fk.sample(5, "main", "B")
	fk.sample(3, "main", "B", "C") // two calls of C(7.5)
	fk.sample(6, "main", "B", "C", "E")
	fk.sample(3, "main", "B", "C", "F")
	fk.sample(3, "main", "B", "C", "F", "G")
	return fk
}

func TestSeedExample(t *testing.T) {
	p := analyze(t, seedExample().d)
	if p.Total[MetricTotalCPU] != 32 || p.Total[MetricUserCPU] != 32 || p.Total[MetricSystemCPU] != 0 {
		t.Fatalf("totals %v", p.Total)
	}
	if p.NumStacks() != 10 {
		t.Errorf("%d distinct stacks, want 10", p.NumStacks())
	}
	want := map[string][2]int64{ // exclusive, inclusive
		"main": {2, 32}, "A": {0, 10}, "B": {5, 20}, "C": {5, 25}, "E": {10, 10}, "F": {5, 10}, "G": {5, 5},
	}
	for name, w := range want {
		f := fn(t, p, name)
		if e, i := p.Exclusive(f)[0], p.Inclusive(f)[0]; e != w[0] || i != w[1] {
			t.Errorf("%s: exclusive %d inclusive %d, want %d %d", name, e, i, w[0], w[1])
		}
	}
	ccWant := map[string]struct{ callers, callees string }{
		"main": {"<Total>=32", "A=10 B=20"},
		"A":    {"main=10", "C=10"},
		"B":    {"main=20", "C=15"},
		"C":    {"A=10 B=15", "E=10 F=10"},
		"E":    {"C=10", ""},
		"F":    {"C=10", "G=5"},
		"G":    {"F=5", ""},
	}
	for name, w := range ccWant {
		cc, err := p.CallersCallees([]int{fn(t, p, name)})
		if err != nil {
			t.Fatal(err)
		}
		if got := attrString(p, cc.Callers); got != w.callers {
			t.Errorf("callers of %s: %s, want %s", name, got, w.callers)
		}
		if got := attrString(p, cc.Callees); got != w.callees {
			t.Errorf("callees of %s: %s, want %s", name, got, w.callees)
		}
	}
	// The fragment B->C: C as called from B.
	cc, err := p.CallersCallees([]int{fn(t, p, "B"), fn(t, p, "C")})
	if err != nil {
		t.Fatal(err)
	}
	if cc.Inclusive[0] != 15 || cc.Exclusive[0] != 3 || attrString(p, cc.Callers) != "main=15" || attrString(p, cc.Callees) != "E=6 F=6" {
		t.Errorf("fragment B C: incl %d excl %d callers %s callees %s", cc.Inclusive[0], cc.Exclusive[0], attrString(p, cc.Callers), attrString(p, cc.Callees))
	}
	checkIdentities(t, p)
}

// attrString lists attributed values by name, sorted by name.
func attrString(p *Profile, as []Attributed) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%s=%d", p.FuncName(a.Func, NameLong), a.Value[0]))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func TestDirectRecursion(t *testing.T) {
	fk := newFake("main", "a")
	fk.sample(10, "main", "a", "a", "a") // all the work in the final call
	fk.sample(2, "main", "a")
	fk.sample(3, "main", "a", "a")
	p := analyze(t, fk.d)
	a, main := fn(t, p, "a"), fn(t, p, "main")
	if e, i := p.Exclusive(a)[0], p.Inclusive(a)[0]; e != 15 || i != 15 {
		t.Errorf("a: exclusive %d inclusive %d, want 15 15 (counted once per stack)", e, i)
	}
	cc, _ := p.CallersCallees([]int{a})
	// The inclusive metric of the recursion goes to a itself, not to main, which started it.
	if got := attrString(p, cc.Callers); got != "a=13 main=2" {
		t.Errorf("callers of a: %s", got)
	}
	if got := attrString(p, cc.Callees); got != "a=0" {
		t.Errorf("callees of a: %s", got)
	}
	// main, as a caller, attributes the whole recursive call to a.
	cc, _ = p.CallersCallees([]int{main})
	if got := attrString(p, cc.Callees); got != "a=15" {
		t.Errorf("callees of main: %s", got)
	}
	checkIdentities(t, p)
}

func TestIndirectRecursion(t *testing.T) {
	fk := newFake("main", "a", "b")
	fk.sample(6, "main", "a", "b", "a", "b")
	fk.sample(1, "main", "a", "b", "a")
	p := analyze(t, fk.d)
	a, b := fn(t, p, "a"), fn(t, p, "b")
	if p.Inclusive(a)[0] != 7 || p.Inclusive(b)[0] != 7 || p.Exclusive(a)[0] != 1 || p.Exclusive(b)[0] != 6 {
		t.Errorf("a %d/%d b %d/%d", p.Exclusive(a)[0], p.Inclusive(a)[0], p.Exclusive(b)[0], p.Inclusive(b)[0])
	}
	cases := []struct {
		f                int
		callers, callees string
	}{
		{a, "b=7 main=0", "b=6"},
		{b, "a=7", "a=1"},
	}
	for _, c := range cases {
		cc, _ := p.CallersCallees([]int{c.f})
		if got := attrString(p, cc.Callers); got != c.callers {
			t.Errorf("callers of %s: %s, want %s", p.Functions[c.f].Name, got, c.callers)
		}
		if got := attrString(p, cc.Callees); got != c.callees {
			t.Errorf("callees of %s: %s, want %s", p.Functions[c.f].Name, got, c.callees)
		}
	}
	checkIdentities(t, p)
}

func TestTotalView(t *testing.T) {
	p := analyze(t, seedExample().d)
	cc, err := p.CallersCallees([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Callers) != 0 || attrString(p, cc.Callees) != "main=32" || cc.Exclusive[0] != 0 || cc.Inclusive[0] != 32 {
		t.Errorf("<Total>: callers %v callees %s excl %d incl %d", cc.Callers, attrString(p, cc.Callees), cc.Exclusive[0], cc.Inclusive[0])
	}
	if p.Exclusive(0)[0] != 32 || p.Inclusive(0)[0] != 32 || p.FuncName(0, NameLong) != "<Total>" {
		t.Errorf("<Total> row: %v %v", p.Exclusive(0), p.Inclusive(0))
	}
	for _, bad := range [][]int{nil, {-1}, {99}, {1, 0}} {
		if _, err := p.CallersCallees(bad); err == nil {
			t.Errorf("fragment %v accepted", bad)
		}
	}
}

func TestModesAndObjects(t *testing.T) {
	fk := newFake("main", "work")
	fk.addObject("/lib/libc.so.6", 0x7f0000000000, 0x2000, "memcpy", "write")
	fk.sample(3, "main", "work")
	fk.sample(4, "main", "memcpy")
	fk.d.AddClock([]experiment.ClockSample{{Pid: progPid, Mode: experiment.ModeKernel, Period: 5, Stack: fk.stack("main", "write")}})
	fk.d.AddClock([]experiment.ClockSample{{Pid: progPid, Mode: experiment.ModeUnknown, Period: 1, Stack: fk.stack("main")}})
	p := analyze(t, fk.d)
	if !slices.Equal(p.Total, []int64{13, 7, 5}) || p.Events != 4 {
		t.Fatalf("totals %v events %d", p.Total, p.Events)
	}
	w := fn(t, p, "write")
	if !slices.Equal(p.Exclusive(w), []int64{5, 0, 5}) {
		t.Errorf("write: %v", p.Exclusive(w))
	}
	var libc, prog int
	for o, obj := range p.Objects {
		switch obj.Name {
		case "<libc.so.6>":
			libc = o
		case "<prog>":
			prog = o
		}
	}
	if libc == 0 || prog == 0 || p.Objects[libc].Path != "/lib/libc.so.6" || p.Objects[libc].Kind != "elf" {
		t.Fatalf("objects %+v", p.Objects)
	}
	if got := p.ObjectExclusive(libc); !slices.Equal(got, []int64{9, 4, 5}) {
		t.Errorf("libc exclusive %v", got)
	}
	if got := p.ObjectInclusive(prog); !slices.Equal(got, []int64{13, 7, 5}) {
		t.Errorf("prog inclusive %v", got)
	}
	if got := p.ObjectExclusive(prog); !slices.Equal(got, []int64{4, 3, 0}) {
		t.Errorf("prog exclusive %v", got)
	}
	if fs := p.ObjectFunctions(libc); len(fs) != 2 || p.Functions[fs[0]].Name != "memcpy" {
		t.Errorf("libc functions %v", fs)
	}
}

func TestSymbolization(t *testing.T) {
	fk := newFake("main", "caller", "next", "puts@plt")
	fk.addObject("/lib/libc.so.6", 0x7f0000000000, 0x2000, "puts")
	kernel := &experiment.Archive{Path: KernelPath, Kind: "kernel", Symbols: []experiment.Symbol{
		{Name: "do_syscall_64", Addr: 0xffffffff81000000, Kind: experiment.SymKernel},
		{Name: "ksys_write", Addr: 0xffffffff81000100, Kind: experiment.SymKernel},
	}}
	fk.d.Archives[KernelPath] = kernel
	main, caller, next := fk.addr["main"], fk.addr["caller"], fk.addr["next"]
	// caller's last instruction is a call: its return address is next's first byte.
	callerEnd := caller + symSpan - 0x10
	stacks := []struct {
		st   experiment.Stack
		want string // root first
	}{
		{experiment.Stack{next + 4, callerEnd, main + 0x20}, "main caller next"},
		// A leaf PC in a PLT stub is dropped: the time is the caller's (seed 004).
		{experiment.Stack{fk.addr["puts@plt"] + 2, main + 0x20}, "main"},
		// Unless nothing called the stub.
		{experiment.Stack{fk.addr["puts@plt"] + 2}, "puts@plt"},
		{experiment.Stack{0xffffffff81000104, 0xffffffff81000050, fk.addr["puts"] + 0x30, main + 0x20}, "main puts do_syscall_64 ksys_write"},
		// In a gap between libc symbols, past the end of puts: <static>.
		{experiment.Stack{0x7f0000000000 + 0x2000 + 0xf8, main + 0x20}, "main <static>@0x20f0 (<libc.so.6>)"},
		// Outside every mapping.
		{experiment.Stack{0x1234, main + 0x20}, "main <Unknown>"},
		// Beyond the last kernel symbol of size 0: still that symbol.
		{experiment.Stack{0xffffffff81ffffff}, "ksys_write"},
		// The empty stack.
		{nil, "<Unknown>"},
	}
	for _, s := range stacks {
		fk.d.Stacks = append(fk.d.Stacks, s.st)
		fk.d.AddClock([]experiment.ClockSample{{Pid: progPid, Period: 1, Stack: uint32(len(fk.d.Stacks) - 1)}})
	}
	p := analyze(t, fk.d)
	for i, s := range stacks {
		if got := stackNames(p, i); got != s.want {
			t.Errorf("stack %d: %s, want %s", i, got, s.want)
		}
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	k := fn(t, p, "ksys_write")
	if f := p.Functions[k]; f.Kind != FuncKernel || p.Objects[f.Object].Name != KernelName || f.Addr != 0xffffffff81000100 {
		t.Errorf("kernel function %+v in %+v", f, p.Objects[f.Object])
	}
	plt := fn(t, p, "puts@plt")
	if p.Functions[plt].Kind != FuncPLT {
		t.Errorf("puts@plt kind %v", p.Functions[plt].Kind)
	}
	st := p.FindFunctions("<static>@0x20f0 (<libc.so.6>)")
	if len(st) != 1 || p.Functions[st[0]].Kind != FuncStatic || p.Functions[st[0]].Size != 0 {
		t.Errorf("static: %v", st)
	}
}

// stackNames names the functions of the distinct stack used by the i-th clock sample.
func stackNames(p *Profile, s int) string {
	fr, _ := p.Stack(s)
	var names []string
	for _, f := range fr {
		names = append(names, p.FuncName(int(f), NameLong))
	}
	return strings.Join(names, " ")
}

func TestMappingTimes(t *testing.T) {
	fk := newFake("main")
	// A library mapped at the same address twice: first liba (10..20), then libb (from 20 on).
	const base = 0x7f0000000000
	fk.addObject("/lib/liba.so", base, 0x1000, "fa")
	fk.addObject("/lib/libb.so", base, 0x1000, "fb")
	n := len(fk.d.Mappings)
	fk.d.Mappings[n-2].LoadTime, fk.d.Mappings[n-2].UnloadTime = 10, 20
	fk.d.Mappings[n-1].LoadTime = 20
	// A later mapping over part of the executable wins where it overlaps.
	fk.addObject("/lib/libover.so", progBase, 0x1000, "over")
	fk.d.Mappings[n].LoadTime = 30
	st := fk.stack("main")
	lib := uint32(len(fk.d.Stacks))
	fk.d.Stacks = append(fk.d.Stacks, experiment.Stack{base + 0x1004})
	for _, c := range []struct {
		t     int64
		stack uint32
	}{{5, lib}, {10, lib}, {19, lib}, {20, lib}, {100, lib}, {29, st}, {30, st}} {
		fk.d.AddClock([]experiment.ClockSample{{Time: c.t, Pid: progPid, Period: 1, Stack: c.stack}})
	}
	// Threads of another process without mappings of its own use the target's.
	fk.d.AddClock([]experiment.ClockSample{{Time: 5, Pid: 999, Period: 1, Stack: st}})
	want := map[string]int64{"<Unknown>": 1, "fa": 2, "fb": 2, "main": 2, "over": 1}
	// Raw stacks are found in tables by stack id, and in a map where the tables would be too large.
	for _, dense := range []int{maxDense, 0} {
		defer func(old int) { maxDense = old }(maxDense)
		maxDense = dense
		p := analyze(t, fk.d)
		for name, w := range want {
			if got := p.Exclusive(fn(t, p, name))[0]; got != w {
				t.Errorf("tables for %d stacks: %s: %d samples, want %d", dense, name, got, w)
			}
		}
	}
}

func TestMissingArchive(t *testing.T) {
	fk := newFake("main")
	fk.addObject("/lib/libm.so.6", 0x7f0000000000, 0x1000, "sqrt")
	fk.addObject("/lib/libz.so", 0x7f1000000000, 0x1000, "inflate")
	delete(fk.d.Archives, "/lib/libm.so.6")
	delete(fk.d.Archives, "/lib/libz.so")
	fk.d.Mappings = append(fk.d.Mappings, experiment.Mapping{Pid: progPid, Start: 0x7f2000000000, End: 0x7f2000001000, Path: "[vdso]", UnloadTime: -1})
	for range 2 {
		fk.sample(1, "main", "sqrt")
		fk.sample(1, "main", "inflate")
	}
	fk.d.Stacks = append(fk.d.Stacks, experiment.Stack{0x7f2000000010})
	fk.d.AddClock([]experiment.ClockSample{{Pid: progPid, Period: 1, Stack: uint32(len(fk.d.Stacks) - 1)}})
	calls := map[string]int{}
	libm := &experiment.Archive{Path: "/lib/libm.so.6", Kind: "elf", Segments: []experiment.Segment{{Filesz: 0x10000}},
		Symbols: []experiment.Symbol{{Name: "sqrt", Addr: 0x1000, Size: 0x20}}}
	p, err := Analyze([]*experiment.Data{fk.d}, Options{LoadArchive: func(path string) (*experiment.Archive, error) {
		calls[path]++
		if path == "/lib/libm.so.6" {
			return libm, nil
		}
		return nil, errors.New("open /lib/libz.so: no such file or directory")
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls["/lib/libm.so.6"] != 1 || calls["/lib/libz.so"] != 1 || len(calls) != 2 {
		t.Errorf("LoadArchive calls %v", calls)
	}
	if p.Exclusive(fn(t, p, "sqrt"))[0] != 2 {
		t.Error("sqrt not found through the loaded archive")
	}
	if p.Exclusive(fn(t, p, "<static>@0x0 (<libz.so>)"))[0] != 2 {
		t.Error("libz functions should be one <static> function")
	}
	if p.Exclusive(fn(t, p, "<static>@0x0 (<vdso>)"))[0] != 1 {
		t.Error("vdso without archive")
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "no symbols for /lib/libz.so: open /lib/libz.so: no such file") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

func TestBadStackReference(t *testing.T) {
	fk := newFake("main")
	fk.sample(1, "main")
	fk.d.AddClock([]experiment.ClockSample{{Pid: progPid, Period: 7, Stack: 1000}})
	p := analyze(t, fk.d)
	if p.Exclusive(fn(t, p, "<Unknown>"))[0] != 7 {
		t.Error("bad stack reference not shown as <Unknown>")
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "test.1.er: 1 clock events refer to stacks beyond the stack table (2 stacks)") {
		t.Errorf("warnings %q", p.Warnings)
	}
	if _, err := Analyze(nil, Options{}); err == nil {
		t.Error("no experiments accepted")
	}
	if _, err := Analyze([]*experiment.Data{nil}, Options{}); err == nil {
		t.Error("nil experiment accepted")
	}
}

func TestAggregateExperiments(t *testing.T) {
	a := seedExample()
	b := newFake("main", "A", "B", "C", "E", "F", "G", "H")
	b.d.Dir = "test.2.er"
	b.sample(3, "main", "H")
	b.sample(1, "main", "A", "C")
	p := analyze(t, a.d, b.d)
	if p.Total[0] != 36 {
		t.Errorf("total %d", p.Total[0])
	}
	if e, i := p.Exclusive(fn(t, p, "C"))[0], p.Inclusive(fn(t, p, "C"))[0]; e != 6 || i != 26 {
		t.Errorf("C: %d %d", e, i)
	}
	if p.Inclusive(fn(t, p, "H"))[0] != 3 {
		t.Error("H")
	}
	checkIdentities(t, p)
}

func TestPseudoFrames(t *testing.T) {
	d := &experiment.Data{
		Log: experiment.Log{Pid: 1},
		Stacks: []experiment.Stack{{}, {0x1000, experiment.FrameTruncated}, {0x1000, experiment.FrameUnwindFailed}, {0x1000},
			{experiment.FrameProcessExit}, {experiment.FrameUnsampled}},
	}
	d.AppendClock(
		experiment.ClockSample{Pid: 1, Tid: 1, Mode: experiment.ModeUser, Period: 10, Stack: 1},
		experiment.ClockSample{Pid: 1, Tid: 1, Mode: experiment.ModeUser, Period: 20, Stack: 2},
		experiment.ClockSample{Pid: 1, Tid: 1, Mode: experiment.ModeUser, Period: 40, Stack: 3},
		experiment.ClockSample{Pid: 1, Tid: 1, Mode: experiment.ModeKernel, Period: 100, Stack: 4},
		experiment.ClockSample{Pid: 1, Tid: 2, Mode: experiment.ModeUnknown, Period: 200, Stack: 5},
	)
	p, err := Analyze([]*experiment.Data{d}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for f := range p.Functions {
		got[p.Functions[f].Name] = p.Inclusive(f)[0]
	}
	if got[TruncatedName] != 10 || got[UnwindFailedName] != 20 || got[ProcessExitName] != 100 || got[UnsampledName] != 200 || got[TotalName] != 370 {
		t.Errorf("inclusive by function = %v, want %s 10, %s 20, %s 100, %s 200, <Total> 370", got,
			TruncatedName, UnwindFailedName, ProcessExitName, UnsampledName)
	}
}

// TestRefilterFilterOffLock: Refilter evaluates its filter without the lock that every profile
// refiltered from the same one shares for its views (source lines, instructions, the data space)
// and its own refilters: while one page's costly filter runs, another page's views and filters go
// on. Before, Refilter held it for the filter's whole evaluation (43 s for one 7 KB filter). The
// filter reads the function table through Tables.
func TestRefilterFilterOffLock(t *testing.T) {
	fk := seedExample()
	all := analyze(t, fk.d)
	calls, free := 0, 0
	q, err := all.Refilter(func(ev *EventInfo) bool {
		calls++
		if all.viewMu.TryLock() {
			free++
			all.viewMu.Unlock()
		}
		fns, _ := ev.Prof.Tables()
		return len(fns) == len(all.Functions)
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || free != calls {
		t.Errorf("the views' lock was free for %d of the filter's %d calls, want all", free, calls)
	}
	if q.Total[MetricTotalCPU] != all.Total[MetricTotalCPU] {
		t.Errorf("refiltered total %d, want %d", q.Total[MetricTotalCPU], all.Total[MetricTotalCPU])
	}
}

// TestRefilter: a refiltered profile sums only the selected events, over the unfiltered
// profile's function numbers; refiltering it again starts from the unfiltered one; a filtered
// profile cannot be refiltered. (internal/erprint compares Refilter with Analyze on every view.)
func TestRefilter(t *testing.T) {
	fk := seedExample()
	for i := range fk.d.ClockTable().Len() {
		fk.d.ClockTable().Time[i] = int64(i + 1)
	}
	all := analyze(t, fk.d)
	viaB := func(ev *EventInfo) bool { return ev.Time >= 6 } // the samples of main->B...
	q, err := all.Refilter(viaB, false)
	if err != nil {
		t.Fatal(err)
	}
	if q.Total[MetricTotalCPU] != 20 || q.Events != 5 || q.DataEvents[DataClock] != 5 {
		t.Errorf("refiltered: total %d, %d events (%d clock), want 20, 5 (5)", q.Total[MetricTotalCPU], q.Events, q.DataEvents[DataClock])
	}
	for name, w := range map[string][3]int64{"main": {0, 20, 1}, "A": {0, 0, 0}, "B": {5, 20, 1}, "C": {3, 15, 1}, "G": {3, 3, 1}} {
		f := fn(t, all, name)
		used := int64(0)
		if q.Used(f) {
			used = 1
		}
		if got := [3]int64{q.Exclusive(f)[0], q.Inclusive(f)[0], used}; got != w {
			t.Errorf("%s: exclusive, inclusive, used %v, want %v", name, got, w)
		}
	}
	if q.NumStacks() != 5 || len(q.Functions) != len(all.Functions) {
		t.Errorf("%d stacks, %d functions; want 5 stacks and the %d functions of all", q.NumStacks(), len(q.Functions), len(all.Functions))
	}
	checkIdentities(t, q)
	if q.Unfiltered() != all || all.Unfiltered() != all {
		t.Error("Unfiltered does not lead back to the profile of all events")
	}
	// Refiltering q starts from all, not from q.
	r, err := q.Refilter(func(ev *EventInfo) bool { return ev.Time < 6 }, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Total[MetricTotalCPU] != 12 || r.Inclusive(fn(t, all, "A"))[0] != 10 {
		t.Errorf("refiltered again: total %d, A %d; want 12 and 10", r.Total[MetricTotalCPU], r.Inclusive(fn(t, all, "A"))[0])
	}
	// The event list, asked for though all has none: the selected events in order, on their stacks.
	if len(all.EventList) != 0 || len(q.EventList) != 0 || len(r.EventList) != 5 {
		t.Errorf("event lists of all, q, r: %d, %d, %d events; want 0, 0, 5", len(all.EventList), len(q.EventList), len(r.EventList))
	}
	for i, e := range r.EventList {
		fr, _ := r.Stack(int(e.Stack))
		if e.Time != int64(i+1) || r.FuncName(int(fr[len(fr)-1]), NameLong) != []string{"main", "C", "E", "F", "G"}[i] {
			t.Errorf("event %d: time %d, leaf %s", i, e.Time, r.FuncName(int(fr[len(fr)-1]), NameLong))
		}
	}
	// No filter: the same as all.
	if n, _ := all.Refilter(nil, false); !slices.Equal(n.Total, all.Total) || n.NumStacks() != all.NumStacks() {
		t.Errorf("refiltered with no filter: %v in %d stacks, want %v in %d", n.Total, n.NumStacks(), all.Total, all.NumStacks())
	}
	filtered, err := Analyze([]*experiment.Data{fk.d}, Options{Filter: viaB})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := filtered.Refilter(nil, false); err == nil {
		t.Error("a filtered profile was refiltered")
	}
}

// TestSumsSaturate: metric values that add up past the largest int64 (periods of 2^62 ns, I/O of
// 2^62 bytes) stop at math.MaxInt64 in every sum (totals, exclusive,
// inclusive, objects, the call tree, callers-callees, address stacks, I/O files) instead of wrapping
// negative, which er print showed as 26,113,502,253,447%.
func TestSumsSaturate(t *testing.T) {
	const big, maxV = int64(1) << 62, int64(math.MaxInt64)
	fk := heapFake()
	for range 2 {
		fk.sample(big, "main", "leaky")
		fk.sample(big, "main", "grow")
	}
	for range 3 {
		fk.io(experiment.IOEvent{Op: experiment.IOReadOp, FD: 3, FD2: -1, Ret: 1, Bytes: big, Dur: big, File: "/big"}, "main", "read")
	}
	p := analyze(t, fk.d)
	check := func(what string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", what, got, want)
		}
	}
	for _, m := range []string{"totalcpu", "ioreadbytes", "ioreadtime"} {
		check("total "+m, total(t, p, m), maxV)
	}
	check("ioreadcnt", total(t, p, "ioreadcnt"), 3)
	cpu := MetricIndex(p.Metrics, "totalcpu")
	mainF, leaky := fn(t, p, "main"), fn(t, p, "leaky")
	check("inclusive main", p.Inclusive(mainF)[cpu], maxV)
	check("exclusive leaky", p.Exclusive(leaky)[cpu], maxV)
	check("inclusive leaky", p.Inclusive(leaky)[cpu], maxV)
	check("exclusive <Total>", p.Exclusive(0)[cpu], maxV)
	o := p.Functions[mainF].Object
	check("object exclusive", p.ObjectExclusive(o)[cpu], maxV)
	check("object inclusive", p.ObjectInclusive(o)[cpu], maxV)
	tr := p.CallTree()
	check("call tree root", tr.Inclusive(0)[cpu], maxV)
	cc, err := p.CallersCallees([]int{mainF})
	if err != nil {
		t.Fatal(err)
	}
	check("callers-callees inclusive of main", cc.Inclusive[cpu], maxV)
	for _, c := range cc.Callees {
		if v := c.Value[cpu]; v < 0 {
			t.Errorf("callee %s: %d", p.Functions[c.Func].Name, v)
		}
	}
	var addrSum int64
	for _, as := range p.AddrStacks() {
		if v := as.Values[cpu]; v < 0 {
			t.Errorf("address stack %v: %d", as.Frames, v)
		}
		addrSum = max(addrSum, as.Values[cpu])
	}
	check("largest address stack", addrSum, maxV)
	if len(p.IOFiles) != 1 {
		t.Fatalf("I/O files %v", p.IOFiles)
	}
	check("I/O bytes of /big", p.IOFiles[0].Values[MetricIndex(p.Metrics, "ioreadbytes")], maxV)
	for f := range p.Functions {
		for m := range p.Metrics {
			if p.Exclusive(f)[m] < 0 || p.Inclusive(f)[m] < 0 {
				t.Errorf("%s: %s %d %d", p.Functions[f].Name, p.Metrics[m].Name, p.Exclusive(f)[m], p.Inclusive(f)[m])
			}
		}
	}
}

// TestUserPCAfterException: a kernel-mode sample's user PC is the faulting (or interrupted)
// instruction when the kernel was entered by an exception or an interrupt, and the return from a
// system call otherwise: a page fault on next's first instruction is next's, where a system call
// returning to that address is charged to the byte before it (here the padding after caller).
func TestUserPCAfterException(t *testing.T) {
	fk := newFake("main", "caller", "next")
	fk.d.Archives[KernelPath] = &experiment.Archive{Path: KernelPath, Kind: "kernel", Symbols: []experiment.Symbol{
		{Name: "asm_exc_page_fault", Addr: 0xffffffff81000000, Kind: experiment.SymKernel},
		{Name: "asm_sysvec_apic_timer_interrupt", Addr: 0xffffffff81000100, Kind: experiment.SymKernel},
		{Name: "entry_SYSCALL_64_after_hwframe", Addr: 0xffffffff81000200, Kind: experiment.SymKernel},
		{Name: "handle_mm_fault", Addr: 0xffffffff81000300, Kind: experiment.SymKernel},
	}}
	next, main := fk.addr["next"], fk.addr["main"]
	stacks := []struct {
		st   experiment.Stack
		want string
	}{
		{experiment.Stack{0xffffffff81000310, 0xffffffff81000026, next, main + 0x20}, "main next asm_exc_page_fault handle_mm_fault"},
		{experiment.Stack{0xffffffff81000110, next, main + 0x20}, "main next asm_sysvec_apic_timer_interrupt"},
		{experiment.Stack{0xffffffff81000310, 0xffffffff81000276, next, main + 0x20}, "main <static>@0x11f0 (<prog>) entry_SYSCALL_64_after_hwframe handle_mm_fault"},
	}
	for _, s := range stacks {
		fk.d.Stacks = append(fk.d.Stacks, s.st)
		fk.d.AddClock([]experiment.ClockSample{{Pid: progPid, Period: 1, Mode: experiment.ModeKernel, Stack: uint32(len(fk.d.Stacks) - 1)}})
	}
	p := analyze(t, fk.d)
	for i, s := range stacks {
		if got := stackNames(p, i); got != s.want {
			t.Errorf("stack %d: %s, want %s", i, got, s.want)
		}
	}
}

// Two function stacks with one hash are two stacks, each found again.
func TestInternStackCollision(t *testing.T) {
	p := newProfile(ClockMetrics)
	b := &builder{p: p}
	a := b.internStack([]int32{1, 2, 3})
	b.stacks.Put(stackHash([]int32{4, 5}), a) // as if [1 2 3] had the hash of [4 5]
	c := b.internStack([]int32{4, 5})
	if c == a || b.internStack([]int32{4, 5}) != c || b.internStack([]int32{1, 2, 3}) != a || b.internStack([]int32{6}) == c {
		t.Errorf("stacks %d and %d with one hash: found again as %d and %d", a, c, b.internStack([]int32{1, 2, 3}), b.internStack([]int32{4, 5}))
	}
	if fr, _ := p.stack(int(c)); !slices.Equal(fr, []int32{4, 5}) || p.NumStacks() != 3 {
		t.Errorf("stack %d is %v of %d stacks; want [4 5] of 3", c, fr, p.NumStacks())
	}
}
