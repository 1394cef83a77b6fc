/* A recursion of argv[2] frames (default 10000) spinning at the bottom, then, when argv[3] is
 * "wait", printing "done" and waiting for its standard input to close before returning. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

static int wait_at_bottom;

__attribute__((noipa)) unsigned long bottom(double secs)
{
	unsigned long x = 0;
	double until = cpu() + secs;
	while (cpu() < until)
		for (int i = 0; i < 200000; i++)
			x += i * sink;
	if (wait_at_bottom) {
		char c;
		printf("done\n");
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
	}
	return x;
}

__attribute__((noipa)) unsigned long rec(int n, double secs)
{
	volatile int pad = n;
	if (n == 0)
		return bottom(secs);
	unsigned long r = rec(n - 1, secs);
	return r + pad;
}

int main(int argc, char **argv)
{
	double secs = seconds(argc, argv, 0.3);
	int depth = argc > 2 ? atoi(argv[2]) : 10000;
	wait_at_bottom = argc > 3 && strcmp(argv[3], "wait") == 0;
	sink = rec(depth, secs);
	return 0;
}
