package erarchive

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/compact"
	"er/internal/debuginfo"
	"er/internal/disasm"
	"er/internal/experiment"
)

// maxFunctionCode is the most code kept of one function in a compact archive: a function (or a gap
// between the symbols of a stripped object) longer than that has only the code around its events.
const maxFunctionCode = 1 << 20

// Code around each instruction of an event's stack: a caller's call instruction is found by
// decoding backwards from its return address (analysis's instructionAt), and a PLT call by its
// last 5 bytes.
const (
	windowBefore = 32
	windowAfter  = 48
)

// compactObject writes the compact archive of the load object at path (the file profiled, archive
// a): the code and the debug information of what er print shows of it (docs/experiment-format.md,
// "Compact archives"). It says false where it cannot, and the object is then copied whole. What
// precompact made of it is used, else it is made now.
func (ar *archiver) compactObject(path string, a *experiment.Archive) (bool, error) {
	o, of, ok := ar.profiledFile(path)
	if !ok {
		return false, nil // not readable here: a copy holds what can be had
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false, nil
	}
	if c, ok := ar.keptCompact(path, a); ok {
		ar.count(c, false, &ar.res.Objects)
		return true, nil
	}
	m := ar.made[path]
	if m == nil || m.a != a {
		m = ar.makeCompact(path, o, of, a)
	}
	for _, w := range m.warns {
		ar.warnf("%s", w)
	}
	if m.small != nil {
		if err := experiment.WriteArchiveTo(ar.root, m.small); err != nil {
			return true, ar.notAdded(path, err)
		}
	}
	if m.data == nil {
		return true, nil // not encoded: said
	}
	c, added, err := ar.ix.AddCompact(path, a.BuildID, a.Size, a.Mtime, fi, m.data, ar.opt.Force)
	if err != nil {
		return true, ar.notAdded(path, err)
	}
	ar.count(c, added, &ar.res.Objects)
	return true, nil
}

// profiledFile is the load object at path as the events' profile has it: its index there and its
// file, when that file is the one at path (not an archived copy); false otherwise.
func (ar *archiver) profiledFile(path string) (int, *analysis.ObjectFile, bool) {
	o, ok := ar.objIndex[path]
	if !ok {
		return 0, nil, false
	}
	of := ar.p.ObjectFile(o)
	return o, of, of != nil && of.Path == path
}

// keptCompact is the compact archive of the load object at path (archive a) that the experiment
// already holds, which is kept unless -F makes it again.
func (ar *archiver) keptCompact(path string, a *experiment.Archive) (archive.Copy, bool) {
	if ar.opt.Force {
		return archive.Copy{}, false
	}
	same := func(c archive.Copy) bool { return c.Size == a.Size && c.Mtime == a.Mtime && c.BuildID == a.BuildID }
	return ar.ix.Lookup(archive.KindCompact, path, same)
}

// compacted is what makeCompact made of a load object for its compact archive.
type compacted struct {
	a     *experiment.Archive // the archive it was made for
	small *experiment.Archive // a with only the symbols er print looks up; nil: no code was read
	data  []byte              // the compact archive, encoded; nil where it could not be
	warns []string            // what could not be kept, and why
}

// makeCompact makes the compact archive of the load object at path (object o of the profile, its
// file of, archive a), without writing anything: several objects may be made at once (precompact).
func (ar *archiver) makeCompact(path string, o int, of *analysis.ObjectFile, a *experiment.Archive) *compacted {
	m := &compacted{a: a}
	var files []string
	info, _ := of.Debug.(*debuginfo.Info)
	if info != nil {
		files = ar.debugFiles(a, info)
	}
	u := usedRanges(ar.p, o, of, a, ar.usedFiles, files, ar.declared(path, a, of.Debug))
	obj := &compact.Object{Path: path, BuildID: a.BuildID, Size: a.Size, Mtime: a.Mtime}
	if of.Code != nil {
		obj.Chunks = compact.Chunks(u.ranges, a.Segments, of.Code)
		// The symbols er print looks up; the rest of the symbol table (of a large library, 20 MB)
		// is not needed to show this experiment.
		small := *a
		small.Symbols = keptSymbols(a, u, obj.Code)
		m.small = &small
	}
	if info != nil {
		var err error
		if obj.Debug, err = info.Extract(u.ranges, files, ar.vars); err != nil {
			m.warns = append(m.warns, fmt.Sprintf("%s: its debug information is not archived: %v", path, err))
			obj.Debug = nil
		}
	}
	data, err := compact.Encode(obj)
	if err != nil {
		m.warns = append(m.warns, fmt.Sprintf("%s: not archived: %v", path, err))
		return m
	}
	m.data = data
	return m
}

