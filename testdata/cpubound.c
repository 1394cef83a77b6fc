/* cpubound.c: N threads (argv[1], default 1) each spin for S seconds of thread CPU time (argv[2], default 2),
 * in the function spin_worker; main waits. It prints the process's getrusage user+system time in seconds
 * ("rusage SECONDS"), each thread's CPU time in the spin ("thread I SECONDS"), and each thread's id and
 * whole CPU time by its own clock at its end ("threadcpu TID SECONDS"; the main thread's too).
 * Build: gcc -O1 -g -fno-omit-frame-pointer -pthread -o cpubound cpubound.c */
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "work.h"

static double seconds = 2;
static double measured[64], whole[64];
static long tids[64];

void spin_worker_body(int id) {
	double t0 = thread_cpu();
	while (thread_cpu() - t0 < seconds)
		WORK(1);
	measured[id] = thread_cpu() - t0;
	whole[id] = thread_cpu();
	tids[id] = syscall(SYS_gettid);
}

void *spin_worker(void *arg) {
	spin_worker_body((int)(long)arg);
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	if (argc > 2)
		seconds = atof(argv[2]);
	if (n < 1 || n > 64) {
		fprintf(stderr, "cpubound: 1 to 64 threads\n");
		return 2;
	}
	iters_per_unit = 20000; /* about 20 us of work between clock reads */
	pthread_t th[64];
	if (n == 1) {
		spin_worker_body(0);
	} else {
		for (long i = 0; i < n; i++)
			pthread_create(&th[i], NULL, spin_worker, (void *)i);
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
	}
	for (int i = 0; i < n; i++)
		printf("thread %d %.6f\n", i, measured[i]);
	for (int i = 0; i < n && n > 1; i++)
		printf("threadcpu %ld %.6f\n", tids[i], whole[i]);
	printf("threadcpu %ld %.6f\n", (long)syscall(SYS_gettid), thread_cpu());
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
	return 0;
}
