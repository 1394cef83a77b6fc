package analysis

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"er/internal/archive"
	"er/internal/experiment"
)

// FuncKind says what a Function stands for.
type FuncKind uint8

// Function kinds.
const (
	FuncSymbol  FuncKind = iota // a function symbol of a load object
	FuncPLT                     // a PLT stub, "f@plt"
	FuncKernel                  // a kernel function
	FuncStatic                  // an address of a load object in no symbol: "<static>@0xADDR (<lib.so>)"; see Function
	FuncUnknown                 // an address in no mapping, or an event without a stack: "<Unknown>"
	FuncTotal                   // the pseudo-function <Total>, the root of every stack
	FuncPseudo                  // a pseudo-frame that ends an incomplete stack: <Truncated-stack>, <Unwind-failed>
)

// Function is a function of the profile. Its identity is (Object, Addr, Kind).
//
// An address in a load object but in no symbol belongs to a FuncStatic: one per gap between the
// object's symbols, named by the gap's first link-time address, as "<static>@0x27100 (<libc.so.6>)".
// Code between two symbols is most often one local function whose symbol was stripped, so its
// addresses stay together, where one function per address would scatter a hot function's samples.
// An object without an archive is a single gap, "<static>@0x0 (<lib.so>)". An address in no
// mapping, or an event without a stack, is the FuncUnknown "<Unknown>".
type Function struct {
	Name   string // raw (mangled) symbol name, or the pseudo-name of a FuncStatic, FuncUnknown or FuncTotal
	Object int    // index into Profile.Objects
	Addr   uint64 // link-time address of the symbol (absolute for the kernel); gap start for FuncStatic
	Size   uint64 // bytes; 0 when unknown
	Kind   FuncKind
}

// Object is a load object: an executable, a shared library, the kernel, or a pseudo-object.
type Object struct {
	Name string // basename in angle brackets: "<libc.so.6>", "<vmlinux>", "<Unknown>", "<Total>"
	Path string // path as mapped: "/usr/lib/x86_64-linux-gnu/libc.so.6", "[kernel]"
	Kind string // the archive's kind ("elf", "kernel", "vdso"), or "" when there is no archive
}

// Names of pseudo-functions and pseudo-objects.
const (
	TotalName   = "<Total>"
	UnknownName = "<Unknown>"
	KernelPath  = "[kernel]"
	KernelName  = "<vmlinux>"

	TruncatedName    = "<Truncated-stack>" // the unwind stopped before the outermost frame
	UnwindFailedName = "<Unwind-failed>"   // the unwind could not go on
)

// Options control Analyze.
type Options struct {
	// LoadArchive supplies the archive of a load object (an absolute path) for which an experiment
	// has none; er print sets it to build one from the file. Nil leaves such objects without symbols.
	LoadArchive func(path string) (*experiment.Archive, error)
}

// Profile is the result of Analyze: function and load-object metrics of one or more experiments.
// Metric values are int64 vectors in the order of Metrics (nanoseconds for time metrics).
//
// Internally every distinct call stack, as a sequence of functions from the root to the leaf, is
// stored once in flat arrays with the summed metric values of its events; all views are computed
// from those stacks. Function 0 is <Total> and object 0 its pseudo-object; <Total> is the implicit
// caller of every stack's root function.
type Profile struct {
	Metrics   []Metric
	Functions []Function
	Objects   []Object
	Total     []int64  // sum over all events
	Events    int64    // number of events analysed
	Warnings  []string // what could not be resolved: missing archives, bad stack references

	nm         int
	stackStart []int32 // frames of stack s: frames[stackStart[s]:stackStart[s+1]], root first
	frames     []int32
	stackVals  []int64 // values of stack s: stackVals[s*nm:(s+1)*nm]
	excl, incl []int64 // per function
	objExcl    []int64 // per object
	objIncl    []int64

	edgesOnce sync.Once
	edges     *edgeIndex
	treeOnce  sync.Once
	tree      *Tree
}

// Analyze aggregates the clock events of exps into a Profile. Experiments are aggregated: functions
// are identified by load-object path and address, so the same program's experiments merge.
func Analyze(exps []*experiment.Data, opt Options) (*Profile, error) {
	if len(exps) == 0 {
		return nil, errors.New("analysis: no experiment")
	}
	nm := len(ClockMetrics)
	p := &Profile{
		Metrics:    ClockMetrics,
		Functions:  []Function{{Name: TotalName, Kind: FuncTotal}},
		Objects:    []Object{{Name: TotalName, Path: TotalName}},
		Total:      make([]int64, nm),
		nm:         nm,
		stackStart: []int32{0},
	}
	b := &builder{
		p:       p,
		opt:     opt,
		funcs:   map[funcKey]int32{},
		objs:    map[string]int32{},
		stacks:  map[string]int32{},
		loaded:  map[string]*experiment.Archive{},
		warned:  map[string]bool{},
		unknown: -1,
	}
	for i, d := range exps {
		if d == nil {
			return nil, fmt.Errorf("analysis: experiment %d is nil", i+1)
		}
		b.addExperiment(i, d)
	}
	p.finish()
	return p, nil
}

