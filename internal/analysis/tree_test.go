package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// checkTree checks that every node's inclusive metric is its exclusive metric plus its children's
// inclusive metrics, that the root holds the total, and that a function's exclusive metric is the
// sum over its nodes.
func checkTree(t *testing.T, p *Profile) {
	t.Helper()
	tr := p.CallTree()
	nm := len(p.Metrics)
	if tr.Func(0) != 0 || tr.Parent(0) != -1 || !slices.Equal(tr.Inclusive(0), p.Total) {
		t.Fatalf("root: func %d parent %d inclusive %v", tr.Func(0), tr.Parent(0), tr.Inclusive(0))
	}
	excl := make([]int64, len(p.Functions)*nm)
	for n := 0; n < tr.Len(); n++ {
		sum := slices.Clone(tr.Exclusive(n))
		for _, c := range tr.Children(n) {
			if tr.Parent(int(c)) != n || tr.Depth(int(c)) != tr.Depth(n)+1 {
				t.Fatalf("node %d: child %d has parent %d depth %d", n, c, tr.Parent(int(c)), tr.Depth(int(c)))
			}
			for m, v := range tr.Inclusive(int(c)) {
				sum[m] += v
			}
		}
		if !slices.Equal(sum, tr.Inclusive(n)) {
			t.Errorf("node %d (%s): exclusive + children = %v, inclusive %v", n, p.FuncName(tr.Func(n), NameLong), sum, tr.Inclusive(n))
		}
		if n > 0 {
			addTo(excl, tr.Func(n), tr.Exclusive(n))
		}
	}
	for f := 1; f < len(p.Functions); f++ {
		if !slices.Equal(excl[f*nm:(f+1)*nm], p.Exclusive(f)) {
			t.Errorf("%s: tree exclusive %v, profile %v", p.FuncName(f, NameLong), excl[f*nm:(f+1)*nm], p.Exclusive(f))
		}
	}
}

func TestCallTreeSeedExample(t *testing.T) {
	p := analyze(t, seedExample().d)
	tr := p.CallTree()
	var lines []string
	var walk func(n int)
	walk = func(n int) {
		lines = append(lines, fmt.Sprintf("%s%s %d/%d", strings.Repeat(" ", tr.Depth(n)), p.FuncName(tr.Func(n), NameLong), tr.Exclusive(n)[0], tr.Inclusive(n)[0]))
		for _, c := range tr.Children(n) {
			walk(int(c))
		}
	}
	walk(0)
	want := `<Total> 0/32
 main 2/32
  A 0/10
   C 2/10
    E 4/4
    F 2/4
     G 2/2
  B 5/20
   C 3/15
    E 6/6
    F 3/6
     G 3/3`
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("tree\n%s\nwant\n%s", got, want)
	}
	if p.CallTree() != tr {
		t.Error("the tree is not built once")
	}
	checkTree(t, p)
}

func TestCallTreeRecursion(t *testing.T) {
	fk := newFake("main", "a")
	fk.sample(10, "main", "a", "a", "a")
	fk.sample(2, "main", "a")
	p := analyze(t, fk.d)
	tr := p.CallTree()
	if tr.Len() != 5 {
		t.Fatalf("%d nodes, want 5 (a path per recursion level)", tr.Len())
	}
	if leaf := 4; tr.Depth(leaf) != 4 || tr.Exclusive(leaf)[0] != 10 || tr.Inclusive(tr.Parent(leaf))[0] != 10 {
		t.Errorf("leaf depth %d exclusive %d", tr.Depth(leaf), tr.Exclusive(leaf)[0])
	}
	checkTree(t, p)
}
