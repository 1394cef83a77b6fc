/* behave.c: a target whose behaviour the command line picks, for er collect's process-handling tests.
 *   behave exit N        exit with status N
 *   behave segv          spin 0.3 s of CPU, then dereference NULL
 *   behave abort         spin 0.2 s of CPU, then abort() (SIGABRT)
 *   behave spin SECONDS  spin that much CPU time, then exit 0 (to be killed by a test)
 *   behave echo          copy stdin to stdout, print argv and $ER_TEST_VAR to stderr, exit 0
 *   behave signal        wait for SIGINT/SIGTERM/SIGHUP (up to 10 s); print its name and exit 0
 * Build: gcc -O1 -g -fno-omit-frame-pointer -o behave behave.c */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "work.h"

static volatile sig_atomic_t got;
static void on_signal(int s) { got = s; }

void spin_for(double sec) {
	double t0 = thread_cpu();
	while (thread_cpu() - t0 < sec)
		WORK(1);
}

int main(int argc, char **argv) {
	iters_per_unit = 20000;
	if (argc < 2)
		return 64;
	if (!strcmp(argv[1], "exit") && argc > 2)
		return atoi(argv[2]);
	if (!strcmp(argv[1], "segv")) {
		spin_for(0.3);
		volatile int *p = NULL;
		return *p;
	}
	if (!strcmp(argv[1], "abort")) {
		spin_for(0.2);
		abort();
	}
	if (!strcmp(argv[1], "spin") && argc > 2) {
		spin_for(atof(argv[2]));
		return 0;
	}
	if (!strcmp(argv[1], "echo")) {
		char buf[4096];
		ssize_t n;
		while ((n = read(0, buf, sizeof buf)) > 0)
			if (write(1, buf, n) != n)
				return 1;
		for (int i = 0; i < argc; i++)
			fprintf(stderr, "arg %d %s\n", i, argv[i]);
		const char *v = getenv("ER_TEST_VAR");
		fprintf(stderr, "env %s\n", v ? v : "(unset)");
		return 0;
	}
	if (!strcmp(argv[1], "signal")) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		printf("ready\n");
		fflush(stdout);
		for (int i = 0; i < 1000 && !got; i++)
			usleep(10000);
		printf("%s\n", got ? strsignal(got) : "timeout");
		return got ? 0 : 1;
	}
	return 64;
}
