package analysis

import (
	"encoding/binary"
	"er/internal/keytable"
	"er/internal/sat"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"er/internal/archive"
	"er/internal/experiment"
)

// FuncKind says what a Function stands for.
type FuncKind uint8

// Function kinds.
const (
	FuncSymbol    FuncKind = iota // a function symbol of a load object
	FuncPLT                       // a PLT stub, "f@plt"
	FuncKernel                    // a kernel function
	FuncStatic                    // an address of a load object in no symbol: "<static>@0xADDR (<lib.so>)"; see Function
	FuncUnknown                   // an address in no mapping, or an event without a stack: "<Unknown>"
	FuncTotal                     // the pseudo-function <Total>, the root of every stack
	FuncPseudo                    // a pseudo-frame that ends an incomplete stack: <Truncated-stack>, <Unwind-failed>
	FuncInlined                   // a function inlined into others, from the debug information; see Function
	FuncPLTBind                   // the "@plt" pseudo-function of a load object: lazy binding of its PLT entries
	FuncCollector                 // the "<Collector>" pseudo-function: the collector library's own work; see collectorRules
	FuncObject                    // a hidden load object's functions as one, named as the object ("<libc.so.6>"); see Options.Visibility
	FuncView                      // a frame that a view mode's pass shows in place of others (PassContext.ViewFunc)
	FuncMethod                    // a method of symbolic frames (experiment.SymbolicMapping), named by its mapping; Addr numbers it in its object
	FuncDynamic                   // a dynamic function: code a runtime generated (a JVM's compiled method or stub), named by its mapping; Addr numbers it in its object
)

// Function is a function of the profile. Its identity is (Object, Addr, Kind).
//
// An address in a load object but in no symbol belongs to a FuncStatic: one per gap between the
// object's symbols, named by the gap's first link-time address, as "<static>@0x27100 (<libc.so.6>)".
// Code between two symbols is most often one local function whose symbol was stripped, so its
// addresses stay together, where one function per address would scatter a hot function's samples.
// An object without an archive is a single gap, "<static>@0x0 (<lib.so>)". An address in no
// mapping, or an event without a stack, is the FuncUnknown "<Unknown>".
//
// Code inlined into a function belongs to the inlined function, which is a function of its own
// (unless Options.FoldInlines): the caller's frame is followed, on the stack, by a frame of the
// inlined function. An inlined function is identified by its load object and name, so all its
// inlined copies in one object are one function; when the object also has an out-of-line copy
// with that symbol name, the inlined copies are that FuncSymbol, otherwise a FuncInlined whose
// Addr is the lowest entry address of its copies seen and whose Size is 0.
//
// Calls through the PLT follow seed 004: a sample whose leaf PC is in a PLT stub ("f@plt") loses
// that frame, so that its time is the caller's, at its call instruction; the dynamic linker's lazy
// binding (_dl_runtime_resolve* and what it calls, seen as called from a PLT stub) becomes one
// frame, the FuncPLTBind pseudo-function "@plt" of the calling load object. FuncPLT functions
// remain only where a PLT stub is not the leaf, or where nothing calls it.
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
	ProcessExitName  = "<Process exit>"    // CPU time of process exits after their clock events stopped (experiment.FrameProcessExit)
	UnsampledName    = "<Unsampled>"       // counted CPU time of threads without samples (experiment.FrameUnsampled)
	PLTBindName      = "@plt"              // the lazy binding of a load object's PLT entries
)

// Options control Analyze.
type Options struct {
	// LoadArchive supplies the archive of a load object (an absolute path) for which an experiment
	// has none; er print sets it to build one from the file. Nil leaves such objects without symbols.
	LoadArchive func(path string) (*experiment.Archive, error)
	// OpenFile opens the file of a load object (an absolute path) described by archive a, for its
	// debug information (inlined functions, source lines) and its code (instructions), only when
	// it is the file that was profiled; OpenObjectFile does this. It is called at most once per
	// file and archive, and only for objects with an archive. Nil reads no file: no inlined
	// functions, no lines, no instructions.
	OpenFile func(path string, a *experiment.Archive) (*ObjectFile, error)
	// FoldInlines charges code inlined into a function to that function, as if nothing were
	// inlined; lines keep the inlined code's source lines.
	FoldInlines bool
	// Filter, when not nil, selects the events to analyse: an event adds to the metrics, to the
	// heap and I/O statistics and to DataEvents only when Filter returns true for it. It is called
	// once per event, in no particular order between experiments; see EventInfo. The heap is
	// replayed with all events, so an allocation is a leak when its block is never freed, even
	// by an event that the filter leaves out; the leaks shown are those among the selected events.
	Filter func(ev *EventInfo) bool
	// Events keeps the list of the events analysed in Profile.EventList, for timelines.
	Events bool
	// Visibility, when set, says how the functions of each load object (by path) show in the stacks:
	// as they are (ShowAll), as one function named as the object (Hide), or only the functions
	// entered from outside the object, its callees inside it folded into them (API).
	Visibility func(path string) Visibility
	// ViewMode selects the frame passes that the stacks go through (FramePass); the machine mode
	// runs none.
	ViewMode ViewMode
}

// Visibility is how a load object's functions show in the stacks (er print's object_show,
// object_hide, object_api).
type Visibility uint8

// Load object visibilities.
const (
	ShowAll Visibility = iota
	Hide
	API
)

