/* collector.h: what the parts of the collector library share: per-thread state, the record
 * writer, and the real functions behind the interposed ones. */
#ifndef ER_COLLECTOR_H
#define ER_COLLECTOR_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include "trace.h"

#define ER_HIDDEN __attribute__((visibility("hidden")))
#define ER_EXPORT __attribute__((visibility("default")))
#define ER_TLS __thread __attribute__((tls_model("initial-exec")))
#define ER_STR2(x) #x
#define ER_STR(x) ER_STR2(x)

#define ER_TIMER_COOKIE ((void *)0x6572636cUL) /* sigev_value of the library's SIGPROF timers */

/* Output slots of a thread: one current block per data file. */
enum er_slot { SLOT_HEAP, SLOT_SYNC, SLOT_IO, SLOT_CLOCK, SLOT_STACKS, SLOT_N };

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

/* Signal levels. A signal handler runs at the level above the code it interrupted, which may be in
 * the middle of a record: each level has blocks and a stack cache of its own, so that a handler
 * (the library's SIGPROF handler, or a handler of the program's that allocates) records without
 * touching what the interrupted code was writing. Level 0 is the program outside handlers. */
#define ER_LEVELS 4
/* Handlers nest deeper than the levels that record: past ER_LEVELS nothing is recorded, but the depth
 * is still counted (up to ER_DEPTH), so that a longjmp out of a handler finds the right level. */
#define ER_DEPTH 16

struct er_level {
	struct er_block blk[SLOT_N];
	struct er_stack_cache *cache; /* mmap'd lazily */
};

/* What busy holds: 0, the calls the thread makes are recorded; ER_BUSY, it is inside the collector
 * (calls are the collector's own, or the traced call's own); ER_HOLD, it is in fork's handlers or a
 * vfork child, where nothing may be recorded, not even by a signal handler. */
#define ER_BUSY 1
#define ER_HOLD 2

/* er_thread is a thread's state, in initial-exec TLS (no allocation on first use). */
struct er_thread {
	int32_t tid;        /* 0 until first use */
	int32_t busy;       /* 0, ER_BUSY or ER_HOLD (offset 4: vfork's assembly uses it) */
	int32_t level;      /* the signal level: 0 outside signal handlers (up to ER_DEPTH-1) */
	int32_t registered; /* the thread-exit destructor is set */
	struct er_level lv[ER_LEVELS];
	uint64_t entered[ER_DEPTH]; /* entered[l]: what er_signal_enter saved on entering level l */
	void *timer;        /* SIGPROF fallback: this thread's CPU-time timer id, or NULL */
	int32_t has_timer;
	uint64_t cpu_last;  /* SIGPROF fallback: the thread's CPU time at its last sample, ns */
	uint64_t cpu_left;  /* and what of it no sample has counted yet (less than an interval) */
	uint32_t clock_stack; /* SIGPROF fallback: the stack id of the thread's last sample, 0 before it */
};

extern struct er_state er ER_HIDDEN;
extern ER_TLS struct er_thread er_self ER_HIDDEN;

/* How a library instance began (the info file's how=). */
enum er_how { ER_HOW_FOUNDER = 1, ER_HOW_FORK, ER_HOW_EXEC };

/* er_state is the library's global state. An instance is the library in one process image: the
 * founder, a fork child (which starts a new instance in the same image) or an exec'd image. */
struct er_state {
	int active;          /* this instance is followed: it has its directory under .proc */
	int heap, sync, io;  /* tracing enabled */
	int clock;           /* SIGPROF clock profiling enabled */
	int want;            /* bit per slot: the data files this instance writes (a fork child too) */
	uint64_t sync_threshold_ns;
	uint64_t clock_interval_ns;
	int stopped;         /* recording stopped for good: a data file could not grow (the disk is full) */
	int stop_errno;      /* why */
	uint64_t start_ns;   /* CLOCK_MONOTONIC when this instance started */
	uintptr_t self_lo, self_hi; /* this library's text: frames to skip */
	/* processes and control */
	int pid;             /* this instance's process */
	int ppid;
	int how;             /* enum er_how */
	int follow;          /* ER_FOLLOW: descendants are recorded */
	uint64_t parent_start_ns; /* fork: the parent instance's start_ns; exec: ER_PARENT_START_NS */
	int sample_sig, pause_sig; /* ER_SAMPLE_SIGNAL, ER_PAUSE_SIGNAL; 0: none */
	int paused;          /* this process's pause flag (the pause signal toggles it) */
	char expdir[4096];   /* ER_EXPDIR */
	char dir[4200];      /* this instance's directory: ER_EXPDIR/.proc/<pid>.<start_ns> */
	char control[4200];  /* the FIFO: ER_EXPDIR/.control */
};

/* The control page that er writes (ER_EXPDIR/.proc/state), mapped read-only; a page of zeros
 * when there is none. */
