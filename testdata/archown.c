/* archown.c: the shared library of archprog.c, with code inlined into own_work.
 * Build: gcc -O2 -g -fPIC -shared -o libarchown.so archown.c */
static inline __attribute__((always_inline)) unsigned long own_step(unsigned long x, long i) {
	x ^= x << 13;
	x ^= x >> 7;
	return x + (unsigned long)i;
}

__attribute__((noinline)) unsigned long own_work(unsigned long x, long n) {
	for (long i = 0; i < n; i++)
		x = own_step(x, i);
	return x;
}
