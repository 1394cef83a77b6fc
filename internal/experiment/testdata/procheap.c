/* procheap: heap events before and after a wait that the test controls, and in a child.
 *
 * Build: gcc -O1 -g -o procheap procheap.c
 * Usage: procheap FIFO
 *
 * It allocates 100 blocks of 1000 to 1099 bytes and frees the first 60; forks a child that
 * allocates 7 blocks of 333 bytes and exits; waits for the child; writes "ready" on standard
 * output; then reads FIFO until its end (the test holds it open) and allocates 50 blocks of 2000
 * bytes. The sizes are distinct from anything the C library allocates, so the test can count them.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep[200];

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	for (int i = 0; i < 100; i++)
		keep[i] = malloc(1000 + i);
	for (int i = 0; i < 60; i++)
		free(keep[i]);
	pid_t c = fork();
	if (c == 0) {
		for (int i = 0; i < 7; i++)
			keep[i] = malloc(333);
		_exit(0);
	}
	if (c < 0 || waitpid(c, NULL, 0) != c)
		return 1;
	if (write(1, "ready\n", 6) != 6)
		return 1;
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return 1;
	char b[64];
	while (read(fd, b, sizeof b) > 0)
		;
	close(fd);
	for (int i = 100; i < 150; i++)
		keep[i] = malloc(2000);
	return 0;
}
