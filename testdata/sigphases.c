/* sigphases.c: three timed phases of CPU work, phase_a, phase_b, phase_c, SECONDS (argv[1]) each,
 * for the pause/resume and sample-signal tests (-y, -l). With a signal number as argv[2], it raises
 * that signal just before phase_b and just after it. It prints each phase's CPU time and
 * CLOCK_MONOTONIC window: "phase_b cpu SECONDS", "phase_b start NS", "phase_b end NS". */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long long mono(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define PHASE(name)                                                                          \
	__attribute__((noinline)) static void name(double sec) {                                 \
		long long m0 = mono();                                                               \
		double t0 = cpu();                                                                   \
		unsigned long x = sink;                                                              \
		while (cpu() - t0 < sec)                                                             \
			for (int i = 0; i < 20000; i++)                                                  \
				x = x * 6364136223846793005UL + 1442695040888963407UL;                       \
		sink = x;                                                                            \
		printf(#name " cpu %.6f\n" #name " start %lld\n" #name " end %lld\n", cpu() - t0, m0, \
		       mono());                                                                      \
		fflush(stdout);                                                                      \
	}
PHASE(phase_a)
PHASE(phase_b)
PHASE(phase_c)

int main(int argc, char **argv) {
	double sec = argc > 1 ? atof(argv[1]) : 0.5;
	int sig = argc > 2 ? atoi(argv[2]) : 0;
	phase_a(sec);
	if (sig)
		raise(sig);
	phase_b(sec);
	if (sig)
		raise(sig);
	phase_c(sec);
	return 0;
}
