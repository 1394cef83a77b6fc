/* cpulog.c: a CPU-bound program with two threads, for the attach test (-P). Every 2 ms it appends
 * "MONOTONIC-NS PROCESS-CPU-NS" to the file argv[1], so a test can tell how much CPU it used in any
 * window of time. It runs until killed, or for argv[2] seconds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long long ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void busy(void) {
	unsigned long x = sink;
	for (int i = 0; i < 50000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void *worker(void *arg) {
	(void)arg;
	for (;;)
		busy();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: cpulog LOGFILE [SECONDS]\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	double limit = argc > 2 ? atof(argv[2]) : 1e9;
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	long long start = ns(CLOCK_MONOTONIC), last = 0;
	for (;;) {
		busy();
		long long now = ns(CLOCK_MONOTONIC);
		if (now - last >= 2000000) {
			fprintf(f, "%lld %lld\n", now, ns(CLOCK_PROCESS_CPUTIME_ID));
			fflush(f);
			last = now;
		}
		if ((now - start) / 1e9 > limit)
			return 0;
	}
}
