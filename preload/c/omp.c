/* omp.c: OpenMP regions and thread states (docs/openmp.md), from two sources:
 *  - GCC's runtime (libgomp), which has no OpenMP tools interface: the entry points that compiled
 *    code calls (GOMP_*, omp_set_lock) are interposed. A parallel region's outlined function is run
 *    through a trampoline that records, on every thread of the team, when it starts and ends the
 *    region's work; the calls that can wait (barriers, critical, ordered and atomic sections,
 *    locks, the worksharing ends) are timed;
 *  - LLVM's runtime (libomp) and others with the tools interface (OMPT): the library is a tool
 *    (ompt_start_tool), and its callbacks record the same: the regions, each thread's implicit
 *    task (its work in a region), its waits at barriers, reductions and mutexes. Where OMPT is on,
 *    the interposers of GOMP_* (which libomp has too) record nothing.
 * A wait is recorded when it took at least ER_OMP_MIN_NS; the reader derives the states between
 * the records (idle, the implicit barrier at a region's end). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "collector.h"
#include "ompt.h"

/* The least time of a timed call that is recorded: below it the call's time is its caller's work
 * (a clock sample is 100 times as long at the highest rate). */
#define ER_OMP_MIN_NS 1000

typedef void (*omp_fn)(void *);

/* omp_call is what the trampoline gets in place of the outlined function's data: the master's
 * frame holds it until the region ends. */
struct omp_call {
	omp_fn fn;
	void *data;
	uint64_t id;
	uint32_t team; /* the threads that ran the trampoline */
};

static uint64_t next_region = 1;
static ER_TLS uint64_t omp_cur; /* the region whose work the thread is doing, 0: none */
static int ompt_on;             /* a runtime took the library as its OMPT tool: the interposers are idle */

void er_omp_record(int state, uint64_t t0, uint64_t t1, uint64_t region)
{
	struct er_thread *t = &er_self;
	if (t->busy || er_off())
		return;
	int saved = errno;
	t->busy = 1;
	t = er_thread();
	struct er_rec_omp_state *r = er_rec_begin(t, SLOT_OMP, sizeof *r);
	if (r) {
		r->start_ns = t0;
		r->region = region;
		er_rec_commit(t, r, sizeof *r, ER_REC_OMP_STATE, state, t1);
	}
	t->busy = 0;
	errno = saved;
}

__attribute__((noinline)) static void omp_tramp(void *arg)
{
	struct omp_call *c = arg;
	__atomic_add_fetch(&c->team, 1, __ATOMIC_RELAXED);
	uint64_t prev = omp_cur;
	omp_cur = c->id;
	uint64_t t0 = er_now();
	c->fn(c->data);
	uint64_t t1 = er_now();
	omp_cur = prev;
	er_omp_record(ER_OMP_WORK, t0, t1, c->id);
	__asm__ volatile("" ::: "memory"); /* the call above is not a tail call: its return address is here */
}

/* omp_stack returns this thread's stack, frame 0 being leaf. */
static uint32_t omp_stack(uintptr_t leaf)
{
	int saved = errno;
	struct er_thread *t = &er_self;
	t->busy = 1;
	t = er_thread();
	uint32_t stack = er_stack_here(t, leaf);
	t->busy = 0;
	errno = saved;
	return stack;
}

/* omp_begin readies c for a region of fn and data that the runtime's entry point real starts, and
 * says whether it is recorded; *t0 and *stack are the master's time and stack at the call. */
static int omp_begin(struct omp_call *c, omp_fn fn, void *data, void *real, uint64_t *t0, uint32_t *stack, uint64_t *parent)
{
	if (!er.omp || ompt_on || er_self.busy || er_off_call())
		return 0;
	c->fn = fn;
	c->data = data;
	c->id = __atomic_fetch_add(&next_region, 1, __ATOMIC_RELAXED);
	c->team = 0;
	*parent = omp_cur;
	*stack = omp_stack((uintptr_t)real);
	*t0 = er_now();
	return 1;
}

