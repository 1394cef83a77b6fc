package analysis

import (
	"fmt"
	"slices"

	"er/internal/experiment"
)

// Stack views.
//
// What a view shows of an event's raw stack is a projection of it: today's rules (the PLT's, the
// <Collector> frames', the inlined functions', object_hide/object_api) and then the frame passes
// of the view mode, in the order registered, each on the function stack (root first) the one before
// left. A pass runs once per distinct raw stack and view: the builder caches each raw stack's
// function stack. The machine mode runs none: it shows the frames as the rules give them, the
// stacks of the code that ran. A runtime (OpenMP, Java) registers the passes that show its
// threads' frames as its users think of them (its regions, its methods) in the user and expert
// modes.

// ViewMode is er print's viewmode: user, expert or machine.
type ViewMode uint8

// View modes. The zero value is the user mode, er print's default.
const (
	ViewUser ViewMode = iota
	ViewExpert
	ViewMachine
)

var viewModeNames = [...]string{ViewUser: "user", ViewExpert: "expert", ViewMachine: "machine"}

// String is the mode's name in er print: "user".
func (m ViewMode) String() string {
	if int(m) < len(viewModeNames) {
		return viewModeNames[m]
	}
	return fmt.Sprintf("viewmode %d", m)
}

// ParseViewMode returns the mode named s; false for none.
func ParseViewMode(s string) (ViewMode, bool) {
	for m, n := range viewModeNames {
		if n == s {
			return ViewMode(m), true
		}
	}
	return 0, false
}

// FramePass is a step of the stack views of some modes: Frames rewrites a function stack, root
// first (fr is the builder's: it may be changed in place, or a new slice returned), using the
// profile's functions and objects through c. It must give the same stack for the same frames.
type FramePass struct {
	Name   string
	Modes  []ViewMode // the modes it runs in: user, expert, or both; never machine
	Frames func(c *PassContext, fr []int32) []int32
	// Applies, when set, says whether the pass runs for a profile of experiment d (any of them):
	// the OpenMP pass, for experiments of OpenMP programs. Nil: for every profile.
	Applies func(d *experiment.Data) bool
}

// PassContext is what a frame pass sees of the profile being built.
type PassContext struct{ b *builder }

// Function returns function f of the profile.
func (c *PassContext) Function(f int32) *Function { return &c.b.p.Functions[f] }

// Object returns load object o of the profile.
func (c *PassContext) Object(o int) *Object { return &c.b.p.Objects[o] }

// ViewFunc returns the function of load object obj named name that a pass shows in place of frames
// (a runtime's region, a library's frames folded into one), made at its first use.
func (c *PassContext) ViewFunc(obj int, name string) int32 {
	b := c.b
	if b.viewNames == nil {
		b.viewNames = map[string]uint64{}
	}
	id, ok := b.viewNames[name]
	if !ok {
		id = uint64(len(b.viewNames))
		b.viewNames[name] = id
	}
	return b.function(funcKey{obj: int32(obj), addr: id, kind: FuncView}, name, 0)
}

// framePasses are the passes registered, in order.
var framePasses []*FramePass

// RegisterPass adds frame pass p after those registered, and returns the function that removes it
// (a test's pass, taken away at its end). A pass of the machine mode is a bug: it panics.
func RegisterPass(p *FramePass) (remove func()) {
	if slices.Contains(p.Modes, ViewMachine) {
		panic(fmt.Sprintf("analysis: frame pass %s: the machine mode has no passes", p.Name))
	}
	framePasses = append(framePasses, p)
	return func() {
		if i := slices.Index(framePasses, p); i >= 0 {
			framePasses = slices.Delete(framePasses, i, i+1)
		}
	}
}

// passesOf returns the passes of mode m for a profile of exps, in order.
func passesOf(m ViewMode, exps []*experiment.Data) []*FramePass {
	var out []*FramePass
	for _, p := range framePasses {
		if slices.Contains(p.Modes, m) && (p.Applies == nil || slices.ContainsFunc(exps, p.Applies)) {
			out = append(out, p)
		}
	}
	return out
}

// HasPasses says whether mode m has frame passes for a profile of exps: its stacks are then not the
// code's alone (an export keeps function stacks, not instructions).
func HasPasses(m ViewMode, exps []*experiment.Data) bool { return len(passesOf(m, exps)) > 0 }

// applyPasses runs the builder's passes on fr (root first).
func (b *builder) applyPasses(fr []int32) []int32 {
	c := &PassContext{b: b}
	for _, p := range b.passes {
		fr = p.Frames(c, fr)
	}
	return fr
}
