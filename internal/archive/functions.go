package archive

import (
	"fmt"
	"path/filepath"
	"sort"

	"er/internal/experiment"
	"er/internal/objfile"
)

// debugDirs are the global debug directories searched for separate debug files by build id.
var debugDirs = []string{"/usr/lib/debug"}

// functionSymbols returns the symbols of f (the object at path, with build id id) completed from
// every other source of function boundaries: the .symtab of its separate debug file (found by build
// id under debugDirs: libc6-dbg and the -dbgsym packages install them there), which names the local
// functions a distribution strips, and its call frame entries, each of which not covered by a symbol
// is an unnamed function of its own (SymFDE). Without them, everything between two exported
// symbols was one "<static>" function: all of gzip one function, 80% of xz in one gap of liblzma.
func functionSymbols(f *objfile.File, path, id string) ([]experiment.Symbol, error) {
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	if dbg := separateSymbols(id); len(dbg) > 0 {
		syms = mergeSymbols(syms, dbg)
	}
	if rs, err := f.FDERanges(); err == nil && len(rs) > 0 {
		syms = addFDEFunctions(syms, rs, filepath.Base(path))
	}
	return syms, nil
}

// separateSymbols returns the function symbols of the separate debug file with build id id, or nil
// when there is none (or it is not that build's).
func separateSymbols(id string) []experiment.Symbol {
	if len(id) < 4 {
		return nil
	}
	for _, dir := range debugDirs {
		p := filepath.Join(dir, ".build-id", id[:2], id[2:]+".debug")
		f, err := objfile.Open(p)
		if err != nil {
			continue
		}
		var syms []experiment.Symbol
		if f.BuildID() == id {
			syms, _ = f.Symbols()
		}
		f.Close()
		if len(syms) > 0 {
			return syms
		}
	}
	return nil
}

// mergeSymbols adds to own (sorted) the symbols of dbg (sorted) at addresses own has none at; at an
// address both have, own's name stays (its public name, or its PLT stub) with the larger size.
func mergeSymbols(own, dbg []experiment.Symbol) []experiment.Symbol {
	at := make(map[uint64]int, len(own))
	for i, s := range own {
		at[s.Addr] = i
	}
	out := append([]experiment.Symbol(nil), own...)
	for _, s := range dbg {
		if i, ok := at[s.Addr]; ok {
			out[i].Size = max(out[i].Size, s.Size)
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// addFDEFunctions adds a SymFDE symbol, named object+0xADDR, for each call frame entry range whose
// start no symbol covers (syms and rs sorted by address).
func addFDEFunctions(syms []experiment.Symbol, rs [][2]uint64, object string) []experiment.Symbol {
	out := append([]experiment.Symbol(nil), syms...)
	i := -1 // the last symbol at or below the range's start
	for _, r := range rs {
		for i+1 < len(syms) && syms[i+1].Addr <= r[0] {
			i++
		}
		if i >= 0 {
			s := syms[i]
			if s.Addr == r[0] || (s.Size > 0 && r[0]-s.Addr < s.Size) {
				continue
			}
		}
		out = append(out, experiment.Symbol{Name: fmt.Sprintf("%s+0x%x", object, r[0]), Addr: r[0], Size: r[1] - r[0], Kind: experiment.SymFDE})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}
