package analysis

import (
	"encoding/binary"
	"er/internal/sat"
)

// Frame is one frame of an AddrStack: an instruction, and the function of the symbol table that
// holds it (a pseudo-function for frames without code).
type Frame struct {
	Func int    // index into Profile.Functions: a FuncSymbol, FuncPLT, FuncKernel or FuncStatic, or a pseudo-function
	Addr uint64 // link-time address of the instruction (for a caller, its call instruction); 0 for pseudo-functions
}

// Offset is the frame's offset in its function, and whether it has one (pseudo-functions have not).
func (p *Profile) Offset(fr Frame) (uint64, bool) {
	fn := &p.Functions[fr.Func]
	switch fn.Kind {
	case FuncSymbol, FuncPLT, FuncKernel, FuncStatic, FuncMethod:
		if fr.Addr >= fn.Addr || fn.Kind == FuncMethod {
			return fn.Offset(fr.Addr), true
		}
	}
	return 0, false
}

// Offset is address addr's offset in function f: a method's address is its position already.
func (f *Function) Offset(addr uint64) uint64 {
	if f.Kind == FuncMethod {
		return addr
	}
	return addr - f.Addr
}

// AddrStack is a distinct call stack of instructions, as the heap and I/O stack views list them
// (er_print's leaks, allocs, heap and iocallstack): events at different call sites of a function
// are on different stacks. The events of every experiment and process whose stacks resolve to the
// same instructions are summed.
type AddrStack struct {
	Frames []Frame // leaf first
	Values []int64 // summed metric values of its events, in the order of Profile.Metrics
}

// AddrStacks returns the distinct instruction stacks of the profile's events, in the order first
// seen, computed the first time. Caller frames are their call instructions, found as PCs does;
// inlined functions are not frames of their own. Do not change the result.
func (p *Profile) AddrStacks() []AddrStack {
	p.addrOnce.Do(func() {
		p.lazy(func() { p.addr = p.computeAddrStacks() })
	})
	return p.addr
}

func (p *Profile) computeAddrStacks() []AddrStack {
	b, nm := p.b, p.nm
	var out []AddrStack
	index := map[string]int{}
	var key []byte
	for r, rs := range p.raw {
		v := p.rawVals[r*nm : (r+1)*nm]
		locs := b.locations(rs)
		key = key[:0]
		frames := make([]Frame, len(locs))
		for i := range locs {
			l := &locs[i]
			addr := l.addr
			switch {
			case p.Functions[l.fn].Kind == FuncUnknown || p.Functions[l.fn].Kind == FuncPseudo || p.Functions[l.fn].Kind == FuncPLTBind || p.Functions[l.fn].Kind == FuncCollector:
				addr = 0
			case l.ret:
				addr = b.instructionAt(l)
			}
			frames[i] = Frame{Func: int(l.fn), Addr: addr}
			key = binary.LittleEndian.AppendUint32(key, uint32(l.fn))
			key = binary.LittleEndian.AppendUint64(key, addr)
		}
		j, ok := index[string(key)]
		if !ok {
			j = len(out)
			index[string(key)] = j
			out = append(out, AddrStack{Frames: frames, Values: make([]int64, nm)})
		}
		sat.AddTo(out[j].Values, v)
	}
	return out
}
