/* guiprog.c: the program the Analyzer's browser tests profile.
 *
 * Two threads. The main thread runs two phases of argv[1] seconds (default 0.6) each, by the wall
 * clock: phase 1 runs alpha(), phase 2 runs beta(); a second thread runs gamma_thread() all along.
 * Each of them calls a leaf through work() (main -> alpha -> work -> leaf_a, ...), and spends some
 * time in its own loop. Built with guitmpl.cpp (g++), gamma_thread also calls a C++ function
 * template, whose name has <, > and &.
 *
 * It prints each phase as "phaseN START END", CLOCK_MONOTONIC nanoseconds: the experiment's
 * times are relative to the CLOCK_MONOTONIC time of its start (log.xml, start@perfNS).
 *
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -DNO_CXX -o guiprog guiprog.c
 *   or:  gcc -c ... guiprog.c && g++ -c ... guitmpl.cpp && g++ -pthread -o guiprog *.o */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 0.6;
static volatile unsigned long sink;
static volatile int done;

#ifndef NO_CXX
unsigned long tmpl_work(unsigned long n);
#else
static unsigned long tmpl_work(unsigned long n) { return n; }
#endif

static long long now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void leaf_a(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink += i * i; /* leaf_a's loop */
}

__attribute__((noinline)) void leaf_b(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink += i ^ (i >> 3); /* leaf_b's loop */
}

__attribute__((noinline)) void leaf_g(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink += i + 7; /* leaf_g's loop */
}

__attribute__((noinline)) void work(void (*leaf)(unsigned long), unsigned long n) { leaf(n); }

__attribute__((noinline)) void alpha(long long until) {
	while (now() < until) {
		work(leaf_a, 20000);
		for (unsigned long i = 0; i < 10000; i++)
			sink += i; /* alpha's own loop */
	}
}

__attribute__((noinline)) void beta(long long until) {
	while (now() < until) {
		work(leaf_b, 30000);
		for (unsigned long i = 0; i < 5000; i++)
			sink -= i; /* beta's own loop */
	}
}

__attribute__((noinline)) void *gamma_thread(void *arg) {
	(void)arg;
	while (!done) {
		work(leaf_g, 20000);
		sink += tmpl_work(5000); /* gamma's loop */
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc > 1)
		seconds = atof(argv[1]);
	long long len = (long long)(seconds * 1e9);
	pthread_t t;
	pthread_create(&t, NULL, gamma_thread, NULL);
	long long t0 = now();
	alpha(t0 + len);
	long long t1 = now();
	beta(t1 + len);
	long long t2 = now();
	done = 1;
	pthread_join(t, NULL);
	printf("phase1 %lld %lld\n", t0, t1);
	printf("phase2 %lld %lld\n", t1, t2);
	return 0;
}
