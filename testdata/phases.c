/* phases.c: main runs phaseA, phaseB and phaseC one after the other, each for argv[1] seconds of CPU time
 * (default 0.6), and prints when each started and ended on CLOCK_MONOTONIC, as "start F SECONDS" and
 * "end F SECONDS", and the CPU time each used, "cpu F SECONDS".
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -o phases phases.c */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 0.6;
static volatile unsigned long sink;

static double now(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define PHASE(name)                                                                  \
	__attribute__((noinline)) void name(void) {                                      \
		double w0 = now(CLOCK_MONOTONIC), t0 = now(CLOCK_THREAD_CPUTIME_ID);         \
		unsigned long x = sink;                                                      \
		while (now(CLOCK_THREAD_CPUTIME_ID) - t0 < seconds)                          \
			for (int i = 0; i < 200000; i++)                                         \
				x = x * 6364136223846793005UL + 1442695040888963407UL;               \
		sink = x;                                                                    \
		double t1 = now(CLOCK_THREAD_CPUTIME_ID), w1 = now(CLOCK_MONOTONIC);         \
		printf("start " #name " %.6f\nend " #name " %.6f\ncpu " #name " %.6f\n", w0, w1, t1 - t0); \
	}

PHASE(phaseA)
PHASE(phaseB)
PHASE(phaseC)

int main(int argc, char **argv) {
	if (argc > 1)
		seconds = atof(argv[1]);
	phaseA();
	phaseB();
	phaseC();
	return 0;
}
