/* hwcprog.c: functions that take known numbers of page faults and context switches, and measure them
 * themselves (getrusage RUSAGE_THREAD around their work), for counter profiling (-h page-faults,
 * -h context-switches). At the end main prints, for each, "faults NAME N" (the minor and major faults it measured),
 * "switches NAME N" (voluntary and involuntary context switches it measured), "want NAME N" (what it
 * was built to take), and "cpu NAME SECONDS" (its thread CPU time).
 *   touch_big    writes one byte into each of 3000 new pages of an anonymous mapping (no huge pages)
 *   touch_small  the same, 1000 pages
 *   touch_heap   the same, 500 pages of a malloc'd block (of its own mapping: 500 pages are over
 *                glibc's mmap threshold)
 *   sleep_many   400 sleeps of 1 us: each blocks, a switch each (and any preemption, measured)
 *   spin_work    0.5 s of thread CPU time
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o hwcprog hwcprog.c */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "work.h"

static long page;

/* usage returns the thread's faults and context switches so far. */
static void usage(long *faults, long *switches) {
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	*faults = ru.ru_minflt + ru.ru_majflt;
	*switches = ru.ru_nvcsw + ru.ru_nivcsw;
}

/* The functions' measurements, printed by main (so that no printing is inside a function's time). */
static struct {
	const char *name;
	long want, faults, switches;
	double cpu;
} results[8];
static int nresults;

static void report(const char *name, long want, long f0, long s0, double c0) {
	long f1, s1;
	usage(&f1, &s1);
	double c1 = thread_cpu();
	results[nresults].name = name;
	results[nresults].want = want;
	results[nresults].faults = f1 - f0;
	results[nresults].switches = s1 - s0;
	results[nresults].cpu = c1 - c0;
	nresults++;
}

static char *fresh(long n) {
	char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, n * page, MADV_NOHUGEPAGE);
	return p;
}

__attribute__((noinline)) void touch_big(char *p, long n) {
	long f0, s0;
	usage(&f0, &s0);
	double c0 = thread_cpu();
	for (long i = 0; i < n; i++)
		((volatile char *)p)[i * page] = 1;
	report("touch_big", n, f0, s0, c0);
}

__attribute__((noinline)) void touch_small(char *p, long n) {
	long f0, s0;
	usage(&f0, &s0);
	double c0 = thread_cpu();
	for (long i = 0; i < n; i++)
		((volatile char *)p)[i * page] = 2;
	report("touch_small", n, f0, s0, c0);
}

__attribute__((noinline)) void touch_heap(char *p, long n) {
	long f0, s0;
	usage(&f0, &s0);
	double c0 = thread_cpu();
	for (long i = 0; i < n; i++)
		((volatile char *)p)[i * page] = 3;
	report("touch_heap", n, f0, s0, c0);
}

__attribute__((noinline)) void sleep_many(int n) {
	long f0, s0;
	usage(&f0, &s0);
	double c0 = thread_cpu();
	struct timespec ts = {0, 1000};
	for (int i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	report("sleep_many", n, f0, s0, c0);
}

__attribute__((noinline)) void spin_work(double seconds) {
	long f0, s0;
	usage(&f0, &s0);
	double c0 = thread_cpu();
	while (thread_cpu() - c0 < seconds)
		WORK(1);
	report("spin_work", 0, f0, s0, c0);
}

int main(int argc, char **argv) {
	page = sysconf(_SC_PAGESIZE);
	double spin = argc > 1 ? atof(argv[1]) : 0.5;
	iters_per_unit = 20000;
	/* Everything the functions touch besides their pages is touched before: their stacks, stdio's
	 * buffer (a first line), the mappings (made here). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	long f, sw;
	usage(&f, &sw);
	printf("page %ld start %.6f\n", page, thread_cpu());
	char *big = fresh(3000), *small = fresh(1000);
	char *heap = malloc(500 * page);
	if (heap == NULL)
		return 1;
	madvise((void *)((unsigned long)heap & ~(page - 1)), 501 * page, MADV_NOHUGEPAGE);
	touch_big(big, 3000);
	touch_small(small, 1000);
	touch_heap(heap, 500);
	sleep_many(400);
	spin_work(spin);
	for (int i = 0; i < nresults; i++)
		printf("faults %s %ld\nswitches %s %ld\nwant %s %ld\ncpu %s %.6f\n", results[i].name, results[i].faults, results[i].name,
		       results[i].switches, results[i].name, results[i].want, results[i].name, results[i].cpu);
	return 0;
}
