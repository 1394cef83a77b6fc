/* seed002.c: the worked example of seed 002 (Main, A, B, C, E, F, G) as a real program.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -o seed002 seed002.c
 * Expected units: main excl 2 incl 32; A excl 0 incl 10; B excl 5 incl 20; C excl 5 incl 25
 * (callers A 10, B 15; callees E 10, F 10); E excl 10; F excl 5 incl 10; G excl 5.
 * It prints the thread CPU time calibrate() took ("calibrate SECONDS"), the time each function spent in its
 * own work ("excl NAME SECONDS", measured around each WORK), the time of each call path the seed's figures
 * name ("incl NAME SECONDS" around the calls of NAME; "C from A", "C from B" around C's calls in A and B),
 * and the process's getrusage user+system time ("rusage SECONDS"). One unit is about ER_TEST_UNIT seconds
 * (default 0.05); the measured times, not the units, are what er must match. */
#include <sys/resource.h>
#include "work.h"

enum { MAIN, FA, FB, FC, FE, FF, FG, NF };
static const char *names[NF] = {"main", "A", "B", "C", "E", "F", "G"};
static double excl[NF];
static double incl_a, incl_b, incl_e, incl_f, incl_main, c_from_a, c_from_b;

/* TIMED_CALL runs call and adds its thread CPU time to acc. */
#define TIMED_CALL(acc, call)            \
	do {                                 \
		double t0_ = thread_cpu();       \
		call;                            \
		acc += thread_cpu() - t0_;       \
	} while (0)

#define TIMED_WORK(f, n)                 \
	do {                                 \
		double t0_ = thread_cpu();       \
		WORK(n);                         \
		excl[f] += thread_cpu() - t0_;   \
	} while (0)

void G(double u) { TIMED_WORK(FG, u); }
void E(double u) { TIMED_WORK(FE, u); }
void F(double u) {
	TIMED_WORK(FF, u / 2);
	G(u / 2);
}
void C(double arg) {
	TIMED_WORK(FC, arg * 0.2);
	TIMED_CALL(incl_e, E(arg * 0.4));
	TIMED_CALL(incl_f, F(arg * 0.4));
}
void A(void) { TIMED_CALL(c_from_a, C(10)); }
void B(void) {
	TIMED_CALL(c_from_b, C(7.5));
	TIMED_WORK(FB, 5);
	TIMED_CALL(c_from_b, C(7.5));
}

int main(void) {
	double c0 = thread_cpu();
	calibrate(unit_seconds());
	printf("calibrate %.6f\n", thread_cpu() - c0);
	TIMED_CALL(incl_a, A());
	TIMED_WORK(MAIN, 2);
	TIMED_CALL(incl_b, B());
	incl_main = thread_cpu() - c0;
	for (int i = 0; i < NF; i++)
		printf("excl %s %.6f\n", names[i], excl[i]);
	printf("incl main %.6f\nincl A %.6f\nincl B %.6f\nincl C %.6f\nincl E %.6f\nincl F %.6f\n", incl_main, incl_a,
	       incl_b, c_from_a + c_from_b, incl_e, incl_f);
	printf("C from A %.6f\nC from B %.6f\n", c_from_a, c_from_b);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
	return 0;
}
