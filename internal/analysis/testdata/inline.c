/* inline.c: hot() is inlined into caller1 and caller2, which main calls.
 * The tests build it with: gcc -O1 -g -o inline inline.c */
static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long hot(unsigned long x, long n) {
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) unsigned long caller1(long n) { return hot(sink, 2 * n) + 1; }

__attribute__((noinline)) unsigned long caller2(long n) { return hot(sink + 7, 3 * n) + 2; }

int main(int argc, char **argv) {
	sink += caller1(argc);
	sink += caller2(argc);
	return 0;
}
