/* archstrip.c: the stripped shared library of archprog.c, its debug information in a separate
 * file named by .gnu_debuglink; strip_work has code inlined.
 * Build: gcc -O2 -g -fPIC -shared -o libarchstrip.so archstrip.c, then objcopy --only-keep-debug,
 * strip --strip-debug and objcopy --add-gnu-debuglink. */
static inline __attribute__((always_inline)) unsigned long strip_step(unsigned long x, long i) {
	x *= 0xff51afd7ed558ccdUL;
	x ^= x >> 33;
	return x + (unsigned long)i;
}

__attribute__((noinline)) unsigned long strip_work(unsigned long x, long n) {
	for (long i = 0; i < n; i++)
		x = strip_step(x, i);
	return x;
}
