/* collector.h: what the parts of the collector library share: per-thread state, the record
 * writer, and the real functions behind the interposed ones. */
#ifndef ER_COLLECTOR_H
#define ER_COLLECTOR_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "control.h"
#include "trace.h"

/* What older C library headers may lack. */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

#define ER_HIDDEN __attribute__((visibility("hidden")))
#define ER_EXPORT __attribute__((visibility("default")))
#define ER_TLS __thread __attribute__((tls_model("initial-exec")))
#define ER_STR2(x) #x
#define ER_STR(x) ER_STR2(x)

#define ER_TIMER_COOKIE ((void *)0x6572636cUL) /* sigev_value of the library's SIGPROF timers */
/* ER_RELAY_COOKIE (control.h): si_value of a sample or pause signal that er collect passes on
 * (sigqueue): not the program's. */

/* Output slots of a thread: one current block per data file. */
enum er_slot { SLOT_HEAP, SLOT_SYNC, SLOT_IO, SLOT_CLOCK, SLOT_OMP, SLOT_JAVA, SLOT_STACKS, SLOT_N };

struct er_block {
	char *base;   /* mapped block, or NULL */
	uint32_t off; /* bytes used */
	uint32_t file;
	uint32_t reg; /* its slot in the register of mapped blocks (life.c), 1-based */
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
	int omp;             /* OpenMP regions and states recorded (omp.c) */
	int java;            /* a JVM's methods and code recorded (java.c, the JVMTI agent) */
	int dyn;             /* the program's generated functions recorded (dynfunc.c, collector_func_load) */
	int clock;           /* SIGPROF clock profiling enabled */
	int want;            /* bit per slot: the data files this instance writes (a fork child too) */
	uint64_t sync_threshold_ns;
	uint64_t clock_interval_ns;
	int stopped;         /* recording stopped for good: a data file could not grow (the disk is full) */
	int ended;           /* the instance has ended: er stopped the collection, or is gone (life.c) */
	int env_pending;     /* the library's variables are still to be taken out of the environment */
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
	int sealed;          /* a seccomp filter may deny the library's system calls: it makes none (seccomp.c) */
	int seccomp_checked; /* the seccomp filters in force that allow the library's system calls */
	char expdir[4096];   /* ER_EXPDIR */
	char dir[4200];      /* this instance's directory: ER_EXPDIR/.proc/<pid>.<start_ns> */
	char control[4200];  /* the FIFO: ER_EXPDIR/.control */
};

/* The control page that er writes (ER_EXPDIR/.proc/state), mapped read-only; a page of zeros
 * when there is none. Its words (ER_STATE_*) are in control.h. */
extern const volatile uint32_t *er_ctl ER_HIDDEN;

static inline uint32_t er_ctl_stop(void) { return __atomic_load_n(er_ctl + ER_STATE_STOP, __ATOMIC_RELAXED); }

/* er_end ends this instance when er has ended the collection (life.c). */
ER_HIDDEN void er_end(void);

/* er_off says whether events are not to be recorded now: this process is paused (pause signal), or
 * er paused or stopped recording (the control page's pause_all or stop word), or the instance has
 * ended (which the stop word's ER_STATE_STOP_ENDED does here, the first time it is seen). The
 * interposed calls still run. Async-signal-safe. */
static inline int er_off(void)
{
	uint32_t stop = er_ctl_stop();
	if (__builtin_expect(stop == ER_STATE_STOP_ENDED && !__atomic_load_n(&er.ended, __ATOMIC_RELAXED), 0))
		er_end();
	return __atomic_load_n(&er.paused, __ATOMIC_RELAXED) | __atomic_load_n(&er.stopped, __ATOMIC_RELAXED) |
	       __atomic_load_n(&er.ended, __ATOMIC_RELAXED) | (stop != 0) |
	       (__atomic_load_n(er_ctl + ER_STATE_PAUSE_ALL, __ATOMIC_RELAXED) != 0);
}

