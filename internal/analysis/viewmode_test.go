package analysis

import (
	"testing"

	"er/internal/experiment"
)

func TestViewModeNames(t *testing.T) {
	for _, m := range []ViewMode{ViewUser, ViewExpert, ViewMachine} {
		if got, ok := ParseViewMode(m.String()); !ok || got != m {
			t.Errorf("%v: parsed %v %v", m, got, ok)
		}
	}
	if _, ok := ParseViewMode("java"); ok {
		t.Error("java parsed as a view mode")
	}
}

// joinAC is a test pass of the expert mode: the frames of A and C become one, <A and C>; it counts
// its runs in *calls.
func joinAC(calls *int) *FramePass {
	return &FramePass{Name: "join A and C", Modes: []ViewMode{ViewExpert}, Frames: func(c *PassContext, fr []int32) []int32 {
		*calls++
		out := fr[:0]
		for _, f := range fr {
			if n := c.Function(f).Name; n == "A" || n == "C" {
				if c.Function(out[len(out)-1]).Kind == FuncView {
					continue
				}
				f = c.ViewFunc(c.Function(f).Object, "<A and C>")
			}
			out = append(out, f)
		}
		return out
	}}
}

// TestFramePass: a pass of the expert mode turns main→A→C into main→<A and C> there, once per
// distinct raw stack, and nowhere else; removed, it is gone.
func TestFramePass(t *testing.T) {
	fk := newFake("main", "A", "C")
	fk.sample(1, "main", "A", "C")
	fk.sample(2, "main", "A", "C")
	fk.sample(4, "main")
	again := experiment.ClockAt(fk.d.ClockTable(), 0)
	again.Period = 8
	fk.d.AppendClock(again) // a fourth sample, of the first one's raw stack
	calls := 0
	remove := RegisterPass(joinAC(&calls))
	if !HasPasses(ViewExpert, nil) || HasPasses(ViewUser, nil) || HasPasses(ViewMachine, nil) {
		t.Errorf("passes: expert %v, user %v, machine %v", HasPasses(ViewExpert, nil), HasPasses(ViewUser, nil), HasPasses(ViewMachine, nil))
	}
	p, err := Analyze([]*experiment.Data{fk.d}, Options{ViewMode: ViewExpert})
	if err != nil {
		t.Fatal(err)
	}
	j := fn(t, p, "<A and C>")
	if p.Functions[j].Kind != FuncView || p.Exclusive(j)[0] != 11 || p.Inclusive(fn(t, p, "main"))[0] != 15 || len(p.FindFunctions("C")) != 0 && p.Inclusive(fn(t, p, "C"))[0] != 0 {
		t.Errorf("expert: <A and C> %d exclusive, main %d inclusive", p.Exclusive(j)[0], p.Inclusive(fn(t, p, "main"))[0])
	}
	if calls != 3 { // three raw stacks
		t.Errorf("the pass ran %d times, want 3", calls)
	}
	user := analyze(t, fk.d)
	if len(user.FindFunctions("<A and C>")) != 0 || user.Exclusive(fn(t, user, "C"))[0] != 11 {
		t.Error("the user mode ran the expert mode's pass")
	}
	remove()
	if HasPasses(ViewExpert, nil) {
		t.Error("the pass is still registered")
	}
}

// TestKindPasses: a kind's passes are registered with it and go with it.
func TestKindPasses(t *testing.T) {
	pass := &FramePass{Name: "kind's", Modes: []ViewMode{ViewExpert}, Frames: func(_ *PassContext, fr []int32) []int32 { return fr }}
	k := RegisterKind(&Kind{Name: "passing", Title: "Passing", Len: func(*experiment.Data) int { return 0 },
		Info: func(*experiment.Data, int, *EventInfo) {}, Stack: func(*experiment.Data, int) uint32 { return 0 }, Passes: []*FramePass{pass}})
	if !HasPasses(ViewExpert, nil) || HasPasses(ViewUser, nil) {
		t.Errorf("with the kind: expert %v, user %v", HasPasses(ViewExpert, nil), HasPasses(ViewUser, nil))
	}
	RemoveKind(k)
	if HasPasses(ViewExpert, nil) {
		t.Error("the kind's pass outlived it")
	}
}
