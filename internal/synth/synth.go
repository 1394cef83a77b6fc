// Package synth writes synthetic experiments of any size, for benchmarks.
package synth

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"er/internal/experiment"
	"er/internal/version"
)

// Spec says what to generate.
type Spec struct {
	Samples   int    // clock samples, e.g. 1_000_000
	Functions int    // functions of the executable, e.g. 20_000
	Threads   int    // e.g. 16
	Stacks    int    // distinct call stacks, e.g. 50_000
	Seed      uint64 // the same spec and seed write the same experiment
	Duration  int64  // ns the experiment spans, e.g. 60e9
	// Interval is the CPU time (ns) each sample stands for, its period; 0 means DefaultInterval.
	Interval int64
	// Counters adds counter profiling of cycles and instructions (-h cycles,insts): with each clock
	// sample a sample of each, at its stack: the cycles of the sample's CPU time at ClockHz (a clock
	// sample of 10,007,000 ns is 24,016,800 cycles), and instructions at the IPC of the stack's user
	// leaf function (LeafIPC).
	Counters bool
}

// ClockHz is the clock rate of the synthetic machine.
const ClockHz = 2_400_000_000

// LeafIPC returns the instructions per cycle of the samples whose user leaf is the generator's function
// number f, in halves: 1, 2, 3 or 4 (IPC 0.5 to 2): so each function has its own CPI where it is the
// leaf.
func LeafIPC(f int) int64 { return int64(f%4) + 1 }

// DefaultInterval is the period of every sample unless Spec.Interval says otherwise: that of
// `er collect -p on`, whose samples all have exactly this period.
const DefaultInterval = 10_007_000

// Paths of the synthetic load objects, and the synthetic target's process id. The files do not
// exist: the experiment's archives name their functions.
const (
	ExePath = "/opt/synth/bigapp"
	LibPath = "/usr/lib/x86_64-linux-gnu/libsynth.so"
	Pid     = 31337
)

// MinFunctions is the smallest Spec.Functions: _start, main, the thread start function and a few
// functions for them to call.
const MinFunctions = 8

// Where the objects are mapped: a PIE executable and a shared library at typical addresses.
const (
	exeBase   = 0x55d0c0a00000 // load address of the executable (its link-time 0)
	exeText   = 0x1000         // link-time address and file offset of its text segment
	libBase   = 0x7f3a1c200000
	libText   = 0x28000
	kernText  = 0xffffffff81000000
	libCount  = 300 // symbols of the library
	maxDepth  = 40  // user frames of a stack at most
	startPerf = 1_000_000_000_000
	startWall = 1_700_000_000_000_000_000
)

// Object indexes of fn.obj.
const (
	objExe = iota
	objLib
	objKernel
)

// fn is one function of the synthetic program, its library or the kernel.
type fn struct {
	name    string
	obj     uint8
	addr    uint64 // link-time address; absolute for the kernel
	size    uint64
	callees []int32 // functions of the executable it calls, the most called first
	libs    []int32 // library call chains it makes (indexes into gen.chains)
}

// chain is a call into the library: its functions, caller first, and maybe the kernel code that
// the last one enters (a system call or a page fault), with the probability that a sample of it
// is taken there.
type chain struct {
	frames []int32
	kpath  int // index into gen.kpaths; -1 for none
	pk     float64
}

// stack is one distinct call stack: its frames as stored (leaf first), and which thread kind runs it.
type stack struct {
	pcs    []uint64
	kernel bool  // it has kernel frames: its samples are in kernel mode
	worker bool  // rooted at the thread start function, not at main
	ipc    int64 // with Spec.Counters, its instructions per cycle in halves (LeafIPC of its user leaf)
}

type gen struct {
	sp     Spec
	r      *rand.Rand
	funcs  []fn
	nexe   int // funcs[:nexe] are the executable's, in address order
	libIdx map[string]int32
	kerIdx map[string]int32
	chains []chain
	kpaths [][]int32 // kernel frames, outermost (entry) first
	levels [][]int32 // the executable's functions by level, from level 1
	parent []int32   // by function: the caller that makes it reachable (-1 for none)
	start  int32     // _start
	main   int32
	worker int32 // the thread start function
	salt   uint64
}

// Write writes the experiment directory dir (e.g. t.TempDir()+"/big.1.er"), which must not exist,
// as `er collect -p on` would have written it for a program that matches sp: the executable ExePath
// with sp.Functions functions, the library LibPath and the kernel, each mapped and archived; sp.Stacks
// distinct call stacks from random walks down a call graph (from main, or from the thread start
// function on the other threads), a few of them carrying most samples, with other hot stacks in each
// phase of the run; sp.Samples samples over sp.Duration, in time order, on sp.Threads threads.
//
// The samples are as many as asked for, whatever the duration: each stands for sp.Interval of CPU
// time, so the threads may seem to have run faster than time allows (a million samples of 10 ms in a
// minute on 16 threads is 10,000 s of CPU time). Nothing in er checks this.
// On failure Write removes dir.
func Write(dir string, sp Spec) error {
	if err := check(&sp); err != nil {
		return err
	}
	g := newGen(sp)
	stacks := g.makeStacks()
	if err := g.write(dir, stacks); err != nil {
		os.RemoveAll(dir)
		return err
	}
	return nil
}

