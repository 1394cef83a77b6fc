/* waker.c: for argv[1] seconds (default 30), wakes every 500 us and does some 20 us of work, as the other
 * processes of a busy machine do: the CPUs switch between it and the target thousands of times a second,
 * and on a virtual machine the hypervisor takes them away more often (steal time).
 * Build: gcc -O1 -o waker waker.c */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 30;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005UL + 1;
		usleep(500);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
	return 0;
}
