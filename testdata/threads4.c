/* threads4.c: 4 threads run worker -> compute -> kernel_loop for argv[1] seconds of CPU each (default 0.5),
 * while main waits in pthread_join. Build: gcc -O2 -g -pthread -o threads4 threads4.c (no frame pointers) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 0.5;
static volatile unsigned long sink;

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) unsigned long kernel_loop(unsigned long x) {
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) void compute(void) {
	double t0 = thread_cpu();
	unsigned long x = 1;
	while (thread_cpu() - t0 < seconds)
		x = kernel_loop(x);
	sink += x;
}

__attribute__((noinline)) void *worker(void *arg) {
	(void)arg;
	compute();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("done %lu\n", sink);
	return 0;
}