func check(sp *Spec) error {
	switch {
	case sp.Samples < 0:
		return errors.New("synth: negative Samples")
	case sp.Functions < MinFunctions:
		return fmt.Errorf("synth: Functions is %d; at least %d", sp.Functions, MinFunctions)
	case sp.Threads < 1:
		return errors.New("synth: Threads must be at least 1")
	case sp.Stacks < 1:
		return errors.New("synth: Stacks must be at least 1")
	case sp.Duration <= 0:
		return errors.New("synth: Duration must be positive")
	case sp.Interval < 0:
		return errors.New("synth: negative Interval")
	}
	if sp.Interval == 0 {
		sp.Interval = DefaultInterval
	}
	return nil
}

func newGen(sp Spec) *gen {
	g := &gen{sp: sp, r: rand.New(rand.NewPCG(sp.Seed, sp.Seed^0x9e3779b97f4a7c15)),
		libIdx: map[string]int32{}, kerIdx: map[string]int32{}, salt: sp.Seed*0xbf58476d1ce4e5b9 + 1}
	g.exeSymbols()
	g.libSymbols()
	g.kernelSymbols()
	g.callGraph()
	return g
}

// size draws a function size: log-normal, median about 150 bytes, 16-byte multiples.
func (g *gen) size(mu float64) uint64 {
	s := math.Exp(mu + g.r.NormFloat64())
	return uint64(min(max(s, 16), 24000)+15) &^ 15
}

// exeSymbols makes the executable's functions, named like a C++ program with some C code, laid out
// one after the other in its text segment.
func (g *gen) exeSymbols() {
	n := g.sp.Functions
	seen := map[string]bool{"_start": true, "main": true, workerName: true}
	names := make([]string, 0, n)
	for len(names) < n-3 {
		name := g.exeName()
		for try := 0; seen[name] && try < 20; try++ {
			name = g.exeName()
		}
		for i := len(names); seen[name]; i++ { // all names of this shape are taken: a numbered C name
			name = fmt.Sprintf("%s_%s_%d", pick(g.r, verbs), strings.ToLower(pick(g.r, classes)), i)
		}
		seen[name] = true
		names = append(names, name)
	}
	// _start first, as a linker puts it; main and the thread start function somewhere inside.
	g.start = 0
	g.funcs = append(g.funcs, fn{name: "_start", size: 48})
	at := func(k int) int { return 1 + g.r.IntN(k) }
	mainAt := at(len(names) + 1)
	names = append(names[:mainAt-1], append([]string{"main"}, names[mainAt-1:]...)...)
	workerAt := at(len(names) + 1)
	names = append(names[:workerAt-1], append([]string{workerName}, names[workerAt-1:]...)...)
	for i, name := range names {
		g.funcs = append(g.funcs, fn{name: name, size: g.size(5.0)})
		switch name {
		case "main":
			g.main = int32(i + 1)
		case workerName:
			g.worker = int32(i + 1)
		}
	}
	g.nexe = len(g.funcs)
	g.layOut(0, g.nexe, exeText+0x20)
}

// layOut gives funcs[from:to] consecutive 16-byte aligned addresses from addr, with padding between.
func (g *gen) layOut(from, to int, addr uint64) {
	for i := from; i < to; i++ {
		g.funcs[i].addr = addr
		addr += g.funcs[i].size + uint64(g.r.IntN(3))*16
	}
}

// textEnd is the end of the text of object obj: the end of its last function.
func (g *gen) textEnd(obj uint8) uint64 {
	var end uint64
	for i := range g.funcs {
		if f := &g.funcs[i]; f.obj == obj {
			end = max(end, f.addr+f.size)
		}
	}
	return end
}

const workerName = "_ZN3app10ThreadPool10run_workerEPv" // app::ThreadPool::run_worker(void*)

var (
	namespaces = []string{"app", "core", "net", "db", "io", "util", "json", "http", "sql", "cache",
		"render", "sched", "storage", "codec", "rpc", "index"}
	subspaces = []string{"detail", "impl", "internal", "v2"}
	classes   = []string{"Parser", "Node", "Buffer", "Connection", "Session", "Table", "Index", "Query",
		"Tokenizer", "Allocator", "Worker", "Scheduler", "Request", "Response", "Encoder", "Decoder",
		"Stream", "Channel", "Cache", "Entry", "Bucket", "Page", "Segment", "Cursor", "Transaction",
		"Lock", "Graph", "Vertex", "Matrix", "Vector", "Histogram", "Counter", "Timer", "Event",
		"Listener", "Handler", "Router", "Message", "Frame", "Block", "Pool", "Arena", "Column", "Row"}
	verbs = []string{"parse", "process", "lookup", "insert", "remove", "flush", "encode", "decode",
		"read", "write", "update", "visit", "compute", "resize", "hash", "compare", "emit", "dispatch",
		"handle", "serialize", "validate", "merge", "split", "sort", "scan", "find", "reserve",
		"append", "commit", "rollback", "acquire", "release", "notify", "reset", "init", "finalize",
		"refresh", "evict", "load", "store", "apply", "transform", "reduce", "filter", "build", "step",
		"advance", "next", "grow", "rehash", "probe", "match", "copy", "fill", "pack", "unpack"}
	// Parameter lists, mangled.
	params = []string{"v", "v", "v", "i", "m", "Pv", "PKc", "PKcm", "d", "b", "ib", "mm", "j", "l",
		"PKhm", "RKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"}
)

