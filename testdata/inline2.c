/* inline2.c: hot() is inlined into two callers; caller1 spends 2 units in it, caller2 3 units.
 * It prints the thread CPU time of each caller ("caller caller1 SECONDS", "caller caller2 SECONDS").
 * Build: gcc -O2 -g -o inline2 inline2.c */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long hot(unsigned long x, long n) {
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) unsigned long caller1(long unit) { return hot(sink, 2 * unit) + 1; }

__attribute__((noinline)) unsigned long caller2(long unit) { return hot(sink + 7, 3 * unit) + 2; }

int main(int argc, char **argv) {
	long unit = argc > 1 ? atol(argv[1]) : 100000000;
	double t0 = thread_cpu();
	sink += caller1(unit);
	double t1 = thread_cpu();
	sink += caller2(unit);
	double t2 = thread_cpu();
	printf("caller caller1 %.6f\ncaller caller2 %.6f\n", t1 - t0, t2 - t1);
	return 0;
}
