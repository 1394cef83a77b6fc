package analysis

import (
	"fmt"
	"strings"

	"er/internal/debuginfo"
	"er/internal/experiment"
)

// fileKey identifies a load object's file as an archive describes it.
type fileKey struct {
	path, buildID string
	size, mtime   int64
}

// fileState is a load object's file, opened through Options.OpenFile, with what was read from it.
type fileState struct {
	of     *ObjectFile
	obj    int32
	arch   *experiment.Archive
	chains map[uint64]int32    // inline chain by address (into builder.chains); -1 without line information
	syms   map[string]uint64   // addresses of function symbols by name, built on first use
	insts  map[uint64][]uint64 // instruction addresses of the code starting at the key, for PCs
}

// chain is what the debug information says of one address: its source frames and, unless inlined
// functions are folded, their functions.
type chain struct {
	frames []debuginfo.Frame // innermost first; the last one is the function of the symbol table
	inl    []int32           // functions of the inlined frames, the caller first (as in a stack)
	lineFn []int32           // per frame, the function whose code it is; -1: the location's own function
}

// fileOf returns the usable file of the object os, opening it the first time; nil when there is none.
func (b *builder) fileOf(os *objState) *fileState {
	if os == nil {
		return nil
	}
	if os.fileOK {
		return os.file
	}
	os.fileOK = true
	a := os.arch
	if b.opt.OpenFile == nil || a == nil || a.Kind != "elf" || !strings.HasPrefix(os.path, "/") {
		return nil
	}
	k := fileKey{path: os.path, buildID: a.BuildID, size: a.Size, mtime: a.Mtime}
	fs, ok := b.files[k]
	if !ok {
		of, err := b.opt.OpenFile(os.path, a)
		switch {
		case err != nil:
			if w := "file " + os.path; !b.warned[w] {
				b.warned[w] = true
				b.warnRes(fmt.Sprintf("no inlined functions, source lines or instructions for %s: %v", os.path, err))
			}
		case of != nil:
			if of.Note != "" {
				b.warnRes(of.Note)
			}
			fs = &fileState{of: of, obj: os.obj, arch: a, chains: map[uint64]int32{}}
			if b.objFiles[os.obj] == nil {
				b.objFiles[os.obj] = fs
			}
		}
		b.files[k] = fs
	}
	os.file = fs
	return fs
}

// chainOf returns the inline chain of location l, or -1 when its object has no line information there.
func (b *builder) chainOf(l *location) int32 {
	if l.symc > 0 {
		return l.symc - 1
	}
	fs := b.fileOf(l.os)
	if fs == nil || fs.of.Debug == nil {
		return -1
	}
	if c, ok := fs.chains[l.addr]; ok {
		return c
	}
	c := int32(-1)
	if frames, ok := fs.of.Debug.Frames(l.addr); ok && len(frames) > 0 {
		c = int32(len(b.chains))
		ch := chain{frames: frames}
		if !b.opt.FoldInlines {
			ch.inl, ch.lineFn = b.inlineFuncs(l.os, fs, frames)
		}
		b.chains = append(b.chains, ch)
	}
	fs.chains[l.addr] = c
	return c
}

// inlineFuncs finds the functions of the inlined frames of a chain (all but the last): inl, caller
// first, and for every frame the function whose code it is (-1 for the location's own function).
// A frame without a name belongs to the function around it.
func (b *builder) inlineFuncs(os *objState, fs *fileState, frames []debuginfo.Frame) (inl, lineFn []int32) {
	n := len(frames)
	lineFn = make([]int32, n)
	cur := int32(-1)
	lineFn[n-1] = cur
	for k := n - 2; k >= 0; k-- {
		if f := b.inlineFunc(os, fs, frames[k]); f >= 0 {
			inl = append(inl, f)
			cur = f
		}
		lineFn[k] = cur
	}
	return inl, lineFn
}

// inlineFunc returns the function of an inlined frame: the function symbol of that name in the
// same object when there is one, else the object's FuncInlined of that name; -1 when the frame
// has no name.
func (b *builder) inlineFunc(os *objState, fs *fileState, fr debuginfo.Frame) int32 {
	if fr.Func == "" {
		return -1
	}
	if fs.syms == nil {
		fs.syms = map[string]uint64{}
		for _, s := range fs.arch.Symbols {
			if _, dup := fs.syms[s.Name]; !dup && s.Kind == experiment.SymFunc {
				fs.syms[s.Name] = s.Addr
			}
		}
	}
	if addr, ok := fs.syms[fr.Func]; ok {
		return b.symbolFunc(os, addr)
	}
	k := inlKey{obj: os.obj, name: fr.Func}
	if f, ok := b.inlined[k]; ok {
		if fr.Entry != 0 && fr.Entry < b.p.Functions[f].Addr {
			b.ownTables()
			b.p.Functions[f].Addr = fr.Entry
		}
		return f
	}
	f := int32(len(b.p.Functions))
	b.p.Functions = append(b.p.Functions, Function{Name: fr.Func, Object: int(os.obj), Addr: fr.Entry, Kind: FuncInlined})
	b.inlined[k] = f
	return f
}

// ObjectFile returns the file of load object o when it could be opened and is the file that was
// profiled (see Options.OpenFile), else nil.
// It opens the file the first time; a file that cannot be used adds a warning to p.Warnings.
func (p *Profile) ObjectFile(o int) *ObjectFile {
	var of *ObjectFile
	p.lazy(func() {
		b := p.b
		if o <= 0 || o >= len(b.objOS) {
			return
		}
		if b.objFiles[o] == nil {
			b.fileOf(b.objOS[o])
		}
		if fs := b.objFiles[o]; fs != nil {
			of = fs.of
		}
	})
	return of
}

// ObjectArchive returns the archive of load object o (its symbols and segments), or nil.
func (p *Profile) ObjectArchive(o int) *experiment.Archive {
	if o <= 0 || o >= len(p.b.objArch) {
		return nil
	}
	return p.b.objArch[o]
}
