package unwind

import (
	"bytes"
	"debug/elf"
	"io"
	"os"
	"sort"
)

// elfSyms are the function symbols and loadable segments of a load object, to name the frames of
// the tests' stacks (the analysis names them from archives, which are built with this package).
type elfSyms struct {
	syms  []elf.Symbol // defined functions, sorted by address
	loads []load
}

// loadElfSyms reads the object at path ("[vdso]": this process's vdso), or returns nil.
func loadElfSyms(path string) *elfSyms {
	var r io.ReaderAt
	if path == "[vdso]" {
		img, err := vdsoImage("/proc/self/maps", "/proc/self/mem")
		if err != nil {
			return nil
		}
		r = bytes.NewReader(img)
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer fh.Close()
		r = fh
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return nil
	}
	o := &elfSyms{}
	st, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(st, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && s.Value != 0 {
			o.syms = append(o.syms, s)
		}
	}
	sort.SliceStable(o.syms, func(i, j int) bool { return o.syms[i].Value < o.syms[j].Value })
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			o.loads = append(o.loads, load{vaddr: p.Vaddr, off: p.Off, filesz: p.Filesz})
		}
	}
	return o
}

// at names the function at file offset off, "?" when none.
func (o *elfSyms) at(off uint64) string {
	va, ok := uint64(0), false
	for _, l := range o.loads {
		if off >= l.off && off-l.off < l.filesz {
			va, ok = l.vaddr+(off-l.off), true
			break
		}
	}
	if !ok {
		return "?"
	}
	i := sort.Search(len(o.syms), func(i int) bool { return o.syms[i].Value > va }) - 1
	if i < 0 {
		return "?"
	}
	s := o.syms[i]
	if s.Size != 0 && va-s.Value >= s.Size {
		return "?"
	}
	return s.Name
}
