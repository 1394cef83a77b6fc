/* recursion.c: direct recursion (rec calls rec) and indirect recursion (ia -> ib -> ia), started by main.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -o recursion recursion.c
 * rec(n) does 1 unit of work at each level and 4 units at the bottom; ia(n)/ib(n) do 1 unit each per level
 * and ia does 3 units at the bottom. It prints the thread CPU time of each function's own work
 * ("excl NAME SECONDS") and of the work done in the first (top-level) invocation ("top NAME SECONDS"). */
#include "work.h"

static double excl_rec, excl_ia, excl_ib, top_rec, top_ia, top_ib;

#define TIMED(acc, top, first, n)              \
	do {                                       \
		double t0_ = thread_cpu();             \
		WORK(n);                               \
		double dt_ = thread_cpu() - t0_;       \
		acc += dt_;                            \
		if (first)                             \
			top += dt_;                        \
	} while (0)

enum { DEPTH = 6 };

void rec(int n) {
	if (n == 0) {
		TIMED(excl_rec, top_rec, n == DEPTH, 4);
		return;
	}
	TIMED(excl_rec, top_rec, n == DEPTH, 1);
	rec(n - 1);
}

void ib(int n);

void ia(int n) {
	TIMED(excl_ia, top_ia, n == DEPTH, 1);
	if (n == 0) {
		TIMED(excl_ia, top_ia, 0, 3);
		return;
	}
	ib(n);
}

void ib(int n) {
	TIMED(excl_ib, top_ib, n == DEPTH, 1);
	ia(n - 1);
}

int main(void) {
	double c0 = thread_cpu();
	calibrate(unit_seconds());
	printf("calibrate %.6f\n", thread_cpu() - c0);
	rec(DEPTH);
	ia(DEPTH);
	printf("excl rec %.6f\nexcl ia %.6f\nexcl ib %.6f\n", excl_rec, excl_ia, excl_ib);
	printf("top rec %.6f\ntop ia %.6f\ntop ib %.6f\n", top_rec, top_ia, top_ib);
	return 0;
}
