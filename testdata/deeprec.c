/* deeprec.c: a recursion of DEPTH frames (argv[1], default 10000) that spins at the bottom, repeated for
 * argv[2] seconds of CPU (default 1). Half-way it sleeps argv[3] milliseconds (default 0), once, between two
 * recursions, in a function whose 16 KiB of locals overwrite the outer frames of the recursion. Stacks of 10,000 frames do not fit in a 64 KiB stack copy.
 * Build: gcc -O2 -g -o deeprec deeprec.c   (no frame pointers) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* pause_scrubbed sleeps ms milliseconds with its stack, where the recursion's outer frames were, filled. */
__attribute__((noinline)) void pause_scrubbed(int ms) {
	volatile char buf[16384];
	memset((char *)buf, 0x40, sizeof buf);
	usleep(ms * 1000);
	sink += buf[ms % sizeof buf];
}

int main(int argc, char **argv) {
	int depth = argc > 1 ? atoi(argv[1]) : 10000;
	double secs = argc > 2 ? atof(argv[2]) : 1;
	int pause_ms = argc > 3 ? atoi(argv[3]) : 0;
	double t0 = thread_cpu();
	unsigned long r = 0;
	int calls = 0, paused = 0;
	while (thread_cpu() - t0 < secs) {
		r += descend(depth);
		calls++;
		if (pause_ms > 0 && !paused && thread_cpu() - t0 >= secs / 2) {
			pause_scrubbed(pause_ms);
			paused = 1;
		}
	}
	sink = r;
	printf("calls %d\ncpu %.6f\n", calls, thread_cpu() - t0);
	return 0;
}