type funcKey struct {
	obj  int32
	addr uint64
	kind FuncKind
}

type objState struct {
	obj  int32
	arch *experiment.Archive
}

type stackKey struct {
	exp, epoch int32
	pid, stack uint32
}

type builder struct {
	p        *Profile
	opt      Options
	funcs    map[funcKey]int32
	objs     map[string]int32
	stacks   map[string]int32
	loaded   map[string]*experiment.Archive // archives from LoadArchive, by path; nil on failure
	warned   map[string]bool
	unknown  int32 // <Unknown>, or -1 before first use
	keyBuf   []byte
	frameBuf []int32
}

// expState is what the builder knows about one experiment.
type expState struct {
	idx      int32
	d        *experiment.Data
	procs    map[uint32]*procMaps
	fallback *procMaps // the target process's mappings, for processes with none of their own
	objs     map[string]objState
	cache    map[stackKey]int32
}

func (b *builder) addExperiment(idx int, d *experiment.Data) {
	es := &expState{idx: int32(idx), d: d, procs: map[uint32]*procMaps{}, objs: map[string]objState{},
		cache: map[stackKey]int32{}}
	byPid := map[uint32][]*experiment.Mapping{}
	for i := range d.Mappings {
		m := &d.Mappings[i]
		if m.Pid != 0 {
			byPid[m.Pid] = append(byPid[m.Pid], m)
		}
	}
	for pid, ms := range byPid {
		es.procs[pid] = newProcMaps(ms)
	}
	es.fallback = es.procs[d.Log.Pid]
	nm := b.p.nm
	vals := make([]int64, nm)
	badStacks := 0
	var lastPid uint32
	var lastPM *procMaps
	havePM := false
	for i := range d.Clock {
		s := &d.Clock[i]
		if !havePM || s.Pid != lastPid {
			lastPid, havePM = s.Pid, true
			lastPM = es.procs[s.Pid]
			if lastPM == nil {
				lastPM = es.fallback
			}
		}
		epoch := 0
		if lastPM != nil {
			epoch = lastPM.epoch(s.Time)
		}
		stack := s.Stack
		if int(stack) >= len(d.Stacks) {
			badStacks++
			stack = 0
		}
		key := stackKey{exp: es.idx, epoch: int32(epoch), pid: s.Pid, stack: stack}
		fs, ok := es.cache[key]
		if !ok {
			fs = b.resolveStack(es, lastPM, epoch, d.Stacks, stack)
			es.cache[key] = fs
		}
		clockValues(s, vals)
		sv := b.p.stackVals[int(fs)*nm : int(fs+1)*nm]
		for m, v := range vals {
			sv[m] += v
			b.p.Total[m] += v
		}
		b.p.Events++
	}
	if badStacks > 0 {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("%s: %d clock events refer to stacks beyond the stack table (%d stacks); they are shown as %s",
			d.Dir, badStacks, len(d.Stacks), UnknownName))
	}
}

// resolveStack turns raw stack id into functions and interns the result.
func (b *builder) resolveStack(es *expState, pm *procMaps, epoch int, stacks []experiment.Stack, id uint32) int32 {
	fr := b.frameBuf[:0]
	var raw experiment.Stack
	if int(id) < len(stacks) {
		raw = stacks[id]
	}
	// Raw stacks are leaf first; ours are root first. Every frame but the leaf is a return address:
	// look up the byte before it, so that a call ending a function is charged to its caller.
	for i := len(raw) - 1; i >= 0; i-- {
		pc := raw[i]
		if i > 0 && pc > 0 && pc < experiment.PseudoFrameBase {
			pc--
		}
		fr = append(fr, b.frameFunc(es, pm, epoch, pc))
	}
	if len(fr) == 0 {
		fr = append(fr, b.unknownFunc())
	}
	b.frameBuf = fr
	key := b.keyBuf[:0]
	for _, f := range fr {
		key = binary.LittleEndian.AppendUint32(key, uint32(f))
	}
	b.keyBuf = key
	if s, ok := b.stacks[string(key)]; ok {
		return s
	}
	p := b.p
	s := int32(len(p.stackStart) - 1)
	b.stacks[string(key)] = s
	p.frames = append(p.frames, fr...)
	p.stackStart = append(p.stackStart, int32(len(p.frames)))
	p.stackVals = append(p.stackVals, make([]int64, p.nm)...)
	return s
}

