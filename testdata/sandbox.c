/* sandbox.c: a program that sandboxes itself with a seccomp filter written by hand (classic BPF),
 * as servers and browsers do, for the tests of er collect under seccomp.
 *
 * Usage: sandbox FILTER ACTION HOW THEN...
 *   FILTER  tight:     allow only the system calls this program's work and the start of a
 *                      dynamically linked program need (no mkdir, fallocate, getpid, ...); the rest
 *                      gets ACTION
 *           deny-NAME: the system call NAME gets ACTION; the rest is allowed. NAME: ptrace, acct
 *                      (nothing here calls it), mkdir (nor this), poll (er collect's Go code uses
 *                      ppoll), or one the collector library makes where this program does not:
 *                      pidfd_open, mkdirat, fchownat, madvise, geteuid, stat, fstat (glibc's fstat is
 *                      newfstatat), rt_sigpending
 *           args:      by the arguments, with more of classic BPF (scratch memory, ALU, JSET,
 *                      JGT): openat with O_CREAT fails with EACCES, fallocate of more than 4 KiB
 *                      gets ACTION; the rest is allowed
 *           args-loose: the same program with O_APPEND and 1 GiB, which allows what the library does
 *                      (it opens with O_PATH, O_CREAT, ..., never O_APPEND)
 *           strict:    SECCOMP_MODE_STRICT (read, write, _exit, sigreturn only); THEN must be "quiet"
 *           fsize:     no filter: RLIMIT_FSIZE lowered to 64 KiB (a file grown past it is SIGXFSZ)
 *           none:      no filter
 *   ACTION  kill (SECCOMP_RET_KILL_PROCESS) or errno (SECCOMP_RET_ERRNO with EPERM)
 *   HOW     prctl (prctl(PR_SET_SECCOMP)) or seccomp (syscall(SYS_seccomp), as libseccomp does)
 *   THEN    work N:    after the filter, allocate N blocks (some freed, some leaked) in after_filter
 *           fork N:    after the filter, fork a child that does work N, and wait for it
 *           exec PROG ARGS...: after the filter, exec PROG (the filter stays in force)
 *           quiet:     after the filter, write the result and _exit (strict mode allows no more)
 *           drop-fork N: after the filter, make itself user and group 65534 (setgid, setuid: root
 *                      only) and fork a child that does work N
 *           drop-exec PROG ARGS...: after the filter, make itself user 65534 and exec PROG
 *           chroot-fork JAIL N: after the filter, chroot to JAIL and fork a child that does work N
 *           daemon DIR N: before the filter, fork; the founder waits for the child's DIR/sealed and
 *                      exits 7; the child installs the filter, writes DIR/sealed, waits for DIR/go,
 *                      then does work N and writes its output to DIR/done
 *
 * Before the filter it allocates known blocks in before_filter and prints, with write(2) only,
 * "expect before_filter allocs N bytes B leaks L leaked LB"; after it, the same of after_filter, as
 * "did after_filter ..." (which the library records only where the filter allows it), and "sum S". It exits with status 7 (the child's
 * status for fork). Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -o sandbox sandbox.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static void *volatile keep[64];
static volatile unsigned long sum;

__attribute__((noinline)) static void before_filter(void)
{
	char line[128];
	long allocs = 0, bytes = 0, leaks = 0, leaked = 0;
	for (int i = 0; i < 8; i++) {
		size_t n = 100 + 10 * (size_t)i;
		char *p = malloc(n);
		memset(p, i, n);
		allocs++, bytes += (long)n;
		if (i % 2) {
			keep[i] = p; /* leaked */
			leaks++, leaked += (long)n;
		} else {
			sum += (unsigned char)p[n - 1];
			free(p);
		}
	}
	snprintf(line, sizeof line, "expect before_filter allocs %ld bytes %ld leaks %ld leaked %ld\n", allocs, bytes, leaks, leaked);
	say(line);
}

