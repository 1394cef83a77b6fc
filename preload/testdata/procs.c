/* procs.c: descendant processes, pause and resume, sample signals and the control page, for the
 * collector library's tests (procs_test.go builds it: gcc -O1 -g -o procs procs.c -lpthread).
 *
 * Every process allocates blocks of a size of its own (see the modes), so that a test can tell
 * whose heap events are in which instance's files. Output lines: "stat key=value ...", and
 * "error ..." when something went wrong (the exit status is then 1). Modes:
 *
 *   procs leaf SIZE        malloc(SIZE) 3 times and free them
 *   procs tree SELF        the founder mallocs 111111; forks child 1 from the main thread (222221,
 *                          CPU work, a mutex, a write to /dev/null), child 2 from a second thread
 *                          (222222), child 3 (222223) which execs "SELF leaf 333333"; posix_spawns
 *                          "SELF leaf 444444"; system("SELF leaf 555555"); vforks a child that
 *                          closes descriptor 4242 and execs "SELF leaf 666666"; waits for all and
 *                          mallocs 111112. Meanwhile a thread mallocs 777-byte blocks.
 *   procs forks N          N children, forked in turn from the main thread and from a new thread while
 *                          two threads allocate 777-byte blocks; child i mallocs 300000+i
 *   procs reexec SELF SIZE malloc(SIZE+1) twice, then exec "SELF leaf SIZE" in the same process
 *   procs pause SIG        malloc(1001) x2, raise(SIG), malloc(1002) x2, raise(SIG), malloc(1003) x2
 *   procs sample SIG N     raise(SIG) N times
 *   procs handlers SIG     the program's own sigaction, signal, sigset, ... calls for SIG
 *   procs phases           4 phases, each malloc(5000+i) x2, write "phase i\n" to stdout, then
 *                          read a line from stdin (the test changes the control page meanwhile)
 *   procs ending SELF DIR  malloc(6001) x2, write "ready\n", read a line from stdin (the test ends
 *                          the collection meanwhile, or closes the FIFO as a killed er would),
 *                          sleep 20 ms (longer than the library's 10 ms watch), malloc(6002) x2;
 *                          then says what it holds of DIR (the experiment) and of the collector:
 *                          "stat self_maps=N self_fds=N self_preload=0|1 self_er_vars=N"; forks a
 *                          child that mallocs 6003 x2 and says the same with child_; and runs
 *                          "SELF holds DIR", which says it with exec_ and exec_library=0|1 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
extern sighandler_t bsd_signal(int, sighandler_t); /* glibc declares it only for old X/Open */

static int failed;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		printf("error " __VA_ARGS__);                                                      \
		printf("\n");                                                                      \
		failed = 1;                                                                        \
	} while (0)

static void allocs(size_t size, int n)
{
	for (int i = 0; i < n; i++) {
		void *volatile p = malloc(size);
		memset(p, 1, 16);
		free(p);
	}
}

static int waitok(pid_t pid, const char *what)
{
	int st;
	if (waitpid(pid, &st, 0) != pid) {
		FAIL("waitpid %s: %s", what, strerror(errno));
		return 0;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		FAIL("%s: status %#x", what, st);
		return 0;
	}
	return 1;
}

/* ---- tree ---- */

static volatile int stop_noise;

static void *noise(void *arg)
{
	(void)arg;
	while (!stop_noise)
		allocs(777, 1);
	return NULL;
}

