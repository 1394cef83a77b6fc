/* qsort with a comparator that spins: the comparator is called from libc. */
#include "common.h"

__attribute__((noipa)) static int compare(const void *pa, const void *pb)
{
	for (int i = 0; i < 200; i++)
		sink += i;
	int x = *(const int *)pa, y = *(const int *)pb;
	return (x > y) - (x < y);
}

__attribute__((noipa)) void sort_it(int *v, int n)
{
	qsort(v, n, sizeof *v, compare);
	sink++; /* not a tail call */
}

int main(int argc, char **argv)
{
	enum { N = 4000 };
	static int v[N];
	double until = cpu() + seconds(argc, argv, 0.3);
	unsigned r = 1;
	while (cpu() < until) {
		for (int i = 0; i < N; i++)
			v[i] = (r = r * 1103515245 + 12345) >> 8;
		sort_it(v, N);
	}
	return 0;
}
