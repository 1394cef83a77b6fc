/* sighandler.c: a SIGALRM handler that spins 2 ms interrupts busy() every 7 ms of wall time; seed 004 wants
 * the handler shown as called (through the signal trampoline) from the interrupted function. It prints the
 * CPU time spent in the handler ("handler SECONDS").
 * Build: gcc -O2 -g -o sighandler sighandler.c   (no frame pointers) */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noipa)) void handler_spin(void) {
	double until = cpu() + 0.002;
	while (cpu() < until)
		for (int i = 0; i < 20000; i++)
			sink += i;
}

static double in_handler;

__attribute__((noipa)) void on_alarm(int sig) {
	(void)sig;
	double t0 = cpu();
	handler_spin();
	in_handler += cpu() - t0;
	sink++; /* not a tail call */
}

__attribute__((noipa)) void busy(double secs) {
	double until = cpu() + secs;
	while (cpu() < until)
		for (int i = 0; i < 20000; i++)
			sink += i;
}

int main(void) {
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	/* 7 ms, not 10: a timer at the sampling interval would alias with it (every sample at the same
	 * phase of the timer), and the profile would see the handler far more or less than it runs. */
	struct itimerval it = {{0, 7000}, {0, 7000}};
	setitimer(ITIMER_REAL, &it, NULL);
	busy(1.0);
	printf("handler %.6f\n", in_handler);
	return 0;
}