/* er_off_call is er_off for an interposed call of the program's, made outside signal handlers and
 * the library: where the instance has ended it also takes the library's variables out of the
 * environment (life.c), which may not be done in a signal handler. */
ER_HIDDEN void er_env_tidy(void);
extern volatile uint32_t *er_mark ER_HIDDEN; /* 1; 0 in a child that no fork handler ran in (life.c) */
/* er_child_unstarted says whether this is a process the program cloned itself, with no instance yet. */
static inline int er_child_unstarted(void) { return __builtin_expect(*er_mark == 0, 0); }
ER_HIDDEN void er_clone_child(void); /* collector.c: starts the instance of a child the program cloned */
static inline int er_off_call(void)
{
	if (er_child_unstarted())
		er_clone_child(); /* before the call is timed: its records are the child's instance's */
	int off = er_off();
	if (__builtin_expect(off && __atomic_load_n(&er.env_pending, __ATOMIC_RELAXED), 0))
		er_env_tidy();
	return off;
}

/* Control messages, library -> er, written to the FIFO ER_EXPDIR/.control: struct er_msg and its
 * kinds are in control.h. */


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
/* er_fd_high moves fd out of the program's way (CLOEXEC): above the program's soft descriptor limit
 * while it is lifted (er_fd_lift), else near a limit above ER_FD_ROOM; -1 (EMFILE, fd closed) where
 * there is no such number. */
ER_HIDDEN int er_fd_high(int fd);
/* er_fd_lift makes room for an instance's descriptors as it starts (single-threaded: a fork child,
 * an image's constructor): it lifts the soft RLIMIT_NOFILE toward the hard one until er_fd_unlift,
 * so that the library's descriptors lie above every number the program's own open can return. 0,
 * or -EMFILE where there is no room: a soft limit of ER_FD_ROOM or less that is the hard one too. */
#define ER_FD_ROOM 64
ER_HIDDEN int er_fd_lift(void);
ER_HIDDEN void er_fd_unlift(void);
ER_HIDDEN void er_fd_limits(uint32_t *soft, uint32_t *hard); /* RLIMIT_NOFILE, capped, for ER_MSG_NOFILE */
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
/* er_omp_record records thread t's time in OpenMP state from t0 to t1 in region (omp.c). */
ER_HIDDEN void er_omp_record(int state, uint64_t t0, uint64_t t1, uint64_t region);
ER_HIDDEN void er_io_init(void);
/* er_own_writes counts the write system calls the collector makes itself (messages, file headers),
 * which the I/O tracing's count of the process's system calls leaves out. */
ER_HIDDEN extern uint64_t er_own_writes;
ER_HIDDEN long er_sys(long n, long a, long b, long c, long d, long e, long f);
/* er_put_u64 writes v in decimal at p (no NUL) and returns the end (io.c). */
ER_HIDDEN char *er_put_u64(char *p, uint64_t v);
/* er_parse_u64 parses a decimal number; *ok says whether s was one. */
ER_HIDDEN uint64_t er_parse_u64(const char *s, int *ok);
/* er_clock_sample records a clock sample: the SIGPROF handler, for the library's own timers. */
ER_HIDDEN void er_clock_sample(siginfo_t *si, void *uc);

/* The descriptors the library holds besides its data files (life.c), opened when an instance
 * starts, before the program can chroot, change its mount namespace or drop its privileges: the
 * experiment directory, the instance's own directory, the FIFO, the directory of a user that the
 * process's privileges were dropped to, and er's process (a pidfd, where the FIFO is not ours). */
