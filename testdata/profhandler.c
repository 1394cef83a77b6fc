/* profhandler.c: a program with its own SIGPROF handler and ITIMER_PROF timer, as profilers and
 * runtimes have. It burns about 1 s of CPU, counts its timer's ticks and prints "ticks N of about
 * M"; it also sends itself SIGPROF 50 times (kill) and prints "sent 50 got N" for those; then it
 * checks that sigaction reports its own handler ("handler ok"). Under er the output must be the same
 * as without it: the collector passes on every SIGPROF that is not its own, once. (The timer's
 * ticks follow the kernel's tick-sampled process time, which a busy machine makes run ahead of the
 * CPU time the program reads: up to 30% more ticks than used/5 ms beside two CPU hogs, also under
 * perf events, where er does not touch SIGPROF; the signals it sends itself are exact.)
 * Build: gcc -O1 -g -o profhandler profhandler.c */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile long ticks, user;
static volatile unsigned long sink;

static void on_prof(int sig, siginfo_t *si, void *uc) {
	(void)sig;
	(void)uc;
	if (si->si_code == SI_KERNEL)
		ticks++;
	else if (si->si_code == SI_USER && si->si_pid == getpid())
		user++;
}

static double cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = {{0, 5000}, {0, 5000}};
	setitimer(ITIMER_PROF, &it, NULL);
	double t0 = cpu();
	int sent = 0;
	while (cpu() - t0 < 1.0) {
		for (int i = 0; i < 10000; i++)
			sink += i;
		if (sent < 50 && cpu() - t0 >= sent * 0.018) {
			kill(getpid(), SIGPROF);
			sent++;
		}
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	double used = cpu() - t0;
	printf("ticks %ld of about %.0f\n", ticks, used / 0.005);
	printf("sent %d got %ld\n", sent, user);
	struct sigaction now;
	sigaction(SIGPROF, NULL, &now);
	printf("handler %s\n", (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_prof ? "ok" : "replaced");
	return 0;
}
