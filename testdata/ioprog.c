/* ioprog.c: I/O calls with known counts and bytes, POSIX and stdio, on files in the directory given
 * as argv[1]. It prints what it did per file: "expect FILE reads N rbytes B writes N wbytes B other N
 * errors N" so that a test can compare er's I/O metrics with it exactly.
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -o ioprog ioprog.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct count {
	char file[512];
	long reads, rbytes, writes, wbytes, other, errors;
} counts[4];

static char buf[65536];

__attribute__((noipa)) void posix_io(const char *path, struct count *c) {
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	c->other++;
	for (int i = 1; i <= 10; i++) {
		ssize_t n = write(fd, buf, 1000 * i);
		c->writes++;
		c->wbytes += n;
	}
	struct iovec v[2] = {{buf, 100}, {buf, 200}};
	c->wbytes += writev(fd, v, 2);
	c->writes++;
	c->wbytes += pwrite(fd, buf, 500, 0);
	c->writes++;
	fsync(fd);
	c->other++;
	lseek(fd, 0, SEEK_SET);
	c->other++;
	ssize_t n;
	while ((n = read(fd, buf, 4096)) > 0) {
		c->reads++;
		c->rbytes += n;
	}
	c->reads++; /* the read that returned 0 */
	c->rbytes += pread(fd, buf, 300, 10);
	c->reads++;
	int fd2 = dup(fd);
	c->other++;
	c->wbytes += write(fd2, buf, 77); /* through the duplicate: the same file */
	c->writes++;
	close(fd2);
	c->other++;
	close(fd);
	c->other++;
}

__attribute__((noipa)) void stdio_io(const char *path, struct count *c) {
	FILE *f = fopen(path, "w+");
	c->other++;
	for (int i = 0; i < 20; i++) {
		int n = fprintf(f, "line %d of the file\n", i);
		c->writes++;
		c->wbytes += n;
	}
	fputs("a line by fputs\n", f);
	c->writes++;
	c->wbytes += 16;
	c->wbytes += fwrite(buf, 1, 5000, f);
	c->writes++;
	fflush(f);
	c->other++;
	fseek(f, 0, SEEK_SET);
	c->other++;
	char line[256];
	for (int i = 0; i < 5; i++) {
		if (fgets(line, sizeof line, f)) {
			c->reads++;
			c->rbytes += strlen(line);
		}
	}
	size_t r = fread(buf, 1, 1000, f);
	c->reads++;
	c->rbytes += r;
	fclose(f);
	c->other++;
}

__attribute__((noipa)) void failing(const char *path, struct count *c) {
	int fd = open(path, O_RDONLY); /* does not exist */
	c->errors++;
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	memset(buf, 'x', sizeof buf);
	snprintf(counts[0].file, sizeof counts[0].file, "%s/posix.dat", argv[1]);
	snprintf(counts[1].file, sizeof counts[1].file, "%s/stdio.txt", argv[1]);
	snprintf(counts[2].file, sizeof counts[2].file, "%s/missing/none", argv[1]);
	posix_io(counts[0].file, &counts[0]);
	stdio_io(counts[1].file, &counts[1]);
	failing(counts[2].file, &counts[2]);
	char out[4096];
	int len = 0;
	for (int i = 0; i < 3; i++)
		len += snprintf(out + len, sizeof out - len, "expect %s reads %ld rbytes %ld writes %ld wbytes %ld other %ld errors %ld\n",
				counts[i].file, counts[i].reads, counts[i].rbytes, counts[i].writes, counts[i].wbytes,
				counts[i].other, counts[i].errors);
	/* One write, to stdout: counted by er as a write of len bytes to the inherited descriptor 1. */
	return write(1, out, len) == len ? 0 : 1;
}
