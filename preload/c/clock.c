/* clock.c: clock profiling without perf events: a CPU-time timer in every thread delivers
 * SIGPROF; the handler records the interrupted call stack, weighted by the thread's CPU time since
 * its previous sample in whole intervals (the rest is carried to the next sample), so that a
 * thread's samples add up to its CPU time however the timer's signals come. The
 * target's own SIGPROF handler keeps working: the library stays the primary handler (control.c
 * keeps it) and passes on every SIGPROF that is not its own timer's. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

/* The kernel's struct sigevent for SIGEV_THREAD_ID. */
struct ksigevent {
	union sigval value;
	int signo;
	int notify;
	int tid;
	int pad[11];
};

/* er_clock_sample records a sample of the interrupted thread: control.c's SIGPROF handler calls it
 * for the library's own timers (others go to the program's handler). */
void er_clock_sample(siginfo_t *si, void *uc)
{
	if (__atomic_load_n(&er.ended, __ATOMIC_RELAXED)) {
		er_clock_thread_stop(&er_self); /* this thread's timer, which sent it */
		return;
	}
	if (!er.clock || er_off())
		return;
	struct er_thread *t = &er_self;
	if (t->level + 1 >= ER_LEVELS)
		return;
	t->level++; /* the sample is recorded whatever the interrupted code was doing */
	t->entered[t->level] = (uint64_t)(uint32_t)t->busy | (uint64_t)(uint32_t)(t->level - 1) << 32;
	t = er_thread();
	/* The thread's CPU time since its previous sample: the timer's signals come late on a busy
	 * machine, and their overrun counts did not make up for it (94.8% of a thread's CPU time beside
	 * two CPU hogs). */
	(void)si;
	struct timespec ts;
	uint64_t n = 1;
	if (er_sys(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0, 0, 0, 0) == 0) {
		uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		if (cpu > t->cpu_last)
			t->cpu_left += cpu - t->cpu_last;
		t->cpu_last = cpu;
		n = t->cpu_left / er.clock_interval_ns;
		if (n == 0) { /* early: its time goes to the next sample */
			t->level--;
			return;
		}
		uint64_t most = 60000000000u / er.clock_interval_ns; /* a record holds at most 60 s */
		t->cpu_left -= n * er.clock_interval_ns;
		if (n > most)
			n = most;
	}
	uint64_t now = er_now();
	uint32_t st = er_stack_context(t, uc);
	t->clock_stack = st;
	struct er_rec_clock *r = er_rec_begin(t, SLOT_CLOCK, sizeof *r);
	if (r) {
		r->stack = st;
		r->count = (uint32_t)n;
		unsigned cpu = 0;
		er_sys(SYS_getcpu, (long)&cpu, 0, 0, 0, 0, 0);
		r->cpu = cpu;
		er_rec_commit(t, r, sizeof *r, ER_REC_CLOCK, 0, now);
	}
	t->level--;
}

/* er_clock_tail records a thread's CPU time since its last sample, rounded to whole intervals, under
 * that sample's stack: the timer signals only whole intervals, so each thread lost its last partial
 * one (1.1% of a 1 s thread), and on a busy machine the signals of its last tens of milliseconds
 * (a single thread recorded 94.9% of its getrusage once beside two CPU hogs). Called at the thread's
 * end, with its timer stopped first, so that no sample of the timer counts the same time: a signal
 * still pending is delivered when timer_delete returns, before this runs. */