// frameFunc finds the function of address pc in a process's mappings during epoch.
func (b *builder) frameFunc(es *expState, pm *procMaps, epoch int, pc uint64) int32 {
	if pc >= experiment.PseudoFrameBase {
		return b.pseudoFunc(pc)
	}
	if pc >= experiment.KernelBase {
		os := b.object(es, KernelPath)
		if os.arch == nil {
			return b.staticFunc(os.obj, 0, 0)
		}
		return b.symbolFunc(os, pc)
	}
	var m *experiment.Mapping
	if pm != nil {
		m = pm.find(epoch, pc)
	}
	if m == nil {
		return b.unknownFunc()
	}
	os := b.object(es, m.Path)
	if os.arch == nil {
		return b.staticFunc(os.obj, 0, 0)
	}
	off := pc - m.Start + m.Offset
	vaddr, ok := archive.FileOffsetToVaddr(os.arch, off)
	if !ok {
		if len(os.arch.Segments) > 0 {
			return b.staticFunc(os.obj, off, 0)
		}
		vaddr = off // an archive without segments maps offsets to themselves
	}
	return b.symbolFunc(os, vaddr)
}

func (b *builder) symbolFunc(os objState, vaddr uint64) int32 {
	sym, ok := archive.SymbolAt(os.arch, vaddr)
	if !ok {
		start, end := gapAt(os.arch.Symbols, vaddr)
		size := uint64(0)
		if end > start {
			size = end - start
		}
		return b.staticFunc(os.obj, start, size)
	}
	kind := FuncSymbol
	switch sym.Kind {
	case experiment.SymPLT:
		kind = FuncPLT
	case experiment.SymKernel:
		kind = FuncKernel
	}
	return b.function(funcKey{obj: os.obj, addr: sym.Addr, kind: kind}, sym.Name, symbolSize(os.arch.Symbols, sym))
}

func (b *builder) staticFunc(obj int32, addr, size uint64) int32 {
	name := fmt.Sprintf("<static>@0x%x (%s)", addr, b.p.Objects[obj].Name)
	return b.function(funcKey{obj: obj, addr: addr, kind: FuncStatic}, name, size)
}

func (b *builder) unknownFunc() int32 {
	if b.unknown < 0 {
		obj := b.objectIndex(UnknownName, UnknownName, "")
		b.unknown = b.function(funcKey{obj: obj, kind: FuncUnknown}, UnknownName, 0)
	}
	return b.unknown
}

// pseudoFunc is the function of a pseudo-frame; it belongs to the <Unknown> pseudo-object.
func (b *builder) pseudoFunc(pc uint64) int32 {
	name := UnwindFailedName
	if pc == experiment.FrameTruncated {
		name = TruncatedName
	}
	obj := b.objectIndex(UnknownName, UnknownName, "")
	return b.function(funcKey{obj: obj, addr: pc, kind: FuncPseudo}, name, 0)
}

func (b *builder) function(k funcKey, name string, size uint64) int32 {
	if f, ok := b.funcs[k]; ok {
		return f
	}
	f := int32(len(b.p.Functions))
	b.p.Functions = append(b.p.Functions, Function{Name: name, Object: int(k.obj), Addr: k.addr, Size: size, Kind: k.kind})
	b.funcs[k] = f
	return f
}

// object returns the load object mapped from path in experiment es, with its archive.
func (b *builder) object(es *expState, p string) objState {
	if os, ok := es.objs[p]; ok {
		return os
	}
	a := es.d.Archives[p]
	if a == nil {
		a = b.loadArchive(es, p)
	}
	kind := ""
	if a != nil {
		kind = a.Kind
	}
	os := objState{obj: b.objectIndex(p, objectName(p), kind), arch: a}
	es.objs[p] = os
	return os
}

func (b *builder) loadArchive(es *expState, p string) *experiment.Archive {
	if a, ok := b.loaded[p]; ok {
		return a
	}
	var a *experiment.Archive
	var err error
	switch {
	case !strings.HasPrefix(p, "/"):
		if p == KernelPath {
			err = errors.New("the experiment has no kernel symbols")
		}
	case b.opt.LoadArchive == nil:
		err = errors.New("the experiment has no archive for it")
	default:
		a, err = b.opt.LoadArchive(p)
		if err == nil && a == nil {
			err = errors.New("no archive")
		}
	}
	b.loaded[p] = a
	if err != nil && !b.warned[p] {
		b.warned[p] = true
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("%s: no symbols for %s: %v; its functions are shown as <static>", es.d.Dir, p, err))
	}
	return a
}