enum er_held_kind { HELD_EXP, HELD_INST, HELD_FIFO, HELD_DROP, HELD_PIDFD, HELD_N };
struct er_held {
	int fd;            /* -1: none */
	uint64_t dev, ino; /* the file it was opened on: the program may have closed and reused the number */
};
extern struct er_held er_held[HELD_N] ER_HIDDEN;
extern char er_lib_path[4096] ER_HIDDEN; /* the library's own file, as the loader found it */
ER_HIDDEN int er_held_fd(int h);             /* the descriptor, or -1 when it is no longer the library's */
ER_HIDDEN void er_held_set(int h, int fd);   /* holds fd (moved up, CLOEXEC) */
ER_HIDDEN void er_held_close(int h);
ER_HIDDEN int er_expdir_open(void);         /* holds the experiment directory and the FIFO; -errno */
ER_HIDDEN int er_collector_gone(void);      /* er is gone (killed) or has removed the FIFO */
ER_HIDDEN void er_watch(uint64_t now);      /* looks, at most every ER_WATCH_NS, whether er is gone */
#define ER_WATCH_NS 10000000ull
ER_HIDDEN int er_env_clean(void);           /* takes the library's variables out of the environment */
ER_HIDDEN int er_block_register(char *base); /* a mapped block's register slot (1-based), 0 when full */
ER_HIDDEN void er_block_unregister(uint32_t slot, char *base); /* before its munmap */
ER_HIDDEN void er_blocks_forget(int replace);   /* a child's blocks are its parent's: unmaps them */
ER_HIDDEN int er_by_er_root(char *p, size_t size); /* the experiment's path through er's root in /proc; 0: none */
/* er_seal: a seccomp filter about to take effect may deny the library's system calls (seccomp.c): the
 * instance stops and gives up all it holds, as one that ends does, while it still may, and makes no
 * system call of its own from then on (er.sealed). */
ER_HIDDEN void er_seal(void);
ER_HIDDEN void er_mark_init(void);
ER_HIDDEN void er_mark_set(void);
ER_HIDDEN void er_ended_files(void);         /* collector.c: the data files' header pages made anonymous */
ER_HIDDEN void er_close_files(void);         /* collector.c: the data files' descriptors closed */
ER_HIDDEN void er_env_parent_forget(void);   /* collector.c: ER_PARENT_START_NS is no longer rewritten */
/* er_fds_enter says whether the library's descriptors may be used (until er_fds_leave): not once the
 * instance has ended; er_fds_end closes them when no thread uses them; er_fds_child resets the count
 * in a new child process. */
ER_HIDDEN int er_fds_enter(void);
ER_HIDDEN void er_fds_leave(void);
ER_HIDDEN void er_fds_end(void);
ER_HIDDEN void er_fds_child(void);

/* er_halt stops the recording for good as a full disk does (why: an errno, or ER_STOP_SECCOMP of trace.h),
 * without telling er; 1 when it stopped it. er_close_files then closes the data files. */
ER_HIDDEN int er_halt(int why, uint64_t now);

/* Seccomp filters (seccomp.c). er_seccomp_start says, at an instance's start, whether the library may
 * make its system calls (0: a filter it could not check is in force); er_seccomp_note writes what it
 * knows of the filters into the instance's directory, for the images it execs. */
ER_HIDDEN int er_seccomp_start(void);
ER_HIDDEN void er_seccomp_note(void);
ER_HIDDEN int er_seccomp_allows(long nr); /* sealed: whether the filters allow the library system call nr */

/* Processes and control (control.c). */
ER_HIDDEN void er_ctl_map(void);                    /* maps the control page */
ER_HIDDEN void er_ctl_forget(void);                 /* its mapping made anonymous (zeros) */
ER_HIDDEN void er_signals_end(void);                /* an ended instance gives back what it can */
ER_HIDDEN void er_send(uint32_t kind, uint32_t arg, uint32_t parent_lo, uint64_t time);
/* er_send_unheld sends a message by the FIFO's name: an instance that holds its descriptors no longer. */
ER_HIDDEN void er_send_unheld(uint32_t kind, uint32_t arg, uint32_t aux);
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
