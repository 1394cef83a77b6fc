package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"er/internal/experiment"
)

// checkIdentities checks, for every function and metric, that the callers' attributed metrics add
// up to the inclusive metric, that the exclusive metric plus the callees' attributed metrics do
// too, that exclusive <= inclusive <= total, that exclusive metrics add up to the total, and that
// the one-function view from the edge index equals the general fragment scan.
func checkIdentities(t *testing.T, p *Profile) {
	t.Helper()
	nm := len(p.Metrics)
	sumExcl := make([]int64, nm)
	for f := 1; f < len(p.Functions); f++ {
		cc, err := p.CallersCallees([]int{f})
		if err != nil {
			t.Fatal(err)
		}
		name := p.FuncName(f, NameLong)
		for m := 0; m < nm; m++ {
			excl, incl := p.Exclusive(f)[m], p.Inclusive(f)[m]
			sumExcl[m] += excl
			var callers, callees int64
			for _, a := range cc.Callers {
				callers += a.Value[m]
			}
			for _, a := range cc.Callees {
				callees += a.Value[m]
			}
			if callers != incl {
				t.Errorf("%s metric %d: callers add up to %d, inclusive %d", name, m, callers, incl)
			}
			if excl+callees != incl {
				t.Errorf("%s metric %d: exclusive %d + callees %d != inclusive %d", name, m, excl, callees, incl)
			}
			if excl < 0 || excl > incl || incl > p.Total[m] {
				t.Errorf("%s metric %d: exclusive %d inclusive %d total %d", name, m, excl, incl, p.Total[m])
			}
			if cc.Exclusive[m] != excl || cc.Inclusive[m] != incl {
				t.Errorf("%s: view %v/%v, profile %v/%v", name, cc.Exclusive, cc.Inclusive, p.Exclusive(f), p.Inclusive(f))
			}
		}
		scan := p.scanFragment([]int{f})
		if fmt.Sprint(scan) != fmt.Sprint(cc) {
			t.Errorf("%s: scan %v, index %v", name, scan, cc)
		}
	}
	if !slices.Equal(sumExcl, p.Total) {
		t.Errorf("exclusive metrics add up to %v, total %v", sumExcl, p.Total)
	}
	for o := 1; o < len(p.Objects); o++ {
		for m := 0; m < nm; m++ {
			if e, i := p.ObjectExclusive(o)[m], p.ObjectInclusive(o)[m]; e > i || i > p.Total[m] {
				t.Errorf("object %s: exclusive %d inclusive %d", p.Objects[o].Name, e, i)
			}
		}
	}
	checkTree(t, p)
}

// randomProfile makes nStacks random stacks over nFuncs functions (few, so that recursion is
// common) with random periods and modes.
func randomProfile(t *testing.T, r *rand.Rand, nFuncs, nStacks int) *Profile {
	var names []string
	for i := range nFuncs {
		names = append(names, fmt.Sprintf("f%d", i))
	}
	fk := newFake(names...)
	fk.addObject("/lib/libx.so", 0x7f0000000000, 0x1000, "x0", "x1")
	names = append(names, "x0", "x1")
	for range nStacks {
		depth := 1 + r.IntN(8)
		var st []string
		for range depth {
			st = append(st, names[r.IntN(len(names))])
		}
		fk.d.AppendClock(experiment.ClockSample{Pid: progPid, Mode: experiment.Mode(r.IntN(3)),
			Period: 1 + r.Int64N(1000), Stack: fk.stack(st...)})
	}
	return analyze(t, fk.d)
}

func TestPropertiesRandomStacks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 30 {
		p := randomProfile(t, r, 2+i%6, 1+r.IntN(60))
		checkIdentities(t, p)
		checkLinesPCs(t, p)
		if t.Failed() {
			t.Fatalf("failed on random profile %d", i)
		}
		// Fragments of two and three functions follow the same identities.
		for range 10 {
			k := 2 + r.IntN(2)
			var frag []int
			for range k {
				frag = append(frag, 1+r.IntN(len(p.Functions)-1))
			}
			cc, err := p.CallersCallees(frag)
			if err != nil {
				t.Fatal(err)
			}
			var callers, callees int64
			for _, a := range cc.Callers {
				callers += a.Value[0]
			}
			for _, a := range cc.Callees {
				callees += a.Value[0]
			}
			if callers != cc.Inclusive[0] || cc.Exclusive[0]+callees != cc.Inclusive[0] || cc.Inclusive[0] > p.Inclusive(frag[k-1])[0] {
				t.Fatalf("fragment %v: callers %d callees %d excl %d incl %d", frag, callers, callees, cc.Exclusive[0], cc.Inclusive[0])
			}
		}
	}
}
