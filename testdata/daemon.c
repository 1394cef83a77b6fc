/* daemon.c: a server-like target: the founder forks a daemon and exits at once; the daemon, every
 * PERIOD milliseconds, allocates a block it keeps and starts a worker, forked (every odd round) or
 * forked and exec'd as "daemon worker DIR N" (every even round). Each worker allocates and leaks 10
 * blocks and writes DIR/worker.N: what it found of the collector in its environment and address
 * space, one "key value" a line:
 *
 *   round N
 *   how fork|exec
 *   preload yes|no        (LD_PRELOAD is set)
 *   er_vars NAME...       (the names of its environment variables named ER_*)
 *   library yes|no        (libercollector.so is mapped)
 *
 * The daemon writes DIR/round (the last round it started, replaced atomically) and stops when
 * DIR/stop exists or after ROUNDS rounds; it writes DIR/done as it ends. It keeps stdout and
 * stderr, as a daemon that logs there does.
 * Usage: daemon DIR PERIOD_MS ROUNDS
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o daemon daemon.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void *volatile kept[100000];

static void put_file(const char *dir, const char *name, const char *text)
{
	char tmp[4096], path[4096];
	snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(tmp, "w");
	if (!f)
		exit(3);
	fputs(text, f);
	fclose(f);
	rename(tmp, path);
}

static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[8192];
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, name))
			found = 1;
	if (f)
		fclose(f);
	return found;
}

__attribute__((noipa)) static void worker_leaks(void)
{
	for (int i = 0; i < 10; i++)
		kept[i] = malloc(64);
}

static int worker(const char *dir, int round, const char *how)
{
	worker_leaks();
	char vars[2048] = "";
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "ER_", 3) == 0 && strlen(vars) + strcspn(*e, "=") + 2 < sizeof vars) {
			strcat(vars, " ");
			strncat(vars, *e, strcspn(*e, "="));
		}
	char text[4096], name[64];
	snprintf(text, sizeof text, "round %d\nhow %s\npreload %s\ner_vars%s\nlibrary %s\n", round, how,
		 getenv("LD_PRELOAD") ? "yes" : "no", vars, mapped("libercollector") ? "yes" : "no");
	snprintf(name, sizeof name, "worker.%d", round);
	put_file(dir, name, text);
	return 0;
}

__attribute__((noipa)) static void daemon_keeps(int round) { kept[round % 100000] = malloc(128); }

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "worker") == 0)
		return worker(argv[2], atoi(argv[3]), "exec");
	if (argc != 4) {
		fprintf(stderr, "usage: daemon DIR PERIOD_MS ROUNDS\n");
		return 2;
	}
	const char *dir = argv[1];
	int period = atoi(argv[2]), rounds = atoi(argv[3]);
	pid_t d = fork();
	if (d < 0)
		return 1;
	if (d > 0) {
		printf("daemon %d\n", (int)d);
		return 0; /* the founder exits at once */
	}
	setsid();
	char stop[4096];
	snprintf(stop, sizeof stop, "%s/stop", dir);
	for (int r = 1; r <= rounds; r++) {
		struct stat st;
		if (stat(stop, &st) == 0)
			break;
		char num[32];
		snprintf(num, sizeof num, "%d\n", r);
		put_file(dir, "round", num);
		daemon_keeps(r);
		pid_t w = fork();
		if (w == 0) {
			if (r % 2 == 0) {
				char rs[16];
				snprintf(rs, sizeof rs, "%d", r);
				execl("/proc/self/exe", argv[0], "worker", dir, rs, (char *)NULL);
				_exit(4);
			}
			_exit(worker(dir, r, "fork"));
		}
		if (w > 0)
			waitpid(w, NULL, 0);
		struct timespec ts = {period / 1000, (long)(period % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	put_file(dir, "done", "done\n");
	return 0;
}
