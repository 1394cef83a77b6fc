/* A call chain main -> a -> b -> c -> leaf, spinning in leaf. */
#include "common.h"

__attribute__((noipa)) unsigned long leaf(double until)
{
	unsigned long x = 0;
	while (cpu() < until)
		for (int i = 0; i < 200000; i++)
			x += i * sink;
	return x;
}

__attribute__((noipa)) unsigned long c(double until) { return leaf(until) + 1; }
__attribute__((noipa)) unsigned long b(double until) { return c(until) * 3; }
__attribute__((noipa)) unsigned long a(double until) { return b(until) ^ 5; }

int main(int argc, char **argv)
{
	sink = a(cpu() + seconds(argc, argv, 0.3));
	return 0;
}
