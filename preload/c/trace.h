/* trace.h: the record layout of the collector library's trace files.
 *
 * Every trace file of an experiment (heaptrace, synctrace, iotrace, clocktrace, tracestacks)
 * has the same shape, documented in docs/trace-format.md and read by internal/experiment:
 *
 *   offset 0:    a file header (struct er_file_header), padded to ER_HEADER_SIZE bytes;
 *   then blocks of ER_BLOCK_SIZE bytes, each owned by one thread while it fills it.
 *
 * A block holds records, 8-byte aligned, one after another. Every record starts with
 * struct er_rec. A record's first 8 bytes are written last (size, kind, tid), after its body, so
 * a reader of a live or crashed experiment sees either a whole record or a zero word: a zero
 * size ends the block's records. Numbers are little-endian (x86-64 native).
 */
#ifndef ER_TRACE_H
#define ER_TRACE_H

#include <stdint.h>

#define ER_MAGIC "ERTRACE1"
#define ER_VERSION 1
#define ER_HEADER_SIZE 4096
#define ER_BLOCK_SIZE (64 * 1024)
#define ER_MAX_FRAMES 256
#define ER_STOP_SECCOMP 0x10000 /* stop_errno: a seccomp filter the process installed denies the library's system calls */

/* Which data a file holds (er_file_header.kind). */
enum er_file_kind {
	ER_FILE_HEAP = 1,
	ER_FILE_SYNC = 2,
	ER_FILE_IO = 3,
	ER_FILE_CLOCK = 4,
	ER_FILE_STACKS = 5, /* stacks, load-object mappings and notes */
};

struct er_file_header {
	char magic[8];       /* ER_MAGIC */
	uint32_t version;    /* ER_VERSION */
	uint32_t kind;       /* enum er_file_kind */
	uint32_t block_size; /* ER_BLOCK_SIZE */
	uint32_t pid;        /* the process writing the file */
	uint64_t param;      /* clock: the interval in ns; sync: the threshold in ns; else 0 */
	uint64_t start_ns;   /* CLOCK_MONOTONIC when the library started */
	/* What was not recorded, updated while the process runs (the header page stays mapped, and a
	 * store into it needs no new space on the disk). */
	uint32_t stop_errno; /* recording stopped for good: the error (ENOSPC: the disk is full), or ER_STOP_SECCOMP; 0: it ran on */
	uint32_t pad;
	uint64_t stop_ns;    /* CLOCK_MONOTONIC when it stopped */
	uint64_t lost;       /* records of this file that could not be written (no block to write them in) */
};

/* Record kinds (er_rec.kind). */
enum er_rec_kind {
	ER_REC_STACK = 1, /* struct er_rec_stack: a call stack, referred to by id */
	ER_REC_HEAP = 2,  /* struct er_rec_heap */
	ER_REC_SYNC = 3,  /* struct er_rec_sync */
	ER_REC_IO = 4,    /* struct er_rec_io, then name bytes */
	ER_REC_CLOCK = 5, /* struct er_rec_clock */
	ER_REC_MAP = 6,   /* struct er_rec_map, then the path */
	ER_REC_NOTE = 7,  /* struct er_rec, then text "key=value" */
};

/* Operations (er_rec.aux of heap, sync and I/O records): which function the event records.
 * internal/experiment has the same numbers (HeapOp, SyncOp, IOOp); its contract test compares them. */
enum er_heap_op {
	ER_HEAP_MALLOC = 1,
	ER_HEAP_CALLOC = 2,
	ER_HEAP_REALLOC = 3,
	ER_HEAP_FREE = 4, /* written short, as struct er_rec_free, when it needs no stack */
	ER_HEAP_POSIX_MEMALIGN = 5,
	ER_HEAP_ALIGNED_ALLOC = 6,
	ER_HEAP_MEMALIGN = 7,
	ER_HEAP_VALLOC = 8,
	ER_HEAP_PVALLOC = 9,
	ER_HEAP_REALLOCARRAY = 10,
	ER_HEAP_MMAP = 11,
	ER_HEAP_MUNMAP = 12,
};

enum er_sync_op {
	ER_SYNC_MUTEX_LOCK = 1, /* pthread_mutex_lock, _timedlock, _clocklock */
	ER_SYNC_COND_WAIT = 2,  /* pthread_cond_wait, _timedwait, _clockwait */
	ER_SYNC_RWLOCK_RDLOCK = 3,
	ER_SYNC_RWLOCK_WRLOCK = 4,
	ER_SYNC_JOIN = 5, /* pthread_join, pthread_timedjoin_np, pthread_clockjoin_np */
	ER_SYNC_SEM_WAIT = 6,
	ER_SYNC_BARRIER_WAIT = 7,
};