// src is an identifier as a mangled source name.
func src(s string) string { return fmt.Sprint(len(s), s) }

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// exeName draws a function name: a mangled C++ function of one of several shapes, or a C function.
func (g *gen) exeName() string {
	r := g.r
	verb, class := pick(r, verbs), pick(r, classes)
	ns, cls, v, par := src(pick(r, namespaces)), src(class), src(verb), pick(r, params)
	switch k := r.IntN(20); {
	case k < 6: // app::Parser::parse(char const*)
		return "_ZN" + ns + cls + v + "E" + par
	case k < 8: // app::Parser::size() const
		return "_ZNK" + ns + cls + v + "E" + par
	case k < 9: // app::parse(int)
		return "_ZN" + ns + v + "E" + par
	case k < 10: // void app::detail::process<app::Node>(app::Node const&)
		return "_ZN" + ns + "6detail" + v + "INS_" + cls + "EEEvRKT_"
	case k < 11: // app::Parser::Parser(...), app::Parser::Parser(app::Parser const&), app::Parser::~Parser()
		return "_ZN" + ns + cls + pick(r, []string{"C2E" + par, "C2ERKS0_", "D2Ev"})
	case k < 12: // app::impl::Parser::parse(...)
		return "_ZN" + ns + src(pick(r, subspaces)) + cls + v + "E" + par
	}
	mod, noun := pick(r, namespaces), strings.ToLower(class)
	switch r.IntN(3) {
	case 0:
		return mod + "_" + verb + "_" + noun // net_read_frame
	case 1:
		return verb + "_" + noun // parse_header
	}
	return mod + "_" + noun + "_" + verb // db_cursor_advance
}

var libcNames = []string{
	"__libc_start_call_main", "__libc_start_main", "start_thread", "clone3", "malloc", "_int_malloc",
	"sysmalloc", "free", "_int_free", "realloc", "_int_realloc", "calloc", "malloc_consolidate",
	"pthread_mutex_lock", "__lll_lock_wait", "pthread_mutex_unlock", "__lll_lock_wake",
	"pthread_cond_wait", "pthread_cond_signal", "pthread_cond_broadcast", "__futex_abstimed_wait_common",
	"pthread_create", "pthread_join", "pthread_once", "pthread_rwlock_rdlock", "pthread_rwlock_unlock",
	"read", "write", "pread64", "pwrite64", "open64", "close", "lseek64", "fstat64", "mmap64",
	"munmap", "mprotect", "madvise", "brk", "sbrk", "epoll_wait", "epoll_ctl", "poll", "select",
	"recv", "send", "recvmsg", "sendmsg", "accept4", "connect", "socket", "nanosleep",
	"clock_nanosleep", "sched_yield", "getpid", "gettid", "qsort", "msort_with_tmp", "qsort_r", "bsearch",
	"snprintf", "__vsnprintf_internal", "__printf_buffer", "__printf_fp_l", "fprintf", "__vfprintf_internal",
	"sprintf", "vsnprintf", "sscanf", "__vfscanf_internal", "strtod", "____strtod_l_internal",
	"strtol", "____strtol_l_internal", "strtoul", "strtoull", "atoi", "atof", "fopen64", "fclose",
	"fread", "fwrite", "fflush", "fgets", "fputs", "puts", "getline", "getdelim", "_IO_file_xsputn",
	"_IO_file_overflow", "_IO_do_write", "_IO_file_write", "_IO_file_read", "_IO_file_underflow",
	"_IO_default_xsputn", "_IO_new_file_xsputn", "_IO_switch_to_get_mode", "__uflow", "__overflow",
	"memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp",
	"strcpy", "strncpy", "stpcpy", "strcat", "strchr", "strrchr", "strstr", "strdup", "strtok_r",
	"tolower", "toupper", "isalpha", "isdigit", "setlocale", "newlocale", "uselocale", "localeconv",
	"time", "gettimeofday", "clock_gettime", "localtime_r", "__tz_convert", "strftime",
	"__strftime_internal", "mktime", "getenv", "setenv", "secure_getenv", "exit", "__run_exit_handlers",
	"_exit", "abort", "raise", "sigaction", "sigprocmask", "dl_iterate_phdr", "dlopen", "dlsym",
	"dlclose", "__libc_dlopen_mode", "getaddrinfo", "freeaddrinfo", "inet_pton", "inet_ntop", "htonl",
	"rand", "random", "random_r", "srand", "drand48", "erand48_r", "exp", "log", "pow", "sqrt", "sin",
	"cos", "floor", "ceil", "fmod", "__ieee754_exp_fma", "__ieee754_log_fma", "__ieee754_pow_fma",
	"__sin_fma", "__cos_fma", "iconv", "iconv_open", "__gconv", "__gconv_transform_utf8_internal",
	"wcslen", "mbrtowc", "wcrtomb", "__mbrtowc", "opendir", "readdir64", "closedir", "stat64",
	"lstat64", "access", "unlink", "rename", "mkdir", "getcwd", "realpath", "__realpath_chk",
	"__memcpy_chk", "__memset_chk", "__strcpy_chk", "__sprintf_chk", "__snprintf_chk",
	"__fprintf_chk", "__printf_chk", "__stack_chk_fail", "__cxa_atexit", "__cxa_finalize",
	"__errno_location", "__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
	"tcache_init", "arena_get2", "_dl_runtime_resolve_xsavec", "_dl_fixup",
}

