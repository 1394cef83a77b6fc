/* omp.c: OpenMP regions and thread states of GCC's runtime (libgomp), by interposing the entry
 * points that compiled code calls (GOMP_*, omp_set_lock): libgomp has no OpenMP tools interface
 * (docs/openmp.md). A parallel region's outlined function is run through a trampoline that
 * records, on every thread of the team, when it starts and ends the region's work; the calls that
 * can wait (barriers, critical, ordered and atomic sections, locks, the worksharing ends) are timed
 * and recorded when they took at least ER_OMP_MIN_NS; the reader derives the states between them
 * (idle, the implicit barrier at a region's end). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>

#include "collector.h"

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

/* The trampoline's code, in a section of its own: a stack from a frame there to the root is the
 * runtime's, on a worker; the region's master's stack takes its place (the reader's stitching). */
extern const char __start_er_omp_tramp[] ER_HIDDEN;
extern const char __stop_er_omp_tramp[] ER_HIDDEN;

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

__attribute__((section("er_omp_tramp"), noinline, used)) static void omp_tramp(void *arg)
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

/* omp_begin readies c for a region of fn and data that the runtime's entry point real starts, and
 * says whether it is recorded; *t0 and *stack are the master's time and stack at the call. */
static int omp_begin(struct omp_call *c, omp_fn fn, void *data, void *real, uint64_t *t0, uint32_t *stack, uint64_t *parent)
{
	if (!er.omp || er_self.busy || er_off_call())
		return 0;
	c->fn = fn;
	c->data = data;
	c->id = __atomic_fetch_add(&next_region, 1, __ATOMIC_RELAXED);
	c->team = 0;
	*parent = omp_cur;
	int saved = errno;
	struct er_thread *t = &er_self;
	t->busy = 1;
	t = er_thread();
	*stack = er_stack_here(t, (uintptr_t)real);
	t->busy = 0;
	errno = saved;
	*t0 = er_now();
	return 1;
}

static void omp_end(struct omp_call *c, uint64_t t0, uint32_t stack, uint64_t parent)
{
	uint64_t t1 = er_now();
	struct er_thread *t = &er_self;
	if (t->busy || er_off())
		return;
	int saved = errno;
	t->busy = 1;
	t = er_thread();
	struct er_rec_omp_region *r = er_rec_begin(t, SLOT_OMP, sizeof *r);
	if (r) {
		r->stack = stack;
		r->team = __atomic_load_n(&c->team, __ATOMIC_RELAXED);
		r->start_ns = t0;
		r->id = c->id;
		r->parent = parent;
		r->fn = (uint64_t)(uintptr_t)c->fn;
		r->tramp_lo = (uint64_t)(uintptr_t)__start_er_omp_tramp;
		r->tramp_hi = (uint64_t)(uintptr_t)__stop_er_omp_tramp;
		er_rec_commit(t, r, sizeof *r, ER_REC_OMP_REGION, 0, t1);
	}
	t->busy = 0;
	errno = saved;
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
		if (!er.omp || er_self.busy || er_off_call()) {                                  \
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
