/* twofuncs.c: fast() does 2 units of work and slow() K units (argv[1], default 2), each measuring its
 * thread CPU time ("cpu fast SECONDS", "cpu slow SECONDS"): two runs with K 2 and 4 are a program one of
 * whose functions was made twice as slow, for compare.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -o twofuncs twofuncs.c */
#include "work.h"

__attribute__((noinline)) void fast(void) {
	double c0 = thread_cpu();
	WORK(2);
	printf("cpu fast %.6f\n", thread_cpu() - c0);
}

__attribute__((noinline)) void slow(double k) {
	double c0 = thread_cpu();
	WORK(k);
	printf("cpu slow %.6f\n", thread_cpu() - c0);
}

int main(int argc, char **argv) {
	double k = argc > 1 ? atof(argv[1]) : 2;
	calibrate(0.1);
	fast();
	slow(k);
	return 0;
}