// String functions that glibc picks an implementation of at load time, and the implementations' suffixes.
var ifuncs = []string{"memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp",
	"strchr", "strrchr", "strcpy", "stpcpy", "rawmemchr", "wmemset", "wcslen", "strcat"}
var ifuncSuffixes = []string{"_sse2_unaligned", "_avx_unaligned_erms", "_evex_unaligned_erms", "_avx2_rtm"}

// libSymbols makes the library's functions: libc-like names, libCount of them.
func (g *gen) libSymbols() {
	from := len(g.funcs)
	add := func(name string) {
		if _, ok := g.libIdx[name]; ok || len(g.funcs)-from >= libCount {
			return
		}
		g.libIdx[name] = int32(len(g.funcs))
		g.funcs = append(g.funcs, fn{name: name, obj: objLib, size: g.size(5.3)})
	}
	for _, n := range libcNames {
		add(n)
	}
	for _, n := range ifuncs {
		for _, s := range ifuncSuffixes {
			add("__" + n + s)
		}
	}
	for i := 0; len(g.funcs)-from < libCount; i++ { // glibc's internal aliases
		add(fmt.Sprintf("__GI_%s%s", libcNames[i%len(libcNames)], strings.Repeat("_", i/len(libcNames))))
	}
	g.layOut(from, len(g.funcs), libText+0x40)
	g.chains = []chain{
		{frames: g.lib("malloc", "_int_malloc"), kpath: -1},
		{frames: g.lib("malloc", "_int_malloc", "sysmalloc"), kpath: kPageFault, pk: 0.6},
		{frames: g.lib("free", "_int_free"), kpath: -1},
		{frames: g.lib("realloc", "_int_realloc", "_int_malloc"), kpath: -1},
		{frames: g.lib("__memmove_avx_unaligned_erms"), kpath: -1},
		{frames: g.lib("__memmove_avx_unaligned_erms"), kpath: kPageFault, pk: 0.3},
		{frames: g.lib("__memset_avx_unaligned_erms"), kpath: kPageFault, pk: 0.4},
		{frames: g.lib("__strlen_avx_unaligned_erms"), kpath: -1},
		{frames: g.lib("__memcmp_evex_unaligned_erms"), kpath: -1},
		{frames: g.lib("__strcmp_avx2_rtm"), kpath: -1},
		{frames: g.lib("pthread_mutex_lock", "__lll_lock_wait"), kpath: kFutexWait, pk: 0.8},
		{frames: g.lib("pthread_mutex_unlock", "__lll_lock_wake"), kpath: kFutexWake, pk: 0.7},
		{frames: g.lib("pthread_cond_wait", "__futex_abstimed_wait_common"), kpath: kFutexWait, pk: 0.9},
		{frames: g.lib("read"), kpath: kRead, pk: 0.9},
		{frames: g.lib("write"), kpath: kWrite, pk: 0.9},
		{frames: g.lib("epoll_wait"), kpath: kEpoll, pk: 0.95},
		{frames: g.lib("qsort", "msort_with_tmp", "__memcmp_evex_unaligned_erms"), kpath: -1},
		{frames: g.lib("snprintf", "__vsnprintf_internal", "__printf_buffer"), kpath: -1},
		{frames: g.lib("strtod", "____strtod_l_internal"), kpath: -1},
		{frames: g.lib("exp", "__ieee754_exp_fma"), kpath: -1},
		{frames: g.lib("log", "__ieee754_log_fma"), kpath: -1},
	}
}

func (g *gen) lib(names ...string) []int32 {
	out := make([]int32, len(names))
	for i, n := range names {
		f, ok := g.libIdx[n]
		if !ok {
			panic("synth: no library function " + n)
		}
		out[i] = f
	}
	return out
}

// Kernel paths of stacks, by index into gen.kpaths.
const (
	kPageFault = iota
	kFutexWait
	kFutexWake
	kRead
	kWrite
	kEpoll
	kTimer
)

var kernelPaths = [][]string{
	kPageFault: {"asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault",
		"__handle_mm_fault", "do_anonymous_page", "alloc_anon_folio", "vma_alloc_folio", "__alloc_pages",
		"get_page_from_freelist", "clear_page_erms"},
	kFutexWait: {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_futex", "do_futex",
		"futex_wait", "futex_wait_setup", "_raw_spin_lock"},
	kFutexWake: {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_futex", "do_futex",
		"futex_wake", "wake_up_q", "try_to_wake_up", "_raw_spin_unlock_irqrestore"},
	kRead: {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ksys_read", "vfs_read",
		"ext4_file_read_iter", "filemap_read", "copy_page_to_iter", "_copy_to_iter", "rep_movs_alternative"},
	kWrite: {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ksys_write", "vfs_write",
		"ext4_buffered_write_iter", "generic_perform_write", "copy_page_from_iter_atomic", "rep_movs_alternative"},
	kEpoll: {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_epoll_wait", "do_epoll_wait",
		"ep_poll", "schedule_hrtimeout_range", "schedule", "__schedule", "finish_task_switch.isra.0"},
	kTimer: {"asm_sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt", "__sysvec_apic_timer_interrupt",
		"hrtimer_interrupt", "__hrtimer_run_queues", "tick_nohz_handler", "update_process_times",
		"sched_tick", "task_tick_fair", "update_curr"},
}