static void spin_cpu(long ns)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	volatile unsigned long x = 0;
	do {
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i * 7;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

/* own_timer says whether the process has the collector library's SIGPROF timer for thread tid
 * (sigev_value 0x6572636c), from /proc/self/timers. */
static int own_timer(int tid)
{
	char b[8192], want[64];
	int fd = open("/proc/self/timers", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	b[n > 0 ? n : 0] = 0;
	snprintf(want, sizeof want, "notify: signal/tid.%d", tid);
	return strstr(b, "signal: 27/000000006572636c") && strstr(b, want);
}

static void child1(void)
{
	allocs(222221, 3);
	spin_cpu(30 * 1000 * 1000);
	printf("stat child1_timer=%d\n", own_timer((int)getpid()));
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0 || write(fd, "child", 5) != 5)
		_exit(3);
	close(fd);
	exit(0);
}

static void *fork_from_thread(void *arg)
{
	pid_t *pid = arg;
	*pid = fork();
	if (*pid == 0) {
		allocs(222222, 3);
		exit(0);
	}
	return NULL;
}

static int tree(const char *self)
{
	allocs(111111, 3);
	pthread_t nt;
	pthread_create(&nt, NULL, noise, NULL);

	pid_t c1 = fork();
	if (c1 == 0)
		child1();

	pid_t c2 = -1;
	pthread_t ft;
	pthread_create(&ft, NULL, fork_from_thread, &c2);
	pthread_join(ft, NULL);

	pid_t c3 = fork();
	if (c3 == 0) {
		allocs(222223, 3);
		execl(self, self, "leaf", "333333", (char *)NULL);
		_exit(4);
	}

	pid_t sp;
	char *sargv[] = {(char *)self, "leaf", "444444", NULL};
	int e = posix_spawn(&sp, self, NULL, NULL, sargv, environ);
	if (e != 0)
		FAIL("posix_spawn: %s", strerror(e));

	char cmd[4200];
	snprintf(cmd, sizeof cmd, "%s leaf 555555", self);
	int st = system(cmd);
	if (st != 0)
		FAIL("system: status %#x", st);

	pid_t vf = vfork();
	if (vf == 0) {
		close(4242); /* traced calls in a vfork child are not recorded */
		execl(self, self, "leaf", "666666", (char *)NULL);
		_exit(5);
	}

	waitok(c1, "child 1");
	waitok(c2, "child 2");
	waitok(c3, "child 3");
	if (e == 0)
		waitok(sp, "posix_spawn");
	if (vf > 0)
		waitok(vf, "vfork");
	stop_noise = 1;
	pthread_join(nt, NULL);
	allocs(111112, 3);
	printf("stat founder=%d child1=%d child2=%d child3=%d spawn=%d vfork=%d\n", (int)getpid(), (int)c1, (int)c2,
	       (int)c3, (int)sp, (int)vf);
	return failed;
}

struct forker {
	int i;
	pid_t pid;
};

static void *fork_one(void *arg)
{
	struct forker *f = arg;
	f->pid = fork();
	if (f->pid == 0) {
		allocs(300000 + (size_t)f->i, 2);
		exit(0);
	}
	return NULL;
}

static int forks(int n)
{
	pthread_t nt[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&nt[i], NULL, noise, NULL);
	pid_t pids[256];
	for (int i = 0; i < n && i < 256; i++) {
		struct forker f = {i, -1};
		if (i % 2 == 0) {
			fork_one(&f);
		} else {
			pthread_t t;
			pthread_create(&t, NULL, fork_one, &f);
			pthread_join(t, NULL);
		}
		pids[i] = f.pid;
	}
	for (int i = 0; i < n && i < 256; i++)
		waitok(pids[i], "child");
	stop_noise = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(nt[i], NULL);
	printf("stat founder=%d\n", (int)getpid());
	return failed;
}

/* ---- signals ---- */

static volatile int called, called2, called_other;
static void h1(int sig) { (void)sig; called++; }
static void h2(int sig) { (void)sig; called2++; }
static void h_other(int sig) { (void)sig; called_other++; }

/* kernel_handler returns the handler the kernel has for sig, asked without libc. */
static void *kernel_handler(int sig)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		unsigned long mask;
	} k;
	if (syscall(SYS_rt_sigaction, sig, NULL, &k, 8) != 0)
		return (void *)-2;
	return k.handler;
}

