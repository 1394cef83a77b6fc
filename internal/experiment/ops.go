package experiment

// The I/O operations (IOOpen, ...), as the collector library numbers them in its records, are
// generated from internal/tracedef (tracelayout.go).

type ioOpInfo struct {
	name  string
	class IOClass
}

var ioOps = map[IOOp]ioOpInfo{
	IOOpen: {"open", IOOther}, IOOpenat: {"openat", IOOther}, IOCreat: {"creat", IOOther},
	IOClose: {"close", IOOther}, IOReadOp: {"read", IORead}, IOWriteOp: {"write", IOWrite},
	IOPread: {"pread", IORead}, IOPwrite: {"pwrite", IOWrite}, IOReadv: {"readv", IORead},
	IOWritev: {"writev", IOWrite}, IOPreadv: {"preadv", IORead}, IOPwritev: {"pwritev", IOWrite},
	IOLseek: {"lseek", IOOther}, IOFsync: {"fsync", IOOther}, IOFdatasync: {"fdatasync", IOOther},
	IODup: {"dup", IOOther}, IODup2: {"dup2", IOOther}, IODup3: {"dup3", IOOther},
	IOPipe: {"pipe", IOOther}, IOPipe2: {"pipe2", IOOther},
	IOFopen: {"fopen", IOOther}, IOFdopen: {"fdopen", IOOther}, IOFreopen: {"freopen", IOOther},
	IOFclose: {"fclose", IOOther}, IOFread: {"fread", IORead}, IOFwrite: {"fwrite", IOWrite},
	IOFgets: {"fgets", IORead}, IOFputs: {"fputs", IOWrite}, IOFgetc: {"fgetc", IORead},
	IOFputc: {"fputc", IOWrite}, IOFprintf: {"fprintf", IOWrite}, IOVfprintf: {"vfprintf", IOWrite},
	IOPrintf: {"printf", IOWrite}, IOVprintf: {"vprintf", IOWrite}, IOPuts: {"puts", IOWrite},
	IOFflush: {"fflush", IOOther}, IOFseek: {"fseek", IOOther}, IOGetc: {"getc", IORead},
	IOPutc: {"putc", IOWrite}, IOInherited: {"<inherited>", 0},
}

// String is the name of the function the operation stands for.
func (op IOOp) String() string {
	if i, ok := ioOps[op]; ok {
		return i.name
	}
	return "io_op_" + itoa(int(op))
}

// Class says which metrics the operation feeds: read, write or other I/O; 0 for IOInherited
// and unknown operations.
func (op IOOp) Class() IOClass { return ioOps[op].class }

var heapOpNames = [...]string{"", "malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
	"memalign", "valloc", "pvalloc", "reallocarray", "mmap", "munmap"}

// String is the name of the function the operation stands for.
func (op HeapOp) String() string {
	if int(op) < len(heapOpNames) && op != 0 {
		return heapOpNames[op]
	}
	return "heap_op_" + itoa(int(op))
}

var syncOpNames = [...]string{"", "pthread_mutex_lock", "pthread_cond_wait", "pthread_rwlock_rdlock",
	"pthread_rwlock_wrlock", "pthread_join", "sem_wait", "pthread_barrier_wait", "pthread_spin_lock"}

// String is the name of the function family the operation stands for.
func (op SyncOp) String() string {
	if int(op) < len(syncOpNames) && op != 0 {
		return syncOpNames[op]
	}
	return "sync_op_" + itoa(int(op))
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}
