package web

import (
	"path/filepath"
	"testing"

	"er/internal/experiment"
)

// The test experiment: one executable whose functions call each other as
//
//	main -> work -> leafA       (thread 1, the first second)
//	main -> work -> leafB       (thread 1, the second second)
//	worker -> foo<int>::bar     (thread 2, all along; a C++ name full of <, > and &)
//
// sampled every 10 ms, so that every figure of the views is known exactly.
const (
	progPath  = "/opt/webtest/prog"
	progBase  = 0x400000
	period    = 10_000_000
	phaseEnd  = 1_000_000_000
	expEnd    = 2_000_000_000
	cppMangle = "_ZN3fooIiE3barERKSt6vectorIiSaIiEE"
	cppName   = "foo<int>::bar(std::vector<int, std::allocator<int> > const&)"
)

var symbols = []experiment.Symbol{
	{Name: "main", Addr: 0x1000, Size: 0x100},
	{Name: "work", Addr: 0x1100, Size: 0x100},
	{Name: "leafA", Addr: 0x1200, Size: 0x100},
	{Name: "leafB", Addr: 0x1300, Size: 0x100},
	{Name: "worker", Addr: 0x1400, Size: 0x100},
	{Name: cppMangle, Addr: 0x1500, Size: 0x100},
}

// pcIn is an address inside the named function.
func pcIn(name string) uint64 {
	for _, s := range symbols {
		if s.Name == name {
			return progBase + s.Addr + 0x20
		}
	}
	panic(name)
}

// stackOf is a stack of the named functions, root first, as experiments store it (leaf first).
func stackOf(funcs ...string) experiment.Stack {
	var st experiment.Stack
	for i := len(funcs) - 1; i >= 0; i-- {
		st = append(st, pcIn(funcs[i]))
	}
	return st
}

// writeTestExperiment writes the test experiment into dir and returns its path.
func writeTestExperiment(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "web.1.er")
	lg := experiment.Log{FormatVersion: "1.0", CollectorVersion: "er test", Host: "testhost", OS: "Linux", Arch: "x86_64",
		CPUs: 2, PageSize: 4096, WordSize: 64, Command: []string{"./prog", "1"}, Cwd: "/tmp", Pid: 100,
		StartTime: 1_700_000_000_000_000_000, EndTime: expEnd, Exited: true,
		Settings: []experiment.Setting{{Name: "clock_profiling", Value: "on"}, {Name: "clock_interval_ns", Value: "10000000"}}}
	w, err := experiment.Create(path, lg)
	if err != nil {
		t.Fatal(err)
	}
	w.AddMapping(experiment.Mapping{Pid: 100, Start: progBase, End: progBase + 0x10000, Path: progPath, UnloadTime: -1})
	ids := map[string]uint32{}
	stack := func(funcs ...string) uint32 {
		key := filepath.Join(funcs...)
		if id, ok := ids[key]; ok {
			return id
		}
		id, err := w.Stack(stackOf(funcs...))
		if err != nil {
			t.Fatal(err)
		}
		ids[key] = id
		return id
	}
	for ts := int64(period); ts <= expEnd; ts += period {
		leaf := "leafA"
		if ts > phaseEnd {
			leaf = "leafB"
		}
		mode := experiment.ModeUser
		if ts%(10*period) == 0 {
			mode = experiment.ModeKernel
		}
		samples := []experiment.ClockSample{
			{Time: ts, Pid: 100, Tid: 100, CPU: 0, Mode: mode, Period: period, Stack: stack("main", "work", leaf)},
			{Time: ts + 1000, Pid: 100, Tid: 101, CPU: 1, Mode: experiment.ModeUser, Period: period, Stack: stack("worker", cppMangle)},
		}
		if ts%(4*period) == 0 { // work itself, now and then
			samples = append(samples, experiment.ClockSample{Time: ts + 2000, Pid: 100, Tid: 100, CPU: 0, Mode: experiment.ModeUser, Period: period, Stack: stack("main", "work")})
		}
		for _, s := range samples {
			if err := w.Clock(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writeProgArchive(t, path)
	return path
}

// writeProgArchive writes the archive of the synthetic program into the experiment at path.
func writeProgArchive(t testing.TB, path string) {
	t.Helper()
	a := &experiment.Archive{Path: progPath, Kind: "elf", Size: 0x10000,
		Segments: []experiment.Segment{{Filesz: 0x10000, Memsz: 0x10000}}, Symbols: symbols}
	if err := experiment.WriteArchive(path, a); err != nil {
		t.Fatal(err)
	}
}
