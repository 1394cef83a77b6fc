package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"er/internal/experiment"
	"er/internal/objfile"
)

// debugDirs are the global debug directories searched for separate debug files, by build id and by
// .gnu_debuglink: $ER_DEBUG_DIR, else /usr/lib/debug (objfile.DebugDirs).
var debugDirs = objfile.DebugDirs()

// functionSymbols returns the symbols of f (the object at path, with build id id) completed from
// every other source of function boundaries, each naming what the ones before it leave unnamed:
//   - the .symtab of its separate debug file, found by build id under debugDirs (libc6-dbg and the
//     -dbgsym packages install them there), else by its .gnu_debuglink (debugLinkFile), which
//     names the local functions a distribution strips;
//   - its MiniDebugInfo (.gnu_debugdata, as Fedora and RHEL ship): an xz-compressed .symtab of
//     the local functions;
//   - its call frame entries, each of which not covered by a symbol is an unnamed function of its
//     own (SymFDE).
//
// Without them, everything between two exported symbols was one "<static>" function: all of gzip
// one function, 80% of xz in one gap of liblzma.
func functionSymbols(f *objfile.File, path, id string) ([]experiment.Symbol, error) {
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	dbg := separateSymbols(id)
	if len(dbg) == 0 {
		if p := debugLinkFile(f, path); p != "" {
			dbg = fileSymbols(p)
		}
	}
	if len(dbg) > 0 {
		syms = mergeSymbols(syms, dbg)
	}
	if mf, err := f.MiniDebugInfo(); err == nil && mf != nil {
		if mini, err := mf.Symbols(); err == nil && len(mini) > 0 {
			syms = mergeSymbols(syms, mini)
		}
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

// debugLinkFile returns the separate debug file that the .gnu_debuglink of f (the object at path)
// names, where GDB looks for it (objfile.DebugLinkPaths: the object's directory, its .debug/, and
// each of debugDirs followed by the object's directory), or "". A file there whose CRC-32 is not the
// one the link records is another build's and is not used (er print says so: debuginfo finds the
// same file for the lines).
func debugLinkFile(f *objfile.File, path string) string {
	name, crc, ok := f.DebugLink()
	if !ok {
		return ""
	}
	for _, p := range debugLinkCandidates(path, name) {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || sameFile(st, path) {
			continue
		}
		if got, err := objfile.FileCRC(p); err == nil && got == crc {
			return p
		}
	}
	return ""
}

// debugLinkCandidates lists where the debug file name of the object at path may be.
func debugLinkCandidates(path, name string) []string {
	return objfile.DebugLinkPaths(path, name, debugDirs)
}

// sameFile reports whether st is the file at path.
func sameFile(st os.FileInfo, path string) bool {
	st2, err := os.Stat(path)
	return err == nil && os.SameFile(st, st2)
}

// fileSymbols returns the function symbols of the ELF file at p, or nil.
func fileSymbols(p string) []experiment.Symbol {
	f, err := objfile.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	syms, _ := f.Symbols()
	return syms
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
