// Test fixture for package debuginfo: a static inline function inlined into
// two callers, a two-level inline chain, and a static function.
// Built by the tests, for example: gcc -O2 -g -o inline inline.c
// Lines marked "MARK name" are found by the tests by that text.
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

static inline int scale(int x) {
	int y = x * 3;          // MARK scale_body
	sink = y;               // MARK scale_store
	return y + sink;        // MARK scale_return
}

static inline int twice_scaled(int x) {
	int a = scale(x);       // MARK twice_call
	return a + scale(a);    // MARK twice_call2
}

__attribute__((noinline)) int caller_a(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += scale(i);      // MARK call_a
	return s;
}

__attribute__((noinline)) int caller_b(int n) {
	int s = 1;
	for (int i = 0; i < n; i++)
		s ^= scale(i + n);  // MARK call_b
	return s;
}

__attribute__((noinline)) int caller_c(int n) {
	return twice_scaled(n); // MARK call_c
}

static __attribute__((noinline)) int helper(int n) {
	int s = 0;              // MARK helper_body
	for (int i = 0; i < n; i++)
		s += i * sink;
	return s;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 10;
	printf("%d\n", caller_a(n) + caller_b(n) + caller_c(n) + helper(n));
	return 0;
}