// precompact makes the compact archives of those of objects that compactObject will write, a few
// at once (each is the disassembly and the debug information of the functions used: after a
// collection, most of the archiving's time, and the CPUs are the target's no more).
func (ar *archiver) precompact(objects []string) {
	type job struct {
		path string
		o    int
		of   *analysis.ObjectFile
		a    *experiment.Archive
	}
	var jobs []job
	for _, path := range objects {
		o, of, ok := ar.profiledFile(path)
		if !ok || !strings.HasPrefix(path, "/") || !ar.matches(path) {
			continue
		}
		var a *experiment.Archive
		for _, d := range ar.exps {
			if a == nil {
				a = d.Archives[path]
			}
		}
		if a == nil || a.Kind != "elf" || archive.SameFile(path, a) != nil {
			continue
		}
		if _, kept := ar.keptCompact(path, a); kept {
			continue
		}
		jobs = append(jobs, job{path, o, of, a})
	}
	if len(jobs) < 2 {
		return // made when written
	}
	// What the goroutines read of the profile is computed first, here: each is made once.
	ar.p.PCs()
	ar.p.Lines()
	made := make([]*compacted, len(jobs))
	sem := make(chan struct{}, max(1, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			made[i] = ar.makeCompact(j.path, j.o, j.of, j.a)
		})
	}
	wg.Wait()
	ar.made = map[string]*compacted{}
	for i, j := range jobs {
		ar.made[j.path] = made[i]
	}
}

// declared lists the functions that the debug information dbg of the load object at path (archive
// a) declares in a source file: cached per build id (archive.DeclaredFunctions), since finding them
// looks up every symbol. The symbols are the object's own (archive.Build, cached too): an
// experiment's archive may hold only those er print looks up.
func (ar *archiver) declared(path string, a *experiment.Archive, dbg analysis.DebugInfo) []declaredFunc {
	if dbg == nil {
		return nil
	}
	list := func() ([]string, error) {
		full, err := archive.Build(path)
		if err != nil {
			return nil, err
		}
		var out []string
		done := map[uint64]bool{}
		for _, sym := range full.Symbols {
			if sym.Kind != experiment.SymFunc || done[sym.Addr] {
				continue
			}
			done[sym.Addr] = true
			info, ok := dbg.Function(sym.Addr)
			if !ok || info.DeclFile == "" || info.Entry != sym.Addr {
				continue
			}
			lo, hi := info.Lo, info.Hi
			if hi <= lo {
				lo, hi = sym.Addr, sym.Addr+sym.Size
			}
			out = append(out, fmt.Sprintf("%x %x %x %s", sym.Addr, lo, hi, info.DeclFile))
		}
		return out, nil
	}
	var lines []string
	if a.BuildID != "" {
		lines, _ = archive.DeclaredFunctions(a.BuildID, list)
	} else {
		lines, _ = list()
	}
	var out []declaredFunc
	for _, l := range lines {
		var d declaredFunc
		if n, err := fmt.Sscanf(l, "%x %x %x ", &d.addr, &d.lo, &d.hi); n != 3 || err != nil {
			continue
		}
		if f := strings.SplitN(l, " ", 4); len(f) == 4 {
			d.file = f[3]
			out = append(out, d)
		}
	}
	return out
}

// declaredFunc is a function that debug information declares in a source file: its symbol's
// address and the code er print lists for it.
type declaredFunc struct {
	addr, lo, hi uint64
	file         string
}

// debugFiles is the list of the source files of info, the debug information of the object that
// archive a describes: cached per build id (archive.SourceFiles), since listing them reads all of it.
func (ar *archiver) debugFiles(a *experiment.Archive, info *debuginfo.Info) []string {
	if a.BuildID != "" {
		if files, ok := archive.SourceFiles(a.BuildID, func() ([]string, error) { return info.Files(), nil }); ok {
			return files
		}
	}
	return info.Files()
}

// usage is what er print reads of a load object for a profile: the address ranges of its code
// and debug information, and the lookups in its symbol table.
type usage struct {
	ranges [][2]uint64 // all that is read, merged
	funcs  [][2]uint64 // the functions whose code er print disassembles
	pcs    []uint64    // the instructions of the events' stacks
	names  []string    // the inlined functions of the events' stacks, looked up among the symbols by name
	syms   []uint64    // the functions declared in the source files with events
}

