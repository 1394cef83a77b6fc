/* ompprog.c: an OpenMP program that times its own work and waits, for the OpenMP view modes and
 * the <OMP-*> states (issue 29). Build: gcc -fopenmp -O1 -g -fno-omit-frame-pointer ompprog.c
 * (or clang -fopenmp ...); run with OMP_NUM_THREADS=2, OMP_WAIT_POLICY=active or passive.
 *
 * Each construct is in a function of its own, and each thread measures, with its own CPU clock,
 * the work it does there (spin), and with the monotonic clock the time it waits to get in (the
 * barrier, the critical section, the lock, the ordered section) and the time from its end of the
 * region's work to the region's end (its wait at the implicit barrier there: the region ends when
 * the master's construct returns). It prints one line a construct and thread:
 *
 *   omp FUNCTION thread T work_ns W wait_ns X implicit_ns Y
 *
 * and at the end each thread's CPU time (CLOCK_THREAD_CPUTIME_ID) as "omp thread T cpu_ns C". Work
 * is known by design: the waits are what the other thread's longer work makes them. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MS 1000000LL
#define MAXT 8

static long long now(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile double sink;

/* spin burns ns of the calling thread's CPU time, and returns it as measured. */
__attribute__((noinline)) long long spin(long long ns) {
	long long t0 = now(CLOCK_THREAD_CPUTIME_ID), t;
	double x = 1;
	do {
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
		t = now(CLOCK_THREAD_CPUTIME_ID);
	} while (t - t0 < ns);
	sink = x;
	return t - t0;
}

static long long work[16][MAXT], wait[16][MAXT], fin[16][MAXT], regend[16];
static const char *names[16];
static int nconstructs;

static int construct(const char *name) {
	names[nconstructs] = name;
	return nconstructs++;
}

/* A parallel loop: iteration i does 10 ms of work, 40 iterations, split statically. */
__attribute__((noinline)) void region_for(void) {
	int c = construct("region_for");
#pragma omp parallel for schedule(static)
	for (int i = 0; i < 40; i++) {
		work[c][omp_get_thread_num()] += spin(10 * MS);
		fin[c][omp_get_thread_num()] = now(CLOCK_MONOTONIC);
	}
	regend[c] = now(CLOCK_MONOTONIC);
}

/* An explicit barrier: thread 0 works 300 ms before it, the others 100 ms, so they wait. */
__attribute__((noinline)) void region_barrier(void) {
	int c = construct("region_barrier");
#pragma omp parallel
	{
		int t = omp_get_thread_num();
		work[c][t] += spin(t == 0 ? 300 * MS : 100 * MS);
		long long w0 = now(CLOCK_MONOTONIC);
#pragma omp barrier
		wait[c][t] += now(CLOCK_MONOTONIC) - w0;
		work[c][t] += spin(50 * MS);
		fin[c][t] = now(CLOCK_MONOTONIC);
	}
	regend[c] = now(CLOCK_MONOTONIC);
}

/* A critical section: each thread enters it 10 times and works 20 ms in it. */
__attribute__((noinline)) void region_critical(void) {
	int c = construct("region_critical");
#pragma omp parallel
	{
		int t = omp_get_thread_num();
		for (int k = 0; k < 10; k++) {
			long long w0 = now(CLOCK_MONOTONIC);
#pragma omp critical
			{
				wait[c][t] += now(CLOCK_MONOTONIC) - w0;
				work[c][t] += spin(20 * MS);
			}
		}
		fin[c][t] = now(CLOCK_MONOTONIC);
	}
	regend[c] = now(CLOCK_MONOTONIC);
}

/* An omp lock: as the critical section. */
__attribute__((noinline)) void region_lock(void) {
	int c = construct("region_lock");
	omp_lock_t lock;
	omp_init_lock(&lock);
#pragma omp parallel
	{
		int t = omp_get_thread_num();
		for (int k = 0; k < 10; k++) {
			long long w0 = now(CLOCK_MONOTONIC);
			omp_set_lock(&lock);
			wait[c][t] += now(CLOCK_MONOTONIC) - w0;
			work[c][t] += spin(20 * MS);
			omp_unset_lock(&lock);
		}
		fin[c][t] = now(CLOCK_MONOTONIC);
	}
	regend[c] = now(CLOCK_MONOTONIC);
	omp_destroy_lock(&lock);
}

