/* ep.c: the NAS Parallel Benchmarks' EP kernel ("embarrassingly parallel"), written for er from
 * its published description (D. Bailey et al., The NAS Parallel Benchmarks, RNR-94-007, 1994,
 * section 2.2: Gaussian pairs from the benchmark's linear congruential generator by the polar
 * method, counted in square annuli), parallelized with OpenMP: a loop over batches of pairs, each
 * batch starting its own stretch of the generator's sequence, with a reduction of the sums and a
 * critical section merging the counts.
 *
 * Build: gcc -fopenmp -O2 -g ep.c -lm (or clang). Run: OMP_NUM_THREADS=2 ./ep [M], 2^(M+1) random
 * numbers (M=24, class S, the default; M=25, class W; M=28, class A). It prints the sums, the counts and whether
 * the sums are the published ones. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MK 16            /* a batch: 2^MK pairs */
#define NK (1 << MK)
#define NQ 10            /* annuli */
#define A 1220703125ULL  /* 5^13, the generator's multiplier */
#define SEED 271828183ULL
#define MASK ((1ULL << 46) - 1)

/* next is the generator: x = A*x mod 2^46; it returns x / 2^46, in (0, 1). */
static inline double next(uint64_t *x, uint64_t a) {
	*x = (uint64_t)(((unsigned __int128)a * *x) & MASK);
	return (double)*x / (double)(1ULL << 46);
}

/* jump returns the generator's state k steps of multiplier a after seed (a^k * seed mod 2^46), by
 * binary powers. */
static uint64_t jump(uint64_t seed, uint64_t a, uint64_t k) {
	uint64_t x = seed;
	while (k) {
		if (k & 1)
			next(&x, a);
		next(&a, a);
		k >>= 1;
	}
	return x;
}

/* batch draws batch k's 2^MK pairs and adds what they give to sx, sy and q. */
__attribute__((noinline)) static void batch(uint64_t k, uint64_t an, double *sx, double *sy, double q[NQ]) {
	static __thread double r[2 * NK];
	uint64_t x = jump(SEED, an, k);
	for (int i = 0; i < 2 * NK; i++)
		r[i] = next(&x, A);
	for (int i = 0; i < NK; i++) {
		double x1 = 2 * r[2 * i] - 1, x2 = 2 * r[2 * i + 1] - 1;
		double t = x1 * x1 + x2 * x2;
		if (t <= 1) {
			double f = sqrt(-2 * log(t) / t), g1 = x1 * f, g2 = x2 * f;
			q[(int)fmax(fabs(g1), fabs(g2))] += 1;
			*sx += g1;
			*sy += g2;
		}
	}
}

int main(int argc, char **argv) {
	int m = argc > 1 ? atoi(argv[1]) : 24;
	if (m < MK || m > 40)
		return fprintf(stderr, "ep: M from %d to 40\n", MK), 2;
	uint64_t batches = 1ULL << (m - MK);
	uint64_t an = jump(1, A, 2ULL * NK); /* A^(2^(MK+1)): a batch's stretch of the sequence */
	double sx = 0, sy = 0, q[NQ] = {0};
	double t0 = omp_get_wtime();
#pragma omp parallel
	{
		double mq[NQ] = {0};
#pragma omp for reduction(+ : sx, sy) schedule(static)
		for (uint64_t k = 0; k < batches; k++)
			batch(k, an, &sx, &sy, mq);
#pragma omp critical
		for (int l = 0; l < NQ; l++)
			q[l] += mq[l];
	}
	double secs = omp_get_wtime() - t0;
	double n = 0;
	for (int l = 0; l < NQ; l++)
		n += q[l];
	printf("ep M=%d threads %d: %.3f s, %.0f Gaussian pairs, sums %.15e %.15e\n", m, omp_get_max_threads(), secs, n, sx, sy);
	for (int l = 0; l < NQ; l++)
		printf("  annulus %d: %.0f\n", l, q[l]);
	/* The published sums (class S, M=24; class W, M=25; class A, M=28). */
	double vx = 0, vy = 0;
	if (m == 24)
		vx = -3.247834652034740e+3, vy = -6.958407078382297e+3;
	if (m == 25)
		vx = -2.863319731645753e+3, vy = -6.320053679109499e+3;
	if (m == 28)
		vx = -4.295875165629892e+3, vy = -1.580732573678431e+4;
	if (vx != 0)
		printf("%s\n", fabs((sx - vx) / vx) <= 1e-8 && fabs((sy - vy) / vy) <= 1e-8 ? "VERIFIED" : "NOT VERIFIED");
	return 0;
}
