// callgraph: 200 functions f0..f199 that call each other data-dependently, for the scale benchmark
// (cmd/er/scale_bench_test.go, issue 13): a profile of a few tens of seconds has hundreds of thousands
// of distinct call stacks, as a real program's large call graph does, where a synthetic profile's stacks
// are few and regular.
//
// Each function does a little work (a few to a few dozen multiply-adds, chosen by a pseudo-random
// state), then, unless the walk ends there (1 in 8 at each level) or is DEPTH deep, calls one of its
// CALLEES possible callees chosen by the state, and 1 time in 8 a second one after a little more work.
// Function i's possible callees are fixed by i (f(i*37 + 1 + k*53) mod 200 for k < CALLEES), and the
// first (k = 0) is taken 15 times in 16, so the graph is that of a program, not a random walk over all
// 200: common paths recur, rare ones are many. With these numbers a 60 s profile at 10 kHz (600,000
// samples) has some 290,000 distinct stacks of functions and call sites (a simulation of the walk;
// more counting the leaf PCs). Each walk starts at one of f0..f19. The calls go through a table of
// function pointers, so that gcc does not see (or clone) them. The functions are written by the F
// macros below: f0..f199 are the same code with their index.
//
// Usage: callgraph [seconds]: runs until its own CPU time reaches seconds (default 5) and prints
// `cpu SECONDS` (CLOCK_PROCESS_CPUTIME_ID) and the number of calls.
//
// Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -o callgraph callgraph.c
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NFUNC 200
#define CALLEES 3
#define DEPTH 24

typedef void func(unsigned depth);
static func *const table[NFUNC];

static unsigned long long state = 0x9e3779b97f4a7c15ULL;
static unsigned long long calls;
static volatile unsigned long sink;

// next is xorshift64*: a state the calls depend on, the same from run to run.
static unsigned next(void) {
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return (unsigned)((state * 0x2545f4914f6cdd1dULL) >> 32);
}

// work is the function's own time: n multiply-adds kept from the optimiser by the volatile sink.
static void work(unsigned n, unsigned r) {
	unsigned long x = r;
	for (unsigned i = 0; i < n; i++)
		x = x * 6364136223846793005UL + i;
	sink += x;
}

// pick chooses callee k of CALLEES from bits of the state: k = 0 15 times in 16.
#define PICK(x) (((x) & 15) ? 0 : 1 + ((x) >> 4) % (CALLEES - 1))

// body is each function's code: its own work, then a callee, and sometimes, after a little more work,
// another.
#define BODY(self)                                                         \
	unsigned r = next();                                                   \
	calls++;                                                               \
	work(4 + (r & 31), r);                                                 \
	if (depth >= DEPTH || (r >> 5 & 7) == 0)                               \
		return;                                                            \
	table[((self) * 37 + 1 + PICK(r >> 8) * 53) % NFUNC](depth + 1);       \
	if ((r >> 12 & 7) == 0) {                                              \
		work(4 + (r >> 13 & 15), r);                                       \
		table[((self) * 37 + 1 + PICK(r >> 17) * 53) % NFUNC](depth + 1);  \
	}

// F(n) defines fn; F10(d) defines f<d>0..f<d>9 (d empty: f0..f9); T10 lists them for the table.
#define F(n) __attribute__((noinline)) static void f##n(unsigned depth) { BODY(n) }
#define F10(d) F(d##0) F(d##1) F(d##2) F(d##3) F(d##4) F(d##5) F(d##6) F(d##7) F(d##8) F(d##9)
#define T10(d) f##d##0, f##d##1, f##d##2, f##d##3, f##d##4, f##d##5, f##d##6, f##d##7, f##d##8, f##d##9,
#define ALL(X) X() X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19)

ALL(F10)

static func *const table[NFUNC] = {ALL(T10)};

static double cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 5;
	double t;
	do {
		// Each walk starts at one of the first 20 functions, as a program's work starts at a few.
		for (int i = 0; i < 64; i++)
			table[next() % 20](0);
	} while ((t = cpu()) < secs);
	printf("cpu %.3f\n", t);
	printf("calls %llu\n", calls);
	return 0;
}