// Profile is the result of Analyze: function and load-object metrics of one or more experiments.
// Metric values are int64 vectors in the order of Metrics (nanoseconds for time metrics).
//
// Internally every distinct call stack, as a sequence of functions from the root to the leaf, is
// stored once in flat arrays with the summed metric values of its events; all views are computed
// from those stacks. Function 0 is <Total> and object 0 its pseudo-object; <Total> is the implicit
// caller of every stack's root function. The line and instruction views (Lines, PCs) are computed
// on first use from the distinct raw stacks, which the profile keeps with their values.
type Profile struct {
	Metrics   []Metric
	Functions []Function
	// dynCode is the code of each dynamic function (FuncDynamic), for its disassembly.
	dynCode  map[int32]*DynamicCode
	Objects  []Object
	Total    []int64  // sum over all events
	Events   int64    // number of events analysed: clock samples, and tracing events that add to a metric
	Warnings []string // what could not be resolved: missing archives, bad stack references, ignored frees

	// Events of each kind of data in the experiments, indexed by DataKind (all tracing events,
	// also those that add to no metric, such as frees); only those Options.Filter selects.
	DataEvents []int64
	// Heap holds the heap statistics (sizes, leaks, peaks); nil when there is no heap tracing.
	Heap *HeapStats
	// IO holds the I/O statistics; nil when there is no I/O tracing.
	IO *IOStats
	// IOFiles are the I/O metrics of each file, and IODescriptors of each file and descriptor, in
	// the order first seen; nil when there is no I/O tracing.
	IOFiles, IODescriptors []IOGroup
	// EventList holds the events analysed, in the order of the experiments and of each data
	// file, when Options.Events is set; nil otherwise.
	EventList []Event

	nm         int
	base       []int   // by DataKind: the index of the kind's first metric in the value vectors, or -1
	stackStart []int32 // frames of stack s: frames[stackStart[s]:stackStart[s+1]], root first
	frames     []int32
	stackVals  []int64 // values of stack s: stackVals[s*nm:(s+1)*nm]
	excl, incl []int64 // per function
	objExcl    []int64 // per object
	objIncl    []int64
	onStack    []bool // per function: on some stack (not only in frames the PLT rules dropped)

	raw     []rawStack // distinct raw stacks, for the line and instruction views
	rootRaw []int32    // of a refiltered profile: each raw stack's index in the unfiltered one
	rawVals []int64    // values of raw stack r: rawVals[r*nm:(r+1)*nm]
	b       *builder   // kept to resolve raw stacks again for the views; guarded by viewMu after Analyze
	viewMu  *sync.Mutex
	// tables are, in a profile from Analyze, its function and object tables as the views have left
	// them (Tables): readers that do not hold viewMu take them from here, never from Functions and
	// Objects, which the views' lazy computations replace under viewMu.
	tables atomic.Pointer[tables]
	filter func(ev *EventInfo) bool // the events it selects (nil: all)

	dataSpace *DataSpace // DataSpace, once made
	root      *Profile   // the unfiltered profile this one was refiltered from (Refilter); nil for Analyze's
	seenRes   int        // how many of b.resWarn are in Warnings

	edgesOnce sync.Once
	edges     *edgeIndex
	treeOnce  sync.Once
	tree      *Tree
	linesOnce sync.Once
	lines     *LineTable
	pcsOnce   sync.Once
	pcs       *PCTable
	addrOnce  sync.Once
	addr      []AddrStack

	lockStacks map[int32]bool // function stacks that wait on a user-level lock (lockWait)
}

// rawStack is one distinct stack of an experiment's stack table, as seen by one process in one
// epoch of its mappings.
type rawStack struct {
	es    *expState
	pm    *procMaps
	epoch int32
	id    uint32
	stack int32 // its function stack
	// lock says whether it waits on a user-level lock (lockFunction) by its functions before the
	// view mode's passes, which may remove them (a JVM's pthread_cond_wait under a Java method):
	// 0 where no pass ran (its function stack says), 1 no, 2 yes.
	lock int8
}

// Analyze aggregates the events of exps into a Profile: clock samples, and heap, synchronization
// and I/O tracing events, each adding a value vector over Profile.Metrics (MetricsFor(exps)) at its
// call stack. Experiments are aggregated: functions are identified by load-object path and address,
// so the same program's experiments merge.
func Analyze(exps []*experiment.Data, opt Options) (*Profile, error) {
	if len(exps) == 0 {
		return nil, errors.New("analysis: no experiment")
	}
	for i, d := range exps {
		if d == nil {
			return nil, fmt.Errorf("analysis: experiment %d is nil", i+1)
		}
	}
	ms := MetricsFor(exps)
	p := newProfile(ms)
	p.Functions = []Function{{Name: TotalName, Kind: FuncTotal}}
	p.Objects = []Object{{Name: TotalName, Path: TotalName}}
	p.viewMu = &sync.Mutex{}
	p.filter = opt.Filter
	b := &builder{
		p:        p,
		opt:      opt,
		funcs:    map[funcKey]int32{},
		inlined:  map[inlKey]int32{},
		objs:     map[string]int32{},
		loaded:   map[string]*experiment.Archive{},
		files:    map[fileKey]*fileState{},
		objArch:  []*experiment.Archive{nil},
		objOS:    []*objState{nil},
		objFiles: []*fileState{nil},
		warned:   map[string]bool{},
		unknown:  -1,
		passes:   passesOf(opt.ViewMode, exps),
		mode:     opt.ViewMode,
		datas:    exps,
	}
	p.b = b
	groups := p.newIOGroups()
	for i, d := range exps {
		es := b.newExpState(i, d)
		b.exps = append(b.exps, es)
		if opt.Filter == nil { // only an unfiltered profile can be refiltered: it keeps every event's raw stack
			es.rawOf = make([][]int32, len(Kinds))
			for _, k := range Kinds {
				es.rawOf[k.ID] = make([]int32, k.Len(d))
				for j := range es.rawOf[k.ID] {
					es.rawOf[k.ID][j] = -1
				}
			}
		}
		ea := eventAdder{b: b, p: p, es: es, vals: make([]int64, p.nm), keepEvents: opt.Events, micro: p.hasMicrostates()}
		ea.addAll(newEventSel(opt.Filter, es, b.p).keepAll, groups)
	}
	if groups != nil {
		p.IOFiles, p.IODescriptors = groups.byFile, groups.byFD
	}
	p.finish()
	p.seenRes = len(b.resWarn)
	b.publish()
	b.stacks, b.collided, b.frameBuf, b.keyBuf = keytable.Table{}, nil, nil, nil // the views resolve locations, not function stacks
	for _, es := range b.exps {
		es.cache, es.dense = nil, nil
	}
	return p, nil
}

// newProfile returns an empty profile of metrics ms, with what each kind with metrics there keeps
// beside them.
func newProfile(ms []Metric) *Profile {
	p := &Profile{
		Metrics:    ms,
		Total:      make([]int64, len(ms)),
		DataEvents: make([]int64, len(Kinds)),
		nm:         len(ms),
		base:       make([]int, len(Kinds)),
		stackStart: []int32{0},
	}
	for i := range p.base {
		p.base[i] = -1
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if int(ms[i].Data) < len(p.base) {
			p.base[ms[i].Data] = i
		}
	}
	for _, k := range Kinds {
		if p.base[k.ID] >= 0 && k.Init != nil {
			k.Init(p)
		}
	}
	return p
}

// kindLen returns the number of kind k's metrics in the profile: its Metrics, and its Extra where
// present.
func (p *Profile) kindLen(k DataKind) int {
	n := 0
	for _, m := range p.Metrics {
		if m.Data == k {
			n++
		}
	}
	return n
}

// newIOGroups returns the sums by file and descriptor to fill, nil without I/O tracing.
func (p *Profile) newIOGroups() *ioGroups {
	if p.IO == nil {
		return nil
	}
	return &ioGroups{nm: p.nm, files: map[string]int{}, fds: map[ioFile]int{}}
}

