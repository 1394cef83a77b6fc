package analysis

import (
	"slices"
	"testing"
)

// TestStackIn: a profile of the user mode gives each raw stack's functions in the expert mode,
// whose pass joins A and C, and in the machine mode, which has none; each raw stack is resolved
// once per mode; the raw stacks of one event are those EventRaws gives.
func TestStackIn(t *testing.T) {
	fk := newFake("main", "A", "C")
	fk.sample(1, "main", "A", "C")
	fk.sample(2, "main", "A")
	calls := 0
	remove := RegisterPass(joinAC(&calls))
	defer remove()
	p := analyze(t, fk.d)
	if calls != 0 || p.NumRaw() != 2 || !p.SameStacks(ViewUser) || !p.SameStacks(ViewMachine) || p.SameStacks(ViewExpert) {
		t.Fatalf("user profile: pass ran %d times, %d raw stacks, same stacks user %v machine %v expert %v", calls, p.NumRaw(),
			p.SameStacks(ViewUser), p.SameStacks(ViewMachine), p.SameStacks(ViewExpert))
	}
	raws := p.EventRaws(0, DataClock)
	if len(raws) != 2 || raws[0] == raws[1] {
		t.Fatalf("event raw stacks %v", raws)
	}
	names := func(fr []int32) []string {
		var out []string
		for _, f := range fr {
			out = append(out, p.Unfiltered().Functions[f].Name)
		}
		return out
	}
	for i, want := range [][]string{{"main", "<A and C>"}, {"main", "<A and C>"}} {
		if got := names(p.StackIn(ViewExpert, raws[i])); !slices.Equal(got, want) {
			t.Errorf("event %d in the expert mode: %v, want %v", i, got, want)
		}
	}
	if got := names(p.StackIn(ViewMachine, raws[0])); !slices.Equal(got, []string{"main", "A", "C"}) {
		t.Errorf("machine: %v", got)
	}
	p.StackIn(ViewExpert, raws[0]) // resolved already
	if calls != 2 {
		t.Errorf("the pass ran %d times for 2 raw stacks", calls)
	}
	if p.StackIn(ViewExpert, -1) != nil || p.StackIn(ViewExpert, int32(p.NumRaw())) != nil {
		t.Error("a raw stack out of range has functions")
	}
}
