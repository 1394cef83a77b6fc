/* pingpong.c: two threads pass a byte back and forth through two pipes N times (argv[1], default
 * 200000): every round trip blocks each thread once, so the program is all context switches. It prints
 * "wall SECONDS" and "cpu SECONDS" (getrusage, both threads).
 * Build: gcc -O2 -g -pthread -o pingpong pingpong.c */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long n = 200000;

static void *pong(void *arg) {
	char c;
	for (long i = 0; i < n; i++) {
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			exit(1);
	}
	return arg;
}

int main(int argc, char **argv) {
	if (argc > 1)
		n = atol(argv[1]);
	if (pipe(ab) || pipe(ba))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t t;
	pthread_create(&t, 0, pong, 0);
	char c = 'x';
	for (long i = 0; i < n; i++) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
	}
	pthread_join(t, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("wall %.6f\ncpu %.6f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
	return 0;
}