func (b *builder) objectIndex(p, name, kind string) int32 {
	if o, ok := b.objs[p]; ok {
		if b.p.Objects[o].Kind == "" {
			b.p.Objects[o].Kind = kind
		}
		return o
	}
	o := int32(len(b.p.Objects))
	b.p.Objects = append(b.p.Objects, Object{Name: name, Path: p, Kind: kind})
	b.objs[p] = o
	return o
}

// objectName names a load object by path as er_print does: its basename in angle brackets.
// Pseudo-paths in brackets lose them: "[vdso]" is "<vdso>"; the kernel is "<vmlinux>".
func objectName(p string) string {
	switch {
	case p == KernelPath:
		return KernelName
	case strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]"):
		return "<" + p[1:len(p)-1] + ">"
	case p == "":
		return UnknownName
	}
	return "<" + path.Base(p) + ">"
}

// finish computes exclusive and inclusive metrics of functions and load objects from the stacks.
func (p *Profile) finish() {
	nm, nf, no := p.nm, len(p.Functions), len(p.Objects)
	p.excl = make([]int64, nf*nm)
	p.incl = make([]int64, nf*nm)
	p.objExcl = make([]int64, no*nm)
	p.objIncl = make([]int64, no*nm)
	fstamp := make([]int32, nf)
	ostamp := make([]int32, no)
	for s := 0; s < p.NumStacks(); s++ {
		fr, v := p.stack(s)
		addTo(p.excl, int(fr[len(fr)-1]), v)
		for _, f := range fr {
			if fstamp[f] != int32(s+1) {
				fstamp[f] = int32(s + 1)
				addTo(p.incl, int(f), v)
			}
			if o := p.Functions[f].Object; ostamp[o] != int32(s+1) {
				ostamp[o] = int32(s + 1)
				addTo(p.objIncl, o, v)
			}
		}
	}
	for f := 1; f < nf; f++ {
		addTo(p.objExcl, p.Functions[f].Object, p.excl[f*nm:(f+1)*nm])
	}
	copy(p.excl[:nm], p.Total)
	copy(p.incl[:nm], p.Total)
	copy(p.objExcl[:nm], p.Total)
	copy(p.objIncl[:nm], p.Total)
}

func addTo(dst []int64, i int, v []int64) {
	d := dst[i*len(v) : (i+1)*len(v)]
	for m, x := range v {
		d[m] += x
	}
}

// NumStacks is the number of distinct function stacks.
func (p *Profile) NumStacks() int { return len(p.stackStart) - 1 }

// Stack returns the functions of distinct stack s, root first, and its metric values.
// The slices are the profile's own: do not change them.
func (p *Profile) Stack(s int) (funcs []int32, values []int64) { return p.stack(s) }

func (p *Profile) stack(s int) ([]int32, []int64) {
	return p.frames[p.stackStart[s]:p.stackStart[s+1]], p.stackVals[s*p.nm : (s+1)*p.nm]
}

// Exclusive returns function f's exclusive metrics (for <Total>, the totals). Do not change the slice.
func (p *Profile) Exclusive(f int) []int64 { return p.excl[f*p.nm : (f+1)*p.nm] }

// Inclusive returns function f's inclusive metrics. Do not change the slice.
func (p *Profile) Inclusive(f int) []int64 { return p.incl[f*p.nm : (f+1)*p.nm] }

// ObjectExclusive returns load object o's exclusive metrics: the sum over its functions.
func (p *Profile) ObjectExclusive(o int) []int64 { return p.objExcl[o*p.nm : (o+1)*p.nm] }

// ObjectInclusive returns load object o's inclusive metrics: events with o anywhere on the stack.
func (p *Profile) ObjectInclusive(o int) []int64 { return p.objIncl[o*p.nm : (o+1)*p.nm] }

// ObjectFunctions returns the functions of load object o, by address.
func (p *Profile) ObjectFunctions(o int) []int {
	var fs []int
	for f, fn := range p.Functions {
		if fn.Object == o {
			fs = append(fs, f)
		}
	}
	sort.Slice(fs, func(i, j int) bool { return p.Functions[fs[i]].Addr < p.Functions[fs[j]].Addr })
	return fs
}
