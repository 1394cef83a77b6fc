/* clock.c: clock profiling without perf events: a CPU-time timer in every thread delivers
 * SIGPROF; the handler records the interrupted call stack, counting the timer's overruns. The
 * target's own SIGPROF handler keeps working: the library stays the primary handler and passes
 * on every SIGPROF that is not its own timer's. */
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

#define TIMER_COOKIE ((void *)0x6572636cUL) /* sigev_value of the library's timers */

static struct sigaction user_act;  /* what the target asked for SIGPROF */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

/* The kernel's struct sigevent for SIGEV_THREAD_ID. */
struct ksigevent {
	union sigval value;
	int signo;
	int notify;
	int tid;
	int pad[11];
};

static void forward(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = user_act;
	if (a.sa_flags & SA_SIGINFO) {
		if (a.sa_sigaction)
			a.sa_sigaction(sig, si, uc);
		return;
	}
	if (a.sa_handler == SIG_IGN)
		return;
	if (a.sa_handler == SIG_DFL) {
		/* SIGPROF's default action ends the process: do what would have happened. */
		struct sigaction d;
		memset(&d, 0, sizeof d);
		d.sa_handler = SIG_DFL;
		real_sigaction(SIGPROF, &d, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGPROF);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		er_sys(SYS_tgkill, getpid(), er_sys(SYS_gettid, 0, 0, 0, 0, 0, 0), SIGPROF, 0, 0, 0);
		return;
	}
	a.sa_handler(sig);
}

static void handler(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code != SI_TIMER || si->si_value.sival_ptr != TIMER_COOKIE) {
		forward(sig, si, uc);
		return;
	}
	if (!er.clock)
		return;
	int saved = errno;
	struct er_thread *t = &er_self;
	int nested = t->in_signal;
	t->in_signal = 1;
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
	t->in_signal = nested;
	errno = saved;
}

void er_clock_thread_start(struct er_thread *t)
{
	if (t->has_timer)
		return;
	struct ksigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.value.sival_ptr = TIMER_COOKIE;
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
	if (!real_sigaction)
		real_sigaction = er_next("sigaction");
	struct sigaction a;
	memset(&a, 0, sizeof a);
	a.sa_sigaction = handler;
	a.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&a.sa_mask);
	if (real_sigaction(SIGPROF, &a, &user_act) != 0) {
		er.clock = 0;
		er_note("error", "cannot install the SIGPROF handler");
		return;
	}
	er_clock_thread_start(er_thread());
}

ER_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction)
		real_sigaction = er_next("sigaction");
	if (sig != SIGPROF || !er.clock)
		return real_sigaction(sig, act, old);
	if (old)
		*old = user_act;
	if (act)
		user_act = *act;
	return 0;
}

ER_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	static sighandler_t (*real)(int, sighandler_t);
	if (!real)
		real = (sighandler_t(*)(int, sighandler_t))er_next("signal");
	if (sig != SIGPROF || !er.clock)
		return real(sig, h);
	sighandler_t prev = (user_act.sa_flags & SA_SIGINFO) ? (sighandler_t)(void (*)(void))user_act.sa_sigaction : user_act.sa_handler;
	memset(&user_act, 0, sizeof user_act);
	user_act.sa_handler = h;
	user_act.sa_flags = SA_RESTART;
	return prev;
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