// kernelSymbols makes the kernel functions that the kernel paths name.
func (g *gen) kernelSymbols() {
	from := len(g.funcs)
	for _, p := range kernelPaths {
		var ids []int32
		for _, n := range p {
			i, ok := g.kerIdx[n]
			if !ok {
				i = int32(len(g.funcs))
				g.kerIdx[n] = i
				g.funcs = append(g.funcs, fn{name: n, obj: objKernel, size: g.size(5.5)})
			}
			ids = append(ids, i)
		}
		g.kpaths = append(g.kpaths, ids)
	}
	g.layOut(from, len(g.funcs), kernText+0x1000)
}

// callGraph sorts the executable's functions (but _start, main and the thread start function) into
// levels and makes each call functions of deeper levels: every function of level k+1 has a caller
// of level k, some have more, the last level is all leaves, and a few functions are recursive.
// main calls about a quarter of level 1, the thread start function the rest.
func (g *gen) callGraph() {
	r := g.r
	var pool []int32
	for i := int32(1); i < int32(g.nexe); i++ {
		if i != g.main && i != g.worker {
			pool = append(pool, i)
		}
	}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	m := len(pool)
	width := max(2, (m+29)/30) // the widest level, so that there are some 30 levels
	for n := min(8, width); len(pool) > 0; n = min(3*n, width) {
		k := min(n, len(pool))
		g.levels = append(g.levels, pool[:k:k])
		pool = pool[k:]
	}
	g.parent = make([]int32, g.nexe)
	for i := range g.parent {
		g.parent[i] = -1
	}
	for l, fs := range g.levels {
		for _, f := range fs {
			var p int32
			switch {
			case l > 0:
				p = pick(r, g.levels[l-1])
			case g.sp.Threads == 1 || r.IntN(4) == 0:
				p = g.main
			default:
				p = g.worker
			}
			g.parent[f] = p
			g.funcs[p].callees = append(g.funcs[p].callees, f)
		}
	}
	// main and the thread start function call at least one function each.
	if len(g.funcs[g.main].callees) == 0 {
		g.funcs[g.main].callees = append(g.funcs[g.main].callees, g.levels[0][0])
	}
	if len(g.funcs[g.worker].callees) == 0 {
		g.funcs[g.worker].callees = append(g.funcs[g.worker].callees, g.levels[0][len(g.levels[0])-1])
	}
	last := len(g.levels)
	for l, fs := range g.levels {
		if l+1 == last {
			break
		}
		for _, f := range fs {
			extra := []int{0, 0, 0, 0, 1, 1, 1, 2, 2, 3}[r.IntN(10)]
			for range extra {
				to := l + 1 // index of the level one deeper
				if r.IntN(10) < 4 {
					to = min(last-1, l+1+r.IntN(4))
				}
				c := pick(r, g.levels[to])
				if !containsInt32(g.funcs[f].callees, c) {
					g.funcs[f].callees = append(g.funcs[f].callees, c)
				}
			}
			if r.IntN(100) == 0 {
				g.funcs[f].callees = append(g.funcs[f].callees, f)
			}
		}
	}
	for i := 1; i < g.nexe; i++ {
		f := &g.funcs[i]
		r.Shuffle(len(f.callees), func(a, b int) { f.callees[a], f.callees[b] = f.callees[b], f.callees[a] })
		for n := []int{0, 0, 0, 0, 0, 0, 1, 1, 1, 2}[r.IntN(10)]; n > 0; n-- {
			f.libs = append(f.libs, int32(r.IntN(len(g.chains))))
		}
	}
}

func containsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// hash mixes its arguments with the seed (splitmix64): call sites and hot instructions are fixed
// per function, as in a real binary.
func (g *gen) hash(a, b uint64) uint64 {
	x := g.salt ^ a*0x9e3779b97f4a7c15 ^ b*0xd6e8feb86659fd93
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// runtime is the address at which function f's link-time address addr+off is mapped.
func (g *gen) runtime(f int32, off uint64) uint64 {
	fn := &g.funcs[f]
	switch fn.obj {
	case objExe:
		return exeBase + fn.addr + off
	case objLib:
		return libBase + fn.addr + off
	}
	return fn.addr + off
}

// site is the offset of the return address of f's call to callee: one call site per pair, never the
// function's first byte, so that the call instruction (the return address less one) is in f too.
func (g *gen) site(f, callee int32) uint64 {
	return 1 + g.hash(uint64(f), uint64(callee)+1<<32)%(g.funcs[f].size-1)
}

// leafPC is an instruction of f where a sample interrupts it: one of a few hot ones, the first most often.
func (g *gen) leafPC(f int32) uint64 {
	k := uint64([]int{0, 0, 0, 0, 1, 1, 2, 3}[g.r.IntN(8)])
	return g.runtime(f, 1+g.hash(uint64(f), k)%(g.funcs[f].size-1))
}

// walk makes one stack: a random walk down the call graph from main or the thread start function,
// through the functions of forced (a path from a root), with a library call and kernel frames at its
// end sometimes. It returns the user frames and the kernel frames (nil for none), outermost first.
func (g *gen) walk(worker bool, forced []int32, frames []int32) ([]int32, []int32) {
	r := g.r
	frames = frames[:0]
	root := g.main
	if worker {
		frames = append(frames, g.libIdx["clone3"], g.libIdx["start_thread"])
		root = g.worker
	} else {
		frames = append(frames, g.start, g.libIdx["__libc_start_main"], g.libIdx["__libc_start_call_main"])
	}
	frames = append(frames, root)
	frames = append(frames, forced...)
	cur := frames[len(frames)-1]
	for {
		f := &g.funcs[cur]
		d := len(frames)
		if len(f.libs) > 0 && (r.Float64() < 0.1 || len(f.callees) == 0 && r.Float64() < 0.3) {
			c := &g.chains[f.libs[r.IntN(len(f.libs))]]
			if d+len(c.frames) <= maxDepth {
				frames = append(frames, c.frames...)
				if c.kpath >= 0 && r.Float64() < c.pk {
					return frames, g.kernel(c.kpath)
				}
				return frames, nil
			}
		}
		if len(f.callees) == 0 || d >= maxDepth || d > 4 && r.Float64() < 0.05+0.004*float64(d) {
			break
		}
		u := r.Float64()
		cur = f.callees[int(float64(len(f.callees))*u*u)]
		frames = append(frames, cur)
	}
	switch k := r.IntN(100); {
	case k < 3:
		return frames, g.kernel(kPageFault)
	case k < 5:
		return frames, g.kernel(kTimer)
	}
	return frames, nil
}

// kernel is kernel path k, or its outer part: the sample is taken in one of its inner functions,
// the innermost most often.
func (g *gen) kernel(k int) []int32 {
	p := g.kpaths[k]
	u := g.r.Float64()
	return p[:len(p)-int(float64(len(p)/2+1)*u*u)]
}

// addresses turns a walk into a stored stack: leaf first, kernel frames before user frames; the
// leaf of each part is an instruction inside its function, the other frames return addresses.
func (g *gen) addresses(frames, kframes []int32) []uint64 {
	pcs := make([]uint64, 0, len(frames)+len(kframes))
	for i := len(kframes) - 1; i >= 0; i-- {
		if i == len(kframes)-1 {
			pcs = append(pcs, g.leafPC(kframes[i]))
		} else {
			pcs = append(pcs, g.runtime(kframes[i], g.site(kframes[i], kframes[i+1])))
		}
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if i == len(frames)-1 {
			pcs = append(pcs, g.leafPC(frames[i]))
		} else {
			pcs = append(pcs, g.runtime(frames[i], g.site(frames[i], frames[i+1])))
		}
	}
	return pcs
}

// makeStacks makes sp.Stacks distinct stacks (fewer when the call graph has not that many paths):
// first stacks through every function of the executable, deepest first, then random walks.
func (g *gen) makeStacks() []stack {
	want := g.sp.Stacks
	out := make([]stack, 0, want)
	seen := make(map[string]bool, want)
	var key []byte
	var frames []int32
	add := func(worker bool, fr, kframes []int32) bool {
		pcs := g.addresses(fr, kframes)
		key = key[:0]
		for _, pc := range pcs {
			key = append(key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24),
				byte(pc>>32), byte(pc>>40), byte(pc>>48), byte(pc>>56))
		}
		if seen[string(key)] {
			return false
		}
		seen[string(key)] = true
		out = append(out, stack{pcs: pcs, kernel: len(kframes) > 0, worker: worker, ipc: LeafIPC(int(fr[len(fr)-1]))})
		return true
	}
	covered := make([]bool, g.nexe)
	var forced []int32
	for l := len(g.levels) - 1; l >= 0 && len(out) < want; l-- {
		for _, f := range g.levels[l] {
			if covered[f] || len(out) >= want {
				continue
			}
			forced = forced[:0]
			for p := f; p != g.main && p != g.worker; p = g.parent[p] {
				forced = append(forced, p)
			}
			root := g.parent[forced[len(forced)-1]]
			for i, j := 0, len(forced)-1; i < j; i, j = i+1, j-1 {
				forced[i], forced[j] = forced[j], forced[i]
			}
			fr, kframes := g.walk(root == g.worker, forced, frames)
			frames = fr
			if add(root == g.worker, fr, kframes) {
				for _, x := range fr {
					if int(x) < g.nexe {
						covered[x] = true
					}
				}
			}
		}
	}
	mainShare := 0.2
	if g.sp.Threads == 1 {
		mainShare = 1
	}
	for tries := 0; len(out) < want && tries < 50*want; tries++ {
		worker := g.r.Float64() >= mainShare
		fr, kframes := g.walk(worker, nil, frames)
		frames = fr
		add(worker, fr, kframes)
	}
	return out
}

// Phases of the run, as fractions of the duration: startup (the main thread alone), then four
// phases of the worker threads with different hot paths.
var phases = []float64{0, 0.08, 0.30, 0.55, 0.80, 1}

// thread is a thread of the target, as the samples see it.
type thread struct {
	tid    uint32
	cpu    uint32
	weight float64
	cpuNS  int64
}

// hotShare is the share of the samples that go to each phase's hot stacks (a Zipf distribution over
// a per-phase order of the stacks); the others go to all stacks in turn.
const hotShare = 0.8

