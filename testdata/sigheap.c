/* sigheap.c: malloc and free inside a signal handler, while the interrupted code is itself inside
 * traced calls. prepare() mallocs BLOCKS blocks; a second thread then sends SIGUSR1 to the main thread
 * again and again, and the handler, on_signal(), frees one of those blocks per signal and mallocs
 * (and keeps: leaks) one block of 32 bytes every 50th signal, 100 in all. Meanwhile the main thread
 * maps and unmaps anonymous pages in a loop (heap-traced calls that are system calls, so the handler's
 * malloc never interrupts glibc's own). Every 10th SIGUSR1 handler raises SIGUSR2, whose SA_SIGINFO
 * handler, on_info(), runs nested in it and mallocs and frees a block of 24 bytes. It prints, through
 * write(2):
 *
 *   expect prepare allocs BLOCKS bytes B leaks 0 leaked 0
 *   expect on_signal allocs 100+N bytes 3200+24N leaks 100 leaked 3200   (on_info runs inside it)
 *   expect on_info allocs N bytes 24N leaks 0 leaked 0
 *   handlers ok        (sigaction gives back the handlers and flags the program set)
 *
 * A profiler that drops calls made in signal handlers shows the prepared blocks as leaks.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o sigheap sigheap.c */
#define _GNU_SOURCE
#include <pthread.h>
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 /* glibc adds it to every action; the kernel shows it */
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BLOCKS 5000
#define LEAKS 100

static void *blocks[BLOCKS];
static volatile int freed, signals, leaked, infos;
static void *volatile keep[LEAKS];
static volatile int stop;
static pthread_t main_thread;

__attribute__((noipa)) static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_signo != SIGUSR2)
		return;
	char *volatile p = malloc(24);
	p[0] = 1;
	free(p);
	infos++;
}

__attribute__((noipa)) static void on_signal(int sig)
{
	(void)sig;
	int n = signals++;
	if (n % 10 == 0 && freed < BLOCKS)
		raise(SIGUSR2);
	if (freed < BLOCKS) {
		free(blocks[freed]);
		freed++;
	}
	if (n % 50 == 0 && leaked < LEAKS) {
		keep[leaked] = malloc(32);
		leaked++;
	}
}

__attribute__((noipa)) static void prepare(void)
{
	for (int i = 0; i < BLOCKS; i++)
		blocks[i] = malloc(16 + (size_t)(i % 64));
}

static void *sender(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 20000};
	while (!stop) {
		pthread_kill(main_thread, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* churn maps and unmaps a page: heap-traced calls that take no glibc lock. */
__attribute__((noipa)) static void churn(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		munmap(p, 4096);
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	struct sigaction si;
	memset(&si, 0, sizeof si);
	si.sa_sigaction = on_info;
	si.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGUSR2, &si, NULL);
	struct sigaction q1, q2;
	sigaction(SIGUSR1, NULL, &q1);
	sigaction(SIGUSR2, NULL, &q2);
	int ok = q1.sa_handler == on_signal && (q1.sa_flags & ~SA_RESTORER) == SA_RESTART && q2.sa_sigaction == on_info &&
		 (q2.sa_flags & ~SA_RESTORER) == (SA_SIGINFO | SA_RESTART);
	prepare();
	main_thread = pthread_self();
	pthread_t th;
	pthread_create(&th, NULL, sender, NULL);
	while (freed < BLOCKS || leaked < LEAKS)
		churn();
	stop = 1;
	pthread_join(th, NULL);
	long bytes = 0;
	for (int i = 0; i < BLOCKS; i++)
		bytes += 16 + i % 64;
	char line[256];
	int n = snprintf(line, sizeof line,
			 "expect prepare allocs %d bytes %ld leaks 0 leaked 0\nexpect on_signal allocs %d bytes %d leaks %d leaked %d\n"
			 "expect on_info allocs %d bytes %d leaks 0 leaked 0\nhandlers %s\n",
			 BLOCKS, bytes, LEAKS + infos, 32 * LEAKS + 24 * infos, LEAKS, 32 * LEAKS, infos, 24 * infos, ok ? "ok" : "changed");
	(void)!write(1, line, (size_t)n);
	return 0;
}
