/* lines.c: one function, work(), whose three loops (one source line each) do known shares of its time.
 * It prints the thread CPU time of each loop ("line A SECONDS", "line B ...", "line C ...") and the line
 * numbers of the loops ("lineno A N" ...), so a test can compare er's per-line metrics with them.
 * Build: gcc -O1 -g -o lines lines.c */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile unsigned long sink;
static double ta, tb, tc;
static int la, lb, lc;

__attribute__((noinline)) void work(long n) {
	unsigned long x = sink, y = sink + 1, z = sink + 2;
	double t0 = thread_cpu();
	la = __LINE__ + 1;
	for (long i = 0; i < 5 * n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
	double t1 = thread_cpu();
	lb = __LINE__ + 1;
	for (long i = 0; i < 3 * n; i++) y = (y ^ (y >> 7)) * 0x9E3779B97F4A7C15UL;
	double t2 = thread_cpu();
	lc = __LINE__ + 1;
	for (long i = 0; i < 2 * n; i++) z = z * 2862933555777941757UL + 3037000493UL;
	double t3 = thread_cpu();
	ta += t1 - t0;
	tb += t2 - t1;
	tc += t3 - t2;
	sink = x + y + z;
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	for (int r = 0; r < rounds; r++)
		work(20000000);
	printf("line A %.6f\nline B %.6f\nline C %.6f\n", ta, tb, tc);
	printf("lineno A %d\nlineno B %d\nlineno C %d\n", la, lb, lc);
	return 0;
}