func (g *gen) write(dir string, stacks []stack) error {
	sp := g.sp
	r := g.r
	ncpu := max(4, sp.Threads)
	end := sp.Duration + 4_000_000
	lg := experiment.Log{
		CollectorVersion: version.Version,
		Host:             "synth",
		OS:               "Linux 6.1.0-synth-amd64",
		Arch:             "x86_64",
		CPUs:             ncpu,
		PageSize:         4096,
		WordSize:         64,
		ClockHz:          ClockHz,
		MemoryBytes:      64 << 30,
		Command:          []string{ExePath, "--threads", fmt.Sprint(sp.Threads), "--input", "/data/synth.in"},
		Cwd:              "/opt/synth",
		Pid:              Pid,
		StartTime:        startWall,
		StartPerfNS:      startPerf,
		KernelStacks:     true,
		Settings: []experiment.Setting{
			{Name: "clock_profiling", Value: "on"},
			{Name: "clock_interval_ns", Value: fmt.Sprint(sp.Interval)},
			{Name: "sample_period_ns", Value: "1000000000"},
			{Name: "stack_copy_bytes", Value: "16384"},
			{Name: "heap_tracing", Value: "off"},
			{Name: "io_tracing", Value: "off"},
			{Name: "sync_tracing", Value: "off"},
			{Name: "clock_source", Value: "perf"},
		},
	}
	if sp.Counters {
		cycles := uint64(sp.Interval) * ClockHz / 1e9
		lg.Counters = []experiment.Counter{
			{Name: "cycles", Metric: "cycles", Title: "CPU Cycles", Type: 0, Config: 0, Interval: cycles, Unit: "CPU-cycles"},
			{Name: "insts", Metric: "insts", Title: "Instructions Executed", Type: 0, Config: 1, Interval: cycles, Unit: "events"},
		}
		lg.Settings = append(lg.Settings, experiment.Setting{Name: experiment.SettingCounters, Value: fmt.Sprintf("cycles,%d,insts,%d", cycles, cycles)})
	}
	w, err := experiment.Create(dir, lg)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		w.Close()
		return err
	}
	if err := w.Notes(fmt.Sprintf("synthetic experiment written by er/internal/synth: %d samples, %d functions, "+
		"%d threads, %d stacks, seed %d", sp.Samples, sp.Functions, sp.Threads, len(stacks), sp.Seed)); err != nil {
		return fail(err)
	}
	exeEnd := g.textEnd(objExe)
	libEnd := g.textEnd(objLib)
	page := func(x uint64) uint64 { return (x + 4095) &^ 4095 }
	w.AddMapping(experiment.Mapping{Pid: Pid, Start: exeBase + exeText, End: exeBase + page(exeEnd), Offset: exeText,
		Path: ExePath, BuildID: g.buildID(1), UnloadTime: -1})
	w.AddMapping(experiment.Mapping{Pid: Pid, Start: libBase + libText, End: libBase + page(libEnd), Offset: libText,
		Path: LibPath, BuildID: g.buildID(2), UnloadTime: -1})
	w.AddMapping(experiment.Mapping{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]", UnloadTime: -1})
	w.Event(experiment.Event{Kind: "start", Pid: Pid, Text: strings.Join(lg.Command, " ")})

	// The stacks of each kind of thread, and each phase's order of them (its hottest first).
	var pools [2][]int32 // main's, the workers'
	for i, s := range stacks {
		k := 0
		if s.worker {
			k = 1
		}
		pools[k] = append(pools[k], int32(i))
	}
	if len(pools[0]) == 0 {
		pools[0] = pools[1]
	}
	if len(pools[1]) == 0 {
		pools[1] = pools[0]
	}
	nph := len(phases) - 1
	order := make([][2][]int32, nph)
	zipf := make([][2]*rand.Zipf, nph)
	for p := range nph {
		for k, pool := range pools {
			perm := make([]int32, len(pool))
			for i, j := range r.Perm(len(pool)) {
				perm[i] = pool[j]
			}
			order[p][k] = perm
			zipf[p][k] = rand.NewZipf(r, 1.2, 1, uint64(len(pool)-1))
		}
	}
	var next [2]int // the next stack of each pool for the samples that go to all in turn

	threads := make([]thread, sp.Threads)
	for i := range threads {
		threads[i] = thread{tid: Pid + uint32(i), cpu: uint32(i % ncpu), weight: 0.7 + 0.6*r.Float64()}
	}
	threads[0].weight = 1.5 // the main thread does the merging and the output
	cum := make([]float64, len(threads))

	// The samples of each phase: the startup has the main thread alone, the others all threads.
	dens := make([]float64, nph)
	var total float64
	for p := range nph {
		dens[p] = phases[p+1] - phases[p]
		if p > 0 {
			dens[p] *= float64(sp.Threads)
		}
		total += dens[p]
	}
	ids := make([]uint32, len(stacks)) // stack ids in the experiment, once interned
	var userNS, sysNS int64
	point := uint32(0)
	writePoint := func(t int64, label string) error {
		point++
		w.Event(experiment.Event{Time: t, Kind: "sample", Pid: Pid, Text: fmt.Sprintf("sample point %d: %s", point, label)})
		return w.Overview(experiment.OverviewSample{Time: t, Pid: Pid, Sample: point, UserNS: userNS, SystemNS: sysNS,
			MinFlt: 2000 + int64(point)*1500, MajFlt: 3 + int64(point)/8, VolCtxSw: int64(point) * 40 * int64(sp.Threads),
			InvolCtxSw: int64(point) * 9 * int64(sp.Threads), RSSBytes: (48 << 20) + int64(point)*(3<<20),
			NumThreads: int32(sp.Threads), Label: label})
	}
	if err := writePoint(1_000_000, "start"); err != nil {
		return fail(err)
	}
	nextPoint := int64(1_000_000_000)
	var done float64
	written := 0
	for p := range nph {
		done += dens[p]
		n := int(math.Round(float64(sp.Samples)*done/total)) - written
		t0 := int64(phases[p] * float64(sp.Duration))
		span := float64(int64(phases[p+1]*float64(sp.Duration)) - t0)
		var sum float64
		for i := range threads {
			if p > 0 || i == 0 {
				sum += threads[i].weight
			}
			cum[i] = sum
		}
		for j := range n {
			t := t0 + int64((float64(j)+r.Float64())*span/float64(n))
			for t >= nextPoint && nextPoint < sp.Duration {
				if err := writePoint(nextPoint, "periodic"); err != nil {
					return fail(err)
				}
				nextPoint += 1_000_000_000
			}
			x := r.Float64() * sum
			ti := 0
			for ti < len(cum)-1 && cum[ti] <= x {
				ti++
			}
			th := &threads[ti]
			if r.IntN(64) == 0 {
				th.cpu = uint32(r.IntN(ncpu))
			}
			k := 0
			if ti > 0 {
				k = 1
			}
			var si int32
			if r.Float64() < hotShare {
				si = order[p][k][zipf[p][k].Uint64()]
			} else {
				si = pools[k][next[k]%len(pools[k])]
				next[k]++
			}
			s := &stacks[si]
			if ids[si] == 0 {
				id, err := w.Stack(s.pcs)
				if err != nil {
					return fail(err)
				}
				ids[si] = id
			}
			mode := experiment.ModeUser
			if s.kernel {
				mode = experiment.ModeKernel
				sysNS += sp.Interval
			} else {
				userNS += sp.Interval
			}
			th.cpuNS += sp.Interval
			if err := w.Clock(experiment.ClockSample{Time: t, Pid: Pid, Tid: th.tid, CPU: th.cpu, Mode: mode,
				Period: sp.Interval, Stack: ids[si]}); err != nil {
				return fail(err)
			}
			if sp.Counters {
				cycles := sp.Interval * ClockHz / 1e9
				insts := cycles * s.ipc / 2
				for c, v := range []int64{cycles, insts} {
					if err := w.Counter(experiment.CounterSample{Time: t, Value: v, Pid: Pid, Tid: th.tid, CPU: th.cpu,
						Stack: ids[si], Counter: uint8(c), Mode: mode}); err != nil {
						return fail(err)
					}
				}
			}
		}
		written += n
	}
	for nextPoint < sp.Duration {
		if err := writePoint(nextPoint, "periodic"); err != nil {
			return fail(err)
		}
		nextPoint += 1_000_000_000
	}
	if err := writePoint(end, "end"); err != nil {
		return fail(err)
	}
	w.Event(experiment.Event{Time: end, Kind: "exit", Pid: Pid, Text: "exit status 0"})
	w.ProcessExit(Pid, end)
	var tc []experiment.ThreadCount
	for _, th := range threads {
		if th.cpuNS > 0 {
			tc = append(tc, experiment.ThreadCount{Tid: th.tid, CPUNS: th.cpuNS})
		}
	}
	w.UpdateLog(func(l *experiment.Log) {
		l.EndTime, l.Exited, l.ExitStatus = end, true, 0
		l.CountedCPUNS = userNS + sysNS
		l.ThreadCPU = tc
	})
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	for _, a := range g.archives(exeEnd, libEnd) {
		if err := experiment.WriteArchive(dir, a); err != nil {
			return fail(err)
		}
	}
	return w.Close()
}

