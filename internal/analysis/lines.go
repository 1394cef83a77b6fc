package analysis

import (
	"runtime"
	"sort"
	"sync"

	"er/internal/debuginfo"
	"er/internal/disasm"
)

// SourceLine is one source line of one function: a row of the line view.
type SourceLine struct {
	Func int    // whose code it is: the inlined function for inlined code, unless inlined functions are folded
	File string // the source file as the debug information names it; "" for Func's instructions without line numbers
	Line int    // 0 with File ""
}

// LineTable holds the line-level metrics of a profile (seed 002: metrics of an instruction go to its
// source line). A line's exclusive metrics come from the events whose leaf frame is on it; its
// inclusive metrics from the events with any frame on it (for a caller, the line of the call),
// counted once per line per stack. Code inlined into a function is on the inlined function's lines,
// and the call site's line gets the inclusive metrics, as for a call. Frames without line
// information are on their function's "instructions without line numbers" line (File ""), so the
// exclusive metrics of a function's lines add up to the function's.
type LineTable struct {
	Lines []SourceLine

	nm         int
	excl, incl []int64
	index      map[SourceLine]int32
	stamp      []int32
	file       map[fileLine]int32 // per file and line, over all functions
	fileExcl   []int64
	fileIncl   []int64
	fileStamp  []int32
	files      []string
}

type fileLine struct {
	file string
	line int
}

// Exclusive returns the exclusive metrics of line i. Do not change the slice.
func (t *LineTable) Exclusive(i int) []int64 { return t.excl[i*t.nm : (i+1)*t.nm] }

// Inclusive returns the inclusive metrics of line i. Do not change the slice.
func (t *LineTable) Inclusive(i int) []int64 { return t.incl[i*t.nm : (i+1)*t.nm] }

// Find returns the index of a source line, or -1.
func (t *LineTable) Find(l SourceLine) int {
	if i, ok := t.index[l]; ok {
		return int(i)
	}
	return -1
}

// FileLine returns the metrics of a line of a file, summed over the functions with code on it
// (inclusive metrics once per stack); ok is false when no event was on the line.
func (t *LineTable) FileLine(file string, line int) (excl, incl []int64, ok bool) {
	i, ok := t.file[fileLine{file, line}]
	if !ok {
		return nil, nil, false
	}
	return t.fileExcl[int(i)*t.nm : int(i+1)*t.nm], t.fileIncl[int(i)*t.nm : int(i+1)*t.nm], true
}

// Files lists the source files with events on their lines, sorted.
func (t *LineTable) Files() []string { return t.files }

// Lines returns the line-level metrics, computed the first time from the profile's distinct
// stacks and the debug information of its load objects.
func (p *Profile) Lines() *LineTable {
	p.linesOnce.Do(func() {
		p.lazy(func() { p.lines = p.computeLines() })
	})
	return p.lines
}

func (p *Profile) computeLines() *LineTable {
	b, nm := p.b, p.nm
	t := &LineTable{nm: nm, index: map[SourceLine]int32{}, file: map[fileLine]int32{}}
	for r, rs := range p.raw {
		v := p.rawVals[r*nm : (r+1)*nm]
		stamp := int32(r + 1)
		locs := b.locations(rs)
		for i := range locs {
			l := &locs[i]
			c := b.chainOf(l)
			if c < 0 {
				t.add(SourceLine{Func: int(l.fn)}, i == 0, stamp, v)
				continue
			}
			ch := &b.chains[c]
			for k, fr := range ch.frames {
				sl := SourceLine{Func: int(l.fn)}
				if ch.lineFn != nil && ch.lineFn[k] >= 0 {
					sl.Func = int(ch.lineFn[k])
				}
				if fr.Line > 0 {
					sl.File, sl.Line = fr.File, fr.Line
				}
				t.add(sl, i == 0 && k == 0, stamp, v)
			}
		}
	}
	for fl := range t.file {
		t.files = append(t.files, fl.file)
	}
	sort.Strings(t.files)
	t.files = uniqStrings(t.files)
	t.stamp, t.fileStamp = nil, nil
	return t
}