// Refilter analyses the profile's experiments again with another event filter (nil: all events),
// as Analyze would with the same options and that filter, but much faster: it reuses the
// functions, load objects and call stacks that p resolved, and only sums the selected events'
// values again; events says whether to fill its EventList (Options.Events), whatever p did. p
// must come from Analyze without a filter, or from Refilter. The result shares
// p's function and object tables, so function and object indices mean the same in both; the
// tables may hold functions that no selected event reaches, for which Used is false.
func (p *Profile) Refilter(filter func(ev *EventInfo) bool, events bool) (*Profile, error) {
	return p.Unfiltered().refilter(filter, events, nil)
}

// refilter is Refilter of the unfiltered profile root, calling onAdd, when not nil, with each event
// added: its experiment, its raw stack in root, the event and its values.
func (root *Profile) refilter(filter func(ev *EventInfo) bool, events bool, onAdd func(es *expState, rb int32, ev event, vals []int64)) (*Profile, error) {
	b := root.b
	if b.opt.Filter != nil {
		return nil, errors.New("analysis: only a profile analysed without a filter can be refiltered")
	}
	// The filter runs first, and the events it keeps are added up after, without the lock that the
	// views of every profile refiltered from root share: a costly filter (hundreds of terms on a
	// million events) holds up no other profile's views or refilters, only its own caller. What the
	// adding reads of root (its raw and function stacks, each experiment's raw stack of each event)
	// does not change after Analyze; the tables and warnings that the views add to are taken under
	// the lock. onAdd (ByThread's) reads the experiments' shared indexes: it runs under the lock.
	var keeps [][][]bool // by experiment and kind: the events the filter keeps; nil: all
	if filter != nil {
		keeps = root.selectEvents(filter, nil)
	}
	q := newProfile(root.Metrics)
	root.viewMu.Lock()
	q.Functions, q.Objects = root.Functions, root.Objects // published: their elements do not change (publish)
	q.Warnings = append(q.Warnings, b.resWarn...)
	q.seenRes = len(b.resWarn)
	if onAdd != nil {
		defer root.viewMu.Unlock()
	} else {
		root.viewMu.Unlock()
	}
	q.b, q.viewMu, q.root, q.filter = b, root.viewMu, root, filter
	re := &reuse{base: root, raw: make([]int32, len(root.raw)), stack: make([]int32, root.NumStacks())}
	for i := range re.raw {
		re.raw[i] = -1
	}
	for i := range re.stack {
		re.stack[i] = -1
	}
	groups := q.newIOGroups()
	for i, es := range b.exps {
		ea := eventAdder{b: b, p: q, es: es, vals: make([]int64, q.nm), keepEvents: events, re: re, micro: q.hasMicrostates(), onAdd: onAdd}
		keep := func(DataKind, int) []bool { return nil }
		if keeps != nil {
			keep = func(k DataKind, _ int) []bool { return keeps[i][k] }
		}
		ea.addAll(keep, groups)
	}
	if groups != nil {
		q.IOFiles, q.IODescriptors = groups.byFile, groups.byFD
	}
	q.finish()
	return q, nil
}

// Unfiltered returns the profile of all events that p was refiltered from, or p itself when it
// comes from Analyze. The two number functions and load objects alike.
func (p *Profile) Unfiltered() *Profile {
	if p.root != nil {
		return p.root
	}
	return p
}

// reuse maps the raw and function stacks of the unfiltered profile base to those of a refiltered
// one, numbered in the order the selected events first reach them (-1: not yet).
type reuse struct {
	base       *Profile
	raw, stack []int32
}

// rawIndex returns the refiltered profile p's raw stack for base's raw stack rb, adding it.
func (re *reuse) rawIndex(p *Profile, rb int32) int32 {
	if r := re.raw[rb]; r >= 0 {
		return r
	}
	rs := re.base.raw[rb]
	s := re.stack[rs.stack]
	if s < 0 {
		fr, _ := re.base.stack(int(rs.stack))
		s = int32(p.NumStacks())
		p.frames = append(p.frames, fr...)
		p.stackStart = append(p.stackStart, int32(len(p.frames)))
		p.stackVals = append(p.stackVals, make([]int64, p.nm)...)
		re.stack[rs.stack] = s
	}
	rs.stack = s
	r := int32(len(p.raw))
	p.raw = append(p.raw, rs)
	p.rootRaw = append(p.rootRaw, rb)
	p.rawVals = append(p.rawVals, make([]int64, p.nm)...)
	re.raw[rb] = r
	return r
}

// lazy runs fn, a view's first computation, under the lock of the builder that p shares with the
// profiles refiltered from the same one. fn may add functions and load objects (inlined functions
// found in debug information) and warnings (files that cannot be read) through the builder, which
// adds them to the unfiltered profile; p then takes the tables and the new warnings.
func (p *Profile) lazy(fn func()) {
	p.viewMu.Lock()
	defer p.viewMu.Unlock()
	fn()
	b := p.b
	b.publish()
	if p != b.p {
		p.Functions, p.Objects = b.p.Functions, b.p.Objects
		p.Warnings = append(p.Warnings, b.resWarn[p.seenRes:]...)
	}
	p.seenRes = len(b.resWarn)
}

// publish makes the unfiltered profile's function and object tables, as they are now, those that
// Tables gives and the profiles refiltered from now on take. The elements of a published
// table are never changed: a function or object changed later is changed in a copy (ownTables).
func (b *builder) publish() {
	b.p.tables.Store(&tables{b.p.Functions, b.p.Objects})
	b.tablesOwned = false
}

// tables are a profile's function and object tables.
type tables struct {
	fns  []Function
	objs []Object
}

// ownTables makes the function and object tables the builder's own before it changes an element in
// place (an inlined function's entry found lower, an object's kind): published tables, which
// other goroutines read without the lock, keep their elements. Appending needs no copy: readers
// see only their own length.
func (b *builder) ownTables() {
	if !b.tablesOwned {
		b.p.Functions, b.p.Objects = slices.Clone(b.p.Functions), slices.Clone(b.p.Objects)
		b.tablesOwned = true
	}
}

// Tables returns the function and object tables of the unfiltered profile that p was refiltered
// from (p's own when it comes from Analyze), with the functions that the views have found since
// (inlined functions): the tables that goroutines other than the one running a view of a profile
// sharing them may read. Their numbers are p's. Do not change them.
func (p *Profile) Tables() ([]Function, []Object) {
	if t := p.Unfiltered().tables.Load(); t != nil {
		return t.fns, t.objs
	}
	return p.Functions, p.Objects
}