void er_clock_tail(struct er_thread *t)
{
	if (!er.clock || er_off() || t->clock_stack == 0 || er.clock_interval_ns == 0)
		return;
	struct timespec ts;
	if (er_sys(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0, 0, 0, 0) != 0)
		return;
	uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	uint64_t left = t->cpu_left + (cpu > t->cpu_last ? cpu - t->cpu_last : 0);
	t->cpu_last = cpu;
	t->cpu_left = 0;
	uint64_t n = (left + er.clock_interval_ns / 2) / er.clock_interval_ns;
	uint64_t most = 60000000000u / er.clock_interval_ns;
	if (n == 0)
		return;
	if (n > most)
		n = most;
	struct er_rec_clock *r = er_rec_begin(t, SLOT_CLOCK, sizeof *r);
	if (r) {
		r->stack = t->clock_stack;
		r->count = (uint32_t)n;
		unsigned c = 0;
		er_sys(SYS_getcpu, (long)&c, 0, 0, 0, 0, 0);
		r->cpu = c;
		er_rec_commit(t, r, sizeof *r, ER_REC_CLOCK, 0, er_now());
	}
}

/* clock_fini credits the tail of the thread that calls exit (the others' is credited at their end,
 * by the thread-exit destructor). */
__attribute__((destructor)) static void clock_fini(void)
{
	struct er_thread *t = &er_self;
	if (!t->has_timer)
		return;
	int32_t busy = t->busy;
	t->busy = ER_BUSY; /* the library's own calls (a new block's mmap) are not traced */
	er_clock_thread_stop(t);
	er_clock_tail(t);
	t->busy = busy;
}

void er_clock_thread_start(struct er_thread *t)
{
	if (t->has_timer)
		return;
	struct ksigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.value.sival_ptr = ER_TIMER_COOKIE;
	ev.signo = SIGPROF;
	ev.notify = SIGEV_THREAD_ID;
	ev.tid = t->tid;
	int id = -1;
	if (er_sys(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, (long)&ev, (long)&id, 0, 0, 0) != 0)
		return;
	struct itimerspec its;
	its.it_interval.tv_sec = (time_t)(er.clock_interval_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(er.clock_interval_ns % 1000000000u);
	its.it_value = its.it_interval;
	if (er_sys(SYS_timer_settime, id, 0, (long)&its, 0, 0, 0) != 0) {
		er_sys(SYS_timer_delete, id, 0, 0, 0, 0, 0);
		return;
	}
	t->timer = (void *)(long)id;
	t->has_timer = 1;
	/* Samples count the thread's CPU time from here (what it used before, in another image or
	 * before the library started, is not the timer's). */
	struct timespec ts;
	t->cpu_last = er_sys(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0, 0, 0, 0) == 0
		? (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec : 0;
	t->cpu_left = 0;
}

void er_clock_thread_stop(struct er_thread *t)
{
	if (!t->has_timer || er.sealed) /* (sealed: its signals are ignored) */
		return;
	t->has_timer = 0;
	er_sys(SYS_timer_delete, (long)t->timer, 0, 0, 0, 0, 0);
}

void er_clock_init(void)
{
	if (!er_guard_signal(SIGPROF, ER_GUARD_CLOCK)) {
		er.clock = 0;
		er_note("error", "cannot install the SIGPROF handler");
		return;
	}
	er_clock_unblock();
	er_clock_thread_start(er_thread());
}

/* ---- SIGPROF stays unblocked ----
 *
 * A program that blocks every signal (servers that wait for them with sigwait, libraries that mask
 * them in their threads) would block the library's timers' SIGPROF too, and nothing would be
 * recorded. While the clock is profiled, the mask functions never block SIGPROF: the thread's
 * program-side view (prof_blocked) is kept instead and given back in the old masks they return, and
 * a SIGPROF of the program's own (not the library's timers') that arrives while the program has it
 * blocked is held (prof_pending) until the program unblocks it. A mask changed with the system call
 * itself is not seen: er collect warns when the recorded CPU time falls short of the target's. */
static ER_TLS int prof_blocked, prof_pending;

static int keeping(void) { return er.clock && er_sigprof_kept(); }

/* er_clock_unblock makes SIGPROF unblocked in this thread (a new thread, or a new process image that
 * inherited a blocked mask), remembering that the program has it blocked. */
void er_clock_unblock(void)
{
	sigset_t cur, prof;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	if (er_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&(sigset_t){0}, (long)&cur, sizeof(long), 0, 0) != 0)
		return;
	if (sigismember(&cur, SIGPROF)) {
		prof_blocked = 1;
		er_sys(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&prof, 0, sizeof(long), 0, 0);
	}
}

/* er_clock_held says whether a SIGPROF of the program's must wait, and holds it. */
int er_clock_held(void)
{
	if (!prof_blocked)
		return 0;
	prof_pending = 1;
	return 1;
}

/* mask does what how, set and old ask of the signal mask through real, keeping SIGPROF unblocked. */
static int mask(int how, const sigset_t *set, sigset_t *old, int (*real)(int, const sigset_t *, sigset_t *))
{
	if (!keeping())
		return real(how, set, old);
	int was = prof_blocked, now = was;
	sigset_t s;
	if (set) {
		s = *set;
		int has = sigismember(&s, SIGPROF) == 1;
		if (how == SIG_BLOCK)
			now = was || has;
		else if (how == SIG_UNBLOCK)
			now = was && !has;
		else if (how == SIG_SETMASK)
			now = has;
		if (how != SIG_UNBLOCK)
			sigdelset(&s, SIGPROF);
		set = &s;
	}
	int r = real(how, set, old);
	if (r != 0)
		return r;
	if (old) {
		if (was)
			sigaddset(old, SIGPROF);
		else
			sigdelset(old, SIGPROF);
	}
	prof_blocked = now;
	if (was && !now && prof_pending) {
		prof_pending = 0;
		er_sys(SYS_tgkill, er_sys(SYS_getpid, 0, 0, 0, 0, 0, 0), er_sys(SYS_gettid, 0, 0, 0, 0, 0, 0), SIGPROF, 0, 0, 0);
	}
	return r;
}

ER_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	static int (*real)(int, const sigset_t *, sigset_t *);
	if (!real)
		real = (int (*)(int, const sigset_t *, sigset_t *))er_next("sigprocmask");
	return mask(how, set, old, real);
}