/* omp_region_record records a region of id from t0 to t1, its master this thread. */
static void omp_region_record(uint64_t id, uint64_t parent, uint64_t fn, uint32_t team, uint64_t t0, uint64_t t1, uint32_t stack)
{
	struct er_thread *t = &er_self;
	if (t->busy || er_off())
		return;
	int saved = errno;
	t->busy = 1;
	t = er_thread();
	struct er_rec_omp_region *r = er_rec_begin(t, SLOT_OMP, sizeof *r);
	if (r) {
		r->stack = stack;
		r->team = team;
		r->start_ns = t0;
		r->id = id;
		r->parent = parent;
		r->fn = fn;
		er_rec_commit(t, r, sizeof *r, ER_REC_OMP_REGION, 0, t1);
	}
	t->busy = 0;
	errno = saved;
}

static void omp_end(struct omp_call *c, uint64_t t0, uint32_t stack, uint64_t parent)
{
	omp_region_record(c->id, parent, (uint64_t)(uintptr_t)c->fn, __atomic_load_n(&c->team, __ATOMIC_RELAXED), t0, er_now(), stack);
}

/* REGION defines an interposer of an entry point that runs a parallel region of fn and data and
 * returns ret (void: REGION_VOID), with the parameters P after nthreads and the arguments A (each
 * an object-like macro that expands to a list with a leading comma). */
