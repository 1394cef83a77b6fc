/* stripped.c: three static functions doing 5, 3 and 2 units of work, for a test that strips the
 * program (issue 12, acceptance 1): er must still show them as three functions, by their call frame
 * entries. Prints "five|three|two SECONDS" (thread CPU time each measured) and "main SECONDS". */
#include "work.h"

static __attribute__((noinline)) double five(void) {
	double t0 = thread_cpu();
	WORK(5);
	return thread_cpu() - t0;
}

static __attribute__((noinline)) double three(void) {
	double t0 = thread_cpu();
	WORK(3);
	return thread_cpu() - t0;
}

static __attribute__((noinline)) double two(void) {
	double t0 = thread_cpu();
	WORK(2);
	return thread_cpu() - t0;
}

int main(void) {
	double t0 = thread_cpu();
	calibrate(unit_seconds());
	double f = 0, th = 0, tw = 0;
	for (int i = 0; i < 4; i++) {
		f += five();
		th += three();
		tw += two();
	}
	printf("five %.6f\nthree %.6f\ntwo %.6f\nmain %.6f\n", f, th, tw, thread_cpu() - t0);
	return 0;
}
