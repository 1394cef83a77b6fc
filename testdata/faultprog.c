/* faultprog.c: the target of the fault-injection tests: it does a little of everything a profiler
 * records (CPU work, heap churn with known leaks, mutex waits, file I/O, threads, forked children, a
 * signal handler that allocates) and writes files whose bytes depend only on its arguments, so that a
 * run under er can be compared byte for byte with a run alone. It prints, through write(2):
 *
 *   expect work allocs N bytes B leaks L leaked LB     (heap calls of work(), all threads together)
 *   checksum C                                         (of every file it wrote)
 *   cpu SECONDS                                        (the process's CPU time, children not counted)
 *
 * and exits with status 7 (so that a test sees er pass the target's status on).
 *
 * Usage: faultprog DIR ROUNDS [THREADS [CHILDREN [MODE]]]
 *   MODE: plain; blocksig (blocks every signal in every thread, as some servers do, with
 *   pthread_sigmask); rawblock (the same with the rt_sigprocmask system call, as runtimes that do not
 *   use libc do); jump (every round raises SIGUSR2, whose handler mallocs and frees a block and
 *   siglongjmps out of itself back into the round, as programs that recover from signals do; it
 *   prints "expect on_usr2 allocs N bytes 40N leaks 0 leaked 0").
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o faultprog faultprog.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static long rounds;
static int blocksig, rawblock, jump;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread sigjmp_buf jb;
static long jumps; /* under mu */

__attribute__((noipa)) static void on_usr2(int sig)
{
	(void)sig;
	char *volatile p = malloc(40);
	p[0] = 1;
	free(p);
	pthread_mutex_lock(&mu);
	jumps++;
	pthread_mutex_unlock(&mu);
	siglongjmp(jb, 1);
}

static long allocs, bytes, leaks, leaked; /* under mu */
static void *volatile keep[65][64]; /* per thread: which blocks leak does not depend on scheduling */
static int nkeep[65];
static volatile unsigned long sink;

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static unsigned long fnv(unsigned long h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3UL;
	return h;
}

/* spin burns CPU. */
__attribute__((noipa)) static void spin(long n)
{
	for (long i = 0; i < n; i++)
		sink = sink * 6364136223846793005UL + (unsigned long)i;
}

/* work: one round of heap churn (20 blocks, 19 freed; every 4th round one is kept, 64 per thread),
 * a mutex taken, and CPU. */
__attribute__((noipa)) static void work(int id, long r)
{
	void *p[20];
	for (int i = 0; i < 20; i++)
		p[i] = malloc(64 + (size_t)((id * 31 + i + r) % 200));
	pthread_mutex_lock(&mu);
	for (int i = 0; i < 20; i++) {
		allocs++;
		bytes += 64 + (id * 31 + i + r) % 200;
	}
	int kept = 0, k = id % 65;
	if (nkeep[k] < 64 && r % 4 == 0) {
		keep[k][nkeep[k]++] = p[0];
		leaks++;
		leaked += 64 + (id * 31 + r) % 200;
		kept = 1;
	}
	pthread_mutex_unlock(&mu);
	for (int i = kept; i < 20; i++)
		free(p[i]);
	spin(20000);
}

/* output writes the file NAME of ROUNDS lines, reads it back and returns its checksum. */
__attribute__((noipa)) static unsigned long output(const char *name, int id)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	unsigned long h = 0xcbf29ce484222325UL;
	for (long r = 0; r < rounds; r++) {
		if (jump && sigsetjmp(jb, 1) == 0)
			raise(SIGUSR2);
		work(id, r);
		char line[128];
		int n = snprintf(line, sizeof line, "%s round %ld value %lu\n", name, r, (unsigned long)(r * 2654435761UL) ^ (unsigned long)id);
		if (write(fd, line, (size_t)n) != n) {
			perror("write");
			exit(2);
		}
		h = fnv(h, line, (size_t)n);
	}
	lseek(fd, 0, SEEK_SET);
	char buf[4096];
	unsigned long back = 0xcbf29ce484222325UL;
	long n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		back = fnv(back, buf, (size_t)n);
	close(fd);
	if (back != h) {
		say("read back other bytes than written\n");
		exit(3);
	}
	return h;
}

static void block_all(void)
{
	sigset_t all;
	sigfillset(&all);
	if (rawblock)
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(long));
	else
		pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *thread_main(void *arg)
{
	int id = (int)(long)arg;
	if (blocksig)
		block_all();
	char name[32];
	snprintf(name, sizeof name, "t%d.out", id);
	return (void *)output(name, id);
}

/* on_usr1 allocates and frees in a signal handler, as some programs do (it is not async-signal-safe,
 * but glibc's malloc is not interrupted here: the signal is sent by the process to itself between
 * rounds). */
static volatile long handled;
static void on_usr1(int sig)
{
	(void)sig;
	void *p = malloc(48);
	sink += (unsigned long)p;
	free(p);
	handled++;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		say("usage: faultprog DIR ROUNDS [THREADS [CHILDREN [MODE]]]\n");
		return 2;
	}
	dir = argv[1];
	rounds = atol(argv[2]);
	int threads = argc > 3 ? atoi(argv[3]) : 2;
	int children = argc > 4 ? atoi(argv[4]) : 0;
	rawblock = argc > 5 && strcmp(argv[5], "rawblock") == 0;
	blocksig = rawblock || (argc > 5 && strcmp(argv[5], "blocksig") == 0);
	jump = argc > 5 && strcmp(argv[5], "jump") == 0;
	signal(SIGUSR2, on_usr2);
	if (threads > 64)
		threads = 64;
	signal(SIGUSR1, on_usr1);
	if (blocksig)
		block_all();

	unsigned long sum = 0;
	for (int c = 0; c < children; c++) {
		pid_t pid = fork();
		if (pid == 0) {
			char name[32];
			snprintf(name, sizeof name, "c%d.out", c);
			output(name, 100 + c);
			_exit(0);
		}
		if (pid < 0) {
			perror("fork");
			return 2;
		}
	}
	pthread_t th[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)(long)(i + 1));
	sum ^= output("main.out", 0);
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(th[i], &r);
		sum ^= (unsigned long)r;
	}
	if (!blocksig)
		for (int i = 0; i < 10; i++)
			raise(SIGUSR1);
	for (int c = 0; c < children; c++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			say("a child failed\n");
			return 4;
		}
	}
	/* The children's files are part of the checksum: read them back. */
	for (int c = 0; c < children; c++) {
		char path[4096], buf[4096];
		snprintf(path, sizeof path, "%s/c%d.out", dir, c);
		int fd = open(path, O_RDONLY);
		unsigned long h = 0xcbf29ce484222325UL;
		long n;
		while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
			h = fnv(h, buf, (size_t)n);
		if (fd >= 0)
			close(fd);
		sum ^= h;
	}
	struct timespec cpu;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	char line[256];
	int n = snprintf(line, sizeof line, "expect work allocs %ld bytes %ld leaks %ld leaked %ld\nchecksum %lx\ncpu %.6f\n", allocs,
			 bytes, leaks, leaked, sum, (double)cpu.tv_sec + cpu.tv_nsec * 1e-9);
	(void)!write(1, line, (size_t)n);
	if (jump) {
		n = snprintf(line, sizeof line, "expect on_usr2 allocs %ld bytes %ld leaks 0 leaked 0\n", jumps, 40 * jumps);
		(void)!write(1, line, (size_t)n);
	}
	return 7;
}
