/* dataspace.c: page faults on known data: global arrays, the members of an array of structs, and heap
 * blocks from two allocation sites, for data-space profiling (-h +page-faults). Each loop writes one
 * byte into each page of its object (a fault at each page not yet touched) and measures the faults it
 * took (getrusage RUSAGE_THREAD), printing "faults NAME N": big_a, small_b, recs.a, recs.b, heap_one,
 * heap_two.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o dataspace dataspace.c */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define PAGE 4096

int big_a[1500 * PAGE / sizeof(int)];            /* 1500 pages of .bss */
static double small_b[400 * PAGE / sizeof(double)]; /* 400 pages */

struct rec {
	char head[64];
	int a[8 * PAGE / sizeof(int)];     /* 8 pages */
	double b[16 * PAGE / sizeof(double)]; /* 16 pages */
	long tail;
};
struct rec recs[20];

static long faults(void) {
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/* touch writes a byte into each page of [p, p+n), from the first whole page, and returns the faults. */
__attribute__((noinline)) static long touch(volatile char *p, long n) {
	long f0 = faults();
	for (long i = 0; i < n; i += PAGE)
		p[i] = 1;
	return faults() - f0;
}

__attribute__((noinline)) char *alloc_one(long n) { return malloc(n); }
__attribute__((noinline)) char *alloc_two(long n) { return malloc(n); }

int main(void) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("start %ld\n", faults());
	/* The heap blocks (of their own mappings), allocated before: only their pages are touched below. */
	long n1 = 300 * PAGE, n2 = 200 * PAGE;
	char *one = alloc_one(n1), *two = alloc_two(n2);
	if (one == NULL || two == NULL)
		return 1;
	madvise(big_a, sizeof big_a, MADV_NOHUGEPAGE);
	madvise(small_b, sizeof small_b, MADV_NOHUGEPAGE);
	madvise(recs, sizeof recs, MADV_NOHUGEPAGE);
	long f;
	f = touch((char *)big_a, sizeof big_a);
	printf("faults big_a %ld\n", f);
	f = touch((char *)small_b, sizeof small_b);
	printf("faults small_b %ld\n", f);
	long fa = 0, fb = 0;
	for (int i = 0; i < 20; i++) {
		fa += touch((char *)recs[i].a, sizeof recs[i].a);
		fb += touch((char *)recs[i].b, sizeof recs[i].b);
	}
	printf("faults recs.a %ld\nfaults recs.b %ld\n", fa, fb);
	/* From the second page: the first holds malloc's chunk header, written (and faulted) by malloc. */
	f = touch(one + PAGE, n1 - PAGE);
	printf("faults heap_one %ld\n", f);
	f = touch(two + PAGE, n2 - PAGE);
	printf("faults heap_two %ld\n", f);
	free(two);
	return 0;
}