ER_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	static int (*real)(int, const sigset_t *, sigset_t *);
	if (!real)
		real = (int (*)(int, const sigset_t *, sigset_t *))er_next("pthread_sigmask");
	return mask(how, set, old, real);
}

/* sighold and sigrelse (System V) block and unblock one signal. */
ER_EXPORT int sighold(int sig)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))er_next("sighold");
	if (sig != SIGPROF || !keeping())
		return real(sig);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	return sigprocmask(SIG_BLOCK, &set, NULL);
}

ER_EXPORT int sigrelse(int sig)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))er_next("sigrelse");
	if (sig != SIGPROF || !keeping())
		return real(sig);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	return sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* ---- threads ---- */

struct start {
	void *(*fn)(void *);
	void *arg;
	int prof_blocked; /* the creating thread's view of SIGPROF, which the new thread inherits */
};

static void *thread_start(void *p)
{
	struct start s = *(struct start *)p;
	struct er_thread *t = &er_self;
	t->busy = 1;
	free(p);
	t = er_thread();
	prof_blocked = s.prof_blocked;
	if (er.clock && !__atomic_load_n(&er.ended, __ATOMIC_RELAXED)) {
		er_clock_unblock(); /* pthread_attr_setsigmask_np may have blocked it */
		er_clock_thread_start(t);
	}
	t->busy = 0;
	return s.fn(s.arg);
}

ER_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))er_next("pthread_create");
	if (!er.clock || __atomic_load_n(&er.ended, __ATOMIC_RELAXED))
		return real(th, attr, fn, arg);
	struct er_thread *t = &er_self;
	int b = t->busy;
	t->busy = 1;
	struct start *s = malloc(sizeof *s);
	t->busy = b;
	if (!s)
		return real(th, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	s->prof_blocked = prof_blocked;
	int r = real(th, attr, thread_start, s);
	if (r != 0) {
		t->busy = 1;
		free(s);
		t->busy = b;
	}
	return r;
}