static int handlers(int sig)
{
	struct sigaction a, old, cur;
	memset(&a, 0, sizeof a);
	a.sa_handler = h1;
	sigemptyset(&a.sa_mask);
	int r = sigaction(sig, &a, &old);
	printf("stat sigaction_ret=%d old_default=%d\n", r, old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO));
	sigaction(sig, NULL, &cur);
	printf("stat reported_h1=%d\n", cur.sa_handler == h1);
	void *k = kernel_handler(sig);
	printf("stat kernel_not_program=%d\n", k != (void *)h1 && k != (void *)SIG_DFL && k != (void *)SIG_IGN && k != (void *)-2);
	raise(sig);
	printf("stat signal_prev_h1=%d\n", signal(sig, h2) == h1);
	printf("stat bsd_prev_h2=%d\n", bsd_signal(sig, SIG_IGN) == h2);
	printf("stat sigset_prev_ign=%d\n", sigset(sig, h1) == SIG_IGN);
	printf("stat sysv_prev_h1=%d\n", sysv_signal(sig, h2) == h1);
	printf("stat sigignore_ret=%d\n", sigignore(sig));
	sigaction(sig, NULL, &cur);
	printf("stat reported_ign=%d\n", cur.sa_handler == SIG_IGN);
	printf("stat kernel_same=%d\n", kernel_handler(sig) == k);
	raise(sig);
	signal(sig, SIG_DFL); /* the default would end the process: it must not be installed */
	raise(sig);
	/* Another signal is the program's own. */
	memset(&a, 0, sizeof a);
	a.sa_handler = h_other;
	int other = sig == SIGUSR2 ? SIGUSR1 : SIGUSR2;
	sigaction(other, &a, NULL);
	raise(other);
	printf("stat other_kernel=%d\n", kernel_handler(other) == (void *)h_other);
	printf("stat called=%d called2=%d called_other=%d\n", called, called2, called_other);
	return failed;
}

/* ---- the end of the collection ---- */

/* holds prints what this process holds of the experiment dir and of the collector library. */
static void holds(const char *who, const char *dir)
{
	int maps = 0, fds = 0, vars = 0, lib = 0;
	char line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f)) {
		maps += strstr(line, dir) != NULL;
		lib |= strstr(line, "libercollector") != NULL;
	}
	if (f)
		fclose(f);
	for (int fd = 0; fd < 4096; fd++) {
		char p[64], l[4096];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, l, sizeof l - 1);
		if (n > 0) {
			l[n] = 0;
			fds += strncmp(l, dir, strlen(dir)) == 0;
		}
	}
	for (char **e = environ; *e; e++)
		vars += strncmp(*e, "ER_", 3) == 0;
	printf("stat %s_maps=%d %s_fds=%d %s_preload=%d %s_er_vars=%d %s_library=%d\n", who, maps, who, fds, who,
	       getenv("LD_PRELOAD") != NULL, who, vars, who, lib);
}

static int ending(const char *self, const char *dir)
{
	char line[64];
	allocs(6001, 2);
	printf("ready\n");
	if (!fgets(line, sizeof line, stdin))
		return 1;
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	allocs(6002, 2);
	holds("self", dir);
	pid_t c = fork();
	if (c == 0) {
		allocs(6003, 2);
		holds("child", dir);
		_exit(0);
	}
	if (c < 0 || waitpid(c, NULL, 0) != c)
		return 1;
	c = fork();
	if (c == 0) {
		execl(self, self, "holds", dir, (char *)NULL);
		_exit(1);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	return failed;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && strcmp(argv[1], "leaf") == 0) {
		allocs((size_t)atol(argv[2]), 3);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "tree") == 0)
		return tree(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "forks") == 0)
		return forks(atoi(argv[2]));
	if (argc >= 4 && strcmp(argv[1], "reexec") == 0) {
		allocs((size_t)atol(argv[3]) + 1, 2);
		execl(argv[2], argv[2], "leaf", argv[3], (char *)NULL);
		return 1;
	}
	if (argc >= 3 && strcmp(argv[1], "pause") == 0) {
		int sig = atoi(argv[2]);
		allocs(1001, 2);
		raise(sig);
		allocs(1002, 2);
		raise(sig);
		allocs(1003, 2);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "sample") == 0) {
		for (int i = 0; i < atoi(argv[3]); i++)
			raise(atoi(argv[2]));
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "handlers") == 0)
		return handlers(atoi(argv[2]));
	if (argc >= 2 && strcmp(argv[1], "phases") == 0) {
		char line[64];
		for (int i = 1; i <= 4; i++) {
			allocs(5000 + (size_t)i, 2);
			char msg[] = "phase 0\n";
			msg[6] = (char)('0' + i);
			if (write(1, msg, 8) != 8)
				return 1;
			if (i < 4 && !fgets(line, sizeof line, stdin))
				return 1;
		}
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "ending") == 0)
		return ending(argv[2], argv[3]);
	if (argc >= 3 && strcmp(argv[1], "holds") == 0) {
		holds("exec", argv[2]);
		return 0;
	}
	fprintf(stderr, "usage: procs leaf SIZE | tree SELF | forks N | reexec SELF SIZE | pause SIG | sample SIG N | handlers SIG | phases | ending SELF DIR\n");
	return 2;
}
