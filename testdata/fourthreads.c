/* fourthreads.c: 4 threads run work_a, work_b, work_c and work_d for 1, 2, 3 and 4 times argv[1] seconds of
 * their own CPU time (default 0.15), while main waits in pthread_join. Each thread measures the CPU time
 * it spent in its function with CLOCK_THREAD_CPUTIME_ID and prints "tid F TID" and "cpu F SECONDS".
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o fourthreads fourthreads.c */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double unit = 0.15;
static volatile unsigned long sink;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static double thread_cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void report(const char *name, double t0) {
	double cpu = thread_cpu() - t0;
	pthread_mutex_lock(&out);
	printf("tid %s %ld\n", name, (long)syscall(SYS_gettid));
	printf("cpu %s %.6f\n", name, cpu);
	pthread_mutex_unlock(&out);
}

/* SPIN runs the loop inside the calling function until the thread has used sec seconds of CPU since t0. */
#define SPIN(t0, sec)                                                              \
	do {                                                                           \
		unsigned long x_ = sink;                                                   \
		while (thread_cpu() - (t0) < (sec))                                        \
			for (int i_ = 0; i_ < 200000; i_++)                                    \
				x_ = x_ * 6364136223846793005UL + 1442695040888963407UL;           \
		sink = x_;                                                                 \
	} while (0)

__attribute__((noinline)) void *work_a(void *arg) {
	(void)arg;
	double t0 = thread_cpu();
	SPIN(t0, 1 * unit);
	report("work_a", t0);
	return NULL;
}

__attribute__((noinline)) void *work_b(void *arg) {
	(void)arg;
	double t0 = thread_cpu();
	SPIN(t0, 2 * unit);
	report("work_b", t0);
	return NULL;
}

__attribute__((noinline)) void *work_c(void *arg) {
	(void)arg;
	double t0 = thread_cpu();
	SPIN(t0, 3 * unit);
	report("work_c", t0);
	return NULL;
}

__attribute__((noinline)) void *work_d(void *arg) {
	(void)arg;
	double t0 = thread_cpu();
	SPIN(t0, 4 * unit);
	report("work_d", t0);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc > 1)
		unit = atof(argv[1]);
	void *(*fns[4])(void *) = {work_a, work_b, work_c, work_d};
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, fns[i], NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	return 0;
}
