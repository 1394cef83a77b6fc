package tracedef

// The definitions: what preload/c/trace.h and control.h declare, and internal/experiment/tracelayout.go
// and internal/collect/controllayout.go hold. Change them here, then run go generate ./internal/tracedef.

// Trace is the trace files' definition.
var Trace = &Def{
	CFile: CFile, GoFile: GoFile,
	Guard: "ER_TRACE_H",
	Comment: `trace.h: the record layout of the collector library's trace files.

Every trace file of an experiment (heaptrace, synctrace, iotrace, clocktrace, tracestacks)
has the same shape, documented in docs/trace-format.md and read by internal/experiment:

  offset 0:    a file header (struct er_file_header), padded to ER_HEADER_SIZE bytes;
  then blocks of ER_BLOCK_SIZE bytes, each owned by one thread while it fills it.

A block holds records, 8-byte aligned, one after another. Every record starts with
struct er_rec. A record's first 8 bytes are written last (size, kind, tid), after its body, so
a reader of a live or crashed experiment sees either a whole record or a zero word: a zero
size ends the block's records. Numbers are little-endian (x86-64 native).`,
	GoPackage: "experiment",
	Strings: []Define{
		{C: "ER_NAME_HEAP", Go: "HeapTraceFile", Value: "heaptrace", Comment: "heap events"},
		{C: "ER_NAME_SYNC", Go: "SyncTraceFile", Value: "synctrace", Comment: "synchronization waits"},
		{C: "ER_NAME_IO", Go: "IOTraceFile", Value: "iotrace", Comment: "I/O calls"},
		{C: "ER_NAME_CLOCK", Go: "ClockTraceFile", Value: "clocktrace", Comment: "clock profiling by SIGPROF, where perf events are denied"},
		{C: "ER_NAME_OMP", Go: "OMPTraceFile", Value: "omptrace", Comment: "OpenMP regions and thread states"},
		{C: "ER_NAME_STACKS", Go: "TraceStacksFile", Value: "tracestacks", Comment: "the stacks the other trace files refer to, mappings and notes"},
		{C: "ER_MAGIC", Go: "traceMagic", Value: "ERTRACE1"},
	},
	Defines: []Define{
		{C: "ER_VERSION", Go: "traceVersion", Value: "1"},
		{C: "ER_HEADER_SIZE", Go: "traceHeaderSize", Value: "4096"},
		{C: "ER_BLOCK_SIZE", Value: "(64 * 1024)", Comment: "the reader takes the block size from the header"},
		{C: "ER_MAX_FRAMES", Value: "256", Comment: "the reader takes stacks of any length"},
		{C: "ER_STOP_SECCOMP", Go: "stopSeccomp", Value: "0x10000",
			Comment: "stop_errno: a seccomp filter the process installed denies the library's system calls (not an errno)"},
		{C: "ER_PC_TRUNCATED", Go: "FrameTruncated", GoType: "uint64", Value: "0xfffffffffffff001ull", GoValue: "0xfffffffffffff001",
			Comment: "a pseudo-frame: it ends a stack whose unwinding stopped before the outermost frame (the copied stack or the frame limit ran out); shown as <Truncated-stack>"},
		{C: "ER_PC_FAILED", Go: "FrameUnwindFailed", GoType: "uint64", Value: "0xfffffffffffff002ull", GoValue: "0xfffffffffffff002",
			Comment: "a pseudo-frame: it ends a stack whose unwinding could not go on (no rule to find the caller, no valid frame pointer, or a read would leave the stack); shown as <Unwind-failed>"},
	},
	Enums: []Enum{
		{C: "er_file_kind", Comment: "Which data a file holds (er_file_header.kind).", Members: []Member{
			{"ER_FILE_HEAP", "fileHeap", 1, ""},
			{"ER_FILE_SYNC", "fileSync", 2, ""},
			{"ER_FILE_IO", "fileIO", 3, ""},
			{"ER_FILE_CLOCK", "fileClock", 4, ""},
			{"ER_FILE_STACKS", "fileStacks", 5, "stacks, load-object mappings and notes"},
			{"ER_FILE_OMP", "fileOMP", 6, "OpenMP regions and thread states"},
		}},
		{C: "er_rec_kind", Comment: "Record kinds (er_rec.kind).", Members: []Member{
			{"ER_REC_STACK", "recStack", 1, "struct er_rec_stack: a call stack, referred to by id"},
			{"ER_REC_HEAP", "recHeap", 2, "struct er_rec_heap"},
			{"ER_REC_SYNC", "recSync", 3, "struct er_rec_sync"},
			{"ER_REC_IO", "recIO", 4, "struct er_rec_io, then name bytes"},
			{"ER_REC_CLOCK", "recClock", 5, "struct er_rec_clock"},
			{"ER_REC_MAP", "recMap", 6, "struct er_rec_map, then the path"},
			{"ER_REC_NOTE", "recNote", 7, `struct er_rec, then text "key=value"`},
			{"ER_REC_OMP_STATE", "recOMPState", 8, "struct er_rec_omp_state: a thread's time in an OpenMP state"},
			{"ER_REC_OMP_REGION", "recOMPRegion", 9, "struct er_rec_omp_region: a parallel region, written at its end"},
		}},
		{C: "er_heap_op", GoType: "HeapOp", Comment: "Operations (er_rec.aux of heap, sync and I/O records): which function the event records.",
			Members: []Member{
				{"ER_HEAP_MALLOC", "HeapMalloc", 1, ""},
				{"ER_HEAP_CALLOC", "HeapCalloc", 2, ""},
				{"ER_HEAP_REALLOC", "HeapRealloc", 3, "frees Old (when it succeeds) and allocates Addr"},
				{"ER_HEAP_FREE", "HeapFree", 4, "written short, as struct er_rec_free, when it needs no stack"},
				{"ER_HEAP_POSIX_MEMALIGN", "HeapPosixMemalign", 5, ""},
				{"ER_HEAP_ALIGNED_ALLOC", "HeapAlignedAlloc", 6, ""},
				{"ER_HEAP_MEMALIGN", "HeapMemalign", 7, ""},
				{"ER_HEAP_VALLOC", "HeapValloc", 8, ""},
				{"ER_HEAP_PVALLOC", "HeapPvalloc", 9, ""},
				{"ER_HEAP_REALLOCARRAY", "HeapReallocarray", 10, "as realloc"},
				{"ER_HEAP_MMAP", "HeapMmap", 11, "an allocation of Size bytes at Addr"},
				{"ER_HEAP_MUNMAP", "HeapMunmap", 12, "frees the mmap blocks that start in [Old, Old+Size)"},
			}},
		{C: "er_sync_op", GoType: "SyncOp", Members: []Member{
			{"ER_SYNC_MUTEX_LOCK", "SyncMutexLock", 1, "pthread_mutex_lock, _timedlock, _clocklock"},
			{"ER_SYNC_COND_WAIT", "SyncCondWait", 2, "pthread_cond_wait, _timedwait, _clockwait"},
			{"ER_SYNC_RWLOCK_RDLOCK", "SyncRwlockRdlock", 3, ""},
			{"ER_SYNC_RWLOCK_WRLOCK", "SyncRwlockWrlock", 4, ""},
			{"ER_SYNC_JOIN", "SyncJoin", 5, "pthread_join, pthread_timedjoin_np, pthread_clockjoin_np"},
			{"ER_SYNC_SEM_WAIT", "SyncSemWait", 6, "sem_wait, sem_timedwait, sem_clockwait"},
			{"ER_SYNC_BARRIER_WAIT", "SyncBarrierWait", 7, ""},
		}},
		{C: "er_io_op", GoType: "IOOp", Members: []Member{
			{"ER_IO_OPEN", "IOOpen", 1, ""}, {"ER_IO_OPENAT", "IOOpenat", 2, ""}, {"ER_IO_CREAT", "IOCreat", 3, ""},
			{"ER_IO_CLOSE", "IOClose", 4, ""}, {"ER_IO_READ", "IOReadOp", 5, ""}, {"ER_IO_WRITE", "IOWriteOp", 6, ""},
			{"ER_IO_PREAD", "IOPread", 7, ""}, {"ER_IO_PWRITE", "IOPwrite", 8, ""}, {"ER_IO_READV", "IOReadv", 9, ""},
			{"ER_IO_WRITEV", "IOWritev", 10, ""}, {"ER_IO_PREADV", "IOPreadv", 11, ""}, {"ER_IO_PWRITEV", "IOPwritev", 12, ""},
			{"ER_IO_LSEEK", "IOLseek", 13, ""}, {"ER_IO_FSYNC", "IOFsync", 14, ""}, {"ER_IO_FDATASYNC", "IOFdatasync", 15, ""},
			{"ER_IO_DUP", "IODup", 16, ""}, {"ER_IO_DUP2", "IODup2", 17, ""}, {"ER_IO_DUP3", "IODup3", 18, ""},
			{"ER_IO_PIPE", "IOPipe", 19, ""}, {"ER_IO_PIPE2", "IOPipe2", 20, ""},
			{"ER_IO_FOPEN", "IOFopen", 32, ""}, {"ER_IO_FDOPEN", "IOFdopen", 33, ""}, {"ER_IO_FREOPEN", "IOFreopen", 34, ""},
			{"ER_IO_FCLOSE", "IOFclose", 35, ""}, {"ER_IO_FREAD", "IOFread", 36, ""}, {"ER_IO_FWRITE", "IOFwrite", 37, ""},
			{"ER_IO_FGETS", "IOFgets", 38, ""}, {"ER_IO_FPUTS", "IOFputs", 39, ""}, {"ER_IO_FGETC", "IOFgetc", 40, ""},
			{"ER_IO_FPUTC", "IOFputc", 41, ""}, {"ER_IO_FPRINTF", "IOFprintf", 42, ""}, {"ER_IO_VFPRINTF", "IOVfprintf", 43, ""},
			{"ER_IO_PRINTF", "IOPrintf", 44, ""}, {"ER_IO_VPRINTF", "IOVprintf", 45, ""}, {"ER_IO_PUTS", "IOPuts", 46, ""},
			{"ER_IO_FFLUSH", "IOFflush", 47, ""}, {"ER_IO_FSEEK", "IOFseek", 48, ""}, {"ER_IO_GETC", "IOGetc", 49, ""},
			{"ER_IO_PUTC", "IOPutc", 50, ""},
			{"ER_IO_INHERITED", "IOInherited", 63, "not a call: a descriptor open when tracing began (the name is its /proc/self/fd link); it feeds no metric"},
		}},
		{C: "er_omp_state", GoType: "OMPState", Comment: "OpenMP thread states (er_rec.aux of an OpenMP state record); the states between the recorded ones (idle, the implicit barrier of a region's end) are the reader's to derive.",
			Members: []Member{
				{"ER_OMP_WORK", "OMPWork", 1, "the work of a parallel region: the outlined function, on each thread of its team"},
				{"ER_OMP_OVERHEAD", "OMPOverhead", 2, "in the runtime: starting a region, getting a chunk of a loop's iterations"},
				{"ER_OMP_IDLE", "OMPIdle", 3, "a worker waiting for work"},
				{"ER_OMP_REDUCTION", "OMPReduction", 4, ""},
				{"ER_OMP_IMPLICIT_BARRIER", "OMPImplicitBarrier", 5, ""},
				{"ER_OMP_EXPLICIT_BARRIER", "OMPExplicitBarrier", 6, ""},
				{"ER_OMP_LOCK_WAIT", "OMPLockWait", 7, ""},
				{"ER_OMP_CRITICAL_WAIT", "OMPCriticalWait", 8, ""},
				{"ER_OMP_ORDERED_WAIT", "OMPOrderedWait", 9, ""},
				{"ER_OMP_ATOMIC_WAIT", "OMPAtomicWait", 10, ""},
			}},
		{C: "er_map_aux", Comment: "er_rec.aux of a map record.", Members: []Member{
			{"ER_MAP_MAPPED", "", 0, "mapped while the library ran (the reader takes any other aux so)"},
			{"ER_MAP_UNMAPPED", "mapUnmapped", 1, ""},
			{"ER_MAP_INITIAL", "mapInitial", 2, "mapped before the library started"},
		}},
	},
	Structs: []Struct{
		{C: "er_file_header", Go: "sizeofFileHeader", Fields: []Field{
			{C: "magic", Go: "fileHeaderMagic", Type: "char[8]", Comment: "ER_MAGIC"},
			{C: "version", Go: "fileHeaderVersion", Type: "u32", Comment: "ER_VERSION"},
			{C: "kind", Go: "fileHeaderKind", Type: "u32", Comment: "enum er_file_kind"},
			{C: "block_size", Go: "fileHeaderBlockSize", Type: "u32", Comment: "ER_BLOCK_SIZE"},
			{C: "pid", Go: "fileHeaderPid", Type: "u32", Comment: "the process writing the file"},
			{C: "param", Go: "fileHeaderParam", Type: "u64", Comment: "clock: the interval in ns; sync: the threshold in ns; else 0"},
			{C: "start_ns", Go: "fileHeaderStartNS", Type: "u64", Comment: "CLOCK_MONOTONIC when the library started"},
			{C: "stop_errno", Go: "fileHeaderStopErrno", Type: "u32", Comment: "what was not recorded, updated while the process runs (the header page stays mapped, and a store into it needs no new space on the disk): recording stopped for good: the error (ENOSPC: the disk is full), or ER_STOP_SECCOMP; 0: it ran on"},
			{C: "pad", Type: "u32"},
			{C: "stop_ns", Go: "fileHeaderStopNS", Type: "u64", Comment: "CLOCK_MONOTONIC when it stopped"},
			{C: "lost", Go: "fileHeaderLost", Type: "u64", Comment: "records of this file that could not be written (no block to write them in)"},
		}},
		{C: "er_rec", Go: "sizeofRec", Comment: "The 16-byte prefix of every record. size counts the whole record, prefix included, a multiple of 8. time is CLOCK_MONOTONIC ns: for events, when the call returned (or when the signal arrived).",
			Fields: []Field{
				{C: "size8", Go: "recSize8", Type: "u16", Comment: "record size in units of 8 bytes; 0 = no record here"},
				{C: "kind", Go: "recKind", Type: "u8", Comment: "enum er_rec_kind"},
				{C: "aux", Go: "recAux", Type: "u8", Comment: "heap/sync/io: the operation (enum er_heap_op, er_sync_op, er_io_op); map: enum er_map_aux"},
				{C: "tid", Go: "recTid", Type: "u32"},
				{C: "time", Go: "recTime", Type: "u64"},
			}},
		{C: "er_rec_stack", Go: "sizeofRecStack", Tail: "uint64_t pcs[n]",
			Comment: "A call stack, leaf first. Stack ids are unique in a process; id 0 is the empty stack. For events, frame 0 is the address of the traced function (the real libc function) and the others are return addresses. For clock records frame 0 is the interrupted PC. A stack whose unwinding stopped early ends with a pseudo-frame (0xfffffffffffff001 truncated, 0xfffffffffffff002 unwind failed).",
			Fields: []Field{
				{C: "h", Type: "struct er_rec"},
				{C: "id", Go: "recStackID", Type: "u32"},
				{C: "n", Go: "recStackN", Type: "u32"},
			}},
		{C: "er_rec_heap", Go: "sizeofRecHeap", Comment: "A heap event. A free (op 4) that needs no stack is written short, as struct er_rec_free.",
			Fields: []Field{
				{C: "h", Type: "struct er_rec"},
				{C: "stack", Go: "recHeapStack", Type: "u32"},
				{C: "pad", Type: "u32"},
				{C: "addr", Go: "recHeapAddr", Type: "u64", Comment: "block returned, 0 for free or failure"},
				{C: "size", Go: "recHeapSize", Type: "u64", Comment: "bytes requested; munmap: length"},
				{C: "old", Go: "recHeapOld", Type: "u64", Comment: "block freed: free's, realloc's argument; munmap: address"},
			}},
		{C: "er_rec_alloc", Go: "sizeofRecAlloc", Comment: "An allocation of less than 4 GiB that frees nothing is written short, as struct er_rec_alloc.",
			Fields: []Field{
				{C: "h", Type: "struct er_rec"},
				{C: "stack", Go: "recAllocStack", Type: "u32"},
				{C: "size", Go: "recAllocSize", Type: "u32"},
				{C: "addr", Go: "recAllocAddr", Type: "u64"},
			}},
		{C: "er_rec_free", Go: "sizeofRecFree", Comment: "The short form of a free.", Fields: []Field{
			{C: "h", Type: "struct er_rec"},
			{C: "old", Go: "recFreeOld", Type: "u64", Comment: "the block freed"},
		}},
		{C: "er_rec_sync", Go: "sizeofRecSync", Fields: []Field{
			{C: "h", Type: "struct er_rec"},
			{C: "stack", Go: "recSyncStack", Type: "u32"},
			{C: "pad", Type: "u32"},
			{C: "wait_ns", Go: "recSyncWaitNS", Type: "u64"},
			{C: "object", Go: "recSyncObject", Type: "u64"},
		}},
		{C: "er_rec_io", Go: "sizeofRecIO", Comment: "An I/O call, then the file name.", Fields: []Field{
			{C: "h", Type: "struct er_rec"},
			{C: "stack", Go: "recIOStack", Type: "u32"},
			{C: "name_len", Go: "recIONameLen", Type: "u32", Comment: "bytes of the file name after the record (no NUL), padded to 8"},
			{C: "dur_ns", Go: "recIODurNS", Type: "u64"},
			{C: "fd", Go: "recIOFD", Type: "i32"},
			{C: "fd2", Go: "recIOFD2", Type: "i32"},
			{C: "ret", Go: "recIORet", Type: "i64"},
			{C: "bytes", Go: "recIOBytes", Type: "i64"},
			{C: "err", Go: "recIOErr", Type: "i32"},
			{C: "pad", Type: "u32"},
		}},
		{C: "er_rec_clock", Go: "sizeofRecClock", Fields: []Field{
			{C: "h", Type: "struct er_rec"},
			{C: "stack", Go: "recClockStack", Type: "u32"},
			{C: "count", Go: "recClockCount", Type: "u32", Comment: "1 + the timer's overrun: how many intervals this record stands for"},
			{C: "cpu", Go: "recClockCPU", Type: "u32", Comment: "the CPU the handler ran on"},
			{C: "pad", Type: "u32"},
		}},
		{C: "er_rec_omp_state", Go: "sizeofRecOMPState", Comment: "A thread's time in an OpenMP state (er_rec.aux), from start_ns to the record's time.", Fields: []Field{
			{C: "h", Type: "struct er_rec"},
			{C: "start_ns", Go: "recOMPStart", Type: "u64", Comment: "CLOCK_MONOTONIC"},
			{C: "region", Go: "recOMPStateRegion", Type: "u64", Comment: "the parallel region the thread was in (its id), 0: none"},
		}},
		{C: "er_rec_omp_region", Go: "sizeofRecOMPRegion", Comment: "A parallel region, from start_ns (its master's call) to the record's time (the call's return); the record's thread is its master.", Fields: []Field{
			{C: "h", Type: "struct er_rec"},
			{C: "stack", Go: "recOMPRegionStack", Type: "u32", Comment: "the master's stack at the region's start: frame 0 the runtime's entry point (libgomp) or the call's return address (OMPT), then return addresses"},
			{C: "team", Go: "recOMPRegionTeam", Type: "u32", Comment: "the threads of its team"},
			{C: "start_ns", Go: "recOMPRegionStart", Type: "u64"},
			{C: "id", Go: "recOMPRegionID", Type: "u64", Comment: "unique in the process, from 1"},
			{C: "parent", Go: "recOMPRegionParent", Type: "u64", Comment: "the region the master was in, 0: none"},
			{C: "fn", Go: "recOMPRegionFn", Type: "u64", Comment: "what says which construct it is: its outlined function (libgomp), or the return address of the runtime's call in the function that holds it (OMPT)"},
		}},
		{C: "er_rec_map", Go: "sizeofRecMap", Comment: "A mapping of executable code, then the path.", Fields: []Field{
			{C: "h", Type: "struct er_rec"},
			{C: "start", Go: "recMapStart", Type: "u64", Comment: "executable segment [start, end)"},
			{C: "end", Go: "recMapEnd", Type: "u64"},
			{C: "offset", Go: "recMapOffset", Type: "u64", Comment: "file offset of start"},
			{C: "path_len", Go: "recMapPathLen", Type: "u32", Comment: "bytes of the path after the record (no NUL), padded to 8"},
			{C: "pad", Type: "u32"},
		}},
	},
}

