/* mallocbench.c: a malloc-heavy program for the heap-tracing benchmark: N (default 1,000,000)
 * malloc/free pairs, each under a 5-frame stack of the program's own functions.
 * Build: gcc -O2 -g -o mallocbench mallocbench.c   (no frame pointers, as distributions build) */
#include <stdlib.h>

static void *volatile sink;

__attribute__((noipa)) void level5(int i) {
	void *p = malloc(16 + (i & 255));
	sink = p;
	free(p);
}
__attribute__((noipa)) void level4(int i) { level5(i); sink = 0; }
__attribute__((noipa)) void level3(int i) { level4(i); sink = 0; }
__attribute__((noipa)) void level2(int i) { level3(i); sink = 0; }
__attribute__((noipa)) void level1(int i) { level2(i); sink = 0; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	for (long i = 0; i < n; i++)
		level1((int)i);
	return 0;
}
