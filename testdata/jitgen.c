/* jitgen.c: a program that generates its own code and names it with the collector API
 * (collector_func_load), for er's dynamic-function test (cmd/er/dynfunc_test.go). It writes a
 * counting loop into an executable page, runs it for a while, then frees it (collector_func_unload)
 * and writes another function at the same address; it prints "jit NAME cpu_ns N", the thread CPU
 * time each ran. Without er the collector API's calls do nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../preload/include/collectorAPI.h"

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* push rbp; mov rbp,rsp; mov rax,rdi; 1: dec rax; jnz 1b; pop rbp; ret */
static const unsigned char spin_code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0x5d, 0xc3};
/* push rbp; mov rbp,rsp; mov rax,rdi; 1: sub rax,1; jnz 1b; pop rbp; ret */
static const unsigned char other_code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0x75, 0xfa, 0x5d, 0xc3};

typedef uint64_t (*loop_fn)(uint64_t);

/* run calls f until the thread has used ns of CPU, and returns what it used. */
__attribute__((noinline)) static uint64_t run(loop_fn f, uint64_t ns)
{
	uint64_t t0 = cpu_ns(), t;
	volatile uint64_t sink = 0;
	do {
		sink += f(200000);
	} while ((t = cpu_ns()) - t0 < ns);
	return t - t0;
}

static void *load(unsigned char *page, const unsigned char *code, size_t n, const char *name, const Lineno *lines, int nl)
{
	mprotect(page, 4096, PROT_READ | PROT_WRITE);
	memset(page, 0xcc, 4096);
	memcpy(page, code, n);
	mprotect(page, 4096, PROT_READ | PROT_EXEC);
	collector_func_load(name, NULL, "jitgen.s", page, (int)n, nl, lines);
	return page;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1;
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	const Lineno spin_lines[] = {{0, 10}, {7, 11}, {12, 12}};
	loop_fn f = (loop_fn)load(page, spin_code, sizeof spin_code, "jit_spin", spin_lines, 3);
	uint64_t a = run(f, (uint64_t)(600e6 * scale));
	collector_func_unload(page);
	f = (loop_fn)load(page, other_code, sizeof other_code, "jit_other", NULL, 0);
	uint64_t b = run(f, (uint64_t)(400e6 * scale));
	collector_func_unload(page);
	printf("jit jit_spin cpu_ns %llu\njit jit_other cpu_ns %llu\n", (unsigned long long)a, (unsigned long long)b);
	return 0;
}
