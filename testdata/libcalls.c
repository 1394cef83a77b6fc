/* libcalls.c: CPU time spent in and under libc, which has no frame pointers: a qsort comparator, a bsearch
 * callback, and leaves in memcpy and strlen. Frame-pointer stacks lose the callers of these samples.
 * Build: gcc -O2 -g -o libcalls libcalls.c   (no frame pointers)
 * It prints the thread CPU time of each phase ("phase NAME SECONDS") and getrusage ("rusage SECONDS"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile unsigned sink;

__attribute__((noinline)) static int by_value(const void *a, const void *b) {
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	for (int i = 0; i < 40; i++) /* make the comparator itself cost something */
		sink += i;
	return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_phase(unsigned *v, int n) {
	for (int r = 0; r < 4; r++) {
		for (int i = 0; i < n; i++)
			v[i] = (unsigned)(i * 2654435761u + r);
		qsort(v, n, sizeof *v, by_value);
	}
}

__attribute__((noinline)) long search_phase(const unsigned *v, int n, int rounds) {
	long found = 0;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < n; i += 7) {
			unsigned key = v[i];
			found += bsearch(&key, v, n, sizeof *v, by_value) != NULL;
		}
	return found;
}

__attribute__((noinline)) void copy_phase(char *dst, const char *src, size_t size, int rounds) {
	for (int r = 0; r < rounds; r++) {
		memcpy(dst, src, size);
		sink += dst[r % size];
	}
}

__attribute__((noinline)) size_t strlen_phase(const char *s, int rounds) {
	size_t total = 0;
	for (int r = 0; r < rounds; r++)
		total += strlen(s + (r & 15));
	return total;
}

int main(int argc, char **argv) {
	double scale = argc > 1 ? atof(argv[1]) : 1;
	int n = 200000;
	unsigned *v = malloc(n * sizeof *v);
	size_t size = 1 << 20;
	char *a = malloc(size), *b = malloc(size);
	memset(a, 'x', size);
	a[size - 1] = 0;
	double t0 = thread_cpu();
	sort_phase(v, n);
	double t1 = thread_cpu();
	long f = search_phase(v, n, (int)(30 * scale));
	double t2 = thread_cpu();
	copy_phase(b, a, size, (int)(6000 * scale));
	double t3 = thread_cpu();
	size_t l = strlen_phase(a, (int)(15000 * scale));
	double t4 = thread_cpu();
	printf("phase sort %.6f\nphase search %.6f\nphase copy %.6f\nphase strlen %.6f\n", t1 - t0, t2 - t1, t3 - t2, t4 - t3);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %.6f\n(%ld %zu)\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, f, l);
	return 0;
}