/* An ordered loop: 20 iterations of 5 ms before the ordered section and 15 ms in it. */
__attribute__((noinline)) void region_ordered(void) {
	int c = construct("region_ordered");
#pragma omp parallel for ordered schedule(static, 1)
	for (int i = 0; i < 20; i++) {
		int t = omp_get_thread_num();
		work[c][t] += spin(5 * MS);
		long long w0 = now(CLOCK_MONOTONIC);
#pragma omp ordered
		{
			wait[c][t] += now(CLOCK_MONOTONIC) - w0;
			work[c][t] += spin(15 * MS);
		}
		fin[c][t] = now(CLOCK_MONOTONIC);
	}
	regend[c] = now(CLOCK_MONOTONIC);
}

/* Atomics: 200 ms of work a thread, between atomic updates of a shared counter. */
__attribute__((noinline)) void region_atomic(void) {
	int c = construct("region_atomic");
	static long long counter;
#pragma omp parallel
	{
		int t = omp_get_thread_num();
		for (int k = 0; k < 200; k++) {
			work[c][t] += spin(1 * MS);
#pragma omp atomic
			counter++;
		}
		fin[c][t] = now(CLOCK_MONOTONIC);
	}
	regend[c] = now(CLOCK_MONOTONIC);
	if (counter != 200LL * omp_get_max_threads())
		abort();
}

/* A reduction: 40 iterations of 5 ms, each adding to a sum. */
__attribute__((noinline)) void region_reduction(void) {
	int c = construct("region_reduction");
	double sum = 0;
	long long w[MAXT] = {0};
#pragma omp parallel for reduction(+ : sum) schedule(static)
	for (int i = 0; i < 40; i++) {
		w[omp_get_thread_num()] += spin(5 * MS);
		fin[c][omp_get_thread_num()] = now(CLOCK_MONOTONIC);
		sum += i;
	}
	regend[c] = now(CLOCK_MONOTONIC);
	for (int t = 0; t < MAXT; t++)
		work[c][t] += w[t];
	if (sum != 780)
		abort();
}

/* Explicit tasks: one thread creates 20 tasks of 10 ms, which both threads run, at the region's
 * end. Their work is each thread's; the thread's wait at the implicit barrier is the time there
 * less the tasks it ran. */
__attribute__((noinline)) void region_tasks(void) {
	int c = construct("region_tasks");
	static long long taskwork[MAXT];
#pragma omp parallel
	{
		int t = omp_get_thread_num();
#pragma omp single nowait
		for (int k = 0; k < 20; k++) {
#pragma omp task
			{
				long long w0 = now(CLOCK_MONOTONIC);
				work[c][omp_get_thread_num()] += spin(10 * MS);
				taskwork[omp_get_thread_num()] += now(CLOCK_MONOTONIC) - w0;
			}
		}
		fin[c][t] = now(CLOCK_MONOTONIC);
	}
	regend[c] = now(CLOCK_MONOTONIC);
	for (int t = 0; t < MAXT; t++)
		fin[c][t] += taskwork[t]; /* the tasks' wall time, each task's from its start to its end */
}

int main(void) {
	int n = omp_get_max_threads();
	if (n > MAXT) {
		fprintf(stderr, "ompprog: at most %d threads (OMP_NUM_THREADS)\n", MAXT);
		return 2;
	}
	long long serial = spin(100 * MS); /* the master alone, in main */
	region_for();
	region_barrier();
	region_critical();
	region_lock();
	region_ordered();
	region_atomic();
	region_reduction();
	region_tasks();
	printf("omp main thread 0 work_ns %lld wait_ns 0 implicit_ns 0\n", serial);
	for (int c = 0; c < nconstructs; c++)
		for (int t = 0; t < n; t++)
			printf("omp %s thread %d work_ns %lld wait_ns %lld implicit_ns %lld\n", names[c], t, work[c][t], wait[c][t],
			       regend[c] - fin[c][t]);
	long long cpu[MAXT] = {0};
#pragma omp parallel
	cpu[omp_get_thread_num()] = now(CLOCK_THREAD_CPUTIME_ID);
	for (int t = 0; t < n; t++)
		printf("omp thread %d cpu_ns %lld\n", t, cpu[t]);
	return 0;
}
