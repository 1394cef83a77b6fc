package kindtest

import (
	"path/filepath"
	"testing"

	"er/internal/experiment"
)

// WriteSymbolic writes, in dir, an experiment sym.er of a toy runtime whose stacks are symbolic
// frames of its table 1 (experiment.SymbolicFrame), and returns its path: Toy.main (method 6) calls
// method 5, which is Toy.run until 1 ms and Toy.other afterwards (the runtime reused the id), 3 and
// 2 clock samples of 1 ms, and method 9, which no mapping names, 1 sample. Toy.run's samples are at
// its position 7, line 12 of Toy.java; Toy.other's at line 20; Toy.main's call at line 3.
func WriteSymbolic(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "sym.er")
	w, err := experiment.Create(path, experiment.Log{FormatVersion: experiment.FormatVersion, Pid: 1, Command: []string{"toy"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []experiment.Mapping{
		experiment.SymbolicMapping(1, 1, 6, "[toy]", "Toy.main", "Toy.java", []experiment.PosLine{{Pos: 0, Line: 3}}, 0, -1),
		experiment.SymbolicMapping(1, 1, 5, "[toy]", "Toy.run", "Toy.java", []experiment.PosLine{{Pos: 0, Line: 10}, {Pos: 4, Line: 12}}, 0, -1),
		// (Its reuse unloads Toy.run: the writer ends a mapping where another of its process overlaps it.)
		experiment.SymbolicMapping(1, 1, 5, "[toy]", "Toy.other", "Toy.java", []experiment.PosLine{{Pos: 0, Line: 20}}, 1e6, -1),
	} {
		w.AddMapping(m)
	}
	sym := experiment.SymbolicFrame
	for _, s := range []struct {
		t     int64
		stack experiment.Stack
		n     int
	}{
		{100, experiment.Stack{sym(1, 5, 7), sym(1, 6, 2)}, 3},
		{2e6, experiment.Stack{sym(1, 5, 0), sym(1, 6, 2)}, 2},
		{3e6, experiment.Stack{sym(1, 9, 1), sym(1, 6, 2)}, 1},
	} {
		id, err := w.Stack(s.stack)
		if err != nil {
			t.Fatal(err)
		}
		for range s.n {
			if err := w.Clock(experiment.ClockSample{Time: s.t, Pid: 1, Tid: 1, Period: 1e6, Mode: experiment.ModeUser, Stack: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.UpdateLog(func(l *experiment.Log) { l.EndTime = 4e6 })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
