/* sync.c: synchronization wait tracing: the pthread and semaphore functions that can block,
 * interposed. A call is recorded when it took at least the threshold. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#include "collector.h"

static void sync_record(int op, void *fn, uint64_t t0, uint64_t t1, uintptr_t object)
{
	struct er_thread *t = &er_self;
	if (t->busy)
		return;
	int saved = errno;
	t->busy = 1;
	t = er_thread();
	uint32_t st = er_stack_here(t, (uintptr_t)fn);
	struct er_rec_sync *r = er_rec_begin(t, SLOT_SYNC, sizeof *r);
	if (r) {
		r->stack = st;
		r->wait_ns = t1 - t0;
		r->object = object;
		er_rec_commit(t, r, sizeof *r, ER_REC_SYNC, op, t1);
	}
	t->busy = 0;
	errno = saved;
}

/* WRAP defines an interposer of a function returning int: it times the real call and records
 * it when tracing is on, the call is the target's and it waited at least the threshold. */
#define WRAP(name, op, obj, params, args)                                                \
	ER_EXPORT int name params                                                        \
	{                                                                                \
		static int(*real) params;                                                \
		if (__builtin_expect(!real, 0))                                          \
			real = er_next(#name);                                           \
		if (!er.sync || er_self.busy || er_off_call())                           \
			return real args;                                                \
		uint64_t t0 = er_now();                                                  \
		int r = real args;                                                       \
		uint64_t t1 = er_now();                                                  \
		if (t1 - t0 >= er.sync_threshold_ns)                                     \
			sync_record(op, (void *)real, t0, t1, (uintptr_t)(obj));         \
		return r;                                                                \
	}

WRAP(pthread_mutex_lock, ER_SYNC_MUTEX_LOCK, m, (pthread_mutex_t * m), (m))
WRAP(pthread_mutex_timedlock, ER_SYNC_MUTEX_LOCK, m, (pthread_mutex_t * m, const struct timespec *ts), (m, ts))
WRAP(pthread_mutex_clocklock, ER_SYNC_MUTEX_LOCK, m, (pthread_mutex_t * m, clockid_t c, const struct timespec *ts), (m, c, ts))
WRAP(pthread_cond_wait, ER_SYNC_COND_WAIT, c, (pthread_cond_t * c, pthread_mutex_t *m), (c, m))
WRAP(pthread_cond_timedwait, ER_SYNC_COND_WAIT, c, (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *ts), (c, m, ts))
WRAP(pthread_cond_clockwait, ER_SYNC_COND_WAIT, c, (pthread_cond_t * c, pthread_mutex_t *m, clockid_t k, const struct timespec *ts),
     (c, m, k, ts))
WRAP(pthread_rwlock_rdlock, ER_SYNC_RWLOCK_RDLOCK, l, (pthread_rwlock_t * l), (l))
WRAP(pthread_rwlock_timedrdlock, ER_SYNC_RWLOCK_RDLOCK, l, (pthread_rwlock_t * l, const struct timespec *ts), (l, ts))
WRAP(pthread_rwlock_clockrdlock, ER_SYNC_RWLOCK_RDLOCK, l, (pthread_rwlock_t * l, clockid_t c, const struct timespec *ts), (l, c, ts))
WRAP(pthread_rwlock_wrlock, ER_SYNC_RWLOCK_WRLOCK, l, (pthread_rwlock_t * l), (l))
WRAP(pthread_rwlock_timedwrlock, ER_SYNC_RWLOCK_WRLOCK, l, (pthread_rwlock_t * l, const struct timespec *ts), (l, ts))
WRAP(pthread_rwlock_clockwrlock, ER_SYNC_RWLOCK_WRLOCK, l, (pthread_rwlock_t * l, clockid_t c, const struct timespec *ts), (l, c, ts))
WRAP(pthread_join, ER_SYNC_JOIN, th, (pthread_t th, void **ret), (th, ret))
WRAP(pthread_timedjoin_np, ER_SYNC_JOIN, th, (pthread_t th, void **ret, const struct timespec *ts), (th, ret, ts))
WRAP(pthread_clockjoin_np, ER_SYNC_JOIN, th, (pthread_t th, void **ret, clockid_t c, const struct timespec *ts), (th, ret, c, ts))
WRAP(sem_wait, ER_SYNC_SEM_WAIT, s, (sem_t * s), (s))
WRAP(sem_timedwait, ER_SYNC_SEM_WAIT, s, (sem_t * s, const struct timespec *ts), (s, ts))
WRAP(sem_clockwait, ER_SYNC_SEM_WAIT, s, (sem_t * s, clockid_t c, const struct timespec *ts), (s, c, ts))
WRAP(pthread_barrier_wait, ER_SYNC_BARRIER_WAIT, b, (pthread_barrier_t * b), (b))

/* er_sync_calibrate sets the threshold as the specification says: 6 times the mean time of a
 * mutex lock that never waits, timed as the interposer times it. */
void er_sync_calibrate(void)
{
	int (*lock)(pthread_mutex_t *) = er_next("pthread_mutex_lock");
	int (*unlock)(pthread_mutex_t *) = er_next("pthread_mutex_unlock");
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	enum { N = 2000 };
	uint64_t sum = 0;
	for (int i = 0; i < N; i++) {
		uint64_t t0 = er_now();
		lock(&m);
		uint64_t t1 = er_now();
		unlock(&m);
		sum += t1 - t0;
	}
	uint64_t th = 6 * sum / N;
	er.sync_threshold_ns = th ? th : 1;
}
