/* faultloop.c: page faults at a high rate, for the cost of counter profiling: ROUNDS times (argv[1],
 * default 25) map 4,000 new pages, write a byte into each (a minor fault each) and unmap them: 100,000
 * faults by default. It prints "faults N" (the minor faults it measured with getrusage).
 * Build: gcc -O2 -g -o faultloop faultloop.c */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define PAGES 4000

__attribute__((noinline)) static void touch(volatile char *p, long n, long page) {
	for (long i = 0; i < n; i++)
		p[i * page] = 1;
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 25;
	long page = 4096;
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	for (int r = 0; r < rounds; r++) {
		char *p = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		madvise(p, PAGES * page, MADV_NOHUGEPAGE);
		touch(p, PAGES, page);
		munmap(p, PAGES * page);
	}
	getrusage(RUSAGE_SELF, &r1);
	printf("faults %ld\n", r1.ru_minflt - r0.ru_minflt);
	return 0;
}