#define ER_STATE_MAGIC 0x53524545u /* "EERS" */
#define ER_STATE_STOP 2            /* word index: recording stopped for good */
#define ER_STATE_PAUSE_ALL 3       /* word index: paused by er */
extern const volatile uint32_t *er_ctl ER_HIDDEN;

/* er_off says whether events are not to be recorded now: this process is paused (pause signal), or
 * er paused or stopped recording (the control page's pause_all or stop word). The interposed calls
 * still run. */
static inline int er_off(void)
{
	return __atomic_load_n(&er.paused, __ATOMIC_RELAXED) | __atomic_load_n(&er.stopped, __ATOMIC_RELAXED) |
	       (__atomic_load_n((const volatile uint64_t *)(er_ctl + ER_STATE_STOP), __ATOMIC_RELAXED) != 0);
}

/* Control messages, library -> er, 32 bytes each, written to the FIFO ER_EXPDIR/.control. */
#define ER_MSG_MAGIC 0x31435245u /* "ERC1" */
enum er_msg_kind {
	ER_MSG_SAMPLE = 1,
	ER_MSG_PAUSED,
	ER_MSG_RESUMED,
	ER_MSG_STARTED,
	ER_MSG_FORKED,
	ER_MSG_EXECED,
	ER_MSG_STOPPED, /* recording stopped for good: arg is the errno (ENOSPC: the disk is full) */
};
struct er_msg {
	uint32_t magic;
	uint32_t kind;
	uint32_t pid;
	uint32_t tid;
	uint64_t time;  /* CLOCK_MONOTONIC ns; for 4-6 the instance's start_ns */
	uint32_t arg;   /* 1-3: the signal; 4-6: the parent's pid; 7: the errno */
	uint32_t parent_start_lo32; /* 5: low 32 bits of the parent instance's start_ns */
};
_Static_assert(sizeof(struct er_msg) == 32, "er_msg");


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
/* er_fd_mine says whether fd is a descriptor the library holds; er_fd_move moves it to another
 * number (the program dup2s onto it). */
ER_HIDDEN int er_fd_mine(int fd);
ER_HIDDEN void er_fd_move(int fd);
/* er_close_range is the close_range system call around the library's descriptors. */
ER_HIDDEN int er_close_range(unsigned first, unsigned last, int flags);
ER_HIDDEN void er_maps_update(void);
ER_HIDDEN void er_clock_init(void);
ER_HIDDEN void er_clock_thread_start(struct er_thread *t);
ER_HIDDEN void er_clock_thread_stop(struct er_thread *t);
/* er_clock_tail records, at a thread's end, its CPU time since its last sample (see clock.c). */
ER_HIDDEN void er_clock_tail(struct er_thread *t);
ER_HIDDEN void er_clock_unblock(void);  /* SIGPROF unblocked in this thread; the program's view kept */
ER_HIDDEN int er_clock_held(void);      /* a SIGPROF of the program's must wait: it is held */
ER_HIDDEN int er_sigprof_kept(void);    /* the library keeps SIGPROF */
ER_HIDDEN void er_sync_calibrate(void);
ER_HIDDEN void er_io_init(void);
/* er_own_writes counts the write system calls the collector makes itself (messages, file headers),
 * which the I/O tracing's count of the process's system calls leaves out. */
ER_HIDDEN extern uint64_t er_own_writes;
ER_HIDDEN long er_sys(long n, long a, long b, long c, long d, long e, long f);
/* er_parse_u64 parses a decimal number; *ok says whether s was one. */
ER_HIDDEN uint64_t er_parse_u64(const char *s, int *ok);
/* er_clock_sample records a clock sample: the SIGPROF handler, for the library's own timers. */
ER_HIDDEN void er_clock_sample(siginfo_t *si, void *uc);

/* Processes and control (control.c). */
ER_HIDDEN void er_ctl_map(void);                    /* maps the control page */
ER_HIDDEN void er_send(uint32_t kind, uint32_t arg, uint32_t parent_lo, uint64_t time);
ER_HIDDEN void er_signals_init(void);               /* handlers for the sample and pause signals */
ER_HIDDEN int er_guard_signal(int sig, int why);    /* takes sig over; 0 when it cannot */
ER_HIDDEN void er_signals_release(void);            /* gives the program its own handlers back */
ER_HIDDEN void er_fork_child(void);                 /* re-initialises the library in a fork child */
/* er_signal_enter enters a signal handler's level: its calls are recorded (unless the thread holds,
 * or the levels are used up); it returns what er_signal_leave restores. */
ER_HIDDEN uint64_t er_signal_enter(struct er_thread *t);
ER_HIDDEN void er_signal_leave(struct er_thread *t, uint64_t saved);
/* er_signal_unwound is called by longjmp and its relatives: the handler at the top level is left
 * for good; the code it jumps to runs at the level below. */
ER_HIDDEN void er_signal_unwound(void);
ER_HIDDEN void er_jmp_init(void);
#define ER_GUARD_CLOCK 1
#define ER_GUARD_SAMPLE 2
#define ER_GUARD_PAUSE 4

#endif