// Control is the control protocol's definition: the state page er writes and the library reads,
// and the messages the library writes to er.
var Control = &Def{
	CFile: "preload/c/control.h", GoFile: "internal/collect/controllayout.go",
	Guard: "ER_CONTROL_H",
	Comment: `control.h: the control protocol between er collect and the collector library.

The control page (ER_EXPDIR/.proc/state) is written by er and mapped read-only by each library
instance: 32-bit words, read with atomic loads (collector.h, er_off). Each instance writes
messages of struct er_msg to the FIFO ER_EXPDIR/.control (internal/collect/control.go reads them).`,
	GoPackage: "collect",
	Defines: []Define{
		{C: "ER_STATE_MAGIC", Go: "stateMagic", Value: "0x53524545u", GoValue: "0x53524545", Comment: `"EERS", the control page's first word`},
		{C: "ER_STATE_STOP", Go: "stateStopWord", Value: "2", Comment: "word index: recording stopped"},
		{C: "ER_STATE_PAUSE_ALL", Go: "statePauseWord", Value: "3", Comment: "word index: paused by er"},
		{C: "ER_STATE_STOP_LIMIT", Go: "stopLimit", Value: "1", Comment: "the stop word: -t or -L stopped recording; er still runs"},
		{C: "ER_STATE_STOP_ENDED", Go: "stopEnded", Value: "2", Comment: "the stop word: er collect has ended: every instance ends (life.c)"},
		{C: "ER_MSG_MAGIC", Go: "messageMagic", Value: "0x31435245u", GoValue: "0x31435245", Comment: `"ERC1", a message's first word`},
		{C: "ER_MSG_SECCOMP_ALLOWED", Go: "seccompAllowed", Value: "0xffffffffu", GoValue: "0xffffffff", Comment: "arg of ER_MSG_SECCOMP: the filter allows the library's system calls; aux: the filters checked"},
		{C: "ER_MSG_SECCOMP_REFUSED", Go: "seccompRefused", Value: "0xfffffffeu", GoValue: "0xfffffffe", Comment: "arg of ER_MSG_SECCOMP: the kernel refused the filter; aux: the errno"},
		{C: "ER_MSG_SECCOMP_STRICT", Go: "retStrict", Value: "0xffffffffu", GoValue: "0xffffffff", Comment: "aux of a denial: strict mode, not a filter"},
		{C: "ER_RELAY_COOKIE", Go: "relayCookie", Value: "((void *)0x6572726cUL)", GoValue: "0x6572726c",
			Comment: "the sigqueue value with which er passes a sample or pause signal on to the founder: the library tells it from the signals the program gets from elsewhere"},
	},
	Enums: []Enum{
		{C: "er_msg_kind", Comment: "Control messages, library -> er (er_msg.kind).", Members: []Member{
			{"ER_MSG_SAMPLE", "msgSample", 1, "a sample point: arg is the signal"},
			{"ER_MSG_PAUSED", "msgPaused", 2, "arg is the signal"},
			{"ER_MSG_RESUMED", "msgResumed", 3, "arg is the signal"},
			{"ER_MSG_STARTED", "msgStarted", 4, "arg is the parent's pid"},
			{"ER_MSG_FORKED", "msgForked", 5, "arg is the parent's pid, aux the low 32 bits of the parent instance's start_ns"},
			{"ER_MSG_EXECED", "msgExeced", 6, "arg is the parent's pid"},
			{"ER_MSG_STOPPED", "msgStopped", 7, "recording stopped for good: arg is the errno (ENOSPC: the disk is full)"},
			{"ER_MSG_NOSTART", "msgNoStart", 8, "an instance could not start: arg is the errno, aux the process's effective uid"},
			{"ER_MSG_UNREACHABLE", "msgUnreachable", 9, "the experiment is out of reach, by its name, of the programs the process runs: arg 1 after a chroot, 2 after a mount or a namespace change"},
			{"ER_MSG_SETUID", "msgSetUID", 10, "the process is to run as another user: aux is the uid"},
			{"ER_MSG_HANDLER", "msgHandler", 16, "the program has a handler of its own for the signal arg; aux: ER_GUARD_*"},
			{"ER_MSG_SECCOMP", "msgSeccomp", 17, "the program installs a seccomp filter (seccomp.c): arg is the library's system call the filter denies, aux what the filter returns for it (SECCOMP_RET_*); or arg is ER_MSG_SECCOMP_ALLOWED or _REFUSED"},
			{"ER_MSG_NOFILE", "msgNoFile", 18, "an instance did not start: its descriptor limit leaves it no number out of the program's way (er_fd_lift); arg the soft RLIMIT_NOFILE, aux the hard one"},
			{"ER_MSG_LANDLOCK", "msgLandlock", 19, "the process restricted itself with a Landlock ruleset (landlock_restrict_self)"},
		}},
	},
	Structs: []Struct{
		{C: "er_msg", Go: "messageSize", Comment: "A control message, 32 bytes.", Fields: []Field{
			{C: "magic", Go: "msgOffMagic", Type: "u32", Comment: "ER_MSG_MAGIC"},
			{C: "kind", Go: "msgOffKind", Type: "u32", Comment: "enum er_msg_kind"},
			{C: "pid", Go: "msgOffPid", Type: "u32"},
			{C: "tid", Go: "msgOffTid", Type: "u32"},
			{C: "time", Go: "msgOffTime", Type: "u64", Comment: "CLOCK_MONOTONIC ns; for kinds 4-6 and 8 the instance's start_ns"},
			{C: "arg", Go: "msgOffArg", Type: "u32", Comment: "1-3, 16: the signal; 4-6: the parent's pid; 7, 8: the errno; 17: a system call; 18: the soft descriptor limit"},
			{C: "aux", Go: "msgOffAux", Type: "u32", Comment: "5: low 32 bits of the parent instance's start_ns; 8: the effective uid; 10: the uid; 16, 17: more (see the kinds); 18: the hard descriptor limit"},
		}},
	},
}
