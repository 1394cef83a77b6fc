/* ompregions.c: many small OpenMP parallel regions, for the cost of recording them (issue 29's
 * overhead benchmark). Build: gcc -fopenmp -O2 -g ompregions.c; run with OMP_NUM_THREADS=2 and the
 * number of regions as its argument (default 100000). Each region's threads do about 25 µs of work
 * each; the program prints the regions it ran and the sum of their work, so that nothing is
 * optimized away. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) static double work(int n) {
	double x = 1;
	for (int i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

int main(int argc, char **argv) {
	long regions = argc > 1 ? atol(argv[1]) : 100000;
	double sum = 0;
	for (long r = 0; r < regions; r++) {
#pragma omp parallel reduction(+ : sum)
		sum += work(20000);
	}
	sink = sum;
	printf("ompregions %ld regions sum %g\n", regions, sum);
	return 0;
}