// selectEvents evaluates filter on every event of root's experiments (of the kinds in only; nil: of
// every kind), without holding the views' lock: each experiment's index is copied for this
// goroutine under the lock, and what the filter reads of root (its raw stacks and function stacks)
// does not change after Analyze. The answer is by experiment and kind; nil for a kind not asked.
func (root *Profile) selectEvents(filter func(ev *EventInfo) bool, only []DataKind) [][][]bool {
	b := root.b
	xs := make([]*ExpIndex, len(b.exps))
	root.viewMu.Lock()
	for i, es := range b.exps {
		if es.index != nil {
			xs[i] = es.index.reader()
		}
	}
	root.viewMu.Unlock()
	for i, es := range b.exps { // the first filter of any profile indexes the experiments, without the lock
		if xs[i] == nil {
			xs[i] = NewExpIndex(int(es.idx), es.d)
			root.viewMu.Lock()
			if es.index == nil {
				es.index = xs[i]
			}
			xs[i] = es.index.reader()
			root.viewMu.Unlock()
		}
	}
	keeps := make([][][]bool, len(b.exps))
	for i, es := range b.exps {
		sel := &eventSel{f: filter, x: xs[i], es: es, root: root}
		keeps[i] = make([][]bool, len(Kinds))
		for _, k := range Kinds {
			if only == nil || slices.Contains(only, k.ID) {
				keeps[i][k.ID] = sel.keepAll(k.ID, k.Len(es.d))
			}
		}
	}
	return keeps
}

type funcKey struct {
	obj  int32
	addr uint64
	kind FuncKind
}

// inlKey identifies an inlined function: its load object and name.
type inlKey struct {
	obj  int32
	name string
}

// objState is a load object as mapped in one experiment, with that experiment's archive of it.
type objState struct {
	obj       int32
	path      string
	arch      *experiment.Archive
	file      *fileState // its checked file; valid once fileOK
	fileOK    bool
	ldso      bool // the dynamic linker
	collector bool // the collector library: its frames are <Collector> (see collectorRules)
}

type stackKey struct {
	exp, epoch int32
	pid, stack uint32
}

type builder struct {
	p        *Profile
	opt      Options
	objVis   []Visibility // each object's visibility once asked (255: not yet)
	funcs    map[funcKey]int32
	inlined  map[inlKey]int32
	objs     map[string]int32
	stacks   keytable.Table                 // function stack by the hash of its functions (internStack)
	collided map[string]int32               // function stacks whose hash an earlier stack has, by their bytes
	loaded   map[string]*experiment.Archive // archives from LoadArchive, by path; nil on failure
	files    map[fileKey]*fileState         // opened files; nil when none could be used
	objFiles []*fileState                   // by object: the first usable file seen
	objArch  []*experiment.Archive          // by object: the first archive seen
	objOS    []*objState                    // by object: where that archive was seen
	chains   []chain
	exps     []*expState // by experiment
	resWarn  []string    // the warnings about symbols and files, which no filter changes
	warned   map[string]bool
	unknown  int32 // <Unknown>, or -1 before first use
	keyBuf   []byte
	frameBuf []int32
	locBuf   []location
	locCache map[locScope]map[uint64]location // frameLoc's answers, by address<<1|ret (no two addresses share 63 bits: user space ends at 2^47, the kernel's and the pseudo-frames' start with 17 ones, the symbolic frames' with 1 and a table of 1 to 0x7ffe)
	lastLocs map[uint64]location              // locCache's map of the last stack's scope
	lastLoc  locScope
	// tablesOwned: p's Functions and Objects are not the published ones (publish, ownTables).
	tablesOwned bool
	passes      []*FramePass           // the view mode's (passesOf)
	preLock     int8                   // the last expand's stack, before the passes: rawStack.lock
	mode        ViewMode               // the mode whose stacks it resolves now (StackIn changes it with passes)
	datas       []*experiment.Data     // the experiments, for the passes that apply to some (FramePass.Applies)
	ompClass    []uint8                // by function: what it is to the OpenMP frame pass (ompClassOf); 0: not known yet
	viewNames   map[string]uint64      // the functions that passes made, by name: their addr in funcKey
	methods     map[methodKey]int32    // the methods of symbolic frames (FuncMethod), by object and name
	dynFuncs    map[dynKey]int32       // the dynamic functions (FuncDynamic), by object, start and name
	javaBuf     experiment.Stack       // the Java translation of the stack being resolved (javaView.translate)
	symChains   map[symLine]int32      // the chains of symbolic frames, by method and source line
	modeStacks  map[ViewMode][][]int32 // the raw stacks' function stacks in the other modes (StackIn), under viewMu
}

// locScope is what frameLoc's answer depends on besides the address: the experiment and the
// process's mappings and their epoch.
type locScope struct {
	es    *expState
	pm    *procMaps
	epoch int
}

// expState is what the builder knows about one experiment.
type expState struct {
	idx      int32
	d        *experiment.Data
	omp      *ompView                           // its OpenMP events' states and stitched stacks; nil without OpenMP regions
	java     *javaView                          // its JVM's methods and code; nil for another program
	dynIdx   map[dynCodeKey]*experiment.DynFunc // its generated functions with instructions, made at the first use
	procs    map[uint32]*procMaps
	fallback *procMaps // the target process's mappings, for processes with none of their own
	objs     map[string]*objState
	cache    map[stackKey]int32   // raw stack index, while Analyze runs
	dense    map[[2]int64][]int32 // the same by (pid, epoch), indexed by stack id (index+1; 0: not yet), while Analyze runs
	denseMax int                  // how many more stack ids dense may hold
	rawOf    [][]int32            // by DataKind: each event's raw stack in the unfiltered profile (-1: none); nil when filtered
	periods  []int64              // the clock samples' periods weighted by the threads' counts; nil: as recorded
	ioFiles  []ioFile             // the file of each I/O event
	index    *ExpIndex            // for filters; made on first use
}

// newExpState prepares experiment d, number idx in the list, for adding its events.
func (b *builder) newExpState(idx int, d *experiment.Data) *expState {
	es := &expState{idx: int32(idx), d: d, procs: map[uint32]*procMaps{}, objs: map[string]*objState{},
		cache: map[stackKey]int32{}, dense: map[[2]int64][]int32{}, denseMax: maxDense}
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
	es.periods = countedPeriods(d)
	es.omp = ompViewOf(d)
	es.java = newJavaView(d)
	if t := d.IOTable(); t.Len() > 0 && experiment.IOSizes(t) == nil {
		es.ioFiles = ioEventFiles(d)
	}
	return es
}

// raws returns each event of kind k's raw stack in the unfiltered profile; nil when filtered.
func (es *expState) raws(k DataKind) []int32 {
	if int(k) < len(es.rawOf) {
		return es.rawOf[k]
	}
	return nil
}

