/* syncprog.c: synchronization waits of known length. Two callers, lock_a and lock_b, each wait on a
 * mutex that another thread holds for a known time; main waits in pthread_join for a thread that
 * sleeps; one thread waits on a condition variable, a semaphore and a barrier. Every wait is timed
 * by the program around the call (CLOCK_MONOTONIC) and printed: "waited FUNC SECONDS COUNT". The
 * waits are long enough that a preemption between the program's clock read and the collector's (a
 * scheduler slice of a few ms, on a machine busy with other work) is below the test's 5%: with
 * 20 ms waits, one 4 ms preemption put lock_b 6% apart.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o syncprog syncprog.c */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static pthread_barrier_t bar;
static volatile int held, ready;

struct wait {
	const char *fn;
	double secs;
	int n;
} waits[8];

static void note(int i, const char *fn, double dt) {
	waits[i].fn = fn;
	waits[i].secs += dt;
	waits[i].n++;
}

/* holder takes the mutex and keeps it for ms milliseconds, while the caller waits on it. */
struct hold {
	int ms;
};

static void *holder(void *arg) {
	struct hold *h = arg;
	pthread_mutex_lock(&mu);
	held = 1;
	usleep(h->ms * 1000);
	pthread_mutex_unlock(&mu);
	return NULL;
}


/* start_holder starts a thread that takes the mutex and keeps it for h->ms milliseconds, and
 * returns once it holds it. */
static pthread_t start_holder(struct hold *h) {
	pthread_t t;
	held = 0;
	pthread_create(&t, NULL, holder, h);
	while (!held)
		usleep(100);
	return t;
}

/* lock_a and lock_b wait on the held mutex: two callers of pthread_mutex_lock. */
__attribute__((noipa)) void lock_a(int ms) {
	struct hold h = {ms};
	pthread_t t = start_holder(&h);
	double t0 = now();
	pthread_mutex_lock(&mu);
	note(0, "lock_a", now() - t0);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
}

__attribute__((noipa)) void lock_b(int ms) {
	struct hold h = {ms};
	pthread_t t = start_holder(&h);
	double t0 = now();
	pthread_mutex_lock(&mu);
	note(1, "lock_b", now() - t0);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
}

static void *sleeper(void *arg) {
	usleep(*(int *)arg * 1000);
	return NULL;
}

__attribute__((noipa)) void join_wait(int ms) {
	pthread_t t;
	pthread_create(&t, NULL, sleeper, &ms);
	double t0 = now();
	pthread_join(t, NULL);
	note(2, "join_wait", now() - t0);
}

static void *signaller(void *arg) {
	(void)arg;
	usleep(150000);
	pthread_mutex_lock(&cmu);
	ready = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&cmu);
	usleep(150000);
	sem_post(&sem);
	usleep(150000);
	pthread_barrier_wait(&bar);
	return NULL;
}

__attribute__((noipa)) void others(void) {
	pthread_t t;
	sem_init(&sem, 0, 0);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t, NULL, signaller, NULL);
	pthread_mutex_lock(&cmu);
	double t0 = now();
	while (!ready)
		pthread_cond_wait(&cv, &cmu);
	note(3, "cond_wait", now() - t0);
	pthread_mutex_unlock(&cmu);
	t0 = now();
	sem_wait(&sem);
	note(4, "sem_wait", now() - t0);
	t0 = now();
	pthread_barrier_wait(&bar);
	note(5, "barrier_wait", now() - t0);
	pthread_join(t, NULL);
}

int main(void) {
	for (int i = 0; i < 3; i++) {
		lock_a(200);
		lock_b(100);
	}
	join_wait(300);
	others();
	for (int i = 0; i < 6; i++)
		printf("waited %s %.6f %d\n", waits[i].fn, waits[i].secs, waits[i].n);
	return 0;
}
