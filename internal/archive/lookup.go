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