// addAll adds the events of ea's experiment that keepOf selects to ea.p, and their I/O metrics by
// file and descriptor to groups: keepOf(k, n) says which of the n events of kind k to add, nil for
// all.
func (ea *eventAdder) addAll(keepOf func(k DataKind, n int) []bool, groups *ioGroups) {
	es, p := ea.es, ea.p
	d := es.d
	var ev EventInfo
	for _, k := range Kinds {
		n := k.Len(d)
		keep := keepOf(k.ID, n)
		p.DataEvents[k.ID] += countKept(keep, n)
		base := p.base[k.ID]
		if base < 0 || n == 0 {
			continue
		}
		ke := k.Prepare(&KindRun{P: p, D: d, Exp: int(es.idx), Keep: keep, es: es, io: groups})
		b := k.Bind(d)
		out := ea.vals[base : base+p.kindLen(k.ID)]
		ea.refine = nil
		var ompStacks []uint32
		if es.omp != nil {
			ompStacks = es.omp.stackOf[k.ID]
		}
		if ke.Refine != nil {
			ea.refine = func(i int, r int32) { ke.Refine(i, r, out) }
		}
		for i := 0; i < n; i++ {
			if keep != nil && !keep[i] {
				continue
			}
			ea.clear()
			dur := ke.Values(i, out)
			b.Info(i, &ev)
			stack := b.Stack(i)
			if ompStacks != nil {
				stack = ompStacks[i]
			}
			if ea.add(event{ev.Pid, ev.Tid, ev.Time, dur, k.ID, i}, stack, k.Sampled) && ke.Added != nil {
				ke.Added(i, ea.vals)
			}
		}
		if ke.Done != nil {
			ke.Done()
		}
		ea.warn(k.Noun)
	}
}

// Event is one event of Profile.EventList.
type Event struct {
	Time  int64 // ns since its experiment's start: when a sample was taken, when a traced call returned
	Dur   int64 // ns a traced call lasted; for a clock sample, the CPU time it stands for, just before Time; 0 for others
	Pid   uint32
	Tid   uint32
	Exp   int32 // index of its experiment in the list given to Analyze
	Kind  DataKind
	State State // the thread's state in a clock event; 0 for the events of other kinds
	Stack int32 // its function stack, for Profile.Stack
	Raw   int32 // its raw stack in the unfiltered profile: StackIn gives its functions in another view mode
}

// State is what a thread was doing in a clock event: on a CPU (user or system mode) or, where
// microstates were recorded, in which off-CPU state.
type State uint8

// Thread states, in Event.State.
const (
	StateNone      State = iota // not a clock event
	StateUser                   // on a CPU in user mode (or of unknown mode)
	StateSystem                 // on a CPU in the kernel
	StateWaitCPU                // runnable, waiting for a CPU
	StateUserLock               // asleep on a user-level lock
	StateTextFault              // asleep in a text page fault
	StateDataFault              // asleep in a data page fault
	StateOtherWait              // asleep otherwise, or stopped
)

// CPU reports whether a clock event of the state is CPU time (a sample), not an off-CPU interval.
func (s State) CPU() bool { return s == StateUser || s == StateSystem }

// clockState returns the state of a clock event that added vals (the clock's metrics first, with the
// microstate metrics after them when micro).
func clockState(vals []int64, micro bool) State {
	switch {
	case vals[MetricSystemCPU] > 0:
		return StateSystem
	case vals[MetricTotalCPU] > 0 || !micro:
		return StateUser
	case vals[MetricWaitCPU] > 0:
		return StateWaitCPU
	case vals[MetricUserLock] > 0:
		return StateUserLock
	case vals[MetricTextFault] > 0:
		return StateTextFault
	case vals[MetricDataFault] > 0:
		return StateDataFault
	case vals[MetricOtherWait] > 0:
		return StateOtherWait
	}
	return StateNone
}

// eventAdder adds the value vectors of one experiment's events to the raw stacks of the profile.
type eventAdder struct {
	b          *builder
	p          *Profile // the profile to add to: b.p, or one refiltered from it
	re         *reuse   // set when refiltering: raw stacks come from b.p
	es         *expState
	vals       []int64
	keepEvents bool
	micro      bool // p has the microstate metrics
	lastPid    uint32
	lastPM     *procMaps
	havePM     bool
	epoch      int      // lastPM's epoch at the last event's time
	epochTimes [2]int64 // the times [from, to) of that epoch
	tab        []int32  // es.dense's table of lastPid's epoch; nil: es.cache holds its stacks
	badStacks  int
	missing    int // refiltering: events whose raw stack the unfiltered profile lacks
	// refine, when set, changes the values of event i of the kind being added, once its function
	// stack s is known (KindEvents.Refine).
	refine func(i int, r int32)
	// onAdd, when set, is called with each event added, its raw stack in the unfiltered profile and
	// its values (refiltering only).
	onAdd func(es *expState, rb int32, ev event, vals []int64)
}

func (ea *eventAdder) clear() { clear(ea.vals) }

// event is what eventAdder.add needs to know of an event besides its values.
type event struct {
	pid, tid uint32
	t, dur   int64
	kind     DataKind
	i        int // its index among the experiment's events of its kind
}

// add adds ea.vals, the values of event ev with stack id stack, and reports whether it did: an
// event whose values are all zero is skipped unless always (a clock sample is always counted,
// a free is not).
func (ea *eventAdder) add(ev event, stack uint32, always bool) bool {
	pid, t := ev.pid, ev.t
	if !always && !nonZero(ea.vals) {
		return false
	}
	es, p := ea.es, ea.p
	nm := p.nm
	var r, root int32
	onAddRaw := int32(-1)
	if ea.re != nil {
		if int(stack) >= es.numStacks() {
			ea.badStacks++
		}
		rb := int32(-1)
		if raws := es.raws(ev.kind); ev.i < len(raws) {
			rb = raws[ev.i]
		}
		if rb < 0 { // cannot happen: the unfiltered profile added every event that adds a value
			ea.missing++
			return false
		}
		r, root = ea.re.rawIndex(p, rb), rb
		if ea.onAdd != nil {
			onAddRaw = rb
		}
	} else {
		r = ea.resolve(pid, t, stack)
		root = r
		if raws := es.raws(ev.kind); raws != nil {
			raws[ev.i] = r
		}
	}
	if ea.refine != nil {
		ea.refine(ev.i, r)
	}
	rv := p.rawVals[int(r)*nm : int(r+1)*nm]
	for m, v := range ea.vals {
		rv[m] = sat.Add(rv[m], v)
		p.Total[m] = sat.Add(p.Total[m], v)
	}
	p.Events++
	if ea.keepEvents {
		e := Event{Time: t, Dur: ev.dur, Tid: ev.tid, Pid: pid, Exp: es.idx, Kind: ev.kind, Stack: p.raw[r].stack, Raw: root}
		if ev.kind == DataClock && p.base[DataClock] == 0 {
			e.State = clockState(ea.vals, ea.micro)
		}
		p.EventList = append(p.EventList, e)
	}
	if onAddRaw >= 0 {
		ea.onAdd(es, onAddRaw, ev, ea.vals)
	}
	return true
}