enum er_io_op {
	ER_IO_OPEN = 1, ER_IO_OPENAT, ER_IO_CREAT, ER_IO_CLOSE, ER_IO_READ, ER_IO_WRITE, ER_IO_PREAD, ER_IO_PWRITE,
	ER_IO_READV, ER_IO_WRITEV, ER_IO_PREADV, ER_IO_PWRITEV, ER_IO_LSEEK, ER_IO_FSYNC, ER_IO_FDATASYNC, ER_IO_DUP,
	ER_IO_DUP2, ER_IO_DUP3, ER_IO_PIPE, ER_IO_PIPE2,
	ER_IO_FOPEN = 32, ER_IO_FDOPEN, ER_IO_FREOPEN, ER_IO_FCLOSE, ER_IO_FREAD, ER_IO_FWRITE, ER_IO_FGETS,
	ER_IO_FPUTS, ER_IO_FGETC, ER_IO_FPUTC, ER_IO_FPRINTF, ER_IO_VFPRINTF, ER_IO_PRINTF, ER_IO_VPRINTF, ER_IO_PUTS,
	ER_IO_FFLUSH, ER_IO_FSEEK, ER_IO_GETC, ER_IO_PUTC,
	ER_IO_INHERITED = 63, /* not a call: a descriptor open when tracing began (the name is its /proc/self/fd link) */
};

/* er_rec.aux of a map record. */
enum er_map_aux {
	ER_MAP_MAPPED = 0,
	ER_MAP_UNMAPPED = 1,
	ER_MAP_INITIAL = 2, /* mapped before the library started */
};

/* The 16-byte prefix of every record. size counts the whole record, prefix included, a
 * multiple of 8. time is CLOCK_MONOTONIC ns: for events, when the call returned (or when
 * the signal arrived). */
struct er_rec {
	uint16_t size8; /* record size in units of 8 bytes; 0 = no record here */
	uint8_t kind;   /* enum er_rec_kind */
	uint8_t aux;    /* heap/sync/io: the operation (enum er_heap_op, er_sync_op, er_io_op); map: enum
			 * er_map_aux */
	uint32_t tid;
	uint64_t time;
};

/* A call stack, leaf first. Stack ids are unique in a process; id 0 is the empty stack. For
 * events, frame 0 is the address of the traced function (the real libc function) and the
 * others are return addresses. For clock records frame 0 is the interrupted PC. A stack whose
 * unwinding stopped early ends with a pseudo-frame (0xfffffffffffff001 truncated,
 * 0xfffffffffffff002 unwind failed). */
struct er_rec_stack {
	struct er_rec h;
	uint32_t id;
	uint32_t n;
	/* uint64_t pcs[n]; */
};

/* A heap event. A free (op 4) that needs no stack is written short, as struct er_rec_free. */
struct er_rec_heap {
	struct er_rec h;
	uint32_t stack;
	uint32_t pad;
	uint64_t addr; /* block returned, 0 for free or failure */
	uint64_t size; /* bytes requested; munmap: length */
	uint64_t old;  /* block freed: free's, realloc's argument; munmap: address */
};

/* An allocation of less than 4 GiB that frees nothing is written short, as struct er_rec_alloc. */
struct er_rec_alloc {
	struct er_rec h;
	uint32_t stack;
	uint32_t size;
	uint64_t addr;
};

struct er_rec_free {
	struct er_rec h;
	uint64_t old; /* the block freed */
};

struct er_rec_sync {
	struct er_rec h;
	uint32_t stack;
	uint32_t pad;
	uint64_t wait_ns;
	uint64_t object;
};

struct er_rec_io {
	struct er_rec h;
	uint32_t stack;
	uint32_t name_len; /* bytes of the file name after the record (no NUL), padded to 8 */
	uint64_t dur_ns;
	int32_t fd;
	int32_t fd2;
	int64_t ret;
	int64_t bytes;
	int32_t err;
	uint32_t pad;
};

struct er_rec_clock {
	struct er_rec h;
	uint32_t stack;
	uint32_t count; /* 1 + the timer's overrun: how many intervals this record stands for */
	uint32_t cpu;   /* the CPU the handler ran on */
	uint32_t pad;
};

struct er_rec_map {
	struct er_rec h;
	uint64_t start, end; /* executable segment [start, end) */
	uint64_t offset;     /* file offset of start */
	uint32_t path_len;   /* bytes of the path after the record (no NUL), padded to 8 */
	uint32_t pad;
};

_Static_assert(sizeof(struct er_file_header) == 64, "er_file_header");
_Static_assert(sizeof(struct er_rec) == 16, "er_rec");
_Static_assert(sizeof(struct er_rec_stack) == 24, "er_rec_stack");
_Static_assert(sizeof(struct er_rec_heap) == 48, "er_rec_heap");
_Static_assert(sizeof(struct er_rec_alloc) == 32, "er_rec_alloc");
_Static_assert(sizeof(struct er_rec_free) == 24, "er_rec_free");
_Static_assert(sizeof(struct er_rec_sync) == 40, "er_rec_sync");
_Static_assert(sizeof(struct er_rec_io) == 64, "er_rec_io");
_Static_assert(sizeof(struct er_rec_clock) == 32, "er_rec_clock");
_Static_assert(sizeof(struct er_rec_map) == 48, "er_rec_map");

#endif
