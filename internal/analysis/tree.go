package analysis

import "er/internal/keytable"

// Tree is the call tree: every distinct path from the root, merged by prefix. Node 0 is <Total>;
// each other node is a function called from its parent node's path. A node's inclusive metric is
// the sum over events whose stack passes through it (its attributed metric as a callee of its
// parent); its exclusive metric, the events whose stack ends there.
type Tree struct {
	nm         int
	fn         []int32
	parent     []int32
	depth      []int32
	incl, excl []int64
	childStart []int32
	children   []int32
}

// CallTree returns the call tree of the profile, built once.
func (p *Profile) CallTree() *Tree {
	p.treeOnce.Do(func() { p.tree = p.buildTree() })
	return p.tree
}

func (p *Profile) buildTree() *Tree {
	nm := p.nm
	t := &Tree{nm: nm, fn: []int32{0}, parent: []int32{-1}, depth: []int32{0}, incl: make([]int64, nm), excl: make([]int64, nm)}
	copy(t.incl, p.Total)
	var child keytable.Table // (parent node, function) -> node; bit 63 keeps the key from being 0
	for s := 0; s < p.NumStacks(); s++ {
		fr, v := p.stack(s)
		node := int32(0)
		for _, f := range fr {
			k := 1<<63 | uint64(uint32(node))<<32 | uint64(uint32(f))
			c, ok := child.Get(k)
			if !ok {
				c = int32(len(t.fn))
				child.Put(k, c)
				t.fn = append(t.fn, f)
				t.parent = append(t.parent, node)
				t.depth = append(t.depth, t.depth[node]+1)
				t.incl = append(t.incl, make([]int64, nm)...)
				t.excl = append(t.excl, make([]int64, nm)...)
			}
			addTo(t.incl, int(c), v)
			node = c
		}
		addTo(t.excl, int(node), v)
	}
	n := len(t.fn)
	t.childStart = make([]int32, n+1)
	for c := 1; c < n; c++ {
		t.childStart[t.parent[c]+1]++
	}
	for i := 0; i < n; i++ {
		t.childStart[i+1] += t.childStart[i]
	}
	t.children = make([]int32, n-1)
	fill := append([]int32(nil), t.childStart[:n]...)
	for c := 1; c < n; c++ { // nodes are numbered in creation order, so children come out in first-seen order
		par := t.parent[c]
		t.children[fill[par]] = int32(c)
		fill[par]++
	}
	return t
}

// Len is the number of nodes, <Total> included.
func (t *Tree) Len() int { return len(t.fn) }

// Func is the function of node n.
func (t *Tree) Func(n int) int { return int(t.fn[n]) }

// Parent is the parent node of n; -1 for the root.
func (t *Tree) Parent(n int) int { return int(t.parent[n]) }

// Depth is n's distance from the root.
func (t *Tree) Depth(n int) int { return int(t.depth[n]) }

// Children are n's child nodes in the order they were first seen. Do not change the slice.
func (t *Tree) Children(n int) []int32 { return t.children[t.childStart[n]:t.childStart[n+1]] }

// Inclusive is node n's inclusive metrics. Do not change the slice.
func (t *Tree) Inclusive(n int) []int64 { return t.incl[n*t.nm : (n+1)*t.nm] }

// Exclusive is node n's exclusive metrics. Do not change the slice.
func (t *Tree) Exclusive(n int) []int64 { return t.excl[n*t.nm : (n+1)*t.nm] }