// resolve returns the raw stack of stack id stack of process pid at time t, adding it when new.
func (ea *eventAdder) resolve(pid uint32, t int64, stack uint32) int32 {
	b, es, p := ea.b, ea.es, ea.p
	if !ea.havePM || pid != ea.lastPid {
		ea.lastPid, ea.havePM = pid, true
		ea.lastPM = es.procs[pid]
		if ea.lastPM == nil {
			ea.lastPM = es.fallback
		}
		ea.epochTimes = [2]int64{1, 0} // none
	}
	if t < ea.epochTimes[0] || t >= ea.epochTimes[1] {
		ea.epoch, ea.epochTimes = 0, [2]int64{math.MinInt64, math.MaxInt64}
		if pm := ea.lastPM; pm != nil {
			ea.epoch = pm.epoch(t)
			if ea.epoch > 0 {
				ea.epochTimes[0] = pm.changes[ea.epoch-1]
			}
			if ea.epoch < len(pm.changes) {
				ea.epochTimes[1] = pm.changes[ea.epoch]
			}
		}
		ea.tab = es.denseTable(pid, ea.epoch)
	}
	if int(stack) >= es.numStacks() {
		ea.badStacks++
		stack = 0
	}
	if int(stack) < len(ea.tab) { // an experiment with no stack table has no stack 0 either
		if r := ea.tab[stack]; r > 0 {
			return r - 1
		}
	}
	key := stackKey{exp: es.idx, epoch: int32(ea.epoch), pid: pid, stack: stack}
	r, ok := es.cache[key]
	if !ok {
		rs := rawStack{es: es, pm: ea.lastPM, epoch: int32(ea.epoch), id: stack}
		rs.stack = b.internStack(b.expand(b.locations(rs)))
		rs.lock = b.preLock
		r = int32(len(p.raw))
		p.raw = append(p.raw, rs)
		p.rawVals = append(p.rawVals, make([]int64, p.nm)...)
		es.cache[key] = r
	}
	if int(stack) < len(ea.tab) {
		ea.tab[stack] = r + 1
	}
	return r
}

// maxDense is how many stack ids the tables of an experiment's raw stacks by (process, epoch)
// may hold together (4 bytes each); beyond, its raw stacks are found in its map alone.
var maxDense = 4 << 20

// denseTable returns the table of raw stacks by stack id of process pid's epoch, made on first
// use; nil when the tables would be too large.
func (es *expState) denseTable(pid uint32, epoch int) []int32 {
	key := [2]int64{int64(pid), int64(epoch)}
	tab, ok := es.dense[key]
	if !ok && es.dense != nil && es.numStacks() <= es.denseMax {
		tab = make([]int32, es.numStacks())
		es.denseMax -= len(tab)
		es.dense[key] = tab
	}
	return tab
}

// warn reports the events of one kind whose stacks were beyond the stack table, and starts
// counting again.
func (ea *eventAdder) warn(kind string) {
	if ea.missing > 0 {
		ea.p.Warnings = append(ea.p.Warnings, fmt.Sprintf("internal error: %s: %d %s events have no stack in the unfiltered profile; they are left out",
			ea.es.d.Dir, ea.missing, kind))
		ea.missing = 0
	}
	if ea.badStacks > 0 {
		d := ea.es.d
		ea.p.Warnings = append(ea.p.Warnings, fmt.Sprintf("%s: %d %s events refer to stacks beyond the stack table (%d stacks); they are shown as %s",
			d.Dir, ea.badStacks, kind, len(d.Stacks), UnknownName))
	}
	ea.badStacks = 0
}

