/* collector.h: what the parts of the collector library share: per-thread state, the record
 * writer, and the real functions behind the interposed ones. */
#ifndef ER_COLLECTOR_H
#define ER_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>
#include "trace.h"

#define ER_HIDDEN __attribute__((visibility("hidden")))
#define ER_EXPORT __attribute__((visibility("default")))
#define ER_TLS __thread __attribute__((tls_model("initial-exec")))

/* Output slots of a thread: one current block per data file, and a second stack slot that only
 * the SIGPROF handler uses, so that a signal never writes into a block the thread is filling. */
enum er_slot { SLOT_HEAP, SLOT_SYNC, SLOT_IO, SLOT_CLOCK, SLOT_STACKS, SLOT_SIGSTACKS, SLOT_N };

struct er_block {
	char *base;   /* mapped block, or NULL */
	uint32_t off; /* bytes used */
	uint32_t file;
};

#define ER_STACK_CACHE 2048 /* per-thread cache of stack hashes to ids, a power of 2 */

struct er_stack_cache {
	uint64_t hash[ER_STACK_CACHE];
	uint32_t id[ER_STACK_CACHE];
};

/* er_thread is a thread's state, in initial-exec TLS (no allocation on first use). */
struct er_thread {
	int32_t tid;               /* 0 until first use */
	int32_t busy;              /* inside the collector: calls made now are its own, not the target's */
	int32_t in_signal;         /* inside the SIGPROF handler */
	int32_t registered;        /* the thread-exit destructor is set */
	struct er_block blk[SLOT_N];
	struct er_stack_cache *cache[2]; /* [0] for events, [1] for the signal handler; mmap'd lazily */
	void *timer;               /* SIGPROF fallback: this thread's CPU-time timer id, or NULL */
	int32_t has_timer;
};

/* er_state is the library's global state. */
struct er_state {
	int active;          /* this process records (it created the trace files) */
	int heap, sync, io;  /* tracing enabled */
	int clock;           /* SIGPROF clock profiling enabled */
	uint64_t sync_threshold_ns;
	uint64_t clock_interval_ns;
	int fd[SLOT_N];      /* per file kind (SLOT_SIGSTACKS shares SLOT_STACKS' file) */
	uint64_t start_ns;
	uintptr_t self_lo, self_hi; /* this library's text: frames to skip */
	char dir[4096];
};

extern struct er_state er ER_HIDDEN;
extern ER_TLS struct er_thread er_self ER_HIDDEN;

/* Real functions, resolved with dlsym(RTLD_NEXT). */
extern void *(*real_malloc)(size_t) ER_HIDDEN;
extern void (*real_free)(void *) ER_HIDDEN;

ER_HIDDEN void er_init(void);
ER_HIDDEN void *er_next(const char *name);
ER_HIDDEN uint64_t er_now(void);
ER_HIDDEN struct er_thread *er_thread(void);
/* er_stack_here records the current call stack (below the library's own frames) with frame 0
 * set to leaf, and returns its id; 0 when no stack. */
ER_HIDDEN uint32_t er_stack_here(struct er_thread *t, uintptr_t leaf);
ER_HIDDEN uint32_t er_stack_context(struct er_thread *t, const void *ucontext);
/* er_rec_begin reserves size bytes (a multiple of 8) in the thread's block of slot, or NULL;
 * er_rec_commit publishes it. */
ER_HIDDEN void *er_rec_begin(struct er_thread *t, int slot, size_t size);
ER_HIDDEN void er_rec_commit(struct er_thread *t, void *rec, size_t size, int kind, int aux, uint64_t time);
ER_HIDDEN void er_note(const char *key, const char *value);
ER_HIDDEN void er_maps_update(void);
ER_HIDDEN void er_clock_init(void);
ER_HIDDEN void er_clock_thread_start(struct er_thread *t);
ER_HIDDEN void er_clock_thread_stop(struct er_thread *t);
ER_HIDDEN void er_sync_calibrate(void);
ER_HIDDEN void er_io_init(void);
ER_HIDDEN long er_sys(long n, long a, long b, long c, long d, long e, long f);

#endif