#define REGION_VOID(name, P, A)                                                                 \
	ER_EXPORT void name(omp_fn fn, void *data, unsigned nthreads P)                         \
	{                                                                                        \
		static void (*real)(omp_fn, void *, unsigned P);                                 \
		if (__builtin_expect(!real, 0))                                                  \
			real = er_next(#name);                                                   \
		struct omp_call c;                                                               \
		uint64_t t0, parent;                                                             \
		uint32_t stack;                                                                  \
		if (!omp_begin(&c, fn, data, (void *)real, &t0, &stack, &parent)) {              \
			real(fn, data, nthreads A);                                              \
			return;                                                                  \
		}                                                                                \
		real(omp_tramp, &c, nthreads A);                                                 \
		omp_end(&c, t0, stack, parent);                                                  \
	}
#define REGION(ret, name, P, A)                                                                 \
	ER_EXPORT ret name(omp_fn fn, void *data, unsigned nthreads P)                          \
	{                                                                                        \
		static ret (*real)(omp_fn, void *, unsigned P);                                  \
		if (__builtin_expect(!real, 0))                                                  \
			real = er_next(#name);                                                   \
		struct omp_call c;                                                               \
		uint64_t t0, parent;                                                             \
		uint32_t stack;                                                                  \
		if (!omp_begin(&c, fn, data, (void *)real, &t0, &stack, &parent))                \
			return real(fn, data, nthreads A);                                       \
		ret r = real(omp_tramp, &c, nthreads A);                                         \
		omp_end(&c, t0, stack, parent);                                                  \
		return r;                                                                        \
	}

#define P_FLAGS , unsigned flags
#define A_FLAGS , flags
#define P_LOOP , long start, long end, long incr, long chunk, unsigned flags
#define A_LOOP , start, end, incr, chunk, flags
#define P_RUNTIME , long start, long end, long incr, unsigned flags
#define A_RUNTIME , start, end, incr, flags
#define P_SECTIONS , unsigned count, unsigned flags
#define A_SECTIONS , count, flags

REGION_VOID(GOMP_parallel, P_FLAGS, A_FLAGS)
REGION(unsigned, GOMP_parallel_reductions, P_FLAGS, A_FLAGS)
REGION_VOID(GOMP_parallel_sections, P_SECTIONS, A_SECTIONS)
REGION_VOID(GOMP_parallel_loop_static, P_LOOP, A_LOOP)
REGION_VOID(GOMP_parallel_loop_dynamic, P_LOOP, A_LOOP)
REGION_VOID(GOMP_parallel_loop_guided, P_LOOP, A_LOOP)
REGION_VOID(GOMP_parallel_loop_nonmonotonic_dynamic, P_LOOP, A_LOOP)
REGION_VOID(GOMP_parallel_loop_nonmonotonic_guided, P_LOOP, A_LOOP)
REGION_VOID(GOMP_parallel_loop_runtime, P_RUNTIME, A_RUNTIME)
REGION_VOID(GOMP_parallel_loop_nonmonotonic_runtime, P_RUNTIME, A_RUNTIME)
REGION_VOID(GOMP_parallel_loop_maybe_nonmonotonic_runtime, P_RUNTIME, A_RUNTIME)

/* TIMED defines an interposer of a call that may wait or run the runtime's code, returning ret
 * (void: TIMED_VOID), with parameters P and arguments A (parenthesized): the time from the call
 * to its return is the thread's in state. */
#define TIMED_BODY(name, state, ret, P, A, call, result)                                        \
	{                                                                                        \
		static ret(*real) P;                                                             \
		if (__builtin_expect(!real, 0))                                                  \
			real = er_next(#name);                                                   \
		if (!er.omp || ompt_on || er_self.busy || er_off_call()) {                       \
			call;                                                                    \
			return result;                                                           \
		}                                                                                \
		uint64_t t0 = er_now();                                                          \
		call;                                                                            \
		uint64_t t1 = er_now();                                                          \
		if (t1 - t0 >= ER_OMP_MIN_NS)                                                    \
			er_omp_record(state, t0, t1, omp_cur);                                   \
		return result;                                                                   \
	}
#define TIMED_VOID(name, state, P, A) ER_EXPORT void name P TIMED_BODY(name, state, void, P, A, real A, )
#define TIMED(ret, name, state, P, A) ER_EXPORT ret name P TIMED_BODY(name, state, ret, P, A, ret r = real A, r)

TIMED_VOID(GOMP_barrier, ER_OMP_EXPLICIT_BARRIER, (void), ())
TIMED(bool, GOMP_barrier_cancel, ER_OMP_EXPLICIT_BARRIER, (void), ())
TIMED_VOID(GOMP_critical_start, ER_OMP_CRITICAL_WAIT, (void), ())
TIMED_VOID(GOMP_critical_name_start, ER_OMP_CRITICAL_WAIT, (void **p), (p))
TIMED_VOID(GOMP_ordered_start, ER_OMP_ORDERED_WAIT, (void), ())
TIMED_VOID(GOMP_atomic_start, ER_OMP_ATOMIC_WAIT, (void), ())
TIMED_VOID(omp_set_lock, ER_OMP_LOCK_WAIT, (void *l), (l))
TIMED_VOID(omp_set_nest_lock, ER_OMP_LOCK_WAIT, (void *l), (l))
/* The ends of worksharing constructs that wait for the team: their implicit barriers. */
TIMED_VOID(GOMP_loop_end, ER_OMP_IMPLICIT_BARRIER, (void), ())
TIMED(bool, GOMP_loop_end_cancel, ER_OMP_IMPLICIT_BARRIER, (void), ())
TIMED_VOID(GOMP_sections_end, ER_OMP_IMPLICIT_BARRIER, (void), ())
TIMED(bool, GOMP_sections_end_cancel, ER_OMP_IMPLICIT_BARRIER, (void), ())
/* Worksharing: getting the next chunk of a loop or the next section is the runtime's overhead. */
#define P_START (long start, long end, long incr, long chunk, long *istart, long *iend)
#define A_START (start, end, incr, chunk, istart, iend)
#define P_RSTART (long start, long end, long incr, long *istart, long *iend)
#define A_RSTART (start, end, incr, istart, iend)
#define P_NEXT (long *istart, long *iend)
#define A_NEXT (istart, iend)
#define LOOP(sched)                                                                               \
	TIMED(bool, GOMP_loop_##sched##_start, ER_OMP_OVERHEAD, P_START, A_START)                 \
	TIMED(bool, GOMP_loop_##sched##_next, ER_OMP_OVERHEAD, P_NEXT, A_NEXT)
LOOP(static)
LOOP(dynamic)
LOOP(guided)
LOOP(nonmonotonic_dynamic)
LOOP(nonmonotonic_guided)
LOOP(ordered_static)
LOOP(ordered_dynamic)
LOOP(ordered_guided)
TIMED(bool, GOMP_loop_runtime_start, ER_OMP_OVERHEAD, P_RSTART, A_RSTART)
TIMED(bool, GOMP_loop_runtime_next, ER_OMP_OVERHEAD, P_NEXT, A_NEXT)
TIMED(bool, GOMP_loop_ordered_runtime_start, ER_OMP_OVERHEAD, P_RSTART, A_RSTART)
TIMED(bool, GOMP_loop_ordered_runtime_next, ER_OMP_OVERHEAD, P_NEXT, A_NEXT)
TIMED_VOID(GOMP_loop_end_nowait, ER_OMP_OVERHEAD, (void), ())
TIMED(bool, GOMP_single_start, ER_OMP_OVERHEAD, (void), ())
TIMED(unsigned, GOMP_sections_start, ER_OMP_OVERHEAD, (unsigned count), (count))
TIMED(unsigned, GOMP_sections_next, ER_OMP_OVERHEAD, (void), ())
TIMED_VOID(GOMP_sections_end_nowait, ER_OMP_OVERHEAD, (void), ())

/* Explicit tasks. omp_task_record records task id's creation by this thread (its stack and
 * construct); omp_task_run its run on this thread from t0 to t1. */
static uint64_t next_task = 1;

static void omp_task_record(uint64_t id, uint64_t region, uint64_t fn, uint32_t stack, uint64_t t)
{
	struct er_thread *th = &er_self;
	if (th->busy || er_off())
		return;
	int saved = errno;
	th->busy = 1;
	th = er_thread();
	struct er_rec_omp_task *r = er_rec_begin(th, SLOT_OMP, sizeof *r);
	if (r) {
		r->stack = stack;
		r->id = id;
		r->region = region;
		r->fn = fn;
		er_rec_commit(th, r, sizeof *r, ER_REC_OMP_TASK, 0, t);
	}
	th->busy = 0;
	errno = saved;
}

static void omp_task_run(uint64_t id, uint64_t t0, uint64_t t1)
{
	struct er_thread *th = &er_self;
	if (th->busy || er_off())
		return;
	int saved = errno;
	th->busy = 1;
	th = er_thread();
	struct er_rec_omp_state *r = er_rec_begin(th, SLOT_OMP, sizeof *r);
	if (r) {
		r->start_ns = t0;
		r->region = id;
		er_rec_commit(th, r, sizeof *r, ER_REC_OMP_TASK_RUN, ER_OMP_WORK, t1);
	}
	th->busy = 0;
	errno = saved;
}

/* omp_task_hdr is what a libgomp task's data starts with once wrapped: the task's function, its
 * id, and for a task whose data the runtime copies with the program's function (cpyfn), that
 * function and the data it copies from; the program's data follows, at off. */
struct omp_task_hdr {
	omp_fn fn;
	void (*cpyfn)(void *, void *);
	void *src;
	uint64_t id;
	long off;
};

static void omp_task_tramp(void *arg)
{
	struct omp_task_hdr *h = arg;
	uint64_t t0 = er_now();
	h->fn((char *)arg + h->off);
	omp_task_run(h->id, t0, er_now());
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* omp_task_copy is the runtime's copy of a wrapped task's data that a cpyfn copies: the header,
 * then the program's copy of its own. */
static void omp_task_copy(void *dst, void *src)
{
	struct omp_task_hdr *h = src;
	memcpy(dst, h, sizeof *h);
	h->cpyfn((char *)dst + h->off, h->src);
}

/* GOMP_task (GCC 12: with detach; older compilers pass less, which the runtime reads only where
 * their flags say so). */
ER_EXPORT void GOMP_task(omp_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align, bool if_clause,
			 unsigned flags, void **depend, int priority, void *detach)
{
	static void (*real)(omp_fn, void *, void (*)(void *, void *), long, long, bool, unsigned, void **, int, void *);
	if (__builtin_expect(!real, 0))
		real = er_next("GOMP_task");
	long align = arg_align > 0 ? arg_align : 1;
	long off = ((long)sizeof(struct omp_task_hdr) + align - 1) / align * align;
	if (!er.omp || ompt_on || er_self.busy || er_off_call() || arg_size < 0 || arg_size > (1L << 20)) {
		real(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
		return;
	}
	uint64_t id = __atomic_fetch_add(&next_task, 1, __ATOMIC_RELAXED);
	omp_task_record(id, omp_cur, (uint64_t)(uintptr_t)fn, omp_stack((uintptr_t)real), er_now());
	long wa = align < (long)_Alignof(struct omp_task_hdr) ? (long)_Alignof(struct omp_task_hdr) : align;
	struct omp_task_hdr h = {fn, cpyfn, data, id, off};
	if (cpyfn) {
		real(omp_task_tramp, &h, omp_task_copy, off + arg_size, wa, if_clause, flags, depend, priority, detach);
		return;
	}
	/* The runtime copies arg_size bytes from data (or runs the task at once on them): header and
	 * data together, in a buffer of this frame's. */
	char *buf = __builtin_alloca(off + arg_size + wa);
	buf = (char *)(((uintptr_t)buf + (uintptr_t)wa - 1) & ~((uintptr_t)wa - 1));
	memcpy(buf, &h, sizeof h);
	if (arg_size > 0)
		memcpy(buf + off, data, arg_size);
	real(omp_task_tramp, buf, NULL, off + arg_size, wa, if_clause, flags, depend, priority, detach);
}

TIMED_VOID(GOMP_taskwait, ER_OMP_OVERHEAD, (void), ())
TIMED_VOID(GOMP_taskgroup_end, ER_OMP_OVERHEAD, (void), ())

/* The OMPT tool. Each thread keeps the regions it is the master of and the implicit tasks it runs,
 * innermost last (nested regions), and the start of the wait it is in. */
#define OMPT_DEPTH 16

struct ompt_region {
	uint64_t id, parent, t0, codeptr;
	uint32_t stack, team;
};
struct ompt_task {
	uint64_t t0, region, prev;
};
static ER_TLS struct ompt_region ompt_regions[OMPT_DEPTH];
static ER_TLS int ompt_nregions; /* may pass OMPT_DEPTH: those deeper are not recorded */
static ER_TLS struct ompt_task ompt_tasks[OMPT_DEPTH];
static ER_TLS int ompt_ntasks;
static ER_TLS uint64_t ompt_wait_t0, ompt_mutex_t0;
static ER_TLS struct ompt_task ompt_runs[OMPT_DEPTH]; /* the explicit tasks running, innermost last: id (region) and start */
static ER_TLS int ompt_nruns;

static int ompt_recording(void) { return er.omp && !er_self.busy && !er_off(); }

static void ompt_parallel_begin(er_ompt_data_t *task, const void *frame, er_ompt_data_t *parallel, unsigned requested, int flags,
				const void *codeptr)
{
	(void)task, (void)frame, (void)flags;
	uint64_t id = __atomic_fetch_add(&next_region, 1, __ATOMIC_RELAXED);
	if (parallel)
		parallel->value = id;
	int d = ompt_nregions++;
	if (d >= OMPT_DEPTH)
		return;
	struct ompt_region *r = &ompt_regions[d];
	r->id = id;
	r->parent = omp_cur;
	r->team = requested;
	r->codeptr = (uint64_t)(uintptr_t)codeptr;
	r->stack = ompt_recording() ? omp_stack((uintptr_t)codeptr) : 0;
	r->t0 = er_now();
}

static void ompt_parallel_end(er_ompt_data_t *parallel, er_ompt_data_t *task, int flags, const void *codeptr)
{
	(void)parallel, (void)task, (void)flags, (void)codeptr;
	if (ompt_nregions <= 0)
		return;
	int d = --ompt_nregions;
	if (d >= OMPT_DEPTH)
		return;
	struct ompt_region *r = &ompt_regions[d];
	if (ompt_recording())
		omp_region_record(r->id, r->parent, r->codeptr, r->team, r->t0, er_now(), r->stack);
}

static void ompt_implicit_task(int endpoint, er_ompt_data_t *parallel, er_ompt_data_t *task, unsigned actual, unsigned index, int flags)
{
	(void)task, (void)index;
	if (flags & ER_OMPT_TASK_INITIAL)
		return;
	if (endpoint == ER_OMPT_SCOPE_BEGIN) {
		int d = ompt_ntasks++;
		uint64_t region = parallel ? parallel->value : 0;
		if (d < OMPT_DEPTH)
			ompt_tasks[d] = (struct ompt_task){er_now(), region, omp_cur};
		omp_cur = region;
		if (ompt_nregions > 0 && ompt_nregions <= OMPT_DEPTH && ompt_regions[ompt_nregions - 1].id == region)
			ompt_regions[ompt_nregions - 1].team = actual; /* the master's task: the team it got */
		return;
	}
	if (endpoint != ER_OMPT_SCOPE_END || ompt_ntasks <= 0)
		return;
	int d = --ompt_ntasks;
	if (d >= OMPT_DEPTH)
		return;
	struct ompt_task *k = &ompt_tasks[d];
	omp_cur = k->prev;
	if (ompt_recording())
		er_omp_record(ER_OMP_WORK, k->t0, er_now(), k->region);
}

static void ompt_sync_region_wait(int kind, int endpoint, er_ompt_data_t *parallel, er_ompt_data_t *task, const void *codeptr)
{
	(void)parallel, (void)task, (void)codeptr;
	if (endpoint == ER_OMPT_SCOPE_BEGIN) {
		ompt_wait_t0 = er_now();
		return;
	}
	if (endpoint != ER_OMPT_SCOPE_END || !ompt_wait_t0)
		return;
	uint64_t t0 = ompt_wait_t0, t1 = er_now();
	ompt_wait_t0 = 0;
	int state;
	switch (kind) {
	case ER_OMPT_SYNC_BARRIER_EXPLICIT:
		state = ER_OMP_EXPLICIT_BARRIER;
		break;
	case ER_OMPT_SYNC_REDUCTION:
		state = ER_OMP_REDUCTION;
		break;
	case ER_OMPT_SYNC_TASKWAIT:
	case ER_OMPT_SYNC_TASKGROUP:
		state = ER_OMP_OVERHEAD; /* (the manual names no state of task waits) */
		break;
	default: /* the implicit barriers of regions, worksharing and teams, the runtime's own */
		state = ER_OMP_IMPLICIT_BARRIER;
	}
	if (t1 - t0 >= ER_OMP_MIN_NS && ompt_recording())
		er_omp_record(state, t0, t1, omp_cur);
}

static void ompt_mutex_acquire(int kind, unsigned hint, unsigned impl, uint64_t wait_id, const void *codeptr)
{
	(void)kind, (void)hint, (void)impl, (void)wait_id, (void)codeptr;
	ompt_mutex_t0 = er_now();
}

static void ompt_mutex_acquired(int kind, uint64_t wait_id, const void *codeptr)
{
	(void)wait_id, (void)codeptr;
	if (!ompt_mutex_t0)
		return;
	uint64_t t0 = ompt_mutex_t0, t1 = er_now();
	ompt_mutex_t0 = 0;
	int state;
	switch (kind) {
	case ER_OMPT_MUTEX_CRITICAL:
		state = ER_OMP_CRITICAL_WAIT;
		break;
	case ER_OMPT_MUTEX_ORDERED:
		state = ER_OMP_ORDERED_WAIT;
		break;
	case ER_OMPT_MUTEX_ATOMIC:
		state = ER_OMP_ATOMIC_WAIT;
		break;
	default:
		state = ER_OMP_LOCK_WAIT;
	}
	if (t1 - t0 >= ER_OMP_MIN_NS && ompt_recording())
		er_omp_record(state, t0, t1, omp_cur);
}

static void ompt_task_create(er_ompt_data_t *task, const void *frame, er_ompt_data_t *created, int flags, int deps, const void *codeptr)
{
	(void)task, (void)frame, (void)deps;
	if (!(flags & ER_OMPT_TASK_EXPLICIT) || !created)
		return;
	uint64_t id = __atomic_fetch_add(&next_task, 1, __ATOMIC_RELAXED);
	created->value = id;
	if (ompt_recording())
		omp_task_record(id, omp_cur, (uint64_t)(uintptr_t)codeptr, omp_stack((uintptr_t)codeptr), er_now());
}

static void ompt_task_schedule(er_ompt_data_t *prior, int status, er_ompt_data_t *next)
{
	(void)status;
	uint64_t now = er_now();
	if (prior && prior->value) /* an explicit task leaves this thread: completed, yielding, ... */
		for (int i = (ompt_nruns < OMPT_DEPTH ? ompt_nruns : OMPT_DEPTH) - 1; i >= 0; i--) {
			if (ompt_runs[i].region != prior->value)
				continue;
			if (ompt_recording())
				omp_task_run(prior->value, ompt_runs[i].t0, now);
			for (int j = i; j + 1 < ompt_nruns && j + 1 < OMPT_DEPTH; j++)
				ompt_runs[j] = ompt_runs[j + 1];
			ompt_nruns--;
			break;
		}
	if (next && next->value) {
		if (ompt_nruns < OMPT_DEPTH)
			ompt_runs[ompt_nruns] = (struct ompt_task){now, next->value, 0};
		ompt_nruns++;
	}
}

static int ompt_initialize(er_ompt_function_lookup_t lookup, int device, er_ompt_data_t *data)
{
	(void)device, (void)data;
	er_ompt_set_callback_t set = (er_ompt_set_callback_t)lookup("ompt_set_callback");
	if (!set)
		return 0;
	static const struct {
		int event;
		er_ompt_callback_t fn;
	} cbs[] = {
		{ER_OMPT_CALLBACK_PARALLEL_BEGIN, (er_ompt_callback_t)ompt_parallel_begin},
		{ER_OMPT_CALLBACK_PARALLEL_END, (er_ompt_callback_t)ompt_parallel_end},
		{ER_OMPT_CALLBACK_IMPLICIT_TASK, (er_ompt_callback_t)ompt_implicit_task},
		{ER_OMPT_CALLBACK_SYNC_REGION_WAIT, (er_ompt_callback_t)ompt_sync_region_wait},
		{ER_OMPT_CALLBACK_MUTEX_ACQUIRE, (er_ompt_callback_t)ompt_mutex_acquire},
		{ER_OMPT_CALLBACK_MUTEX_ACQUIRED, (er_ompt_callback_t)ompt_mutex_acquired},
		{ER_OMPT_CALLBACK_TASK_CREATE, (er_ompt_callback_t)ompt_task_create},
		{ER_OMPT_CALLBACK_TASK_SCHEDULE, (er_ompt_callback_t)ompt_task_schedule},
	};
	for (size_t i = 0; i < sizeof cbs / sizeof cbs[0]; i++)
		set(cbs[i].event, cbs[i].fn);
	__atomic_store_n(&ompt_on, 1, __ATOMIC_RELAXED);
	return 1; /* keep the tool */
}

static void ompt_finalize(er_ompt_data_t *data) { (void)data; }

/* ompt_start_tool is what an OMPT runtime looks for as it starts: the library is the tool where
 * OpenMP regions are recorded (the runtime takes one tool); elsewhere the next definition is (the
 * program's own tool, or the runtime's, which returns none). */
ER_EXPORT struct er_ompt_start_tool_result *ompt_start_tool(unsigned omp_version, const char *runtime_version)
{
	static struct er_ompt_start_tool_result result = {ompt_initialize, ompt_finalize, {0}};
	if (er.omp)
		return &result;
	struct er_ompt_start_tool_result *(*next)(unsigned, const char *) = er_next("ompt_start_tool");
	if (next && next != ompt_start_tool)
		return next(omp_version, runtime_version);
	return NULL;
}
