/* seed002.c: the worked example of seed 002 (Main, A, B, C, E, F, G) as a real program.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -o seed002 seed002.c
 * Expected units: main excl 2 incl 32; A excl 0 incl 10; B excl 5 incl 20; C excl 5 incl 25
 * (callers A 10, B 15; callees E 10, F 10); E excl 10; F excl 5 incl 10; G excl 5.
 * It prints the thread CPU time calibrate() took ("calibrate SECONDS"), the time each function spent in its own work ("excl NAME SECONDS"),
 * measured around each WORK, and the process's getrusage user+system time. */
#include <sys/resource.h>
#include "work.h"

enum { MAIN, FA, FB, FC, FE, FF, FG, NF };
static const char *names[NF] = {"main", "A", "B", "C", "E", "F", "G"};
static double excl[NF];

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
	E(arg * 0.4);
	F(arg * 0.4);
}
void A(void) { C(10); }
void B(void) {
	C(7.5);
	TIMED_WORK(FB, 5);
	C(7.5);
}

int main(void) {
	double c0 = thread_cpu();
	calibrate(unit_seconds());
	printf("calibrate %.6f\n", thread_cpu() - c0);
	A();
	TIMED_WORK(MAIN, 2);
	B();
	for (int i = 0; i < NF; i++)
		printf("excl %s %.6f\n", names[i], excl[i]);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
	return 0;
}
