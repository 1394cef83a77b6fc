/* heap.c: known allocations, frees, reallocs and leaks, from known functions. It counts what each
 * function allocates and leaks and prints it ("expect FUNC allocs N bytes B leaks L leaked LB"), so
 * that a test can compare er's heap metrics with it exactly. Output goes through write(2), so that
 * stdio's own buffer allocation does not add to main's. With the argument "abort" it aborts
 * after leak_direct; with "fork" it forks children while threads allocate.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o heap heap.c */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct count {
	const char *fn;
	long allocs, bytes, leaks, leaked;
};
static struct count counts[16];
static int ncounts;

static struct count *count(const char *fn) {
	for (int i = 0; i < ncounts; i++)
		if (strcmp(counts[i].fn, fn) == 0)
			return &counts[i];
	counts[ncounts].fn = fn;
	return &counts[ncounts++];
}

static void *volatile keep[64]; /* leaked blocks stay reachable here, and the compiler keeps every call */
static int nkeep;

#define ALLOC(fn, n) (count(fn)->allocs++, count(fn)->bytes += (n))
#define LEAK(fn, n, p) (count(fn)->leaks++, count(fn)->leaked += (n), keep[nkeep++] = (p))

__attribute__((noipa)) void leak_direct(void) {
	for (int i = 0; i < 3; i++) {
		void *p = malloc(1000);
		ALLOC("leak_direct", 1000);
		LEAK("leak_direct", 1000, p);
	}
}

__attribute__((noipa)) void churn(void) {
	for (int i = 0; i < 100; i++) {
		char *volatile p = malloc(64 + i);
		ALLOC("churn", 64 + i);
		p[0] = 1;
		free(p);
	}
}

/* grow: one malloc and five reallocs, then a free: six allocations, nothing leaked. */
__attribute__((noipa)) void grow(void) {
	char *p = malloc(10);
	ALLOC("grow", 10);
	for (int i = 1; i <= 5; i++) {
		p = realloc(p, 20 * i);
		ALLOC("grow", 20 * i);
	}
	keep[63] = p;
	free(p);
}

/* grow_leak: malloc then realloc, never freed: two allocations, one leak of the realloc's size. */
__attribute__((noipa)) void grow_leak(void) {
	char *p = malloc(16);
	ALLOC("grow_leak", 16);
	p = realloc(p, 4000);
	ALLOC("grow_leak", 4000);
	LEAK("grow_leak", 4000, p);
}

__attribute__((noipa)) void zeroed(void) {
	void *p = calloc(10, 10);
	ALLOC("zeroed", 100);
	LEAK("zeroed", 100, p);
	p = reallocarray(NULL, 10, 8);
	ALLOC("zeroed", 80);
	LEAK("zeroed", 80, p);
}

__attribute__((noipa)) void aligned(void) {
	void *p;
	if (posix_memalign(&p, 64, 256) == 0) {
		ALLOC("aligned", 256);
		free(p);
	}
	p = aligned_alloc(64, 128);
	ALLOC("aligned", 128);
	LEAK("aligned", 128, p);
	p = memalign(32, 64);
	ALLOC("aligned", 64);
	free(p);
	p = valloc(300);
	ALLOC("aligned", 300);
	LEAK("aligned", 300, p);
	p = pvalloc(100);
	ALLOC("aligned", 100);
	free(p);
}

__attribute__((noipa)) void mapped(void) {
	void *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ALLOC("mapped", 8192);
	munmap(p, 8192);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ALLOC("mapped", 4096);
	LEAK("mapped", 4096, p);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* in_thread runs in two threads: 50 freed blocks and one leak of 7 bytes each. */
__attribute__((noipa)) void *in_thread(void *arg) {
	(void)arg;
	for (int i = 0; i < 50; i++) {
		char *volatile p = malloc(32);
		p[0] = 1;
		free(p);
	}
	void *q = malloc(7);
	pthread_mutex_lock(&mu);
	count("in_thread")->allocs += 51;
	count("in_thread")->bytes += 50 * 32 + 7;
	LEAK("in_thread", 7, q);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static volatile int stop;

static void *churner(void *arg) {
	(void)arg;
	while (!stop) {
		char *volatile p = malloc(48);
		p[0] = 1;
		free(p);
	}
	return NULL;
}

/* fork_while_threaded forks children while two threads allocate: each child allocates, runs a
 * program (exec) and must finish; the parent goes on. */
__attribute__((noipa)) void fork_while_threaded(void) {
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churner, NULL);
	for (int k = 0; k < 20; k++) {
		pid_t pid = fork();
		if (pid == 0) {
			char *volatile p = malloc(100);
			free(p);
			if (k % 2)
				execl("/bin/true", "true", (char *)NULL);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			_exit(3);
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
	leak_direct();
	if (argc > 1 && strcmp(argv[1], "abort") == 0)
		abort(); /* a crash: what was traced so far must stay readable */
	if (argc > 1 && strcmp(argv[1], "fork") == 0)
		fork_while_threaded();
	churn();
	grow();
	grow_leak();
	zeroed();
	aligned();
	mapped();
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, in_thread, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	char line[200];
	for (int i = 0; i < ncounts; i++) {
		int n = snprintf(line, sizeof line, "expect %s allocs %ld bytes %ld leaks %ld leaked %ld\n", counts[i].fn,
				 counts[i].allocs, counts[i].bytes, counts[i].leaks, counts[i].leaked);
		if (write(1, line, n) != n)
			return 1;
	}
	return 0;
}
