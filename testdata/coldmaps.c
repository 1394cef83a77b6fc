/* coldmaps.c: maps the first page of each of the files argv[1]/f0 .. f<N-1> (N = argv[2]) with
 * PROT_READ|PROT_EXEC, without touching them, prints "mapped", and waits for a line on its standard
 * input. With argv[3] "touch" it then reads one byte of each mapping, and prints the major page
 * faults that took ("majflt M", from its own getrusage). It exits after.
 * Build: gcc -O1 -g -o coldmaps coldmaps.c */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static long majflt(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}

int main(int argc, char **argv) {
	if (argc < 3)
		return 2;
	int n = atoi(argv[2]);
	int touch = argc > 3 && strcmp(argv[3], "touch") == 0;
	long page = sysconf(_SC_PAGESIZE);
	volatile char **maps = calloc(n, sizeof *maps);
	char path[4096];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/f%d", argv[1], i);
		int fd = open(path, O_RDONLY);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		void *p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		close(fd);
		maps[i] = p;
	}
	printf("mapped\n");
	fflush(stdout);
	char line[64];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	if (touch) {
		long before = majflt();
		unsigned sum = 0;
		for (int i = 0; i < n; i++)
			sum += maps[i][0];
		printf("majflt %ld sum %u\n", majflt() - before, sum);
	}
	return 0;
}
