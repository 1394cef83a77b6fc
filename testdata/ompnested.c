/* ompnested.c: nested OpenMP parallel regions: outer's region of 2 threads each runs inner's region
 * of 2 threads, whose threads each spin 100 ms of their CPU time. Run with
 * OMP_MAX_ACTIVE_LEVELS=2 (nesting on) and OMP_NUM_THREADS=2,2. It prints the work each thread
 * measured, "nested work_ns W", summed over the four. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <time.h>

static long long cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile double sink;

__attribute__((noinline)) long long spin(long long ns) {
	long long t0 = cpu(), t;
	double x = 1;
	do {
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
		t = cpu();
	} while (t - t0 < ns);
	sink = x;
	return t - t0;
}

static long long total;

__attribute__((noinline)) void inner(void) {
#pragma omp parallel
	{
		long long w = spin(100000000LL);
#pragma omp atomic
		total += w;
	}
}

__attribute__((noinline)) void outer(void) {
#pragma omp parallel
	inner();
}

int main(void) {
	outer();
	printf("nested levels %d work_ns %lld\n", omp_get_max_active_levels(), total);
	return 0;
}
