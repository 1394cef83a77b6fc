package analysis

import (
	"fmt"

	"er/internal/sat"
)

// InstrLoc is one instruction of the profile's raw stacks with its inline chain: a location of a
// line-level export (pprof's Location, its Lines innermost first).
type InstrLoc struct {
	Func   int    // the function of the symbol table holding it, or a pseudo-function (as Frame.Func)
	Object int    // its load object
	Addr   uint64 // as Frame.Addr: link-time address (for a caller, its call instruction); 0 for pseudo-functions
	// Lines are its functions, innermost first: the inlined functions whose code it is, then Func
	// (the function of the symbol table), each with the source line it is at there (for a function
	// an inlined one's code is inlined into, the line of that call). Without inlined functions (or
	// with Options.FoldInlines) it is Func alone, at the line of its own source. Lines hold a
	// function once per frame of the function stacks: read from the leaf's first line to the root's
	// last, the Lines of a raw stack's InstrLocs are its function stack reversed, unless
	// Options.Visibility changes that stack.
	Lines []InstrLine
}

// InstrLine is one function of an InstrLoc, and its source line there.
type InstrLine struct {
	Func int    // index into Profile.Functions
	File string // the source file as the debug information names it; "" when unknown
	Line int    // 0 when unknown
}

// RawStack is one of the profile's distinct raw stacks: the stack of instructions its events
// recorded, as one process saw it.
type RawStack struct {
	Locs   []int32 // indexes into InstrStacks.Locs, leaf first
	Stack  int     // its function stack (Profile.Stack)
	Values []int64 // the summed values of its events; the profile's own: do not change them
}

// InstrStacks holds a profile's raw stacks as stacks of distinct instructions.
type InstrStacks struct {
	Locs   []InstrLoc
	Stacks []RawStack // by raw stack, as ThreadValue.Raw numbers them
}

// InstrStacks returns the profile's raw stacks as instruction stacks, for a line-level export; the
// instructions are those of AddrStacks, with their inline chains. It resolves the stacks (and reads
// the load objects' debug information) on each call.
func (p *Profile) InstrStacks() *InstrStacks {
	var out *InstrStacks
	p.lazy(func() { out = p.computeInstrStacks() })
	return out
}

type instrKey struct {
	fn, obj int32
	addr    uint64
	ret     bool
}

func (p *Profile) computeInstrStacks() *InstrStacks {
	b, nm := p.b, p.nm
	out := &InstrStacks{Stacks: make([]RawStack, len(p.raw))}
	index := map[instrKey]int32{}
	for r, rs := range p.raw {
		locs := b.locations(rs)
		ids := make([]int32, len(locs))
		for i := range locs {
			l := &locs[i]
			k := instrKey{fn: l.fn, obj: l.obj, addr: l.addr, ret: l.ret}
			j, ok := index[k]
			if !ok {
				j = int32(len(out.Locs))
				index[k] = j
				out.Locs = append(out.Locs, b.instrLoc(l))
			}
			ids[i] = j
		}
		out.Stacks[r] = RawStack{Locs: ids, Stack: int(rs.stack), Values: p.rawVals[r*nm : (r+1)*nm]}
	}
	return out
}

// instrLoc returns the instruction and inline chain of location l, as expand makes its frames.
func (b *builder) instrLoc(l *location) InstrLoc {
	kind := b.p.Functions[l.fn].Kind
	il := InstrLoc{Func: int(l.fn), Object: int(l.obj), Addr: l.addr}
	switch {
	case kind == FuncUnknown || kind == FuncPseudo || kind == FuncPLTBind || kind == FuncCollector:
		il.Addr = 0
	case l.ret:
		il.Addr = b.instructionAt(l)
	}
	c := b.chainOf(l)
	if c < 0 {
		il.Lines = []InstrLine{{Func: int(l.fn)}}
		return il
	}
	ch := &b.chains[c]
	n := len(ch.frames)
	if b.opt.FoldInlines {
		// The code is its symbol's function's, at the line of the outermost frame: that function's own.
		fr := ch.frames[n-1]
		il.Lines = []InstrLine{{Func: int(l.fn), File: fr.File, Line: fr.Line}}
		return il
	}
	// From the outermost frame in: a named inlined frame is a function of its own (as inlineFuncs
	// finds them), an unnamed one is code of the function around it, whose line becomes its line.
	lines := []InstrLine{{Func: int(l.fn), File: ch.frames[n-1].File, Line: ch.frames[n-1].Line}}
	for k := n - 2; k >= 0; k-- {
		fr := ch.frames[k]
		if fr.Func != "" {
			lines = append(lines, InstrLine{Func: int(ch.lineFn[k]), File: fr.File, Line: fr.Line})
			continue
		}
		if last := &lines[len(lines)-1]; fr.Line > 0 {
			last.File, last.Line = fr.File, fr.Line
		}
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	il.Lines = lines
	return il
}

// ThreadValue is the summed values of one thread's events at one raw stack.
type ThreadValue struct {
	Raw      int // the raw stack: an index into InstrStacks().Stacks
	Exp      int // the experiment, from 0
	Pid, Tid uint32
	Thread   int // its number in its experiment (ExpIndex.Threads)
	Values   []int64
}

// ByThread splits the profile's raw stacks' values by thread: the values of every thread's events
// at every raw stack, in the order first seen; over the threads they add up to the raw stacks'
// values. It adds the profile's events again (as Refilter does), so it costs as much.
func (p *Profile) ByThread() ([]ThreadValue, error) {
	root := p.Unfiltered()
	// The profile's raw stack of each of the root's.
	mine := make([]int32, len(root.raw))
	for i := range mine {
		mine[i] = int32(i)
	}
	if p != root {
		for i := range mine {
			mine[i] = -1
		}
		for r, rb := range p.rootRaw {
			mine[rb] = int32(r)
		}
	}
	type key struct {
		raw, exp int32
		pid, tid uint32
	}
	index := map[key]int{}
	var out []ThreadValue
	nm := p.nm
	var missing int
	_, err := root.refilter(p.filter, false, func(es *expState, rb int32, ev event, vals []int64) {
		r := mine[rb]
		if r < 0 {
			missing++
			return
		}
		k := key{raw: r, exp: es.idx, pid: ev.pid, tid: ev.tid}
		i, ok := index[k]
		if !ok {
			if es.index == nil {
				es.index = NewExpIndex(int(es.idx), es.d)
			}
			i = len(out)
			index[k] = i
			out = append(out, ThreadValue{Raw: int(r), Exp: int(es.idx), Pid: ev.pid, Tid: ev.tid,
				Thread: es.index.ThreadNumber(ev.pid, ev.tid), Values: make([]int64, nm)})
		}
		sat.AddTo(out[i].Values, vals)
	})
	if err != nil {
		return nil, err
	}
	if missing > 0 {
		return nil, fmt.Errorf("internal error: %d events are at raw stacks the profile lacks", missing)
	}
	return out, nil
}
