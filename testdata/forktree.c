/* forktree.c: a process tree for the descendant tests (issue 5, acceptance 1).
 *
 *   forktree EXEC_PROG SECONDS [PRE_EXEC_SECONDS]
 *
 * forks three children that run at the same time as the parent: the first two spin for
 * SECONDS and 2*SECONDS of CPU in child_work, the third spins PRE_EXEC_SECONDS (default 0) in
 * child_work and then execs EXEC_PROG (spinchild), whose getrusage holds both. The
 * parent spins for SECONDS in parent_work, waits for them, and every process prints its own
 * CPU time from getrusage: "rusage PID CPU-SECONDS". */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double process_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void spin(double sec) {
	double t0 = process_cpu();
	unsigned long x = sink;
	while (process_cpu() - t0 < sec)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) static void child_work(double sec) { spin(sec); }
__attribute__((noinline)) static void parent_work(double sec) { spin(sec); }

static void report(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %d %.6f\n", (int)getpid(),
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
	fflush(stdout);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: forktree EXEC_PROG SECONDS [PRE_EXEC_SECONDS]\n");
		return 2;
	}
	double sec = atof(argv[2]), pre = argc > 3 ? atof(argv[3]) : 0;
	fflush(stdout);
	for (int i = 1; i <= 3; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			if (i == 3) {
				if (pre > 0)
					child_work(pre);
				execl(argv[1], argv[1], argv[2], (char *)0);
				perror("execl");
				_exit(127);
			}
			child_work(sec * i);
			report();
			_exit(0);
		}
	}
	parent_work(sec);
	int status, bad = 0;
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad = 1;
	report();
	return bad;
}
