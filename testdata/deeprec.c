/* deeprec.c: a recursion of DEPTH frames (argv[1], default 10000) that spins at the bottom, repeated for
 * argv[2] seconds of CPU (default 1). Stacks of 10,000 frames do not fit in a 64 KiB stack copy.
 * Build: gcc -O2 -g -o deeprec deeprec.c   (no frame pointers) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long bottom(void) {
	unsigned long x = sink;
	for (long i = 0; i < 20000000; i++)
		x = x * 6364136223846793005UL + 1;
	return x;
}

__attribute__((noinline)) unsigned long descend(int n) {
	volatile int here = n; /* read after the call: a real frame per level, no tail call, no loop */
	if (n == 0)
		return bottom();
	unsigned long r = descend(n - 1);
	return r + (unsigned long)here;
}

int main(int argc, char **argv) {
	int depth = argc > 1 ? atoi(argv[1]) : 10000;
	double secs = argc > 2 ? atof(argv[2]) : 1;
	double t0 = thread_cpu();
	unsigned long r = 0;
	int calls = 0;
	while (thread_cpu() - t0 < secs) {
		r += descend(depth);
		calls++;
	}
	sink = r;
	printf("calls %d\ncpu %.6f\n", calls, thread_cpu() - t0);
	return 0;
}
