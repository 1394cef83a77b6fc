/* Shared helpers of the unwinder's test programs, built with gcc -O2 (no frame pointers). */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

/* cpu returns the CPU time of the calling thread in seconds. */
static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* seconds returns the run length given as argv[1], or dflt. */
static double seconds(int argc, char **argv, double dflt)
{
	return argc > 1 ? atof(argv[1]) : dflt;
}
