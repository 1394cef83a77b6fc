/* guiprog.c: the Analyzer's browser-test program. main runs alpha for argv[1] seconds of its CPU time
 * (default 0.5), then beta for as long, while a second thread runs gamma all along; each calls a leaf
 * through work(). It prints the CPU time each phase used, as "cpu F SECONDS".
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o guiprog guiprog.c */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 0.5;
static volatile unsigned long sink;
static volatile int done;

static double cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) void leaf(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink += i * i; /* the hot loop */
}

__attribute__((noinline)) void work(unsigned long n) { leaf(n); }

__attribute__((noinline)) void alpha(void) {
	double t0 = cpu();
	while (cpu() - t0 < seconds)
		work(20000); /* alpha's loop */
	printf("cpu alpha %.6f\n", cpu() - t0);
}

__attribute__((noinline)) void beta(void) {
	double t0 = cpu();
	while (cpu() - t0 < seconds)
		work(20000); /* beta's loop */
	printf("cpu beta %.6f\n", cpu() - t0);
}

__attribute__((noinline)) void *gamma_thread(void *arg) {
	(void)arg;
	while (!done)
		work(20000); /* gamma's loop */
	return NULL;
}

int main(int argc, char **argv) {
	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_t t;
	pthread_create(&t, NULL, gamma_thread, NULL);
	alpha();
	beta();
	done = 1;
	pthread_join(t, NULL);
	return 0;
}
