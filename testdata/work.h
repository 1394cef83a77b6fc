/* work.h: fixed units of CPU work that a test program measures itself.
 * Every test program calibrates WORK once, then times each function's own work
 * with the thread CPU clock, and prints what it measured, so that a test can
 * compare er's numbers with the program's. */
#ifndef ER_TESTDATA_WORK_H
#define ER_TESTDATA_WORK_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long work_sink;
static double iters_per_unit;

static inline double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* WORK spins for n units inside the calling function, so the samples land there. */
#define WORK(n)                                                              \
	do {                                                                     \
		unsigned long work_x_ = work_sink;                                   \
		long work_n_ = (long)((n) * iters_per_unit);                         \
		for (long work_i_ = 0; work_i_ < work_n_; work_i_++)                 \
			work_x_ = work_x_ * 6364136223846793005UL + 1442695040888963407UL; \
		work_sink = work_x_;                                                 \
	} while (0)

/* calibrate sets one unit to about unit_sec seconds of thread CPU time. */
static __attribute__((unused)) void calibrate(double unit_sec) {
	iters_per_unit = 1e6;
	double best = 1e9;
	for (int k = 0; k < 3; k++) {
		double t0 = thread_cpu();
		WORK(20);
		double dt = thread_cpu() - t0;
		if (dt < best)
			best = dt;
	}
	iters_per_unit = 20e6 * unit_sec / best;
}

static __attribute__((unused)) double unit_seconds(void) {
	const char *u = getenv("ER_TEST_UNIT");
	return u ? atof(u) : 0.05;
}
#endif
