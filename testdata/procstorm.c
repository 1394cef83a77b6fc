/* procstorm.c: forks argv[1] children one after the other (default 40); each starts argv[2]
 * threads (default 4) that spin argv[3] ms of their own CPU time each (default 3), joins them and
 * exits; every second child first execs this program again (argv[4] "leaf" marks the exec'd image).
 * The parent waits for each child before the next. For counting what er reads of each process and
 * thread in /proc.
 * Build: gcc -O1 -g -pthread -o procstorm procstorm.c */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double spin_ms = 3;
static volatile unsigned long sink;

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *spin(void *arg) {
	(void)arg;
	unsigned long x = sink;
	double t0 = thread_cpu();
	while (thread_cpu() - t0 < spin_ms / 1000)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink += x;
	return NULL;
}

static int threads(int n) {
	pthread_t th[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, spin, NULL) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

int main(int argc, char **argv) {
	int procs = argc > 1 ? atoi(argv[1]) : 40;
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	if (argc > 3)
		spin_ms = atof(argv[3]);
	if (argc > 4 && strcmp(argv[4], "leaf") == 0)
		return threads(nthreads);
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			if (i % 2 == 1) {
				execl("/proc/self/exe", argv[0], argv[1], argv[2], argc > 3 ? argv[3] : "3", "leaf", (char *)NULL);
				_exit(127);
			}
			_exit(threads(nthreads));
		}
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
	}
	printf("procs %d threads %d\n", procs, procs * nthreads);
	return 0;
}
