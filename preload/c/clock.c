/* clock.c: clock profiling without perf events: a CPU-time timer in every thread delivers
 * SIGPROF; the handler records the interrupted call stack, counting the timer's overruns. The
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
	if (!er.clock || er_off())
		return;
	struct er_thread *t = &er_self;
	if (t->level + 1 >= ER_LEVELS)
		return;
	t->level++; /* the sample is recorded whatever the interrupted code was doing */
	t = er_thread();
	uint64_t now = er_now();
	uint32_t st = er_stack_context(t, uc);
	struct er_rec_clock *r = er_rec_begin(t, SLOT_CLOCK, sizeof *r);
	if (r) {
		r->stack = st;
		r->count = 1 + (uint32_t)(si->si_overrun > 0 ? si->si_overrun : 0);
		unsigned cpu = 0;
		er_sys(SYS_getcpu, (long)&cpu, 0, 0, 0, 0, 0);
		r->cpu = cpu;
		er_rec_commit(t, r, sizeof *r, ER_REC_CLOCK, 0, now);
	}
	t->level--;
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
}

void er_clock_thread_stop(struct er_thread *t)
{
	if (!t->has_timer)
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
	er_clock_thread_start(er_thread());
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_start(void *p)
{
	struct start s = *(struct start *)p;
	struct er_thread *t = &er_self;
	t->busy = 1;
	free(p);
	t = er_thread();
	if (er.clock)
		er_clock_thread_start(t);
	t->busy = 0;
	return s.fn(s.arg);
}

ER_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))er_next("pthread_create");
	if (!er.clock)
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
	int r = real(th, attr, thread_start, s);
	if (r != 0) {
		t->busy = 1;
		free(s);
		t->busy = b;
	}
	return r;
}