__attribute__((noinline)) static void after_filter(int n)
{
	char line[160];
	long bytes = 0, leaks = 0, leaked = 0;
	for (int i = 0; i < n; i++) {
		size_t size = 64 + (size_t)i % 1000;
		char *p = malloc(size);
		p[0] = (char)i;
		sum += (unsigned char)p[0];
		bytes += (long)size;
		if (i % 3) {
			free(p);
		} else {
			keep[32 + i % 32] = p; /* leaked */
			leaks++, leaked += (long)size;
		}
	}
	snprintf(line, sizeof line, "did after_filter allocs %d bytes %ld leaks %ld leaked %ld\nsum %lu\n", n, bytes, leaks, leaked,
		 (unsigned long)sum);
	say(line);
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, action)

static int install(const char *filter, const char *act, const char *how)
{
	if (strcmp(filter, "none") == 0)
		return 0;
	if (strcmp(filter, "fsize") == 0) {
		struct rlimit rl = {65536, 65536};
		return setrlimit(RLIMIT_FSIZE, &rl);
	}
	int seccomp_call = strcmp(how, "seccomp") == 0;
	if (strcmp(filter, "strict") == 0)
		return seccomp_call ? (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 0, NULL)
				    : prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
	unsigned action = strcmp(act, "kill") == 0 ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | EPERM;
	struct sock_filter head[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	};
	struct sock_filter tight[] = {
		ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_close), ALLOW(SYS_fstat), ALLOW(SYS_newfstatat),
		ALLOW(SYS_openat), ALLOW(SYS_mmap), ALLOW(SYS_mprotect), ALLOW(SYS_munmap), ALLOW(SYS_brk),
		ALLOW(SYS_pread64), ALLOW(SYS_arch_prctl), ALLOW(SYS_set_tid_address), ALLOW(SYS_set_robust_list),
		ALLOW(SYS_rseq), ALLOW(SYS_prlimit64), ALLOW(SYS_getrandom), ALLOW(SYS_access), ALLOW(SYS_exit_group),
		ALLOW(SYS_exit), ALLOW(SYS_rt_sigreturn), ALLOW(SYS_rt_sigaction), ALLOW(SYS_rt_sigprocmask),
		ALLOW(SYS_futex), ALLOW(SYS_madvise), ALLOW(SYS_execve), ALLOW(SYS_wait4), ALLOW(SYS_clone),
		ALLOW(SYS_clone3), ALLOW(SYS_lseek),
		BPF_STMT(BPF_RET | BPF_K, action),
	};
	static const struct {
		const char *name;
		long nr;
	} denials[] = {{"ptrace", SYS_ptrace},         {"acct", SYS_acct},     {"mkdir", SYS_mkdir},
		       {"poll", SYS_poll},             {"pidfd_open", 434},    {"mkdirat", SYS_mkdirat},
		       {"fchownat", SYS_fchownat},     {"madvise", SYS_madvise}, {"geteuid", SYS_geteuid},
		       {"stat", SYS_stat},             {"fstat", SYS_fstat},   {"rt_sigpending", SYS_rt_sigpending}};
	long deny = -1;
	for (size_t i = 0; i < sizeof denials / sizeof denials[0]; i++)
		if (strncmp(filter, "deny-", 5) == 0 && strcmp(filter + 5, denials[i].name) == 0)
			deny = denials[i].nr;
	struct sock_filter open[] = {
		DENY((unsigned)deny),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	/* args: M[0] = nr; X = nr; A = (X + 0) & 0xffffffff; then by nr and argument. */
	int loose = strcmp(filter, "args-loose") == 0;
	unsigned flag = loose ? O_APPEND : O_CREAT, most = loose ? 1u << 30 : 4096;
	struct sock_filter args[] = {
		BPF_STMT(BPF_ST, 0),
		BPF_STMT(BPF_LDX | BPF_MEM, 0),
		BPF_STMT(BPF_MISC | BPF_TXA, 0),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 0),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xffffffff),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, flag, 0, 6),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
		BPF_STMT(BPF_LD | BPF_MEM, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fallocate, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, most, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter prog[sizeof head / sizeof head[0] + sizeof tight / sizeof tight[0]];
	size_t n = sizeof head / sizeof head[0];
	memcpy(prog, head, sizeof head);
	if (strcmp(filter, "tight") == 0) {
		memcpy(prog + n, tight, sizeof tight);
		n += sizeof tight / sizeof tight[0];
	} else if (strcmp(filter, "args") == 0 || loose) {
		memcpy(prog + n, args, sizeof args);
		n += sizeof args / sizeof args[0];
	} else if (deny >= 0) {
		memcpy(prog + n, open, sizeof open);
		n += sizeof open / sizeof open[0];
	} else {
		fprintf(stderr, "sandbox: unknown filter %s\n", filter);
		exit(2);
	}
	struct sock_fprog fp = {.len = (unsigned short)n, .filter = prog};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return seccomp_call ? (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp)
			    : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp, 0, 0);
}

