package erprint

import (
	"strings"
	"testing"

	"er/internal/analysis"
)

// foldLibc is a test frame pass of the user and expert modes: each run of libc's frames becomes one
// frame, "<libc folded>".
var foldLibc = &analysis.FramePass{Name: "fold libc", Modes: []analysis.ViewMode{analysis.ViewUser, analysis.ViewExpert},
	Frames: func(c *analysis.PassContext, fr []int32) []int32 {
		out, prev := fr[:0], false
		for _, f := range fr {
			fn := c.Function(f)
			inLibc := fn.Object > 0 && c.Object(fn.Object).Name == "<libc.so.6>"
			if inLibc {
				if prev {
					continue
				}
				f = c.ViewFunc(fn.Object, "<libc folded>")
			}
			prev = inLibc
			out = append(out, f)
		}
		return out
	}}

// TestViewModePass: a frame pass of the user mode changes every view of stacks alike (functions,
// callers-callees, calltree, the filter's stacks), and the machine mode, which runs no pass, shows
// what er print showed before the pass existed (acceptance 3 of issue 28).
func TestViewModePass(t *testing.T) {
	cmds := []string{"-functions", "-csingle", "main", "-calltree", "-filters", `FNAME("sqrt") SOME IN USTACK`, "-functions"}
	before, code := runCase(append(append([]string{}, cmds...), "demo.1.er"), "")
	if code != 0 {
		t.Fatal(before)
	}
	remove := analysis.RegisterPass(foldLibc)
	defer remove()
	machine, code := runCase(append(append([]string{"-viewmode", "machine"}, cmds...), "demo.1.er"), "")
	if code != 0 {
		t.Fatal(machine)
	}
	strip := func(s string) string { // the command line and viewmode's line
		_, rest, _ := strings.Cut(s, "\n")
		return strings.Replace(rest, "Viewmode set to machine\n", "", 1)
	}
	if strip(machine) != strip(before) {
		t.Errorf("viewmode machine differs from the output without passes:\n%s\nbefore:\n%s", machine, before)
	}
	user, code := runCase(append(append([]string{}, cmds...), "demo.1.er"), "")
	if code != 0 {
		t.Fatal(user)
	}
	for _, libc := range []string{"__libc_start_main", "printf", "start_thread", "<static>@0x27100 (<libc.so.6>)"} {
		if !strings.Contains(before, libc) {
			t.Fatalf("demo.1.er has no %s:\n%s", libc, before)
		}
		if strings.Contains(user, libc) {
			t.Errorf("the user mode shows %s, a frame of libc, which the pass folds:\n%s", libc, user)
		}
	}
	if n := strings.Count(user, "<libc folded>"); n < 4 {
		t.Errorf("<libc folded> is in %d places (functions, callers-callees, calltree, the filtered list): \n%s", n, user)
	}

	// The folded frame has libc's exclusive time, and the totals are the same.
	s, _ := testSession(t, "demo.1.er")
	excl := func(mode string) (libc, folded, total int64) {
		if err := s.execLine("viewmode " + mode); err != nil {
			t.Fatal(err)
		}
		p, err := s.profile()
		if err != nil {
			t.Fatal(err)
		}
		for f := range p.Functions {
			fn := &p.Functions[f]
			switch {
			case fn.Kind == analysis.FuncView:
				folded += p.Exclusive(f)[0]
			case fn.Object > 0 && p.Objects[fn.Object].Name == "<libc.so.6>":
				libc += p.Exclusive(f)[0]
			}
		}
		return libc, folded, p.Total[0]
	}
	libc, folded, total := excl("machine")
	if folded != 0 || libc == 0 {
		t.Fatalf("machine: libc %d, folded %d", libc, folded)
	}
	ulibc, ufolded, utotal := excl("user")
	if ulibc != 0 || ufolded != libc || utotal != total {
		t.Errorf("user: libc %d, folded %d, total %d; want 0, machine's libc %d, total %d", ulibc, ufolded, utotal, libc, total)
	}
	// A filter's stacks are the view's: the folded frame is on them.
	if err := s.execLine("viewmode user"); err != nil {
		t.Fatal(err)
	}
	p, err := s.profile()
	if err != nil {
		t.Fatal(err)
	}
	var foldedIncl int64
	for f := range p.Functions {
		if p.Functions[f].Kind == analysis.FuncView {
			foldedIncl = p.Inclusive(f)[0]
		}
	}
	if err := s.execLine(`filters FNAME("<libc folded>") SOME IN USTACK`); err != nil {
		t.Fatal(err)
	}
	if p, err = s.profile(); err != nil {
		t.Fatal(err)
	}
	if p.Total[0] != foldedIncl || foldedIncl == 0 {
		t.Errorf("filtered on <libc folded>: total %d; want its inclusive time, %d", p.Total[0], foldedIncl)
	}
	if err := s.execLine("filters none"); err != nil {
		t.Fatal(err)
	}
	// The expert mode runs it too.
	if elibc, efolded, _ := excl("expert"); elibc != 0 || efolded != libc {
		t.Errorf("expert: libc %d, folded %d", elibc, efolded)
	}
}

