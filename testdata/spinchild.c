/* spinchild.c: spins SECONDS (argv[1], default 0.5) of CPU in spin_work and prints its own CPU
 * time from getrusage: "rusage PID CPU-SECONDS". Run by forktree (exec) and by shell scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double process_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void spin_work(double sec) {
	double t0 = process_cpu();
	unsigned long x = sink;
	while (process_cpu() - t0 < sec)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

int main(int argc, char **argv) {
	spin_work(argc > 1 ? atof(argv[1]) : 0.5);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %d %.6f\n", (int)getpid(),
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
	return 0;
}