/* put writes text into DIR/name, with the system calls the filters here allow. */
static void put(const char *dir, const char *name, const char *text)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		_exit(3);
	(void)!write(fd, text, strlen(text));
	close(fd);
}

static void await(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	while (access(path, F_OK) != 0)
		usleep(10000);
}

/* daemon: the child installs the filter and outlives er collect, which is stopped meanwhile. */
static int daemon_run(char **argv, const char *dir, int n)
{
	pid_t p = fork();
	if (p < 0)
		return 1;
	if (p > 0) {
		await(dir, "sealed");
		return 7;
	}
	if (install(argv[1], argv[2], argv[3]) != 0)
		_exit(1);
	put(dir, "sealed", "");
	await(dir, "go");
	int out[2];
	if (pipe(out) != 0 || dup2(out[1], 1) < 0)
		_exit(4);
	after_filter(n);
	char b[512];
	ssize_t got = read(out[0], b, sizeof b - 1);
	b[got > 0 ? got : 0] = 0;
	put(dir, "done", b);
	_exit(7);
}

static int fork_work(int n)
{
	pid_t p = fork();
	if (p == 0) {
		after_filter(n);
		_exit(7);
	}
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: sandbox FILTER ACTION HOW THEN...\n");
		return 2;
	}
	before_filter();
	const char *then = argv[4];
	if (strcmp(then, "daemon") == 0 && argc > 6)
		return daemon_run(argv, argv[5], atoi(argv[6]));
	if (install(argv[1], argv[2], argv[3]) != 0) {
		perror("sandbox: installing the filter");
		return 1;
	}
	if ((strcmp(then, "drop-fork") == 0 || strcmp(then, "drop-exec") == 0) && (setgid(65534) != 0 || setuid(65534) != 0)) {
		perror("sandbox: setuid");
		return 1;
	}
	if (strcmp(then, "drop-exec") == 0 && argc > 5) {
		execv(argv[5], argv + 5);
		perror("sandbox: exec");
		return 127;
	}
	if (strcmp(then, "chroot-fork") == 0 && argc > 6) {
		if (chroot(argv[5]) != 0 || chdir("/") != 0) {
			perror("sandbox: chroot");
			return 1;
		}
		return fork_work(atoi(argv[6]));
	}
	if (strcmp(then, "drop-fork") == 0)
		return fork_work(argc > 5 ? atoi(argv[5]) : 100);
	if (strcmp(then, "quiet") == 0) {
		char line[64];
		snprintf(line, sizeof line, "sum %lu\n", (unsigned long)sum);
		say(line);
		syscall(SYS_exit, 7);
	}
	if (strcmp(then, "exec") == 0 && argc > 5) {
		execv(argv[5], argv + 5);
		perror("sandbox: exec");
		return 127;
	}
	int n = argc > 5 ? atoi(argv[5]) : 100;
	if (strcmp(then, "fork") == 0)
		return fork_work(n);
	after_filter(n);
	return 7;
}
