package objfile

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strings"

	"er/internal/experiment"
)

// sttGNUIFunc is STT_GNU_IFUNC: an indirect function, whose value is its resolver.
const sttGNUIFunc = elf.SymType(10)

// Symbols returns the function symbols of the file, sorted by address: the
// defined functions of .symtab and .dynsym (one per address, the preferred
// alias chosen by betterAlias), plus one SymPLT symbol per PLT stub, named
// "f@plt", and "<plt>" for the PLT0 header. A malformed file gives an error
// naming it, never a panic.
func (f *File) Symbols() (syms []experiment.Symbol, err error) {
	defer func() {
		if p := recover(); p != nil {
			syms, err = nil, fmt.Errorf("objfile: %s: malformed ELF symbols: %v", f.name, p)
		}
	}()
	var all []elf.Symbol
	st, err := f.elf.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("objfile: %s: reading .symtab: %w", f.name, err)
	}
	all = append(all, st...)
	dyn, err := f.elf.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("objfile: %s: reading .dynsym: %w", f.name, err)
	}
	all = append(all, dyn...)

	funcs := functionSymbols(all)
	plt, err := f.pltSymbols(funcs, st, dyn)
	if err != nil {
		return nil, err
	}
	have := make(map[uint64]bool, len(funcs))
	for _, s := range funcs {
		have[s.Addr] = true
	}
	for _, s := range plt {
		if !have[s.Addr] {
			have[s.Addr] = true
			funcs = append(funcs, s)
		}
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Addr < funcs[j].Addr })
	return funcs, nil
}

// functionSymbols keeps the defined functions of syms, one per address,
// sorted by address. Aliases at one address collapse into the best-named one,
// with the largest size among them. glibc's internal aliases are shown by
// their public names (__GI___printf_fp_l.cold as __printf_fp_l.cold), and
// local functions that share a name with another function of the object are
// told apart by the source file that the symbol table names before them
// ("init (a.c)" and "init (b.c)"), or else by their address ("init@0x1130").
func functionSymbols(syms []elf.Symbol) []experiment.Symbol {
	best := make(map[uint64]elf.Symbol)
	size := make(map[uint64]uint64)
	file := make(map[uint64]string)
	cur := "" // the STT_FILE symbol in effect: local symbols follow the file they come from
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if t == elf.STT_FILE {
			cur = s.Name
			continue
		}
		if (t != elf.STT_FUNC && t != sttGNUIFunc) || s.Section == elf.SHN_UNDEF || s.Value == 0 || s.Name == "" {
			continue
		}
		if b, ok := best[s.Value]; !ok || betterAlias(s, b) {
			best[s.Value] = s
			if elf.ST_BIND(s.Info) == elf.STB_LOCAL {
				file[s.Value] = cur
			} else {
				delete(file, s.Value)
			}
		}
		size[s.Value] = max(size[s.Value], s.Size)
	}
	out := make([]experiment.Symbol, 0, len(best))
	count := make(map[string]int, len(best))
	for addr, s := range best {
		name := publicName(s.Name)
		count[name]++
		out = append(out, experiment.Symbol{Name: name, Addr: addr, Size: size[addr], Kind: experiment.SymFunc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	distinguish(out, count, file)
	return out
}

// publicName is the name of a symbol without glibc's __GI_ prefix, which marks the hidden alias
// the library calls itself by.
func publicName(name string) string {
	if p, ok := strings.CutPrefix(name, "__GI_"); ok && p != "" {
		return p
	}
	return name
}

// distinguish renames the local functions of syms whose name count says is shared: by their file
// (from file, by address), then by address where the file does not tell them apart.
func distinguish(syms []experiment.Symbol, count map[string]int, file map[uint64]string) {
	var dup []int
	for i, s := range syms {
		if count[s.Name] > 1 {
			if _, local := file[s.Addr]; local {
				dup = append(dup, i)
			}
		}
	}
	if len(dup) == 0 {
		return
	}
	named := make(map[string]int, len(dup))
	for _, i := range dup {
		if f := file[syms[i].Addr]; f != "" {
			syms[i].Name += " (" + f + ")"
		}
		named[syms[i].Name]++
	}
	for _, s := range syms {
		if _, ok := named[s.Name]; ok {
			if _, local := file[s.Addr]; !local {
				named[s.Name]++ // a global of that name: the local still needs its address
			}
		}
	}
	for _, i := range dup {
		if named[syms[i].Name] > 1 {
			syms[i].Name += fmt.Sprintf("@0x%x", syms[i].Addr)
		}
	}
}

// betterAlias reports whether a is a better name than b for the same
// address: a public (global or weak) name over a local one, then the name
// with fewer leading underscores (malloc over __libc_malloc, write over
// __write), then global over weak, a default symbol version over a hidden
// one, the shorter name, and finally the alphabetically first.
func betterAlias(a, b elf.Symbol) bool {
	ab, bb := elf.ST_BIND(a.Info), elf.ST_BIND(b.Info)
	if al, bl := ab == elf.STB_LOCAL, bb == elf.STB_LOCAL; al != bl {
		return bl
	}
	au, bu := len(a.Name)-len(strings.TrimLeft(a.Name, "_")), len(b.Name)-len(strings.TrimLeft(b.Name, "_"))
	if au != bu {
		return au < bu
	}
	if ab != bb {
		return ab == elf.STB_GLOBAL
	}
	if ah, bh := hiddenVersion(a), hiddenVersion(b); ah != bh {
		return bh
	}
	if len(a.Name) != len(b.Name) {
		return len(a.Name) < len(b.Name)
	}
	return a.Name < b.Name
}

// hiddenVersion reports whether s is a non-default version (name@VER, not name@@VER).
func hiddenVersion(s elf.Symbol) bool {
	return s.HasVersion && s.VersionIndex.IsHidden()
}
