/* manymaps.c: maps the first page of its own executable argv[1] times (default 50000), PROT_READ|PROT_EXEC,
 * each at a new address, keeping every mapping (each is a mapping record for perf), then spins argv[2]
 * seconds of its own CPU time (default 0.2) in spin, and prints "maps N cpu S" (S: its CPU time).
 * Build: gcc -O1 -g -o manymaps manymaps.c */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) void spin(double secs) {
	unsigned long x = sink;
	double t0 = cpu();
	while (cpu() - t0 < secs)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 50000;
	double secs = argc > 2 ? atof(argv[2]) : 0.2;
	int fd = open("/proc/self/exe", O_RDONLY);
	if (fd < 0) {
		perror("open /proc/self/exe");
		return 1;
	}
	long page = sysconf(_SC_PAGESIZE);
	for (int i = 0; i < n; i++) {
		/* Each at offset 0: two neighbours do not merge (the lower one's offset would have to be
		 * the upper one's less a page). */
		if (mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	spin(secs);
	printf("maps %d cpu %.6f\n", n, cpu());
	return 0;
}
