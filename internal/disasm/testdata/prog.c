// Test fixture for package disasm: direct and indirect calls, a call through
// the PLT, loops (conditional jumps), a switch (jump table), and AVX code
// with RIP-relative constants (VEX-encoded).
// Built by the tests: gcc -O2 -mavx2 -o prog prog.c
#include <stdio.h>
#include <string.h>

volatile double sinkd;

__attribute__((noinline)) double scale(double x) {
	return x * 1.2345 + 0.5;
}

__attribute__((noinline)) void add_arrays(float *restrict a, const float *restrict b, int n) {
	for (int i = 0; i < n; i++)
		a[i] = a[i] * 2.5f + b[i];
}

__attribute__((noinline)) int classify(int c) {
	switch (c) {
	case 0: return 11;
	case 1: return 23;
	case 2: return 37;
	case 3: return 41;
	case 4: return 53;
	case 5: return 67;
	default: return -1;
	}
}

static int (*volatile fp)(int) = classify;

int main(int argc, char **argv) {
	float a[64], b[64];
	for (int i = 0; i < 64; i++)
		a[i] = b[i] = (float)i;
	add_arrays(a, b, 64 - argc);
	sinkd = scale(argc);
	printf("%d %d %zu\n", classify(argc), fp(argc + 1), strlen(argv[0]));
	return (int)a[3];
}
