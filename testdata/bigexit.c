/* bigexit.c: touches MIB mebibytes of anonymous memory, then exits, so that the kernel spends a
 * measurable time freeing it at the exit. Prints the process CPU time it used up to its exit:
 *   "self-cpu-before-exit SECONDS". Usage: bigexit MIB */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv) {
	size_t n = (size_t)atol(argc > 1 ? argv[1] : "512") << 20;
	volatile char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("self-cpu-before-exit %.6f\n", ts.tv_sec + ts.tv_nsec * 1e-9);
	return 0;
}
