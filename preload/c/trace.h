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
	uint32_t stop_errno; /* recording stopped for good: the error (ENOSPC: the disk is full); 0: it ran on */
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

/* The 16-byte prefix of every record. size counts the whole record, prefix included, a
 * multiple of 8. time is CLOCK_MONOTONIC ns: for events, when the call returned (or when
 * the signal arrived). */
struct er_rec {
	uint16_t size8; /* record size in units of 8 bytes; 0 = no record here */
	uint8_t kind;   /* enum er_rec_kind */
	uint8_t aux;    /* heap/sync/io: the operation (experiment.HeapOp, SyncOp, IOOp); map: 0 = mapped,
			 * 1 = unmapped, 2 = mapped before the library started */
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
