package analysis

import "slices"

// The stacks of the other view modes: filters name the stack of each (USTACK, XSTACK, MSTACK)
// whatever the mode the profile was built in.

// SameStacks says whether view mode m shows p's stacks: m is p's mode, or has the same frame passes
// (none, where no runtime registered any).
func (p *Profile) SameStacks(m ViewMode) bool {
	b := p.Unfiltered().b
	return b == nil || m == b.opt.ViewMode || slices.Equal(passesOf(m, b.datas), b.passes)
}

// NumRaw is the number of distinct raw stacks of the profile that p was refiltered from (p's own
// when it comes from Analyze): the raw stack numbers of EventRaws and StackIn.
func (p *Profile) NumRaw() int { return len(p.Unfiltered().raw) }

// EventRaws returns each event of kind k of experiment exp's raw stack (-1 for an event that reaches
// none), numbered as StackIn numbers them; nil for a profile analysed with a filter. The slice is
// the profile's: do not change it.
func (p *Profile) EventRaws(exp int, k DataKind) []int32 {
	root := p.Unfiltered()
	if root.b == nil || exp < 0 || exp >= len(root.b.exps) {
		return nil
	}
	return root.b.exps[exp].raws(k)
}

// StackIn returns the functions (root first) of raw stack r as view mode m shows them: the
// profile's own function stack where m is its mode, else the raw stack resolved again through m's
// frame passes, once for each raw stack and mode. The functions are numbered as p's; a pass may make
// functions of its own (PassContext.ViewFunc), which p's tables then hold. Do not change the slice.
func (p *Profile) StackIn(m ViewMode, r int32) []int32 {
	root := p.Unfiltered()
	if r < 0 || int(r) >= len(root.raw) {
		return nil
	}
	b := root.b
	if root.SameStacks(m) {
		fr, _ := root.stack(int(root.raw[r].stack))
		return fr
	}
	root.viewMu.Lock()
	if c := b.modeStacks[m]; c != nil && c[r] != nil {
		root.viewMu.Unlock()
		return c[r]
	}
	root.viewMu.Unlock()
	var out []int32
	p.lazy(func() {
		if b.modeStacks == nil {
			b.modeStacks = map[ViewMode][][]int32{}
		}
		c := b.modeStacks[m]
		if c == nil {
			c = make([][]int32, len(root.raw))
			b.modeStacks[m] = c
		}
		if c[r] == nil {
			own, mode := b.passes, b.mode
			b.passes, b.mode = passesOf(m, b.datas), m
			c[r] = slices.Clip(append([]int32{}, b.expand(b.locations(root.raw[r]))...))
			b.passes, b.mode = own, mode
		}
		out = c[r]
	})
	return out
}
