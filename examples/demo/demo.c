/* demo.c: the example program `make demo` profiles: a little pipeline that multiplies matrices,
 * hashes strings and sorts, so that the report has callers, callees and a call tree to show. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 400

static double a[N][N], b[N][N], c[N][N];

void matmul(void) {
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < N; k++)
				s += a[i][k] * b[k][j];
			c[i][j] = s;
		}
}

unsigned long hash_string(const char *s) {
	unsigned long h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

unsigned long hash_many(int n) {
	char buf[64];
	unsigned long h = 0;
	for (int i = 0; i < n; i++) {
		snprintf(buf, sizeof buf, "key-%d-%d", i, i * 7);
		h ^= hash_string(buf);
	}
	return h;
}

void insertion_sort(int *v, int n) {
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i - 1;
		while (j >= 0 && v[j] > x) {
			v[j + 1] = v[j];
			j--;
		}
		v[j + 1] = x;
	}
}

void sort_work(int n) {
	int *v = malloc(n * sizeof *v);
	for (int i = 0; i < n; i++)
		v[i] = (i * 7919) % n;
	insertion_sort(v, n);
	free(v);
}

void compute(int rounds) {
	for (int r = 0; r < rounds; r++) {
		matmul();
		sort_work(20000);
	}
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			a[i][j] = i + j;
			b[i][j] = i - j;
		}
	compute(rounds);
	unsigned long h = hash_many(200000 * rounds);
	printf("demo: c[1][2] = %.1f, hash = %lx\n", c[1][2], h);
	return 0;
}
