// spin burns CPU time for the perfevent tests.
//
// Build: gcc -O1 -pthread -o spin spin.c
// Usage: spin THREADS MILLIS [fork|sys]
//
// It starts THREADS threads named "spin-0", "spin-1", ... that each burn
// MILLIS ms of their own CPU time; with "fork", a child process named
// "spin-child" burns MILLIS ms too; with "sys", the threads burn most of it in
// the kernel, reading /dev/zero. The main thread waits for them all.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static long millis;
static int in_kernel;
volatile unsigned long sink;
static char zeros[65536];

static void burn(void) {
	struct timespec ts;
	long long end;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	end = ts.tv_sec * 1000000000LL + ts.tv_nsec + millis * 1000000LL;
	int zero = in_kernel ? open("/dev/zero", O_RDONLY) : -1;
	for (;;) {
		if (zero >= 0) {
			/* the kernel clears the buffer: most of the time is system time */
			if (read(zero, zeros, sizeof zeros) > 0)
				sink += zeros[0];
		} else {
			for (int i = 0; i < 10000; i++)
				sink += i;
		}
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		if (ts.tv_sec * 1000000000LL + ts.tv_nsec >= end) {
			if (zero >= 0)
				close(zero);
			return;
		}
	}
}

static void *worker(void *arg) {
	char name[16];
	snprintf(name, sizeof name, "spin-%ld", (long)arg);
	prctl(PR_SET_NAME, name);
	burn();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: spin THREADS MILLIS [fork]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	millis = atol(argv[2]);
	pid_t child = -1;
	in_kernel = argc > 3 && strcmp(argv[3], "sys") == 0;
	if (argc > 3 && strcmp(argv[3], "fork") == 0) {
		child = fork();
		if (child == 0) {
			prctl(PR_SET_NAME, "spin-child");
			burn();
			_exit(0);
		}
	}
	pthread_t *t = calloc(n, sizeof *t);
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (child > 0)
		waitpid(child, NULL, 0);
	return 0;
}
