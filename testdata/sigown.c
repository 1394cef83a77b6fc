/* sigown.c: a program with a handler of its own for a signal that er collect may take (-l, -y).
 * Usage: sigown SIGNO N
 * It installs its handler for SIGNO (with SIGUSR2, or SIGUSR1 for SIGNO SIGUSR2, in its sa_mask),
 * raises SIGNO N times, then blocks it, prints "ready" and reads lines from stdin: at each it
 * unblocks SIGNO (a signal sent meanwhile, which the test saw pending, is delivered then) and
 * blocks it again, and prints how many times its handler ran so far ("handled K"). At end of file
 * it prints "handled K" and "mask ok" or "mask bad" (whether the handler always ran with its
 * sa_mask blocked) and exits 0.
 * Build: gcc -O1 -g -o sigown sigown.c */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t handled, mask_bad;
static int other;

static void on_signal(int sig)
{
	(void)sig;
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	if (!sigismember(&cur, other))
		mask_bad = 1;
	handled++;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sigown SIGNO N\n");
		return 2;
	}
	int sig = atoi(argv[1]), n = atoi(argv[2]);
	other = sig == SIGUSR2 ? SIGUSR1 : SIGUSR2;
	struct sigaction a;
	memset(&a, 0, sizeof a);
	a.sa_handler = on_signal;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, other);
	a.sa_flags = SA_RESTART;
	if (sigaction(sig, &a, NULL) != 0) {
		perror("sigaction");
		return 1;
	}
	for (int i = 0; i < n; i++)
		raise(sig);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof line, stdin)) {
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("handled %d\n", (int)handled);
		fflush(stdout);
	}
	printf("handled %d\n%s\n", (int)handled, mask_bad ? "mask bad" : "mask ok");
	return 0;
}
