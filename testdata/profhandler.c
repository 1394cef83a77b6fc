/* profhandler.c: a program with its own SIGPROF handler and ITIMER_PROF timer, as profilers and
 * runtimes have. It burns about 1 s of CPU, counts its timer's ticks and prints "ticks N of about
 * M", then checks that sigaction reports its own handler ("handler ok"). Under er the output must be
 * the same as without it: the collector passes on every SIGPROF that is not its own.
 * Build: gcc -O1 -g -o profhandler profhandler.c */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile long ticks;
static volatile unsigned long sink;

static void on_prof(int sig, siginfo_t *si, void *uc) {
	(void)sig;
	(void)uc;
	if (si->si_code == SI_KERNEL)
		ticks++;
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
	while (cpu() - t0 < 1.0)
		for (int i = 0; i < 10000; i++)
			sink += i;
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	double used = cpu() - t0;
	printf("ticks %ld of about %.0f\n", ticks, used / 0.005);
	struct sigaction now;
	sigaction(SIGPROF, NULL, &now);
	printf("handler %s\n", (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_prof ? "ok" : "replaced");
	return 0;
}
