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