// buildID is a hex GNU build id (20 bytes) for object k.
func (g *gen) buildID(k uint64) string {
	var b strings.Builder
	for i := range uint64(3) {
		fmt.Fprintf(&b, "%016x", g.hash(k<<40|i, 0xb1d))
	}
	return b.String()[:40]
}

// archives describes the three load objects: the executable, the library and the kernel.
func (g *gen) archives(exeEnd, libEnd uint64) []*experiment.Archive {
	syms := func(obj uint8, kind experiment.SymbolKind) []experiment.Symbol {
		var out []experiment.Symbol
		for _, f := range g.funcs {
			if f.obj == obj {
				out = append(out, experiment.Symbol{Name: f.name, Addr: f.addr, Size: f.size, Kind: kind})
			}
		}
		return out
	}
	elf := func(path string, text, textEnd uint64, obj uint8, id uint64) *experiment.Archive {
		ro := (textEnd + 0xfff) &^ 0xfff
		rosz := textEnd / 5
		data := (ro + rosz + 0x1fff) &^ 0xfff
		size := int64(data + 0x3000 + textEnd/2) // the data segment and the symbol tables
		return &experiment.Archive{
			Path: path, Size: size, Mtime: startWall - 86400_000_000_000*int64(id), BuildID: g.buildID(id), Kind: "elf",
			Segments: []experiment.Segment{
				{Vaddr: 0, Offset: 0, Filesz: text, Memsz: text},
				{Vaddr: text, Offset: text, Filesz: textEnd - text, Memsz: textEnd - text},
				{Vaddr: ro, Offset: ro, Filesz: rosz, Memsz: rosz},
				{Vaddr: data + 0x1000, Offset: data, Filesz: 0x2000, Memsz: 0x9000},
			},
			Symbols: syms(obj, experiment.SymFunc),
		}
	}
	return []*experiment.Archive{
		elf(ExePath, exeText, exeEnd, objExe, 1),
		elf(LibPath, libText, libEnd, objLib, 2),
		{Path: "[kernel]", Kind: "kernel", BuildID: g.buildID(3), Symbols: syms(objKernel, experiment.SymKernel)},
	}
}