// add adds the values v of stack stamp to line l: to its exclusive metrics when excl, and to its
// inclusive metrics once per stack.
func (t *LineTable) add(l SourceLine, excl bool, stamp int32, v []int64) {
	i, ok := t.index[l]
	if !ok {
		i = int32(len(t.Lines))
		t.index[l] = i
		t.Lines = append(t.Lines, l)
		t.excl = append(t.excl, make([]int64, t.nm)...)
		t.incl = append(t.incl, make([]int64, t.nm)...)
		t.stamp = append(t.stamp, 0)
	}
	if excl {
		addTo(t.excl, int(i), v)
	}
	if t.stamp[i] != stamp {
		t.stamp[i] = stamp
		addTo(t.incl, int(i), v)
	}
	if l.File == "" {
		return
	}
	k := fileLine{l.File, l.Line}
	j, ok := t.file[k]
	if !ok {
		j = int32(len(t.fileStamp))
		t.file[k] = j
		t.fileExcl = append(t.fileExcl, make([]int64, t.nm)...)
		t.fileIncl = append(t.fileIncl, make([]int64, t.nm)...)
		t.fileStamp = append(t.fileStamp, 0)
	}
	if excl {
		addTo(t.fileExcl, int(j), v)
	}
	if t.fileStamp[j] != stamp {
		t.fileStamp[j] = stamp
		addTo(t.fileIncl, int(j), v)
	}
}

func uniqStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Instruction is one instruction of a load object: a row of the instruction view.
type Instruction struct {
	Object int
	Addr   uint64            // link-time address (absolute in the kernel; a file offset without archive); 0 for <Unknown>, pseudo-frames and @plt
	Func   int               // whose code it is: its innermost inlined function, unless inlined functions are folded
	Symbol int               // the function of the symbol table that holds it, which names it "f + 0xOFF"
	Frames []debuginfo.Frame // source frames at Addr, innermost first (as DebugInfo.Frames); nil without line information
}

// PCTable holds the instruction-level metrics of a profile: exclusive metrics from the events
// whose leaf PC is the instruction, inclusive metrics from the events with any frame there (for a
// caller, its call instruction: the instruction holding the return address minus one), once per
// instruction per stack. The exclusive metrics of a function's instructions add up to the
// function's.
type PCTable struct {
	PCs []Instruction

	nm         int
	excl, incl []int64
	index      map[pcKey]int32
}

type pcKey struct {
	obj, fn int32
	addr    uint64
}

// Exclusive returns the exclusive metrics of instruction i. Do not change the slice.
func (t *PCTable) Exclusive(i int) []int64 { return t.excl[i*t.nm : (i+1)*t.nm] }

// Inclusive returns the inclusive metrics of instruction i. Do not change the slice.
func (t *PCTable) Inclusive(i int) []int64 { return t.incl[i*t.nm : (i+1)*t.nm] }

// Find returns the index of the instruction at addr of load object o in symbol function sym, or -1.
func (t *PCTable) Find(o, sym int, addr uint64) int {
	if i, ok := t.index[pcKey{obj: int32(o), fn: int32(sym), addr: addr}]; ok {
		return int(i)
	}
	return -1
}

// PCs returns the instruction-level metrics, computed the first time from the profile's distinct
// stacks; call sites are found in the code of the load objects' files when they can be read.
func (p *Profile) PCs() *PCTable {
	p.pcsOnce.Do(func() {
		p.lazy(func() { p.pcs = p.computePCs() })
	})
	return p.pcs
}

func (p *Profile) computePCs() *PCTable {
	b, nm := p.b, p.nm
	p.instructionStartsAhead()
	t := &PCTable{nm: nm, index: map[pcKey]int32{}}
	var stamps []int32
	for r, rs := range p.raw {
		v := p.rawVals[r*nm : (r+1)*nm]
		locs := b.locations(rs)
		for i := range locs {
			l := &locs[i]
			addr := l.addr
			switch {
			case p.Functions[l.fn].Kind == FuncUnknown || p.Functions[l.fn].Kind == FuncPseudo:
				addr = 0 // one row: these have no code
			case l.ret:
				addr = b.instructionAt(l)
			}
			k := pcKey{obj: l.obj, fn: l.fn, addr: addr}
			j, ok := t.index[k]
			if !ok {
				in := Instruction{Object: int(l.obj), Addr: addr, Func: int(l.fn), Symbol: int(l.fn)}
				if c := b.chainOf(l); c >= 0 {
					ch := &b.chains[c]
					in.Frames = ch.frames
					if ch.lineFn != nil && ch.lineFn[0] >= 0 {
						in.Func = int(ch.lineFn[0])
					}
				}
				j = int32(len(t.PCs))
				t.index[k] = j
				t.PCs = append(t.PCs, in)
				t.excl = append(t.excl, make([]int64, nm)...)
				t.incl = append(t.incl, make([]int64, nm)...)
				stamps = append(stamps, 0)
			}
			if i == 0 {
				addTo(t.excl, int(j), v)
			}
			if stamps[j] != int32(r+1) {
				stamps[j] = int32(r + 1)
				addTo(t.incl, int(j), v)
			}
		}
	}
	return t
}

