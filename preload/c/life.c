/* life.c: an instance's life within er's collection (docs/trace-format.md, "Processes and
 * control"): the directories and the FIFO it holds from its start, so that a chroot, a new mount
 * namespace or a privilege drop later does not cut it off; the directory it prepares for a user the
 * process drops its privileges to; whether er is still there; how an instance ends when er has
 * ended the collection or is gone (it stops recording, makes the mappings of its files anonymous
 * and closes them, and takes the library's variables out of the environment its descendants
 * inherit); and children made by a clone system call of the program's own, which fork's handlers
 * do not see. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"


/* ---- held descriptors ---- */

struct er_held er_held[HELD_N] = {[0 ... HELD_N - 1] = {.fd = -1}};
char er_lib_path[4096];

static int fstat_ids(int fd, uint64_t *dev, uint64_t *ino)
{
	struct stat st;
	if (er_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0)
		return -1;
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

int er_held_fd(int h)
{
	struct er_held *x = &er_held[h];
	int fd = __atomic_load_n(&x->fd, __ATOMIC_ACQUIRE);
	uint64_t dev, ino;
	if (fd < 0)
		return -1;
	if (fstat_ids(fd, &dev, &ino) == 0 && dev == x->dev && ino == x->ino)
		return fd;
	/* Closed, or the number reused by the program after a close_range system call: not ours. */
	__atomic_compare_exchange_n(&x->fd, &fd, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	return -1;
}

void er_held_set(int h, int fd)
{
	er_held_close(h);
	if ((fd = er_fd_high(fd)) < 0)
		return;
	struct er_held *x = &er_held[h];
	if (fstat_ids(fd, &x->dev, &x->ino) != 0) {
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
		return;
	}
	__atomic_store_n(&x->fd, fd, __ATOMIC_RELEASE);
}

void er_held_close(int h)
{
	int fd = er_held_fd(h);
	if (fd >= 0 && __atomic_compare_exchange_n(&er_held[h].fd, &fd, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
}

static int sys_openat(int dir, const char *path, int flags, int mode)
{
	return (int)er_sys(SYS_openat, dir, (long)path, flags, mode, 0, 0);
}

/* fmt_uid writes "u<uid>" at p (the directory of a user the process's privileges dropped to). */
static void fmt_uid(char *p, unsigned long uid)
{
	char d[24];
	int n = 0;
	do
		d[n++] = (char)('0' + uid % 10);
	while ((uid /= 10) != 0);
	*p++ = 'u';
	while (n > 0)
		*p++ = d[--n];
	*p = 0;
}

/* open_drop holds .proc/u<uid>, where the instances of processes running as uid create their
 * directories: 0 when it exists and belongs to uid. */
static int open_drop(int exp, unsigned long uid)
{
	char path[40] = ".proc/";
	fmt_uid(path + 6, uid);
	int fd = sys_openat(exp, path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	if (er_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid) {
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
		return -1;
	}
	er_held_set(HELD_DROP, fd);
	return 0;
}

/* er_expdir_open holds the experiment directory and the FIFO .control, when an image starts (the
 * founder, or an image a process exec'd). -ESRCH: er is gone (the FIFO has no reader, or er has
 * removed it at its end); other -errno: the directory cannot be opened. A FIFO the process may no
 * longer open (its privileges were dropped before it exec'd this image) is replaced by a pidfd of
 * er's process, which says when er is gone; and such a process uses the directory prepared for its
 * user (.proc/u<uid>), where there is one. */
static int open_exp(const char *path)
{
	int fd = sys_openat(AT_FDCWD, path, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	er_held_set(HELD_EXP, fd);
	int exp = er_held_fd(HELD_EXP);
	if (exp < 0)
		return -EBADF;
	int f = sys_openat(exp, ".control", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0);
	struct stat st;
	if (f >= 0 && (er_sys(SYS_fstat, f, (long)&st, 0, 0, 0, 0) != 0 || !S_ISFIFO(st.st_mode))) {
		er_sys(SYS_close, f, 0, 0, 0, 0, 0);
		return -ESRCH;
	}
	if (f >= 0) {
		er_held_set(HELD_FIFO, f);
	} else if (errno == ENXIO || errno == ENOENT) {
		return -ESRCH;
	} else {
		int ok;
		uint64_t pid = er_parse_u64(getenv("ER_COLLECTOR_PID"), &ok);
		int p = ok && pid > 0 ? (int)er_sys(SYS_pidfd_open, (long)pid, 0, 0, 0, 0, 0) : -1;
		if (p < 0 && ok && errno == ESRCH)
			return -ESRCH;
		if (p >= 0)
			er_held_set(HELD_PIDFD, p);
	}
	long euid = er_sys(SYS_geteuid, 0, 0, 0, 0, 0, 0);
	if (euid != 0 && er_sys(SYS_newfstatat, exp, (long)".proc", (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) == 0 &&
	    st.st_uid != (uid_t)euid)
		open_drop(exp, (unsigned long)euid);
	return 0;
}

/* er_by_er_root writes into p the path of the experiment directory as er sees it, through its root
 * directory in /proc (out of a chroot or another mount namespace, where /proc shows er's process and
 * this one may look at it); 0 when it cannot. */
int er_by_er_root(char *p, size_t size)
{
	int ok;
	uint64_t pid = er_parse_u64(getenv("ER_COLLECTOR_PID"), &ok);
	char d[24];
	int n = 0;
	if (!ok || pid == 0)
		return 0;
	do
		d[n++] = (char)('0' + pid % 10);
	while ((pid /= 10) != 0);
	size_t l = 6;
	memcpy(p, "/proc/", l);
	while (n > 0)
		p[l++] = d[--n];
	if (l + 5 + strlen(er.expdir) + 1 > size)
		return 0;
	memcpy(p + l, "/root", 5);
	strcpy(p + l + 5, er.expdir);
	return 1;
}

int er_expdir_open(void)
{
	int e = open_exp(er.expdir);
	char alt[sizeof er.expdir + 48];
	/* Out of reach by its name (a chroot, another mount namespace): by er's root. */
	if (e != 0 && er_by_er_root(alt, sizeof alt) && open_exp(alt) == 0)
		return 0;
	return e;
}

/* ---- is er still there? ---- */

static int poll_one(int fd, short events, short want)
{
	struct pollfd p = {.fd = fd, .events = events};
	return er_sys(SYS_poll, (long)&p, 1, 0, 0, 0, 0) == 1 && (p.revents & want);
}

int er_collector_gone(void)
{
	if (er_ctl_stop() == ER_STATE_STOP_ENDED)
		return 1;
	int fd = er_held_fd(HELD_FIFO);
	if (fd >= 0)
		return poll_one(fd, POLLOUT, POLLERR); /* no reader: er is gone */
	if ((fd = er_held_fd(HELD_PIDFD)) >= 0)
		return poll_one(fd, POLLIN, POLLIN); /* er's process has exited */
	/* Neither (the program closed them with a system call): the FIFO by its name. */
	int exp = er_held_fd(HELD_EXP);
	int f = exp >= 0 ? sys_openat(exp, ".control", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0)
			 : sys_openat(AT_FDCWD, er.control, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0);
	if (f >= 0) {
		er_sys(SYS_close, f, 0, 0, 0, 0, 0);
		return 0;
	}
	return errno == ENXIO || errno == ENOENT;
}

static uint64_t watched; /* when er_watch last looked */

void er_watch(uint64_t now)
{
	if (__atomic_load_n(&er.sealed, __ATOMIC_RELAXED))
		return; /* (no system call: it gave up all it held as it sealed itself) */
	uint64_t last = __atomic_load_n(&watched, __ATOMIC_RELAXED);
	if ((int64_t)(now - last) < (int64_t)ER_WATCH_NS ||
	    !__atomic_compare_exchange_n(&watched, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	if (__atomic_load_n(&er.active, __ATOMIC_RELAXED) && er_collector_gone())
		er_end();
}

/* ---- the register of mapped blocks ----
 *
 * Every block mapped from a data file is registered, so that an instance that ends can make all of
 * them anonymous at once, whichever thread maps them: a mapping replaced with MAP_FIXED stays
 * mapped, and a thread in the middle of a record writes on into anonymous memory. A slot holds the
 * block's address: live; |1: being replaced; |2: anonymous now. */
#define REG_N 16384
static uintptr_t reg[REG_N];
static uint32_t reg_next;

int er_block_register(char *base)
{
	uint32_t from = __atomic_fetch_add(&reg_next, 1, __ATOMIC_RELAXED);
	for (uint32_t k = 0; k < REG_N; k++) {
		uint32_t i = (from + k) % REG_N;
		uintptr_t none = 0;
		if (__atomic_load_n(&reg[i], __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&reg[i], &none, (uintptr_t)base, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return (int)i + 1;
	}
	return 0;
}

void er_block_unregister(uint32_t slot, char *base)
{
	if (slot == 0 || slot > REG_N)
		return;
	uintptr_t *r = &reg[slot - 1], v = (uintptr_t)base;
	if (__atomic_compare_exchange_n(r, &v, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	while ((__atomic_load_n(r, __ATOMIC_ACQUIRE) & 3) == 1) /* er_end is replacing it */
		__builtin_ia32_pause();
	__atomic_store_n(r, 0, __ATOMIC_RELEASE);
}

static void anonymous(void *p, size_t size)
{
	er_sys(SYS_mmap, (long)p, (long)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static void blocks_anonymous(void)
{
	for (int i = 0; i < REG_N; i++) {
		uintptr_t v = __atomic_load_n(&reg[i], __ATOMIC_SEQ_CST);
		if (v == 0 || (v & 3) || !__atomic_compare_exchange_n(&reg[i], &v, v | 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			continue;
		anonymous((void *)v, ER_BLOCK_SIZE);
		__atomic_store_n(&reg[i], v | 2, __ATOMIC_RELEASE);
	}
}

/* er_blocks_forget, in a new child process (its only thread), drops the blocks its parent had
 * mapped: unmapped, or, where a record of the parent's may still be in progress in this thread (a
 * child the program cloned itself, found at a record), made anonymous. */
void er_blocks_forget(int replace)
{
	for (int i = 0; i < REG_N; i++) {
		uintptr_t v = reg[i] & ~(uintptr_t)3;
		reg[i] = 0;
		if (!v)
			continue;
		if (replace)
			anonymous((void *)v, ER_BLOCK_SIZE);
		else
			er_sys(SYS_munmap, (long)v, ER_BLOCK_SIZE, 0, 0, 0, 0);
	}
}

/* ---- the end of an instance ---- */

/* give_up leaves the experiment alone: the instance stops, its blocks and header pages are made
 * anonymous, its descriptors closed (when no thread uses them), its control page forgotten, and the
 * program's signal handlers given back (SIGPROF's but while the library's timers may send it). No
 * handler of this thread may run the library meanwhile. */
static void give_up(void)
{
	sigset_t all, old;
	sigfillset(&all);
	er_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, sizeof(long), 0, 0);
	__atomic_store_n(&er.active, 0, __ATOMIC_SEQ_CST);
	blocks_anonymous();
	er_ended_files();
	er_fds_end();
	er_ctl_forget();
	er_signals_end();
	er_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof(long), 0, 0);
}

void er_end(void)
{
	int zero = 0;
	if (!__atomic_compare_exchange_n(&er.ended, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	if (__atomic_load_n(&er.sealed, __ATOMIC_ACQUIRE)) {
		/* It gave up all it held as it sealed itself, and may make no system call (nor allocate,
		 * as tidying the environment may): its descendants record nothing under its filter. */
		__atomic_store_n(&er.active, 0, __ATOMIC_SEQ_CST);
		return;
	}
	give_up();
	__atomic_store_n(&er.env_pending, 1, __ATOMIC_RELEASE);
}

void er_seal(void)
{
	give_up();
	er_clock_thread_stop(&er_self); /* (the timers of the other threads, which the filter does not bind, tick on: ignored) */
	__atomic_store_n(&er.clock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&er.sealed, 1, __ATOMIC_RELEASE);
}

/* ---- descriptors in use ----
 *
 * A thread that uses a descriptor of the library's (to grow a file, map a block, send a message)
 * must not find it closed under it, and its number reused by the program: er_end closes them only
 * when no thread uses them (the last one to leave closes them). */
static unsigned fd_users; /* 2 per thread using them; bit 0: they are to be closed */
static int fds_closed;

static void fds_close(void)
{
	/* (Sealed: the last thread to leave may be bound by the filter; the descriptors stay open.) */
	if (__atomic_load_n(&er.sealed, __ATOMIC_ACQUIRE) || __atomic_exchange_n(&fds_closed, 1, __ATOMIC_ACQ_REL))
		return;
	er_close_files();
	for (int h = 0; h < HELD_N; h++)
		er_held_close(h);
}

int er_fds_enter(void)
{
	if (__atomic_add_fetch(&fd_users, 2, __ATOMIC_ACQ_REL) & 1) {
		er_fds_leave();
		return 0;
	}
	return 1;
}

void er_fds_leave(void)
{
	if (__atomic_sub_fetch(&fd_users, 2, __ATOMIC_ACQ_REL) == 1)
		fds_close();
}

void er_fds_end(void)
{
	if (__atomic_or_fetch(&fd_users, 1, __ATOMIC_ACQ_REL) == 1)
		fds_close();
}

void er_fds_child(void)
{
	fd_users = er.ended ? 1 : 0;
	if (er.ended && !fds_closed)
		fds_close(); /* (the parent's other threads used them; they are not here) */
}

/* ---- the environment descendants inherit ---- */

/* The variables of the collector library (the Go side's libraryEnvVars). */
static const char *const lib_vars[] = {"ER_EXPDIR",   "ER_TRACE",        "ER_SYNC_THRESHOLD_NS", "ER_CLOCK_INTERVAL_NS",
				       "ER_FOLLOW",   "ER_COLLECTOR_PID", "ER_SAMPLE_SIGNAL",     "ER_PAUSE_SIGNAL",
				       "ER_PAUSED",   "ER_FOUNDER_PID",   "ER_PARENT_START_NS"};

static ER_TLS int in_env; /* the thread is in setenv, unsetenv, putenv or clearenv: it holds their lock */

static int is_library(const char *p, size_t n)
{
	static const char name[] = "libercollector.so";
	size_t l = sizeof name - 1;
	return n >= l && memcmp(p + n - l, name, l) == 0 && (n == l || p[n - l - 1] == '/');
}

/* er_env_clean takes the collector library out of LD_PRELOAD (the program's own preloads stay) and
 * the library's variables out of the environment, so that the programs this process runs are run
 * as without er. Not in a signal handler, nor while the thread is in an environment function. */
int er_env_clean(void)
{
	er_env_parent_forget();
	const char *pre = getenv("LD_PRELOAD");
	if (pre) {
		static char rest[8192];
		size_t n = 0, len = strlen(pre);
		int mine = 0;
		for (const char *p = pre; p < pre + len;) {
			size_t l = strcspn(p, ": ");
			if (l > 0 && is_library(p, l)) {
				mine = 1;
			} else if (l > 0 && n + l + 1 < sizeof rest) {
				if (n)
					rest[n++] = ':';
				memcpy(rest + n, p, l);
				n += l;
			}
			p += l + (p[l] != 0);
		}
		rest[n] = 0;
		if (mine && n == 0)
			unsetenv("LD_PRELOAD");
		else if (mine)
			setenv("LD_PRELOAD", rest, 1);
	}
	for (size_t i = 0; i < sizeof lib_vars / sizeof lib_vars[0]; i++)
		unsetenv(lib_vars[i]);
	return 0;
}

void er_env_tidy(void)
{
	struct er_thread *t = &er_self;
	if (t->level != 0 || t->busy || in_env || !__atomic_exchange_n(&er.env_pending, 0, __ATOMIC_ACQ_REL))
		return;
	t->busy = ER_BUSY; /* setenv's allocation is not the program's */
	er_env_clean();
	t->busy = 0;
}

#define REAL_ENV(name, type)                                                                      \
	static __typeof__(type) real;                                                             \
	if (__builtin_expect(!real, 0))                                                           \
	real = (type)er_next(name)

ER_EXPORT int setenv(const char *name, const char *value, int overwrite)
{
	REAL_ENV("setenv", int (*)(const char *, const char *, int));
	in_env++;
	int r = real(name, value, overwrite);
	in_env--;
	return r;
}

ER_EXPORT int unsetenv(const char *name)
{
	REAL_ENV("unsetenv", int (*)(const char *));
	in_env++;
	int r = real(name);
	in_env--;
	return r;
}

ER_EXPORT int putenv(char *s)
{
	REAL_ENV("putenv", int (*)(char *));
	in_env++;
	int r = real(s);
	in_env--;
	return r;
}

ER_EXPORT int clearenv(void)
{
	REAL_ENV("clearenv", int (*)(void));
	in_env++;
	int r = real();
	in_env--;
	return r;
}

/* ---- privilege drops ----
 *
 * A process that runs as root and makes itself another user can no longer create anything in the
 * experiment (root's directories, 0755), so the instances of the processes it forks or execs after
 * that could not start. Before the program's call takes effect, while the process is still root,
 * the library creates .proc/u<uid>, 0700 and owned by that user, where those instances create their
 * directories: the user gets that directory and no other. (A drop by the system call itself, which
 * the library does not see, leaves them without one; each says so, as its start fails, where it
 * still can: docs/trace-format.md.) */
static void drop_prepare(long uid)
{
	if (uid < 0 || uid == 0 || !__atomic_load_n(&er.active, __ATOMIC_RELAXED) || er.ended || er.sealed ||
	    er_sys(SYS_geteuid, 0, 0, 0, 0, 0, 0) != 0 || !er_fds_enter())
		return;
	int exp = er_held_fd(HELD_EXP);
	char path[40] = ".proc/";
	fmt_uid(path + 6, (unsigned long)uid);
	if (exp >= 0 && (er_sys(SYS_mkdirat, exp, (long)path, 0700, 0, 0, 0) == 0 || errno == EEXIST) &&
	    er_sys(SYS_fchownat, exp, (long)path, uid, -1, AT_SYMLINK_NOFOLLOW, 0) == 0)
		open_drop(exp, (unsigned long)uid);
	er_fds_leave();
	er_send(ER_MSG_SETUID, 0, (uint32_t)uid, 0);
}

#define SETID(name, params, args, uid)                                                            \
	ER_EXPORT int name params                                                                 \
	{                                                                                         \
		REAL_ENV(#name, int(*) params);                                                   \
		int saved = errno;                                                                \
		drop_prepare(uid);                                                                \
		errno = saved;                                                                    \
		return real args;                                                                 \
	}

SETID(setuid, (uid_t u), (u), (long)(int)u)
SETID(seteuid, (uid_t u), (u), (long)(int)u)
SETID(setreuid, (uid_t r, uid_t e), (r, e), (long)(int)e)
SETID(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s), (long)(int)e)
SETID(setfsuid, (uid_t u), (u), (long)(int)u)

/* ---- chroot, mounts, namespaces ----
 *
 * A process that chroots, mounts or enters another mount namespace keeps its instance (its
 * directories are held), but the programs it runs find the experiment by its name: where that name
 * no longer leads to it, they cannot be recorded, and run as without er (the loader would also
 * complain that the library, by its name, is missing). why: 1 a chroot, 2 a mount or namespace. */
static int is_held_exp(const char *path)
{
	struct stat st;
	return er_sys(SYS_stat, (long)path, (long)&st, 0, 0, 0, 0) == 0 && (uint64_t)st.st_dev == er_held[HELD_EXP].dev &&
	       (uint64_t)st.st_ino == er_held[HELD_EXP].ino;
}

/* reachable says whether a program this process runs finds the experiment (by its name, or through
 * er's root in /proc) and the library (by its path in LD_PRELOAD). */
static int reachable(void)
{
	char alt[sizeof er.expdir + 48];
	if (!is_held_exp(er.expdir) && !(er_by_er_root(alt, sizeof alt) && is_held_exp(alt)))
		return 0;
	return !er_lib_path[0] || er_sys(SYS_access, (long)er_lib_path, R_OK, 0, 0, 0, 0) == 0;
}

static void reach_check(int r, int why)
{
	int saved = errno;
	struct er_thread *t = &er_self;
	/* Sealed, it may not look (a system call): its descendants record nothing under its filter, and
	 * the programs it runs here may not find the library by its name. */
	if (r == 0 && er.expdir[0] && !in_env && !t->busy && t->level == 0 && er_held[HELD_EXP].ino && !er.ended &&
	    (er.sealed || !reachable())) {
		t->busy = ER_BUSY;
		er_env_clean();
		t->busy = 0;
		if (__atomic_load_n(&er.active, __ATOMIC_RELAXED))
			er_send(ER_MSG_UNREACHABLE, (uint32_t)why, 0, 0);
	}
	errno = saved;
}

ER_EXPORT int chroot(const char *path)
{
	REAL_ENV("chroot", int (*)(const char *));
	int r = real(path);
	reach_check(r, 1);
	return r;
}

ER_EXPORT int mount(const char *src, const char *dst, const char *type, unsigned long flags, const void *data)
{
	REAL_ENV("mount", int (*)(const char *, const char *, const char *, unsigned long, const void *));
	int r = real(src, dst, type, flags, data);
	reach_check(r, 2);
	return r;
}

ER_EXPORT int umount2(const char *dst, int flags)
{
	REAL_ENV("umount2", int (*)(const char *, int));
	int r = real(dst, flags);
	reach_check(r, 2);
	return r;
}

ER_EXPORT int umount(const char *dst)
{
	REAL_ENV("umount", int (*)(const char *));
	int r = real(dst);
	reach_check(r, 2);
	return r;
}

ER_EXPORT int unshare(int flags)
{
	REAL_ENV("unshare", int (*)(int));
	int r = real(flags);
	reach_check(r, 2);
	return r;
}

ER_EXPORT int setns(int fd, int type)
{
	REAL_ENV("setns", int (*)(int, int));
	int r = real(fd, type);
	reach_check(r, 2);
	return r;
}

/* ---- children the program cloned itself ----
 *
 * A child made by a fork or clone system call of the program's own (without CLONE_VM) runs no fork
 * handler. A page marked MADV_WIPEONFORK reads zero in such a child: its first record sees it and
 * starts the child's instance (er_clone_child). Where the kernel has no MADV_WIPEONFORK, the child
 * writes no new block (the library compares the pid once per block). */
static uint32_t mark_none = 1;
volatile uint32_t *er_mark = &mark_none;

void er_mark_init(void)
{
	void *p = (void *)er_sys(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((unsigned long)p > -4096UL)
		return;
	*(volatile uint32_t *)p = 1;
	if (er_sys(SYS_madvise, (long)p, 4096, MADV_WIPEONFORK, 0, 0, 0) != 0) {
		er_sys(SYS_munmap, (long)p, 4096, 0, 0, 0, 0);
		return;
	}
	er_mark = p;
}

void er_mark_set(void) { *er_mark = 1; }
