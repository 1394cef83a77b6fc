package analysis

import (
	"fmt"
	"sort"
)

// Attributed is the part of a metric that one caller or callee accounts for.
type Attributed struct {
	Func  int     // the caller or callee
	Value []int64 // per metric
}

// CallerCallee is the callers-callees view of a call-stack fragment: a sequence of functions,
// each calling the next (a single function is a fragment of one).
//
// Attribution counts every event once per fragment, at the fragment's innermost occurrence on the
// stack (the one closest to the leaf). The event goes to the caller of that occurrence (<Total> when
// it starts at the root), and to the callee after it, or to the fragment's exclusive metric when it
// ends at the leaf. So the callers' attributed metrics add up to the fragment's inclusive metric,
// and its exclusive metric plus its callees' attributed metrics add up to it too. For a recursive
// function the inclusive metric of the outer invocations is taken as zero: in a->a->a the event is
// attributed to the caller a, not to the function that started the recursion, while that function,
// viewed as a caller itself, attributes the event to a as its callee.
type CallerCallee struct {
	Fragment  []int
	Exclusive []int64      // events whose stack ends with the fragment
	Inclusive []int64      // events whose stack contains the fragment
	Callers   []Attributed // by function index
	Callees   []Attributed // by function index
}

// CallersCallees returns the callers-callees view of fragment, a sequence of function indexes from
// caller to callee. <Total> (function 0) may only come first: it has no callers, calls the root
// functions, and has no exclusive metric.
func (p *Profile) CallersCallees(fragment []int) (*CallerCallee, error) {
	if len(fragment) == 0 {
		return nil, fmt.Errorf("analysis: empty call-stack fragment")
	}
	for i, f := range fragment {
		if f < 0 || f >= len(p.Functions) {
			return nil, fmt.Errorf("analysis: function %d of the call-stack fragment does not exist (%d functions)", f, len(p.Functions))
		}
		if f == 0 && i > 0 {
			return nil, fmt.Errorf("analysis: %s can only start a call-stack fragment", TotalName)
		}
	}
	if len(fragment) == 1 {
		return p.single(fragment[0]), nil
	}
	return p.scanFragment(fragment), nil
}

// single reads a one-function view from the edge index.
func (p *Profile) single(f int) *CallerCallee {
	e := p.edgeIndex()
	cc := &CallerCallee{Fragment: []int{f}, Exclusive: make([]int64, p.nm), Inclusive: append([]int64(nil), p.Inclusive(f)...)}
	if f != 0 {
		copy(cc.Exclusive, p.Exclusive(f))
	}
	cc.Callers = e.callers.list(f, p.nm)
	cc.Callees = e.callees.list(f, p.nm)
	return cc
}

// scanFragment computes a view by scanning every distinct stack, with <Total> as a virtual frame
// before the root.
func (p *Profile) scanFragment(frag []int) *CallerCallee {
	nm := p.nm
	cc := &CallerCallee{Fragment: append([]int(nil), frag...), Exclusive: make([]int64, nm), Inclusive: make([]int64, nm)}
	callers, callees := newEdgeAcc(nm), newEdgeAcc(nm)
	k := len(frag)
	for s := 0; s < p.NumStacks(); s++ {
		fr, v := p.stack(s)
		n := len(fr) + 1
		frame := func(i int) int {
			if i == 0 {
				return 0
			}
			return int(fr[i-1])
		}
		j := -1 // the innermost match
		for i := n - k; i >= 0; i-- {
			match := true
			for t := 0; t < k && match; t++ {
				match = frame(i+t) == frag[t]
			}
			if !match {
				continue
			}
			if j < 0 {
				j = i
				continue
			}
			if i > 0 { // an outer occurrence: its neighbours are listed with nothing attributed
				callers.touch(0, int32(frame(i-1)))
			}
			callees.touch(0, int32(frame(i+k)))
		}
		if j < 0 {
			continue
		}
		addTo(cc.Inclusive, 0, v)
		if j > 0 {
			callers.add(0, int32(frame(j-1)), v)
		}
		if j+k < n {
			callees.add(0, int32(frame(j+k)), v)
		} else {
			addTo(cc.Exclusive, 0, v)
		}
	}
	cc.Callers = callers.index(1).list(0, nm)
	cc.Callees = callees.index(1).list(0, nm)
	return cc
}

