/* fdgames.c: a target that does to file descriptors what daemons and libraries do: it closes every
 * descriptor from 3 up (a loop of close, close_range, closefrom), or dup2s / dup3s / fcntl-dups its
 * own files over descriptors 3 to 9, and then opens files of its own and writes known bytes to them.
 * Around that it allocates and frees known blocks, locks a mutex and reads its files, so that every
 * kind of tracing has work after the game. It counts what it allocated and prints, through write(2):
 *
 *   expect work allocs N bytes B leaks L leaked LB
 *   wrote FILE BYTES
 *
 * A profiler that keeps raw descriptor numbers writes its records into the target's files, or loses
 * its trace. Usage: fdgames MODE DIR   (MODE: none, closeloop, close_range, sys_close_range (the system
 * call itself), syscall_close_range (through syscall()), closefrom, dup2, dup3, fcntl;
 * MODE+setuid: then, as daemons do, it drops root's privileges for user and group 65534 before it
 * opens its files, which DIR must let it write)
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o fdgames fdgames.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static long allocs, bytes, leaks, leaked;
static void *volatile keep[64];
static int nkeep;

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static void say_num(const char *pre, long v)
{
	char b[64];
	int n = snprintf(b, sizeof b, "%s%ld", pre, v);
	(void)!write(1, b, (size_t)n);
}

/* work allocates rounds*20 blocks, frees all but one per round, and locks a mutex. */
__attribute__((noipa)) static void work(int rounds)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	for (int r = 0; r < rounds; r++) {
		void *p[20];
		for (int i = 0; i < 20; i++) {
			p[i] = malloc(100 + (size_t)i);
			allocs++;
			bytes += 100 + i;
		}
		for (int i = 1; i < 20; i++)
			free(p[i]);
		if (nkeep < 64) {
			keep[nkeep++] = p[0];
			leaks++;
			leaked += 100;
		} else {
			free(p[0]);
		}
		pthread_mutex_lock(&mu);
		pthread_mutex_unlock(&mu);
	}
}

static int open_own(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	return fd;
}

static void game(const char *mode, const char *dir)
{
	if (strcmp(mode, "none") == 0) {
		return;
	} else if (strcmp(mode, "closeloop") == 0) {
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		for (long fd = 3; fd < (long)rl.rlim_cur && fd < 65536; fd++)
			close((int)fd);
	} else if (strcmp(mode, "close_range") == 0) {
		if (close_range(3U, ~0U, 0) != 0) {
			perror("close_range");
			exit(2);
		}
	} else if (strcmp(mode, "sys_close_range") == 0) { /* the system call itself, as runtimes without libc */
		long r;
		__asm__ volatile("syscall" : "=a"(r) : "a"((long)SYS_close_range), "D"(3L), "S"((long)~0U), "d"(0L) : "rcx", "r11", "memory");
		if (r != 0) {
			errno = (int)-r;
			perror("close_range");
			exit(2);
		}
	} else if (strcmp(mode, "syscall_close_range") == 0) { /* through the C library's syscall(), as before glibc 2.34 */
		if (syscall(SYS_close_range, 3U, ~0U, 0) != 0) {
			perror("close_range");
			exit(2);
		}
	} else if (strcmp(mode, "closefrom") == 0) {
		closefrom(3);
	} else if (strcmp(mode, "dup2") == 0 || strcmp(mode, "dup3") == 0 || strcmp(mode, "fcntl") == 0) {
		/* Put one file of the program's on every descriptor from 3 to 9. */
		int src = open_own(dir, "scratch");
		int top = src > 9 ? src : 9;
		for (int fd = 3; fd <= top; fd++) {
			if (fd == src)
				continue;
			if (strcmp(mode, "dup2") == 0) {
				dup2(src, fd);
			} else if (strcmp(mode, "dup3") == 0) {
				dup3(src, fd, O_CLOEXEC);
			} else {
				close(fd);
				if (fcntl(src, F_DUPFD, fd) != fd) {
					say_num("fcntl did not give ", fd);
					say("\n");
				}
			}
		}
		for (int fd = 3; fd <= top; fd++)
			if (fd != src)
				close(fd);
		close(src);
	} else {
		say("unknown mode\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		say("usage: fdgames MODE DIR\n");
		return 2;
	}
	work(10);
	char mode[64];
	snprintf(mode, sizeof mode, "%s", argv[1]);
	char *plus = strchr(mode, '+');
	if (plus)
		*plus++ = 0;
	game(mode, argv[2]);
	if (plus && strcmp(plus, "setuid") == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
		perror("setuid");
		return 2;
	}
	/* The daemon's own files, opened on the lowest free descriptors, 3 and up. */
	int logfd = open_own(argv[2], "daemon.log");
	int datafd = open_own(argv[2], "data.bin");
	const char msg[] = "daemon up\n"; /* 10 bytes and the newline below: 11 */
	(void)!write(logfd, msg, sizeof msg - 1);
	work(400); /* enough records for several trace blocks after the game */
	char block[4096];
	for (int i = 0; i < (int)sizeof block; i++)
		block[i] = (char)(i * 7);
	for (int i = 0; i < 16; i++)
		(void)!write(datafd, block, sizeof block);
	(void)!write(logfd, "\n", 1);
	lseek(datafd, 0, SEEK_SET);
	for (int i = 0; i < 16; i++)
		(void)!read(datafd, block, sizeof block);
	close(logfd);
	close(datafd);
	say_num("expect work allocs ", allocs);
	say_num(" bytes ", bytes);
	say_num(" leaks ", leaks);
	say_num(" leaked ", leaked);
	say("\nwrote daemon.log 11\nwrote data.bin 65536\n");
	return 0;
}