func nonZero(v []int64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

// location is one frame of a raw stack, resolved to a load object and a function of its symbols.
type location struct {
	fn   int32     // the function of the symbol table holding addr, or a pseudo-function
	obj  int32     // its load object
	addr uint64    // the link-time address looked up (absolute in the kernel; the file offset without an archive)
	ret  bool      // addr is a return address minus one: it is in the call instruction
	os   *objState // the object as mapped; nil for pseudo-frames, unmapped addresses and @plt
	// chain is the inline chain (chainOf) plus 2, kept with the cached location so that expand does
	// not look it up again for every frame of every stack; 0: not known here.
	chain int32
	// symc is a symbolic frame's chain plus 1: its method at its position's source line; 0: none.
	symc int32
}

// locations resolves the frames of a raw stack, leaf first, and applies the PLT rules. The result
// is the builder's buffer: it is valid until the next call.
func (b *builder) locations(rs rawStack) []location {
	locs := b.locBuf[:0]
	b.preLock = 0
	raw := rs.es.omp.frames(rs.es.d, rs.id, b.mode == ViewMachine)
	if rs.es.java != nil {
		raw = rs.es.java.translate(b, rs, raw, b.javaBuf)
		b.javaBuf = raw
	}
	// Every frame but the leaf is a return address: look up the byte before it, so that a call
	// ending a function is charged to its caller. Frames are resolved from the root, which
	// numbers functions and objects in the order of their first calls. Each distinct frame is
	// resolved once (locCache): a 10 kHz profile of 330,000 distinct stacks holds a few thousand
	// distinct addresses, and resolving every frame of every stack (mappings, object by path,
	// symbol, function by key) was a quarter of er print's time.
	locs = slices.Grow(locs, len(raw))[:len(raw)]
	if scope := (locScope{rs.es, rs.pm, int(rs.epoch)}); b.lastLocs == nil || scope != b.lastLoc {
		if b.locCache == nil {
			b.locCache = map[locScope]map[uint64]location{}
		}
		if b.locCache[scope] == nil {
			b.locCache[scope] = map[uint64]location{}
		}
		b.lastLoc, b.lastLocs = scope, b.locCache[scope]
	}
	exactUser := b.userPCExact(rs, raw)
	for i := len(raw) - 1; i >= 0; i-- {
		pc, ret := raw[i], false
		if i > 0 && pc > 0 && pc < experiment.PseudoFrameBase && i != exactUser && !experiment.IsSymbolic(pc) {
			pc--
			ret = true
		}
		locs[i] = b.cachedLoc(rs, pc, ret)
	}
	if len(locs) == 0 {
		f := b.unknownFunc()
		locs = append(locs, location{fn: f, obj: int32(b.p.Functions[f].Object)})
	}
	locs = b.pltRules(b.collectorRules(locs))
	b.locBuf = locs
	return locs
}

// userPCExact returns the index of the user PC of a kernel-mode sample (the user frame after the
// kernel frames) when it is the interrupted instruction itself, not a return address: the kernel was
// entered by an exception or an interrupt (its outermost frame is an asm_exc_* or asm_sysvec_* entry,
// or asm_common_interrupt), not by a system call (entry_SYSCALL_64*, whose user PC follows the
// syscall instruction). Looking up the byte before a faulting instruction charged a page fault on a
// function's first instruction to the code before it: beside CPU hogs, a fault on ld.so's first
// instruction at exec became "<static>@0x1ab6f (<ld-linux-x86-64.so.2>)", the padding before _start.
// It returns -1 otherwise (no kernel frames, no kernel symbols, a system call).
func (b *builder) userPCExact(rs rawStack, raw experiment.Stack) int {
	for i := 1; i < len(raw); i++ {
		k, u := raw[i-1], raw[i]
		if u >= experiment.KernelBase || k < experiment.KernelBase || k >= experiment.PseudoFrameBase {
			continue
		}
		pc := k
		if i-1 > 0 {
			pc-- // a return address into the entry code
		}
		l := b.cachedLoc(rs, pc, i-1 > 0)
		f := &b.p.Functions[l.fn]
		if f.Kind == FuncKernel && (strings.HasPrefix(f.Name, "asm_exc_") || strings.HasPrefix(f.Name, "asm_sysvec_") ||
			f.Name == "asm_common_interrupt") {
			return i
		}
		return -1
	}
	return -1
}

// cachedLoc returns the location of address pc of raw stack rs (ret: a return address less one),
// resolving each in the scope of rs's experiment, process and epoch once (b.lastLocs, which
// locations set up), with its inline chain.
func (b *builder) cachedLoc(rs rawStack, pc uint64, ret bool) location {
	if pc>>48 == experiment.SymbolicBase>>48 {
		// (A symbolic frame of table 0, which none is: its key would be a user address's.)
		return b.frameLoc(rs.es, rs.pm, int(rs.epoch), pc, ret)
	}
	k := pc << 1
	if ret {
		k |= 1
	}
	l, ok := b.lastLocs[k]
	if !ok {
		l = b.frameLoc(rs.es, rs.pm, int(rs.epoch), pc, ret)
		if !b.opt.FoldInlines {
			l.chain = b.chainOf(&l) + 2
		}
		b.lastLocs[k] = l
	}
	return l
}

// expand turns locations (leaf first) into functions, root first, with the inlined functions of
// each location after it. The result is the builder's buffer.
func (b *builder) expand(locs []location) []int32 {
	fr := b.frameBuf[:0]
	for i := len(locs) - 1; i >= 0; i-- {
		l := &locs[i]
		fr = append(fr, l.fn)
		if b.opt.FoldInlines {
			continue
		}
		c := l.chain - 2
		if l.chain == 0 { // a location the rules made
			c = b.chainOf(l)
		}
		if c >= 0 {
			fr = append(fr, b.chains[c].inl...)
		}
	}
	if b.opt.Visibility != nil {
		fr = b.applyVisibility(fr)
	}
	if len(b.passes) > 0 {
		if b.preLock == 0 { // (the Java translation, before, may have told it)
			b.preLock = 1
			if lockFrames(b.p, fr) {
				b.preLock = 2
			}
		}
		fr = b.applyPasses(fr)
	}
	b.frameBuf = fr
	return fr
}

// applyVisibility folds the frames (root first) of hidden objects into one function per run of
// them, and those of API objects into the function entered from outside the object.
func (b *builder) applyVisibility(fr []int32) []int32 {
	out := fr[:0]
	prevObj := -1
	for _, f := range fr {
		fn := &b.p.Functions[f]
		obj := fn.Object
		if fn.Kind == FuncTotal || obj <= 0 || obj >= len(b.p.Objects) {
			out, prevObj = append(out, f), -1
			continue
		}
		switch b.visibility(obj) {
		case Hide:
			if prevObj == obj {
				continue
			}
			o := &b.p.Objects[obj]
			f = b.function(funcKey{obj: int32(obj), kind: FuncObject}, o.Name, 0)
		case API:
			if prevObj == obj {
				continue
			}
		}
		out, prevObj = append(out, f), obj
	}
	return out
}

// visibility returns object obj's visibility, asked once.
func (b *builder) visibility(obj int) Visibility {
	for len(b.objVis) <= obj {
		b.objVis = append(b.objVis, 255)
	}
	if v := b.objVis[obj]; v != 255 {
		return v
	}
	v := b.opt.Visibility(b.p.Objects[obj].Path)
	b.objVis[obj] = v
	return v
}

// internStack returns the index of the function stack fr, adding it when new. Stacks are found by
// a hash of their functions, checked against the stack found (a map keyed by the stacks' bytes was
// a sixth of er print's time on 600,000 samples); stacks whose hash another stack has are in a map
// of their own.
func (b *builder) internStack(fr []int32) int32 {
	p := b.p
	h := stackHash(fr)
	if s, ok := b.stacks.Get(h); ok {
		if slices.Equal(p.frames[p.stackStart[s]:p.stackStart[s+1]], fr) {
			return s
		}
		key := b.keyBuf[:0]
		for _, f := range fr {
			key = binary.LittleEndian.AppendUint32(key, uint32(f))
		}
		b.keyBuf = key
		if s, ok := b.collided[string(key)]; ok {
			return s
		}
		s = b.newStack(fr)
		if b.collided == nil {
			b.collided = map[string]int32{}
		}
		b.collided[string(key)] = s
		return s
	}
	s := b.newStack(fr)
	b.stacks.Put(h, s)
	return s
}

// stackHash is an FNV-1a hash of the function stack fr, never 0.
func stackHash(fr []int32) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, f := range fr {
		h = (h ^ uint64(uint32(f))) * 0x100000001b3
	}
	return h | 1<<63
}

// newStack adds the function stack fr to the profile and returns its index.
func (b *builder) newStack(fr []int32) int32 {
	p := b.p
	s := int32(len(p.stackStart) - 1)
	p.frames = append(p.frames, fr...)
	p.stackStart = append(p.stackStart, int32(len(p.frames)))
	p.stackVals = append(p.stackVals, make([]int64, p.nm)...)
	return s
}