// edgeIndex holds, for every function, its attributed callers and callees.
type edgeIndex struct {
	callers, callees *csr
}

func (p *Profile) edgeIndex() *edgeIndex {
	p.edgesOnce.Do(func() {
		nm, nf := p.nm, len(p.Functions)
		callers, callees := newEdgeAcc(nm), newEdgeAcc(nm)
		stamp := make([]int32, nf)
		for s := 0; s < p.NumStacks(); s++ {
			fr, v := p.stack(s)
			n := len(fr)
			callees.add(0, fr[0], v)
			for i := n - 1; i >= 0; i-- {
				f := fr[i]
				if stamp[f] == int32(s+1) {
					// Only the innermost occurrence counts; outer ones list their
					// neighbours with nothing attributed, as recursion shows them.
					callers.touch(f, caller(fr, i))
					if i < n-1 {
						callees.touch(f, fr[i+1])
					}
					continue
				}
				stamp[f] = int32(s + 1)
				callers.add(f, caller(fr, i), v)
				if i < n-1 {
					callees.add(f, fr[i+1], v)
				}
			}
		}
		p.edges = &edgeIndex{callers: callers.index(nf), callees: callees.index(nf)}
	})
	return p.edges
}

// caller is the caller of frame i: the frame before it, or <Total> for the root.
func caller(fr []int32, i int) int32 {
	if i == 0 {
		return 0
	}
	return fr[i-1]
}

// edgeAcc sums metric vectors over (function, other function) pairs.
type edgeAcc struct {
	nm   int
	idx  map[uint64]int32
	keys []uint64
	vals []int64
}

func newEdgeAcc(nm int) *edgeAcc { return &edgeAcc{nm: nm, idx: map[uint64]int32{}} }

// add adds v to the pair (f, g).
func (a *edgeAcc) add(f, g int32, v []int64) {
	addTo(a.vals, int(a.touch(f, g)), v)
}

// touch makes sure the pair (f, g) is listed, and returns its index.
func (a *edgeAcc) touch(f, g int32) int32 {
	k := uint64(uint32(f))<<32 | uint64(uint32(g))
	i, ok := a.idx[k]
	if !ok {
		i = int32(len(a.keys))
		a.idx[k] = i
		a.keys = append(a.keys, k)
		a.vals = append(a.vals, make([]int64, a.nm)...)
	}
	return i
}

// csr is a compressed sparse row table: the entries of function f are start[f]:start[f+1].
type csr struct {
	start []int32
	other []int32
	vals  []int64
}

// index sorts the accumulated pairs into a csr over nf functions.
func (a *edgeAcc) index(nf int) *csr {
	order := make([]int32, len(a.keys))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(i, j int) bool { return a.keys[order[i]] < a.keys[order[j]] })
	c := &csr{start: make([]int32, nf+1), other: make([]int32, len(order)), vals: make([]int64, len(order)*a.nm)}
	for n, i := range order {
		k := a.keys[i]
		c.start[int(k>>32)+1]++
		c.other[n] = int32(uint32(k))
		copy(c.vals[n*a.nm:(n+1)*a.nm], a.vals[int(i)*a.nm:(int(i)+1)*a.nm])
	}
	for f := 0; f < nf; f++ {
		c.start[f+1] += c.start[f]
	}
	return c
}

func (c *csr) list(f, nm int) []Attributed {
	var out []Attributed
	for n := c.start[f]; n < c.start[f+1]; n++ {
		out = append(out, Attributed{Func: int(c.other[n]), Value: append([]int64(nil), c.vals[int(n)*nm:(int(n)+1)*nm]...)})
	}
	return out
}
