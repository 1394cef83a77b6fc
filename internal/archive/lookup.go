package archive

import (
	"sort"

	"er/internal/experiment"
)

// FileOffsetToVaddr converts off, a file offset in the load object
// (mapping.Offset + pc - mapping.Start), to its link-time address using the
// archive's segments. ok is false when no segment's file bytes cover off.
func FileOffsetToVaddr(a *experiment.Archive, off uint64) (vaddr uint64, ok bool) {
	for _, s := range a.Segments {
		if off >= s.Offset && off-s.Offset < s.Filesz {
			return s.Vaddr + (off - s.Offset), true
		}
	}
	return 0, false
}

// SymbolAt finds the symbol containing vaddr in the archive's sorted
// symbols. A symbol with Size 0 extends to the next symbol. ok is false when
// vaddr is before the first symbol or past the end of a sized one.
func SymbolAt(a *experiment.Archive, vaddr uint64) (experiment.Symbol, bool) {
	syms := a.Symbols
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > vaddr }) - 1
	if i < 0 {
		return experiment.Symbol{}, false
	}
	s := syms[i]
	if s.Size != 0 && vaddr-s.Addr >= s.Size {
		return experiment.Symbol{}, false
	}
	return s, true
}

// UsedSymbols keeps the symbols of a that hold one of the addresses (the kernel has some 200,000
// symbols and a profile touches a few hundred), each with a size that reaches at least the last of
// its addresses, so that lookups in the smaller table stay exact. A return address can be just past
// its call: callers give both it and the address before.
func UsedSymbols(a *experiment.Archive, addrs []uint64) []experiment.Symbol {
	keep := map[uint64]experiment.Symbol{}
	for _, addr := range addrs {
		sym, ok := SymbolAt(a, addr)
		if !ok {
			continue
		}
		if old, ok := keep[sym.Addr]; ok {
			sym = old
		}
		if sym.Size == 0 || sym.Addr+sym.Size <= addr {
			sym.Size = max(sym.Size, addr-sym.Addr+1)
		}
		keep[sym.Addr] = sym
	}
	out := make([]experiment.Symbol, 0, len(keep))
	for _, s := range keep {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// KeptSymbols keeps of the sorted symbols syms those that lookups of the addresses q, of the
// addresses at, and of the names read, so that those lookups in the smaller table answer as in
// syms: for each address of q (SymbolAt, a symbol's size to the next one, the gap between symbols
// around it) every symbol at the address of the last symbol at or before it (its aliases) and the
// first symbol after it; for each address of at (SymbolAt alone) the aliases; for each name, the
// first function symbol of that name, and what q keeps for its address. Sizes are kept as they are (a size of 0 still means "to the
// next symbol", which is kept where q needs it). The order is syms'.
func KeptSymbols(syms []experiment.Symbol, q, at []uint64, names []string) []experiment.Symbol {
	keep := make([]bool, len(syms))
	mark := func(addr uint64, next bool) {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > addr })
		if next && i < len(syms) {
			keep[i] = true
		}
		for j := i - 1; j >= 0 && syms[j].Addr == syms[i-1].Addr; j-- {
			keep[j] = true
		}
	}
	for _, addr := range q {
		mark(addr, true)
	}
	for _, addr := range at {
		mark(addr, false)
	}
	if len(names) > 0 {
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		for i, s := range syms {
			if s.Kind == experiment.SymFunc && want[s.Name] {
				keep[i] = true
				delete(want, s.Name)
				mark(s.Addr, true) // the function found is looked up by its address
			}
		}
	}
	var out []experiment.Symbol
	for i, s := range syms {
		if keep[i] {
			out = append(out, s)
		}
	}
	return out
}
