/* demo.c: the example program `make demo` profiles: a little pipeline that multiplies matrices,
 * hashes strings and sorts, so that the report has callers, callees and a call tree to show.
 * Build: gcc -O2 -g -fno-omit-frame-pointer -fno-inline -o demo demo.c */
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

/* make_key writes "key-I" into buf. */
void make_key(char *buf, int i) {
	char digits[16];
	int n = 0;
	do {
		digits[n++] = '0' + i % 10;
		i /= 10;
	} while (i);
	memcpy(buf, "key-", 4);
	for (int k = 0; k < n; k++)
		buf[4 + k] = digits[n - 1 - k];
	buf[4 + n] = 0;
}

unsigned long hash_many(int n) {
	char buf[64];
	unsigned long h = 0;
	for (int r = 0; r < 20; r++)
		for (int i = 0; i < n; i++) {
			make_key(buf, i * 7 + r);
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
