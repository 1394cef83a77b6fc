/* shortthreads.c: starts argv[1] short threads (default 1000), argv[3] at a time (default 4), each
 * spinning argv[2] ms of its own CPU time (default 2) in spin; each thread measures its CPU time
 * with its own clock, and main prints the sum of all threads' and its own: "threads N cpu S".
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o shortthreads shortthreads.c */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double spin_sec = 0.002;
static volatile unsigned long sink;

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) void spin(void) {
	unsigned long x = sink;
	double t0 = thread_cpu();
	while (thread_cpu() - t0 < spin_sec)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink += x;
}

/* worker returns the CPU time its thread used, from start to end. */
__attribute__((noinline)) void *worker(void *arg) {
	double *used = arg;
	spin();
	*used = thread_cpu();
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	if (argc > 2)
		spin_sec = atof(argv[2]) / 1000;
	int batch = argc > 3 ? atoi(argv[3]) : 4;
	if (n < 1 || batch < 1)
		return 2;
	double *used = calloc(n, sizeof *used);
	pthread_t *th = calloc(batch, sizeof *th);
	for (int i = 0; i < n; i += batch) {
		int k = n - i < batch ? n - i : batch;
		for (int j = 0; j < k; j++)
			if (pthread_create(&th[j], NULL, worker, &used[i + j]) != 0)
				return 1;
		for (int j = 0; j < k; j++)
			pthread_join(th[j], NULL);
	}
	double total = thread_cpu();
	for (int i = 0; i < n; i++)
		total += used[i];
	printf("threads %d cpu %.6f\n", n, total);
	return 0;
}
