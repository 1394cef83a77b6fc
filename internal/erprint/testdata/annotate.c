/* annotate.c: the program of er print's tests of lines, pcs, source and disasm. hot() is inlined
 * into caller1 and caller2; work() has two loops on lines of their own.
 * testdata/annotate.elf is built from it, in internal/erprint, with
 *   gcc -O1 -g -fdebug-prefix-map=$PWD=/src -o testdata/annotate.elf testdata/annotate.c
 * (gcc 12; the goldens hold its addresses, so rebuild it only to change it). */
static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long hot(unsigned long x, long n) {
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) unsigned long caller1(long n) { return hot(sink, 2 * n) + 1; }

__attribute__((noinline)) unsigned long caller2(long n) { return hot(sink + 7, 3 * n) + 2; }

__attribute__((noinline)) void work(long n) {
	unsigned long x = sink, y = sink + 1;
	for (long i = 0; i < 5 * n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	for (long i = 0; i < 3 * n; i++)
		y = (y ^ (y >> 7)) * 0x9E3779B97F4A7C15UL;
	sink = x + y;
}

int main(int argc, char **argv) {
	sink += caller1(argc);
	sink += caller2(argc);
	work(argc);
	return 0;
}
