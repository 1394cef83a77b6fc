/* archprog.c: a program with a shared library of its own (archown.c, built with debug
 * information) and one stripped, its debug information in a separate file found by
 * .gnu_debuglink (archstrip.c); each has a function that spends CPU time in inlined code.
 * The compact-archive test compares er print's views of it with whole copies.
 * Build: gcc -O2 -g -o archprog archprog.c -L. -larchown -larchstrip -Wl,-rpath,. */
#include <stdio.h>
#include <stdlib.h>

unsigned long own_work(unsigned long x, long n);   /* archown.c */
unsigned long strip_work(unsigned long x, long n); /* archstrip.c */

static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x, long n) {
	for (long i = 0; i < n; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15UL + (unsigned long)i;
	return x;
}

__attribute__((noinline)) unsigned long main_work(unsigned long x, long n) {
	return mix(x, n) + mix(x + 1, n / 2);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	for (int round = 0; round < 4; round++) {
		sink += main_work(sink, n);
		sink += own_work(sink, n);
		sink += strip_work(sink, n);
	}
	printf("%lu\n", sink & 1);
	return 0;
}