// TestMachinePassRefused: the machine mode has no passes.
func TestMachinePassRefused(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a pass of the machine mode was registered")
		}
	}()
	analysis.RegisterPass(&analysis.FramePass{Name: "bad", Modes: []analysis.ViewMode{analysis.ViewMachine}})
}

// TestStackPerMode: USTACK, XSTACK and MSTACK are the event's stack in the user, expert and machine
// modes whatever the mode the profile shows: with libc folded in the user and expert modes, a
// filter on MSTACK finds printf in the user mode, where no view shows it, and a filter on USTACK
// finds the folded frame in the machine mode, where none shows that.
func TestStackPerMode(t *testing.T) {
	remove := analysis.RegisterPass(foldLibc)
	defer remove()
	s, _ := testSession(t, "demo.1.er")
	total := func(mode, filter string) int64 {
		t.Helper()
		for _, c := range []string{"viewmode " + mode, "filters " + filter} {
			if err := s.execLine(c); err != nil {
				t.Fatal(err)
			}
		}
		p, err := s.profile()
		if err != nil {
			t.Fatal(err)
		}
		return p.Total[0]
	}
	incl := func(mode, name string) int64 {
		t.Helper()
		for _, c := range []string{"viewmode " + mode, "filters none"} {
			if err := s.execLine(c); err != nil {
				t.Fatal(err)
			}
		}
		p, err := s.profile()
		if err != nil {
			t.Fatal(err)
		}
		for f := range p.Functions {
			if p.Functions[f].Name == name {
				return p.Inclusive(f)[0]
			}
		}
		return 0
	}
	printf, folded := incl("machine", "printf"), incl("user", "<libc folded>")
	if printf == 0 || folded == 0 {
		t.Fatalf("demo.1.er: printf's inclusive time %d (machine), <libc folded>'s %d (user)", printf, folded)
	}
	for _, c := range []struct {
		mode, filter string
		want         int64
	}{
		{"machine", `FNAME("printf") SOME IN MSTACK`, printf},
		{"user", `FNAME("printf") SOME IN MSTACK`, printf},
		{"expert", `FNAME("printf") SOME IN MSTACK`, printf},
		{"user", `FNAME("printf") SOME IN USTACK`, 0},
		{"machine", `FNAME("printf") SOME IN XSTACK`, 0},
		{"machine", `FNAME("<libc folded>") SOME IN USTACK`, folded},
		{"machine", `FNAME("<libc folded>") SOME IN XSTACK`, folded},
		{"user", `FNAME("<libc folded>") SOME IN USTACK`, folded},
		{"user", `FNAME("<libc folded>") SOME IN MSTACK`, 0},
		// Both in one expression, remembered by raw stack: an event of either.
		{"user", `FNAME("printf") SOME IN MSTACK || FNAME("<libc folded>") SOME IN USTACK`, folded},
		// LEAF and INSTK are the shown stack's.
		{"machine", `INSTK(printf)`, printf},
		{"user", `INSTK(printf)`, 0},
	} {
		if got := total(c.mode, c.filter); got != c.want {
			t.Errorf("viewmode %s, filters %s: total %d; want %d", c.mode, c.filter, got, c.want)
		}
	}
}
