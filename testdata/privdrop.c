/* privdrop.c: what servers do before they work: a process that allocates, then changes what it is
 * (drops root's privileges, chroots) or makes a child without fork's handlers, then starts a child
 * that allocates. It prints, through write(2):
 *
 *   expect parent_leaks allocs 10 bytes 1000 leaks 10 leaked 1000
 *   expect child_leaks allocs 100 bytes 10000 leaks 100 leaked 10000
 *   child PID                       (the child, forked, cloned or exec'd)
 *
 * Usage: privdrop MODE HOW [JAIL]
 *   MODE: none; setuid, setresuid, seteuid, setreuid (the C library's, to user and group 65534);
 *         rawsetuid (the system calls themselves); chroot (to JAIL, which holds this program and
 *         the libraries it needs, at their paths); rawclone (a clone system call with SIGCHLD only),
 *         clone (glibc's clone() without CLONE_VM): the child leaks, in place of fork;
 *         landlock (first of all, before parent_leaks: a Landlock ruleset that allows writing,
 *         creating and removing files beneath JAIL alone: the experiment elsewhere is read-only to
 *         it and its descendants);
 *         landlock-files (the same for regular files alone: directories may be made anywhere);
 *         landlock-close, landlock-rawclose (landlock, then every descriptor from 3 up closed, as a
 *         daemon does: by close_range through the C library's syscall(), or by the system call itself);
 *         nofile (RLIMIT_NOFILE's soft limit lowered to one more than the number its next open
 *         would get: one more descriptor, the hard limit kept); nofile-hard (both limits so)
 *   HOW:  fork (the child leaks), exec (the child execs this program, as "privdrop child", which
 *         leaks), execself (the process itself execs it, with no fork); ignored for rawclone and clone
 * After a nofile mode the child (forked or exec'd) and then the parent (not with execself) open
 * /dev/null, which must succeed as without er, and print "open child N" and "open parent N" (N: the
 * descriptor).
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o privdrop privdrop.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep[200];

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

__attribute__((noipa)) static void parent_leaks(void)
{
	for (int i = 0; i < 10; i++)
		keep[i] = malloc(100);
}

__attribute__((noipa)) static void child_leaks(void)
{
	for (int i = 0; i < 100; i++)
		keep[100 + i] = malloc(100);
}

static void fail(const char *what)
{
	perror(what);
	exit(2);
}

/* raw_syscall3 makes system call n itself, as a program may without the C library. */
static long raw_syscall3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

/* own_open opens /dev/null as the program's own, and says so ("open WHO N"), or fails. */
static void own_open(const char *who)
{
	int fd = open("/dev/null", O_RDONLY);
	if (fd < 0) {
		perror(who);
		exit(3);
	}
	char line[64];
	snprintf(line, sizeof line, "open %s %d\n", who, fd);
	say(line);
}

/* landlock allows writing, creating and removing beneath dir alone, from now on (files: only
 * writing and creating regular files is restricted; directories may be made anywhere). */
static void landlock(const char *dir, int files)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		fail("landlock_create_ruleset (version)");
	struct landlock_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
				     LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
				     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
				     LANDLOCK_ACCESS_FS_MAKE_SYM,
	};
	if (files)
		attr.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG;
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		fail("landlock_create_ruleset");
	struct landlock_path_beneath_attr beneath = {.allowed_access = attr.handled_access_fs};
	beneath.parent_fd = open(dir, O_PATH | O_CLOEXEC);
	if (beneath.parent_fd < 0 || syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0) != 0)
		fail("landlock_add_rule");
	close(beneath.parent_fd);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, rs, 0) != 0)
		fail("landlock_restrict_self");
	close(rs);
}

/* nofile lowers RLIMIT_NOFILE to one more than the descriptor the next open would get (and the hard
 * limit too, hard). */
static void nofile(int hard)
{
	int next = dup(0);
	if (next < 0)
		fail("dup");
	close(next);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		fail("getrlimit");
	rl.rlim_cur = (rlim_t)next + 1;
	if (hard)
		rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		fail("setrlimit");
}

static int child_fn(void *arg)
{
	(void)arg;
	child_leaks();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "child") == 0) {
		child_leaks();
		if (argc == 3 && strcmp(argv[2], "open") == 0)
			own_open("child");
		return 0;
	}
	if (argc < 3) {
		say("usage: privdrop MODE HOW [JAIL]\n");
		return 2;
	}
	const char *mode = argv[1], *how = argv[2];
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		fail("readlink");
	self[n] = 0;
	/* (A Landlock ruleset first: parent_leaks is recorded under it.) */
	if (strncmp(mode, "landlock", 8) == 0) {
		if (argc < 4)
			fail("landlock: no directory");
		landlock(argv[3], strcmp(mode, "landlock-files") == 0);
		if (strcmp(mode, "landlock-close") == 0 && syscall(SYS_close_range, 3, ~0U, 0) != 0)
			fail("close_range");
		if (strcmp(mode, "landlock-rawclose") == 0 && raw_syscall3(SYS_close_range, 3, ~0U, 0) != 0)
			fail("close_range");
	}
	parent_leaks();
	say("expect parent_leaks allocs 10 bytes 1000 leaks 10 leaked 1000\n");
	say("expect child_leaks allocs 100 bytes 10000 leaks 100 leaked 10000\n");
	if (strcmp(mode, "setuid") == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			fail("setuid");
	} else if (strcmp(mode, "setresuid") == 0) {
		if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
			fail("setresuid");
	} else if (strcmp(mode, "seteuid") == 0) {
		if (setegid(65534) != 0 || seteuid(65534) != 0)
			fail("seteuid");
	} else if (strcmp(mode, "setreuid") == 0) {
		if (setregid(65534, 65534) != 0 || setreuid(65534, 65534) != 0)
			fail("setreuid");
	} else if (strcmp(mode, "rawsetuid") == 0) {
		if (syscall(SYS_setgid, 65534) != 0 || syscall(SYS_setuid, 65534) != 0)
			fail("setuid");
	} else if (strcmp(mode, "chroot") == 0) {
		if (argc < 4 || chroot(argv[3]) != 0 || chdir("/") != 0)
			fail("chroot");
		strcpy(self, "/privdrop"); /* the jail's copy */
	} else if (strcmp(mode, "nofile") == 0 || strcmp(mode, "nofile-hard") == 0) {
		nofile(strcmp(mode, "nofile-hard") == 0);
	}
	int opens = strncmp(mode, "nofile", 6) == 0;
	if (strcmp(how, "execself") == 0) {
		execl(self, "privdrop", "child", opens ? "open" : (char *)NULL, (char *)NULL);
		fail("exec");
	}
	long pid;
	if (strcmp(mode, "rawclone") == 0) {
		pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
		if (pid == 0) {
			child_leaks();
			_exit(0);
		}
	} else if (strcmp(mode, "clone") == 0) {
		static char stack[256 * 1024] __attribute__((aligned(16)));
		pid = clone(child_fn, stack + sizeof stack, SIGCHLD, NULL);
	} else {
		pid = fork();
		if (pid == 0) {
			if (strcmp(how, "exec") == 0) {
				execl(self, "privdrop", "child", opens ? "open" : (char *)NULL, (char *)NULL);
				_exit(5);
			}
			child_leaks();
			if (opens)
				own_open("child");
			_exit(0);
		}
	}
	if (pid < 0)
		fail("fork");
	char line[64];
	snprintf(line, sizeof line, "child %ld\n", pid);
	say(line);
	int st;
	if (waitpid((pid_t)pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("the child failed");
	if (opens)
		own_open("parent");
	return 0;
}
