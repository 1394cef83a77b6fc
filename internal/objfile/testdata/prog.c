// Test fixture for package objfile: calls puts, strlen and qsort through the PLT.
// Built by the tests, for example: gcc -O2 -o prog prog.c
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) int compute(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * i;
	return s;
}

int main(int argc, char **argv) {
	int v[4] = {3, 1, 2, argc};
	qsort(v, 4, sizeof v[0], cmp);
	puts(argv[0]);
	int n = (int)strlen(argv[0]);
	return compute(n + v[0]) & 1;
}