// frameLoc finds the function of address pc in a process's mappings during epoch.
func (b *builder) frameLoc(es *expState, pm *procMaps, epoch int, pc uint64, ret bool) location {
	if pc >= experiment.PseudoFrameBase {
		f := b.pseudoFunc(pc)
		return location{fn: f, obj: int32(b.p.Functions[f].Object), addr: pc}
	}
	if experiment.IsSymbolic(pc) {
		return b.symbolicLoc(es, pm, epoch, pc)
	}
	if pc >= experiment.KernelBase {
		os := b.object(es, KernelPath)
		l := location{obj: os.obj, addr: pc, ret: ret, os: os}
		if os.arch == nil {
			l.fn = b.staticFunc(os.obj, 0, 0)
		} else {
			l.fn = b.symbolFunc(os, pc)
		}
		return l
	}
	var m *experiment.Mapping
	if pm != nil {
		m = pm.find(epoch, pc)
	}
	if m == nil {
		f := b.unknownFunc()
		return location{fn: f, obj: int32(b.p.Functions[f].Object), addr: pc, ret: ret}
	}
	os := b.object(es, m.Path)
	if m.Func != "" {
		// A dynamic function: code that a runtime generated (a JVM's compiled method), which its
		// mapping names.
		return location{fn: b.dynamicFunc(es, os.obj, m), obj: os.obj, addr: pc - m.Start, ret: ret}
	}
	off := pc - m.Start + m.Offset
	if os.collector {
		return location{fn: b.collectorFunc(os.obj), obj: os.obj, addr: off, ret: ret}
	}
	l := location{obj: os.obj, addr: off, ret: ret, os: os}
	if os.arch == nil {
		l.fn = b.staticFunc(os.obj, 0, 0)
		return l
	}
	vaddr, ok := archive.FileOffsetToVaddr(os.arch, off)
	if !ok {
		if len(os.arch.Segments) > 0 {
			l.fn = b.staticFunc(os.obj, off, 0)
			l.os = nil // not a link-time address: no lines, no code
			return l
		}
		vaddr = off // an archive without segments maps offsets to themselves
	}
	l.addr = vaddr
	l.fn = b.symbolFunc(os, vaddr)
	return l
}

func (b *builder) symbolFunc(os *objState, vaddr uint64) int32 {
	sym, ok := archive.SymbolAt(os.arch, vaddr)
	if !ok || sym.Kind == experiment.SymFDE {
		// A local function of a stripped object (Debian's libc keeps only its exported symbols) may be
		// named by the object's debug information, such as libc6-dbg's separate DWARF.
		if fs := b.fileOf(os); fs != nil && fs.of.Debug != nil {
			if fn, ok := fs.of.Debug.Function(vaddr); ok && fn.Name != "" && fn.Hi > fn.Lo {
				return b.function(funcKey{obj: os.obj, addr: fn.Entry, kind: FuncSymbol}, fn.Name, fn.Hi-fn.Lo)
			}
		}
	}
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
	switch pc {
	case experiment.FrameTruncated:
		name = TruncatedName
	case experiment.FrameProcessExit:
		name = ProcessExitName
	case experiment.FrameUnsampled:
		name = UnsampledName
	case experiment.OMPMarkFrame:
		name = "<OMP-mark>"
	case experiment.OMPTaskMarkFrame:
		name = "<OMP-task-mark>"
	case javaSystemFrame:
		name = JVMSystemName
	case javaNoStackFrame:
		name = NoJavaStackName
	default:
		if st, ok := experiment.OMPStateOfFrame(pc); ok {
			name = "<OMP-" + st.String() + ">"
		}
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
func (b *builder) object(es *expState, p string) *objState {
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
	os := &objState{obj: b.objectIndex(p, objectName(p), kind), path: p, arch: a, ldso: isDynamicLinker(p), collector: isCollector(p)}
	if a != nil && b.objArch[os.obj] == nil {
		b.objArch[os.obj] = a
		b.objOS[os.obj] = os
	}
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
		b.warnRes(fmt.Sprintf("%s: no symbols for %s: %v; its functions are shown as <static>", es.d.Dir, p, err))
	}
	return a
}

// warnRes adds a warning about symbols or files, which holds for every filter, to the profile.
func (b *builder) warnRes(w string) {
	b.p.Warnings = append(b.p.Warnings, w)
	b.resWarn = append(b.resWarn, w)
}

func (b *builder) objectIndex(p, name, kind string) int32 {
	if o, ok := b.objs[p]; ok {
		if b.p.Objects[o].Kind == "" && kind != "" {
			b.ownTables()
			b.p.Objects[o].Kind = kind
		}
		return o
	}
	o := int32(len(b.p.Objects))
	b.p.Objects = append(b.p.Objects, Object{Name: name, Path: p, Kind: kind})
	b.objs[p] = o
	b.objArch = append(b.objArch, nil)
	b.objOS = append(b.objOS, nil)
	b.objFiles = append(b.objFiles, nil)
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
	case strings.HasPrefix(p, "<") && strings.HasSuffix(p, ">"): // a pseudo-object: <DYNAMIC_FUNCTIONS>, <JVM-System>
		return p
	case p == "":
		return UnknownName
	}
	return "<" + path.Base(p) + ">"
}

// finish computes exclusive and inclusive metrics of functions and load objects from the stacks.
func (p *Profile) finish() {
	nm, nf, no := p.nm, len(p.Functions), len(p.Objects)
	for r, rs := range p.raw {
		addTo(p.stackVals, int(rs.stack), p.rawVals[r*nm:(r+1)*nm])
	}
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
	p.onStack = make([]bool, nf)
	p.onStack[0] = true
	for f := 1; f < nf; f++ {
		addTo(p.objExcl, p.Functions[f].Object, p.excl[f*nm:(f+1)*nm])
		p.onStack[f] = fstamp[f] != 0
	}
	copy(p.excl[:nm], p.Total)
	copy(p.incl[:nm], p.Total)
	copy(p.objExcl[:nm], p.Total)
	copy(p.objIncl[:nm], p.Total)
}

func addTo(dst []int64, i int, v []int64) {
	sat.AddTo(dst[i*len(v):(i+1)*len(v)], v)
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

// Used reports whether function f is on some stack: a function met only in frames that the PLT
// rules dropped (a PLT stub at the leaf, the dynamic linker's resolver) is not, and views leave
// it out.
func (p *Profile) Used(f int) bool { return f >= 0 && f < len(p.onStack) && p.onStack[f] }

// ObjectFunctions returns the functions of load object o on some stack, by address.
func (p *Profile) ObjectFunctions(o int) []int {
	var fs []int
	for f, fn := range p.Functions {
		if fn.Object == o && p.Used(f) {
			fs = append(fs, f)
		}
	}
	sort.Slice(fs, func(i, j int) bool { return p.Functions[fs[i]].Addr < p.Functions[fs[j]].Addr })
	return fs
}