// usedRanges finds what er print reads of load object o (its file of, archive a) for the profile p:
// the code around every instruction of an event's stack; the used functions, each whole (all the
// parts its debug information gives it); and the functions declared in the source files with events
// (used), which er print's source view of such a file lists with their lines. files are the source
// files of of's debug information, declared the functions it declares in them.
func usedRanges(p *analysis.Profile, o int, of *analysis.ObjectFile, a *experiment.Archive, used map[string]bool, files []string, declared []declaredFunc) *usage {
	u := &usage{}
	type key struct {
		r  [2]uint64
		fn bool
	}
	seen := map[key]bool{} // a function is added once for each of its instructions: kept once
	add := func(lo, hi uint64, fn bool) {
		k := key{[2]uint64{lo, hi}, fn}
		if hi <= lo || hi-lo > maxFunctionCode || seen[k] {
			return
		}
		seen[k] = true
		u.ranges = append(u.ranges, k.r)
		if fn {
			u.funcs = append(u.funcs, k.r)
		}
	}
	dbg := of.Debug
	addFunction := func(pc uint64) {
		if dbg == nil {
			return
		}
		if f, ok := dbg.Function(pc); ok {
			for _, r := range f.Ranges {
				add(r[0], r[1], true)
			}
			add(f.Entry, f.Entry+(f.Hi-f.Lo), true) // a function named by its debug information: its entry and size
		}
	}
	for _, in := range p.PCs().PCs {
		if in.Object != o || in.Addr == 0 {
			continue
		}
		u.pcs = append(u.pcs, in.Addr)
		add(in.Addr-min(in.Addr, windowBefore), in.Addr+windowAfter, false)
		addFunction(in.Addr)
		for k := 0; k+1 < len(in.Frames); k++ {
			if in.Frames[k].Func != "" {
				u.names = append(u.names, in.Frames[k].Func)
			}
		}
	}
	for f := range p.Functions {
		fn := &p.Functions[f]
		switch {
		case fn.Object != o || !p.Used(f):
			continue
		case fn.Kind == analysis.FuncSymbol || fn.Kind == analysis.FuncStatic || fn.Kind == analysis.FuncPLT:
			add(fn.Addr, fn.Addr+fn.Size, true)
			addFunction(fn.Addr)
		}
	}
	if len(used) > 0 && slices.ContainsFunc(files, func(f string) bool { return used[f] }) {
		for _, d := range declared {
			// Of a's symbols: er print lists the functions of its symbol archive.
			if !used[d.file] || !hasFunction(a.Symbols, d.addr) {
				continue
			}
			u.syms = append(u.syms, d.addr)
			add(d.lo, d.hi, true)
		}
	}
	u.ranges = debuginfo.MergeRanges(u.ranges)
	return u
}

// hasFunction reports whether the sorted symbols have a function symbol at addr.
func hasFunction(syms []experiment.Symbol, addr uint64) bool {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr >= addr })
	for ; i < len(syms) && syms[i].Addr == addr; i++ {
		if syms[i].Kind == experiment.SymFunc {
			return true
		}
	}
	return false
}

// keptSymbols is the part of a's symbols that er print looks up for u (archive.KeptSymbols): at
// the instructions of the events' stacks (and the return addresses just past them), at the
// functions declared in the source files with events, at every address that the disassembly of
// the used functions names (call targets, RIP-relative operands), and the inlined functions by
// name. code reads the object's code.
func keptSymbols(a *experiment.Archive, u *usage, code func(lo, hi uint64) ([]byte, error)) []experiment.Symbol {
	q := append([]uint64(nil), u.syms...)
	var at []uint64 // the disassembly's symbolizer looks up the symbol at an address, not its size
	for _, pc := range u.pcs {
		q = append(q, pc, pc+maxInstruction)
		for n := uint64(maxInstruction); n > 0; n-- { // the instruction at pc, which may end a segment
			if c, err := code(pc, pc+n); err == nil {
				at = append(at, disasm.References(c, pc)...)
				break
			}
		}
	}
	return archive.KeptSymbols(a.Symbols, q, append(at, functionReferences(u.funcs, code)...), u.names)
}

// functionReferences lists the addresses that the disassembly of the functions funcs names, the
// functions decoded on several goroutines where they are many (a large library's used functions,
// libjvm's 500 in a Java run, take most of its compact archive's time): code must be safe to
// call from several at once.
func functionReferences(funcs [][2]uint64, code func(lo, hi uint64) ([]byte, error)) []uint64 {
	parts := min(runtime.NumCPU(), len(funcs)/minFunctionsEach)
	if parts <= 1 {
		parts = 1
	}
	out := make([][]uint64, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for i := p; i < len(funcs); i += parts {
				f := funcs[i]
				if c, err := code(f[0], f[1]); err == nil {
					out[p] = append(out[p], disasm.References(c, f[0])...)
				}
			}
		})
	}
	wg.Wait()
	return slices.Concat(out...)
}

// minFunctionsEach is the fewest functions a goroutine of functionReferences decodes.
const minFunctionsEach = 64

// maxInstruction is the longest x86-64 instruction, in bytes.
const maxInstruction = 15

// usedSources lists the source files of the lines with events in p, less those of load objects
// built elsewhere: an object with a build id none of whose own source files is on this machine
// (a distribution's library), whose files would only be reported missing.
func usedSources(p *analysis.Profile) []string {
	here := map[int]bool{}
	seen := map[string]bool{}
	var out []string
	for _, l := range p.Lines().Lines {
		if l.File == "" || seen[l.File] {
			continue
		}
		o := p.Functions[l.Func].Object
		own, ok := here[o]
		if !ok {
			own = ownSourcesHere(p, o)
			here[o] = own
		}
		if own {
			seen[l.File] = true
			out = append(out, l.File)
		}
	}
	slices.Sort(out)
	return out
}

// ownSourcesHere reports whether load object o of p may have its own source files on this machine
// (withoutAbsentSources' rule).
func ownSourcesHere(p *analysis.Profile, o int) bool {
	a, of := p.ObjectArchive(o), p.ObjectFile(o)
	if a == nil || a.BuildID == "" || of == nil || of.Debug == nil {
		return true
	}
	files, ok := archive.SourceFiles(a.BuildID, func() ([]string, error) { return of.Debug.Files(), nil })
	return !ok || anyOwnSourcePresent(files)
}
