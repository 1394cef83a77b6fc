/* cpulog.c: a CPU-bound program with two threads, for the attach test (-P). Each thread, every 2 ms
 * of its run, appends "THREAD MONOTONIC-NS THREAD-CPU-NS" to the file argv[1] (THREAD 0 or 1), so a
 * test can tell how much CPU each used in any window of time. A thread logs only while it runs, so
 * between two of its lines it used at most 2 ms and one busy() call, however long it waited for a
 * CPU (a process-wide clock read by one thread counts the other's CPU at the other's last tick, and
 * a 100 ms wait of the logging thread beside CPU hogs put 70 ms of error into the window). It runs
 * until killed, or for argv[2] seconds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static FILE *logf;
static double limit = 1e9;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

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

static void *run(void *arg) {
	int id = (int)(long)arg;
	long long start = ns(CLOCK_MONOTONIC), last = 0;
	for (;;) {
		busy();
		long long now = ns(CLOCK_MONOTONIC);
		if (now - last >= 2000000) {
			long long cpu = ns(CLOCK_THREAD_CPUTIME_ID);
			pthread_mutex_lock(&mu);
			fprintf(logf, "%d %lld %lld\n", id, now, cpu);
			fflush(logf);
			pthread_mutex_unlock(&mu);
			last = now;
		}
		if ((now - start) / 1e9 > limit)
			exit(0);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: cpulog LOGFILE [SECONDS]\n");
		return 2;
	}
	logf = fopen(argv[1], "w");
	if (!logf) {
		perror(argv[1]);
		return 1;
	}
	if (argc > 2)
		limit = atof(argv[2]);
	pthread_t t;
	pthread_create(&t, NULL, run, (void *)1L);
	run((void *)0L);
	return 0;
}
