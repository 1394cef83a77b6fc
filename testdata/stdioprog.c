/* stdioprog.c: N stdio writes of 100 bytes (fwrite, fputs and fprintf in turn) to a stream with a
 * 4096-byte buffer, N/10 write calls of 100 bytes to another file, then N/2 freads of 100 bytes
 * back through a 4096-byte buffer, in the directory argv[1] (N = argv[2]). stdio buffers: the
 * writes reach the kernel as write system calls of 4096 bytes, made inside libc, the last one at
 * exit (the stream is left open); the reads as reads of 4096 bytes. It prints what it did, the
 * calls of each interface and the system calls the kernel counts: "expect stdio writes N reads R
 * other 3", "expect syscalls ...", "expect kernel writes W reads R", so that a test can compare
 * er's counts exactly; the lines are one write call of their own, counted.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -o stdioprog stdioprog.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char wbuf[4096], rbuf[4096], line[101], back[100];

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[2]);
	char path[4096], path2[4096];
	snprintf(path, sizeof path, "%s/stdio.dat", argv[1]);
	snprintf(path2, sizeof path2, "%s/posix.dat", argv[1]);
	memset(line, 'x', 99);
	line[99] = '\n';
	FILE *f = fopen(path, "w");
	int fd = open(path2, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (!f || fd < 0 || setvbuf(f, wbuf, _IOFBF, sizeof wbuf) != 0)
		return 1;
	long writes = 0;
	for (long i = 0; i < n; i++) {
		switch (i % 3) {
		case 0:
			fwrite(line, 1, 100, f);
			break;
		case 1:
			fputs(line, f); /* 99 x and a newline: 100 bytes */
			break;
		default:
			fprintf(f, "%099ld\n", i);
		}
		if (i % 10 == 0 && write(fd, line, 100) == 100)
			writes++;
	}
	close(fd);
	/* What reached the file so far: whole buffers. The rest waits in the buffer until exit. */
	long bytes = n * 100, flushed = bytes / 4096 * 4096;
	long reads = n / 2, rbytes = reads * 100;
	if (rbytes > flushed)
		return 3;
	FILE *g = fopen(path, "r");
	if (!g || setvbuf(g, rbuf, _IOFBF, sizeof rbuf) != 0)
		return 1;
	for (long i = 0; i < reads; i++)
		if (fread(back, 1, 100, g) != 100)
			return 4;
	fclose(g);
	char out[512];
	int len = snprintf(out, sizeof out,
			   "expect stdio writes %ld reads %ld other 3\n"
			   "expect syscalls writes %ld reads 0 other 2\n"
			   "expect kernel writes %ld reads %ld\n",
			   n, reads, writes + 1, writes + 1 + (bytes + 4095) / 4096, (rbytes + 4095) / 4096);
	/* The line is one write of its own; the stream f is flushed by exit: its last write. */
	return write(1, out, len) == len ? 0 : 5;
}