// instructionStartsAhead decodes the functions holding the return addresses of p's stacks, whose
// instruction starts instructionAt looks up, several at once where they are many (a JVM's 500
// used functions of libjvm.so took 100 ms on one CPU), so that computePCs finds each decoded.
func (p *Profile) instructionStartsAhead() {
	b := p.b
	type job struct {
		fs     *fileState
		lo, hi uint64
	}
	var jobs []job
	seen := map[*fileState]map[uint64]bool{}
	for _, rs := range p.raw {
		locs := b.locations(rs)
		for i := range locs {
			l := &locs[i]
			if !l.ret {
				continue
			}
			fn := &b.p.Functions[l.fn]
			lo, hi := fn.Addr, fn.Addr+fn.Size
			if (fn.Kind != FuncSymbol && fn.Kind != FuncStatic) || l.addr < lo || l.addr >= hi || hi-lo > 1<<20 {
				continue
			}
			fs := b.fileOf(l.os)
			if fs == nil || fs.of.Code == nil {
				continue
			}
			if _, ok := fs.insts[lo]; ok || seen[fs][lo] {
				continue
			}
			if seen[fs] == nil {
				seen[fs] = map[uint64]bool{}
			}
			seen[fs][lo] = true
			jobs = append(jobs, job{fs, lo, hi})
		}
	}
	parts := min(runtime.NumCPU(), len(jobs)/minFunctionsEach)
	if parts <= 1 {
		return // decoded as they are met
	}
	starts := make([][]uint64, len(jobs))
	var wg sync.WaitGroup
	for part := range parts {
		wg.Go(func() {
			for i := part; i < len(jobs); i += parts {
				if code, err := jobs[i].fs.of.Code(jobs[i].lo, jobs[i].hi); err == nil {
					starts[i] = instructionStarts(code, jobs[i].lo)
				}
			}
		})
	}
	wg.Wait()
	for i, j := range jobs {
		if j.fs.insts == nil {
			j.fs.insts = map[uint64][]uint64{}
		}
		j.fs.insts[j.lo] = starts[i]
	}
}

// minFunctionsEach is the fewest functions a goroutine of instructionStartsAhead decodes.
const minFunctionsEach = 64

// instructionAt returns the address of the call instruction holding l.addr, a return address minus
// one: found by decoding l's function from its start when its code can be read, else by finding a
// call instruction that ends at the return address; l.addr itself when neither works.
func (b *builder) instructionAt(l *location) uint64 {
	fs := b.fileOf(l.os)
	if fs == nil || fs.of.Code == nil {
		return l.addr
	}
	fn := &b.p.Functions[l.fn]
	lo, hi := fn.Addr, fn.Addr+fn.Size
	if (fn.Kind == FuncSymbol || fn.Kind == FuncStatic) && lo <= l.addr && l.addr < hi && hi-lo <= 1<<20 {
		starts, ok := fs.insts[lo]
		if !ok {
			if code, err := fs.of.Code(lo, hi); err == nil {
				starts = instructionStarts(code, lo)
			}
			if fs.insts == nil {
				fs.insts = map[uint64][]uint64{}
			}
			fs.insts[lo] = starts
		}
		if i := sort.Search(len(starts), func(i int) bool { return starts[i] > l.addr }) - 1; i >= 0 {
			return starts[i]
		}
	}
	ra := l.addr + 1
	for _, n := range []uint64{5, 6, 2, 3, 7, 4} { // call rel32 first, then the indirect forms
		if ra < n {
			continue
		}
		code, err := fs.of.Code(ra-n, ra)
		if err != nil {
			continue
		}
		if in := disasm.Decode(code, ra-n, nil); len(in) == 1 && in[0].IsCall {
			return ra - n
		}
	}
	return l.addr
}

// instructionStarts decodes x86-64 code at addr and returns the address of each instruction; a
// byte that does not decode counts as an instruction of its own.
func instructionStarts(code []byte, addr uint64) []uint64 {
	return disasm.Starts(code, addr) // the lengths alone: formatting each instruction was most of the time
}
