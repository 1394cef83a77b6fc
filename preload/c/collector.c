/* collector.c: the collector library's core: start-up, trace files written in blocks, call
 * stacks, load-object maps and notes, and the instance a fork child starts. The interposed
 * functions are in heap.c, sync.c, io.c, clock.c and control.c (signals, vfork). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "unwind.h"

struct er_state er ER_HIDDEN;
ER_TLS struct er_thread er_self ER_HIDDEN;

static const char *const file_names[SLOT_N] = {ER_NAME_HEAP, ER_NAME_SYNC, ER_NAME_IO, ER_NAME_CLOCK, ER_NAME_OMP, ER_NAME_JAVA, ER_NAME_STACKS};
static const uint32_t file_kinds[SLOT_N] = {ER_FILE_HEAP, ER_FILE_SYNC, ER_FILE_IO, ER_FILE_CLOCK, ER_FILE_OMP, ER_FILE_JAVA, ER_FILE_STACKS};

static uint64_t next_block[SLOT_N];     /* per file: the next block index to hand out */
static uint32_t next_stack_id = 1;      /* stack ids; 0 is the empty stack */
static pthread_key_t thread_key;
static int thread_key_ok;

/* er_sys is the system call n, as syscall(2) makes it (-1 and errno on failure), without glibc's
 * syscall, which seccomp.c interposes. */
long er_sys(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

void *er_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

uint64_t er_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long min_l(long a, long b) { return a < b ? a : b; }

static void *map_anon(size_t size)
{
	void *p = (void *)er_sys(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return (unsigned long)p > -4096UL ? NULL : p;
}

/* ---- blocks ---- */

/* A pool of partly filled blocks left by exited threads, for other threads to fill. */
#define POOL_N 64
static struct er_block pool[POOL_N];
static int pool_n;
static int pool_lock;

static void pool_acquire(void)
{
	while (__atomic_exchange_n(&pool_lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&pool_lock, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

static void pool_release(void) { __atomic_store_n(&pool_lock, 0, __ATOMIC_RELEASE); }

static void block_drop(struct er_block *b)
{
	char *base = b->base;
	b->base = NULL; /* first: a signal handler must never see a block being unmapped */
	b->off = 0;
	if (base) {
		er_block_unregister(b->reg, base);
		er_sys(SYS_munmap, (long)base, ER_BLOCK_SIZE, 0, 0, 0, 0);
	}
	b->reg = 0;
}

/* ---- data files ----
 *
 * The target may close every descriptor, or dup2 its own files over any number, at any time, and
 * the library must never write into a file of the target's. The library holds a descriptor of each
 * file, moved up near the descriptor limit, which the program's close, close_range, closefrom,
 * dup2 and dup3 leave alone (io.c): a daemon that closes everything and then drops its privileges
 * keeps being recorded. And before each block it checks that the descriptor still holds the file it
 * created (device and inode: the system calls themselves are not interposed); if it does not, the
 * number is forgotten (it may be the program's now) and the file opened again by its path. Each
 * file's header page stays mapped: what was lost is written there, with no new disk space. */
struct er_file {
	uint64_t dev, ino;                   /* the file created; 0: none */
	int fd;                              /* the descriptor held, or -1 */
	volatile struct er_file_header *hdr; /* its header page, mapped shared */
	char path[sizeof er.dir + 16];
};
static struct er_file files[SLOT_N] = {[0 ... SLOT_N - 1] = {.fd = -1}};

static void file_forget(struct er_file *f)
{
	if (f->hdr)
		er_sys(SYS_munmap, (long)f->hdr, ER_HEADER_SIZE, 0, 0, 0, 0);
	f->hdr = NULL;
	int fd = __atomic_exchange_n(&f->fd, -1, __ATOMIC_RELAXED);
	if (fd >= 0 && f->ino)
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	f->dev = f->ino = 0;
}

/* The program's soft descriptor limit while er_fd_lift has lifted it, 0 otherwise. */
static long fd_lifted;

/* er_fd_high moves fd out of the way of the program's own numbers and returns the new descriptor:
 * above the program's soft limit while it is lifted; else among the last 32 numbers below a limit
 * above ER_FD_ROOM (fd itself where none is free there). Under a limit of ER_FD_ROOM or less every
 * number is one the program may need: fd is closed, and -1 returned (EMFILE). */
int er_fd_high(int fd)
{
	struct rlimit rl;
	long base = 512, lifted = __atomic_load_n(&fd_lifted, __ATOMIC_RELAXED);
	if (er_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) == 0 && rl.rlim_cur != RLIM_INFINITY)
		base = lifted ? lifted : (long)rl.rlim_cur > ER_FD_ROOM ? (long)rl.rlim_cur - 32 : -1;
	int nfd = base < 0 ? -1 : (int)er_sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC, base, 0, 0, 0);
	if (nfd < 0 && base >= 0 && !lifted)
		return fd;
	er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (nfd < 0)
		errno = EMFILE;
	return nfd;
}

int er_fd_lift(void)
{
	struct rlimit rl;
	if (er_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	if (rl.rlim_max > rl.rlim_cur) {
		/* (HELD_N + SLOT_N descriptors held, and a few for a moment, all above the program's limit.) */
		struct rlimit up = {rl.rlim_max - rl.rlim_cur > 64 ? rl.rlim_cur + 64 : rl.rlim_max, rl.rlim_max};
		if (er_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&up, 0, 0, 0) == 0) {
			__atomic_store_n(&fd_lifted, (long)rl.rlim_cur, __ATOMIC_RELAXED);
			return 0;
		}
	}
	return rl.rlim_cur > ER_FD_ROOM ? 0 : -EMFILE;
}

void er_fd_unlift(void)
{
	struct rlimit rl;
	long lifted = __atomic_exchange_n(&fd_lifted, 0, __ATOMIC_RELAXED);
	if (lifted && er_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) == 0) {
		rl.rlim_cur = (rlim_t)lifted;
		er_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&rl, 0, 0, 0);
	}
}

void er_fd_limits(uint32_t *soft, uint32_t *hard)
{
	struct rlimit rl = {0, 0};
	er_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0);
	*soft = rl.rlim_cur > 0xffffffffu ? 0xffffffffu : (uint32_t)rl.rlim_cur;
	*hard = rl.rlim_max > 0xffffffffu ? 0xffffffffu : (uint32_t)rl.rlim_max;
}

/* is_file says whether fd holds the data file f. */
static int is_file(const struct er_file *f, int fd)
{
	struct stat st;
	return er_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && (uint64_t)st.st_dev == f->dev && (uint64_t)st.st_ino == f->ino;
}

/* file_fd returns the descriptor of the data file of slot file: the one held, or the file opened
 * again; -errno when it cannot be had, -ESTALE when its path now names another file. */
static int file_fd(int file)
{
	struct er_file *f = &files[file];
	if (!f->ino)
		return -ENOENT;
	int fd = __atomic_load_n(&f->fd, __ATOMIC_ACQUIRE);
	if (fd >= 0) {
		if (is_file(f, fd))
			return fd;
		/* Closed, or replaced by the program with a system call: the number is not ours. */
		__atomic_compare_exchange_n(&f->fd, &fd, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	}
	/* In the instance's directory, held from its start (a chroot or a new mount namespace since does
	 * not matter), else by its path. */
	int dir = er_held_fd(HELD_INST);
	fd = dir >= 0 ? (int)er_sys(SYS_openat, dir, (long)file_names[file], O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0, 0, 0)
		      : (int)er_sys(SYS_openat, AT_FDCWD, (long)f->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0, 0, 0);
	if (fd < 0)
		return -errno;
	if (!is_file(f, fd)) {
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
		return -ESTALE;
	}
	if ((fd = er_fd_high(fd)) < 0)
		return -EMFILE;
	int none = -1;
	if (!__atomic_compare_exchange_n(&f->fd, &none, fd, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0); /* another thread got there first */
		fd = none;
	}
	return fd;
}

/* fd_slots lists where the library keeps its descriptors: the data files' and the others it holds
 * (life.c). */
#define FD_SLOTS (SLOT_N + HELD_N)
static int fd_slots(int *slots[FD_SLOTS])
{
	int n = 0;
	for (int s = 0; s < SLOT_N; s++)
		slots[n++] = &files[s].fd;
	for (int h = 0; h < HELD_N; h++)
		slots[n++] = &er_held[h].fd;
	return n;
}

int er_fd_mine(int fd)
{
	if (fd < 0)
		return 0;
	int *slots[FD_SLOTS], n = fd_slots(slots);
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(slots[i], __ATOMIC_RELAXED) == fd)
			return 1;
	return 0;
}

int er_close_range(unsigned first, unsigned last, int flags)
{
	/* The held descriptors in [first, last], in order. */
	int held[FD_SLOTS], n = 0, *slots[FD_SLOTS], ns = fd_slots(slots);
	for (int s = 0; s < ns; s++) {
		int fd = __atomic_load_n(slots[s], __ATOMIC_RELAXED);
		if (fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last)
			held[n++] = fd;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && held[j - 1] > held[j]; j--) {
			int x = held[j];
			held[j] = held[j - 1];
			held[j - 1] = x;
		}
	unsigned lo = first;
	for (int i = 0; i <= n; i++) {
		unsigned hi = i < n ? (unsigned)held[i] - 1 : last;
		if (i < n && (unsigned)held[i] == lo) {
			lo = (unsigned)held[i] + 1;
			continue;
		}
		if (lo <= hi && er_sys(SYS_close_range, lo, hi, flags, 0, 0, 0) != 0)
			return -1;
		if (i < n)
			lo = (unsigned)held[i] + 1;
	}
	return 0;
}

void er_fd_move(int fd)
{
	if (__atomic_load_n(&er.sealed, __ATOMIC_ACQUIRE))
		return; /* (no system call; it gave its descriptors up) */
	int *slots[FD_SLOTS], n = fd_slots(slots);
	for (int s = 0; s < n; s++) {
		int cur = fd;
		if (fd >= 0 && __atomic_load_n(slots[s], __ATOMIC_RELAXED) == fd) {
			int nfd = (int)er_sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC, fd + 1, 0, 0, 0);
			if (nfd < 0)
				nfd = (int)er_sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3, 0, 0, 0);
			/* The old number is the program's to reuse now (its dup2 closes it). */
			__atomic_compare_exchange_n(slots[s], &cur, nfd, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
		}
	}
}

/* er_ended_files makes the header pages of the data files anonymous: a thread that counts a lost
 * record there writes into memory of its own. */
void er_ended_files(void)
{
	for (int s = 0; s < SLOT_N; s++) {
		volatile struct er_file_header *h = files[s].hdr;
		if (h)
			er_sys(SYS_mmap, (long)h, ER_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
}

/* er_close_files closes the data files (no thread uses them: er_fds_end). */
void er_close_files(void)
{
	for (int s = 0; s < SLOT_N; s++) {
		struct er_file *f = &files[s];
		int fd = __atomic_exchange_n(&f->fd, -1, __ATOMIC_ACQ_REL);
		if (fd >= 0 && f->ino && is_file(f, fd))
			er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
		f->ino = 0;
	}
}

/* er_stop stops all recording of this instance for good, the first time it is called: err says
 * why (ENOSPC: the disk is full). Every data file's header says so, and er is told. The target
 * runs on. Async-signal-safe. */
static void er_stop(int err)
{
	uint64_t now = er_now();
	if (er_halt(err ? err : EIO, now))
		er_send(ER_MSG_STOPPED, (uint32_t)er.stop_errno, 0, now);
}

/* er_halt is er_stop without telling er: 1 when it stopped the recording, 0 when it was stopped. */
int er_halt(int why, uint64_t now)
{
	int zero = 0;
	if (__atomic_load_n(&er.ended, __ATOMIC_ACQUIRE))
		return 0; /* the files are no longer the library's */
	if (!__atomic_compare_exchange_n(&er.stop_errno, &zero, why, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&er.stopped, 1, __ATOMIC_RELEASE);
	for (int s = 0; s < SLOT_N; s++) {
		volatile struct er_file_header *h = files[s].hdr;
		if (h) {
			h->stop_ns = now;
			h->stop_errno = (uint32_t)er.stop_errno;
		}
	}
	return 1;
}


/* grow makes the bytes [off, off+len) of fd real disk space (never a hole: a store into a hole of
 * a shared mapping on a full disk is a SIGBUS). 0, or -errno. */
static int grow(int fd, long off, long len)
{
	/* Past the process's file size limit (RLIMIT_FSIZE, which the program may lower), fallocate and
	 * pwrite send SIGXFSZ, whose default action ends the program: stop before. */
	struct rlimit rl;
	if (er_sys(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, (long)&rl, 0, 0) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (uint64_t)(off + len) > (uint64_t)rl.rlim_cur)
		return -EFBIG;
	if (er_sys(SYS_fallocate, fd, 0, off, len, 0, 0) == 0)
		return 0;
	int err = errno;
	if (err != EOPNOTSUPP && err != ENOSYS)
		return -err;
	/* A file system without fallocate: write zeros. */
	static const char zeros[4096];
	for (long done = 0; done < len;) {
		long w = er_sys(SYS_pwrite64, fd, (long)zeros, min_l(len - done, (long)sizeof zeros), off + done, 0, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		done += w;
	}
	return 0;
}

/* block_lost counts a record of file that could not be written. */
static void block_lost(int file)
{
	volatile struct er_file_header *h = files[file].hdr;
	if (h)
		__atomic_fetch_add(&h->lost, 1, __ATOMIC_RELAXED);
}

/* block_new gives slot a fresh block of its file: one from the pool, or a new one at the end of
 * the file. Threads extending the file at once each grow their own block's range. 0 when there is
 * no block: after transient errors (no descriptor or memory left) the caller counts its record
 * lost; a file that cannot
 * grow (a full disk) or was replaced stops the recording. */
static int block_new(struct er_thread *t, int slot)
{
	struct er_block *b = &t->lv[t->level].blk[slot];
	int file = slot;
	block_drop(b);
	/* A child made without glibc's fork (a fork or clone system call of its own) has not started
	 * an instance: the files are its parent's. It writes no new block (the check costs a system
	 * call per block). */
	if ((int)er_sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != er.pid)
		return 0;
	if (__atomic_load_n(&er.stopped, __ATOMIC_RELAXED) || __atomic_load_n(&er.ended, __ATOMIC_RELAXED))
		return 0;
	if (t->level == 0) { /* a signal handler must not wait for the lock the code it interrupted holds */
		pool_acquire();
		for (int i = 0; i < pool_n; i++) {
			if ((int)pool[i].file == file) {
				*b = pool[i];
				pool[i] = pool[--pool_n];
				pool_release();
				return 1;
			}
		}
		pool_release();
	}
	int saved = errno;
	if (!er_fds_enter()) /* the instance has ended */
		return 0;
	int fd = file_fd(file);
	if (fd < 0) {
		/* No descriptor or memory left (EMFILE, ENFILE, ENOMEM, EINTR) is transient: this record is
		 * lost. Anything else (the file replaced or removed, no permission) will not get better. */
		if (fd != -EMFILE && fd != -ENFILE && fd != -ENOMEM && fd != -EINTR)
			er_stop(-fd);
		er_fds_leave();
		errno = saved;
		return 0;
	}
	uint64_t idx = __atomic_fetch_add(&next_block[file], 1, __ATOMIC_RELAXED);
	long off = ER_HEADER_SIZE + (long)idx * ER_BLOCK_SIZE;
	int err = grow(fd, off, ER_BLOCK_SIZE);
	void *p = MAP_FAILED;
	if (err == 0)
		p = (void *)er_sys(SYS_mmap, 0, ER_BLOCK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);
	er_fds_leave();
	if (err != 0) {
		er_stop(-err);
		errno = saved;
		return 0;
	}
	if ((unsigned long)p > -4096UL) {
		errno = saved;
		return 0;
	}
	errno = saved;
	/* Registered, so that an instance that ends makes it anonymous; where it ended meanwhile (it may
	 * not have seen this block), not used. */
	uint32_t reg = (uint32_t)er_block_register(p);
	if (reg == 0 || __atomic_load_n(&er.ended, __ATOMIC_SEQ_CST)) {
		er_block_unregister(reg, p);
		er_sys(SYS_munmap, (long)p, ER_BLOCK_SIZE, 0, 0, 0, 0);
		return 0;
	}
	b->base = p;
	b->off = 0;
	b->file = (uint32_t)file;
	b->reg = reg;
	return 1;
}

void *er_rec_begin(struct er_thread *t, int slot, size_t size)
{
	if (t->level >= ER_LEVELS || size > ER_BLOCK_SIZE || size % 8 != 0 || __atomic_load_n(&er.ended, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&er.sealed, __ATOMIC_RELAXED))
		return NULL;
	if (er_child_unstarted()) {
		/* A process the program cloned itself: the blocks are its parent's. */
		er_clone_child();
		if (!er.active || !(er.want & 1 << slot))
			return NULL;
	}
	struct er_block *b = &t->lv[t->level].blk[slot];
	if (!b->base || b->off + size > ER_BLOCK_SIZE) {
		if (!block_new(t, slot)) {
			if (!__atomic_load_n(&er.stopped, __ATOMIC_RELAXED))
				block_lost(slot);
			return NULL;
		}
	}
	void *p = b->base + b->off;
	b->off += (uint32_t)size;
	return p;
}

void er_rec_commit(struct er_thread *t, void *rec, size_t size, int kind, int aux, uint64_t time)
{
	struct er_rec *h = rec;
	h->time = time;
	/* Not once er has stopped recording (-t, -L), ended the collection, or is gone: the record
	 * stays unwritten (its first word, written last, is zero: the end of the block's records), so
	 * that every record published was timed before the stop. */
	er_watch(time);
	uint32_t stop = er_ctl_stop();
	if (__atomic_load_n(&er.ended, __ATOMIC_RELAXED) || stop != 0) {
		if (stop == ER_STATE_STOP_ENDED)
			er_end();
		return;
	}
	uint64_t w = (uint64_t)(size / 8) | (uint64_t)(kind & 0xff) << 16 | (uint64_t)(aux & 0xff) << 24 |
		     (uint64_t)(uint32_t)t->tid << 32;
	__atomic_store_n((uint64_t *)rec, w, __ATOMIC_RELEASE);
}

/* ---- threads ---- */

/* levels_drop unmaps the blocks and stack caches of every level of t. */
static void levels_drop(struct er_thread *t)
{
	for (int l = 0; l < ER_LEVELS; l++) {
		for (int s = 0; s < SLOT_N; s++)
			block_drop(&t->lv[l].blk[s]);
		void *c = t->lv[l].cache;
		t->lv[l].cache = NULL;
		if (c)
			er_sys(SYS_munmap, (long)c, sizeof(struct er_stack_cache), 0, 0, 0, 0);
	}
}

static void thread_exit(void *arg)
{
	struct er_thread *t = arg;
	if (t != &er_self || er.sealed)
		return;
	t->busy = ER_BUSY;
	int timed = t->has_timer;
	er_clock_thread_stop(t);
	if (timed)
		er_clock_tail(t);
	pool_acquire();
	for (int l = 0; l < ER_LEVELS; l++) {
		for (int s = 0; s < SLOT_N; s++) {
			struct er_block *b = &t->lv[l].blk[s];
			if (b->base && b->off + 256 <= ER_BLOCK_SIZE && pool_n < POOL_N) {
				pool[pool_n++] = *b;
				b->base = NULL;
			}
		}
	}
	pool_release();
	levels_drop(t);
	t->busy = 0;
}

uint64_t er_signal_enter(struct er_thread *t)
{
	uint64_t saved = (uint64_t)(uint32_t)t->busy | (uint64_t)(uint32_t)t->level << 32;
	if (t->busy == ER_HOLD || t->level + 1 >= ER_DEPTH)
		return saved;
	t->level++;
	t->entered[t->level] = saved;
	t->busy = t->level < ER_LEVELS ? 0 : ER_BUSY; /* too deep: counted, not recorded */
	return saved;
}

void er_signal_unwound(void)
{
	struct er_thread *t = &er_self;
	if (t->level <= 0 || t->busy == ER_HOLD)
		return;
	uint64_t saved = t->entered[t->level];
	t->level = (int32_t)(saved >> 32);
	/* The code jumped to is the program's, not the collector's (the handler may have interrupted
	 * a traced call, which it abandons): its calls are recorded. */
	t->busy = (int32_t)(uint32_t)saved == ER_HOLD ? ER_HOLD : 0;
}

void er_signal_leave(struct er_thread *t, uint64_t saved)
{
	t->busy = (int32_t)(uint32_t)saved;
	t->level = (int32_t)(saved >> 32);
}

struct er_thread *er_thread(void)
{
	struct er_thread *t = &er_self;
	if (__builtin_expect(t->tid == 0, 0))
		t->tid = (int32_t)er_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	if (__builtin_expect(!t->registered, 0) && t->level == 0 && thread_key_ok) {
		t->registered = 1;
		int b = t->busy;
		t->busy = ER_BUSY;
		pthread_setspecific(thread_key, t);
		t->busy = b;
	}
	return t;
}

/* ---- stacks ---- */

static uint64_t stack_hash(const uint64_t *pcs, int n)
{
	uint64_t h = 0x84222325cbf29ce4ULL ^ (uint64_t)n;
	for (int i = 0; i < n; i++) {
		h = (h ^ pcs[i]) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h | 1; /* 0 marks an empty cache entry */
}

/* stack_cache returns the thread's cache of stack ids at its signal level, mapped on first use;
 * NULL when memory is short. */
static struct er_stack_cache *stack_cache(struct er_thread *t)
{
	struct er_level *l = &t->lv[t->level];
	if (!l->cache)
		l->cache = map_anon(sizeof(struct er_stack_cache));
	return l->cache;
}

static unsigned cache_slot(uint64_t h) { return (unsigned)(h >> 20) & (ER_STACK_CACHE - 1); }

/* stack_known returns the id of the stack pcs[:n] if this thread recorded it, else 0. */
static uint32_t stack_known(struct er_thread *t, const uint64_t *pcs, int n)
{
	uint64_t h = stack_hash(pcs, n);
	struct er_stack_cache *c = stack_cache(t);
	return c && c->hash[cache_slot(h)] == h ? c->id[cache_slot(h)] : 0;
}

/* stack_new writes the stack pcs[:n] with a new id and returns the id; 0 when it cannot. */
static uint32_t stack_new(struct er_thread *t, const uint64_t *pcs, int n)
{
	uint32_t id = __atomic_fetch_add(&next_stack_id, 1, __ATOMIC_RELAXED);
	size_t size = sizeof(struct er_rec_stack) + 8 * (size_t)n;
	struct er_rec_stack *r = er_rec_begin(t, SLOT_STACKS, size);
	if (!r)
		return 0;
	r->id = id;
	r->n = (uint32_t)n;
	memcpy(r + 1, pcs, 8 * (size_t)n);
	er_rec_commit(t, r, size, ER_REC_STACK, 0, er_now());
	uint64_t h = stack_hash(pcs, n);
	struct er_stack_cache *c = stack_cache(t);
	if (c) {
		c->hash[cache_slot(h)] = h;
		c->id[cache_slot(h)] = id;
	}
	return id;
}

static uint32_t stack_id(struct er_thread *t, const uint64_t *pcs, int n)
{
	uint32_t id = stack_known(t, pcs, n);
	return id ? id : stack_new(t, pcs, n);
}

/* Objects loaded and unloaded so far, as the dynamic linker counts them. */
static unsigned long long seen_adds, seen_subs;

static int gen_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *g = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		g[0] = info->dlpi_adds;
		g[1] = info->dlpi_subs;
	}
	return 1;
}

/* modules_changed brings the unwinder's module table and the recorded mappings up to date when
 * objects were loaded or unloaded (dlopen, dlclose) since it last looked, and says whether they
 * were. Not for signal handlers: dl_iterate_phdr takes the loader's lock. */
static int modules_changed(void)
{
	unsigned long long g[2] = {seen_adds, seen_subs};
	dl_iterate_phdr(gen_cb, g);
	if (g[0] == __atomic_load_n(&seen_adds, __ATOMIC_RELAXED) && g[1] == __atomic_load_n(&seen_subs, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&seen_adds, g[0], __ATOMIC_RELAXED);
	__atomic_store_n(&seen_subs, g[1], __ATOMIC_RELAXED);
	er_unwind_refresh();
	er_maps_update();
	return 1;
}

/* drop_self removes the library's own frames (the interposers, the thread start routine)
 * from pcs[from:n] and returns the new length. */
static int drop_self(uint64_t *pcs, int from, int n)
{
	int k = from;
	for (int i = from; i < n; i++)
		if (pcs[i] < er.self_lo || pcs[i] >= er.self_hi)
			pcs[k++] = pcs[i];
	return k;
}

/* unwind_here fills pcs with leaf and the callers of the library's entry point, and returns
 * their number. */
static __attribute__((noinline)) int unwind_here(uint64_t *pcs, uintptr_t leaf)
{
	int n = er_backtrace(pcs + 1, ER_MAX_FRAMES, 0);
	pcs[0] = leaf;
	return drop_self(pcs, 1, (n < 0 ? 0 : n) + 1);
}

uint32_t er_stack_here(struct er_thread *t, uintptr_t leaf)
{
	uint64_t pcs[ER_MAX_FRAMES + 1];
	int n = unwind_here(pcs, leaf);
	uint32_t id = stack_known(t, pcs, n);
	if (id)
		return id;
	/* A stack this thread has not seen: code that a dlopen brought in, perhaps. The unwinder
	 * must know the object to go through it, and the experiment must name it. (Not in a signal
	 * handler: the code it interrupted may hold the dynamic linker's lock.) */
	if (t->level == 0 && modules_changed()) {
		n = unwind_here(pcs, leaf);
		if ((id = stack_known(t, pcs, n)) != 0)
			return id;
	}
	return stack_new(t, pcs, n);
}

uint32_t er_stack_context(struct er_thread *t, const void *uc)
{
	uint64_t pcs[ER_MAX_FRAMES];
	int n = er_unwind_context(uc, pcs, ER_MAX_FRAMES);
	if (n <= 0)
		return 0;
	return stack_id(t, pcs, drop_self(pcs, 1, n));
}

/* ---- notes and maps ---- */

void er_note(const char *key, const char *value)
{
	struct er_thread *t = er_thread();
	size_t kl = strlen(key), vl = strlen(value);
	size_t size = (sizeof(struct er_rec) + kl + 1 + vl + 7) & ~(size_t)7;
	char *r = er_rec_begin(t, SLOT_STACKS, size);
	if (!r)
		return;
	char *p = r + sizeof(struct er_rec);
	memcpy(p, key, kl);
	p[kl] = '=';
	memcpy(p + kl + 1, value, vl);
	er_rec_commit(t, r, size, ER_REC_NOTE, 0, er_now());
}

#define MAPS_N 1024
/* The executable segments recorded so far, with their paths (kept so that a fork child can record
 * them again in its own files without asking the dynamic linker, whose lock another thread of the
 * parent may have held at the fork). */
static struct known_map {
	uint64_t start, end, offset;
	uint32_t path_off, path_len;
	int seen;
} known[MAPS_N];
static int known_n;
static int maps_lock;
static char map_paths[1 << 18];
static uint32_t map_paths_used;

static void map_record(uint64_t start, uint64_t end, uint64_t offset, const char *path, size_t pl, int aux)
{
	struct er_thread *t = er_thread();
	size_t size = (sizeof(struct er_rec_map) + pl + 7) & ~(size_t)7;
	struct er_rec_map *r = er_rec_begin(t, SLOT_STACKS, size);
	if (!r)
		return;
	r->start = start;
	r->end = end;
	r->offset = offset;
	r->path_len = (uint32_t)pl;
	memcpy(r + 1, path, pl);
	er_rec_commit(t, r, size, ER_REC_MAP, aux, er_now());
}

/* keep_path stores path for a new known map: the previous entry's copy when it is the same. */
static void keep_path(struct known_map *m, const char *path, size_t pl)
{
	if (known_n > 0) {
		const struct known_map *p = &known[known_n - 1];
		if (p->path_len == pl && memcmp(map_paths + p->path_off, path, pl) == 0) {
			m->path_off = p->path_off;
			m->path_len = p->path_len;
			return;
		}
	}
	if (map_paths_used + pl > sizeof map_paths)
		return; /* full: a fork child records this one without its path */
	memcpy(map_paths + map_paths_used, path, pl);
	m->path_off = map_paths_used;
	m->path_len = (uint32_t)pl;
	map_paths_used += (uint32_t)pl;
}

static int maps_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	int initial = data != NULL;
	char path[4096];
	const char *name = info->dlpi_name;
	if (!name || !*name) {
		long n = er_sys(SYS_readlink, (long)"/proc/self/exe", (long)path, sizeof path - 1, 0, 0, 0);
		if (n <= 0)
			return 0;
		path[n] = 0;
	} else if (strncmp(name, "linux-vdso", 10) == 0 || strncmp(name, "linux-gate", 10) == 0) {
		strcpy(path, "[vdso]");
	} else if (!realpath(name, path)) {
		strncpy(path, name, sizeof path - 1);
		path[sizeof path - 1] = 0;
	}
	size_t pl = strlen(path);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uint64_t start = (info->dlpi_addr + ph->p_vaddr) & ~4095ULL;
		uint64_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~4095ULL;
		uint64_t offset = ph->p_offset & ~4095ULL;
		int found = 0;
		for (int k = 0; k < known_n; k++) {
			if (known[k].start == start && known[k].end == end) {
				known[k].seen = 1;
				found = 1;
			}
		}
		if (found)
			continue;
		if (known_n < MAPS_N) {
			struct known_map m = {start, end, offset, 0, 0, 1};
			keep_path(&m, path, pl);
			known[known_n++] = m;
		}
		map_record(start, end, offset, path, pl, initial ? ER_MAP_INITIAL : ER_MAP_MAPPED);
	}
	return 0;
}

static int maps_updates;

/* er_maps_update records the executable segments of the objects loaded now that were not
 * recorded yet, and the unmapping of those that are gone. */
void er_maps_update(void)
{
	if (!er.active || !(er.want & 1 << SLOT_STACKS))
		return;
	struct er_thread *t = er_thread();
	int b = t->busy;
	t->busy = 1;
	while (__atomic_exchange_n(&maps_lock, 1, __ATOMIC_ACQUIRE))
		;
	for (int k = 0; k < known_n; k++)
		known[k].seen = 0;
	dl_iterate_phdr(maps_cb, maps_updates++ == 0 ? &maps_updates : NULL);
	for (int k = 0; k < known_n;) {
		if (!known[k].seen) {
			map_record(known[k].start, known[k].end, 0, "", 0, ER_MAP_UNMAPPED);
			known[k] = known[--known_n];
			continue;
		}
		k++;
	}
	__atomic_store_n(&maps_lock, 0, __ATOMIC_RELEASE);
	t->busy = b;
}

static int self_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t base = (uintptr_t)data;
	if (info->dlpi_addr != base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			er.self_lo = base + ph->p_vaddr;
			er.self_hi = base + ph->p_vaddr + ph->p_memsz;
		}
	}
	return 1;
}

/* ---- start-up ---- */

/* fmt_u64 writes v in decimal at p and returns its length (async-signal-safe). */
static int fmt_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (int i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* A text buffer for the info file and paths, filled without allocating. */
struct text {
	char b[4608];
	size_t n;
};

static void put(struct text *x, const char *s, size_t l)
{
	if (x->n + l >= sizeof x->b)
		l = sizeof x->b - 1 - x->n;
	memcpy(x->b + x->n, s, l);
	x->n += l;
	x->b[x->n] = 0;
}

static void puts_(struct text *x, const char *s) { put(x, s, strlen(s)); }

static void put_u64(struct text *x, uint64_t v)
{
	char d[24];
	put(x, d, (size_t)fmt_u64(d, v));
}

uint64_t er_parse_u64(const char *s, int *ok)
{
	uint64_t v = 0;
	*ok = s && *s;
	for (; s && *s; s++) {
		if (*s < '0' || *s > '9') {
			*ok = 0;
			return 0;
		}
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

static int env_flag(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && strncmp(p, word, n) == 0)
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

/* sys_openat opens name in the directory held as h (held), else path (AT_FDCWD). */
static int sys_openat(int h, const char *name, const char *path, int flags, int mode)
{
	int dir = er_held_fd(h);
	return (int)er_sys(SYS_openat, dir >= 0 ? dir : AT_FDCWD, (long)(dir >= 0 ? name : path), flags, mode, 0, 0);
}

static void sys_close(int fd) { er_sys(SYS_close, fd, 0, 0, 0, 0, 0); }

static int write_all(int fd, const char *b, size_t n)
{
	while (n > 0) {
		long w = er_sys(SYS_write, fd, (long)b, (long)n, 0, 0, 0);
		__atomic_add_fetch(&er_own_writes, 1, __ATOMIC_RELAXED);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* open_file creates the data file of slot with its header, keeps the header page mapped and holds
 * the descriptor; 0, or -errno. */
static int open_file(int slot)
{
	struct er_file *f = &files[slot];
	struct text path = {.n = 0};
	puts_(&path, er.dir);
	puts_(&path, "/");
	puts_(&path, file_names[slot]);
	if (path.n >= sizeof f->path)
		return -ENAMETOOLONG;
	int fd = sys_openat(HELD_INST, file_names[slot], path.b, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	struct er_file_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, ER_MAGIC, 8);
	h.version = ER_VERSION;
	h.kind = file_kinds[slot];
	h.block_size = ER_BLOCK_SIZE;
	h.pid = (uint32_t)er.pid;
	h.param = slot == SLOT_CLOCK ? er.clock_interval_ns : slot == SLOT_SYNC ? er.sync_threshold_ns : 0;
	h.start_ns = er.start_ns;
	struct stat st;
	void *p = MAP_FAILED;
	int err = grow(fd, 0, ER_HEADER_SIZE);
	if (err == 0 && er_sys(SYS_pwrite64, fd, (long)&h, sizeof h, 0, 0, 0) != (long)sizeof h)
		err = -(errno ? errno : EIO);
	if (err == 0 && er_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0)
		err = -errno;
	if (err == 0) {
		p = (void *)er_sys(SYS_mmap, 0, ER_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if ((unsigned long)p > -4096UL)
			err = -ENOMEM;
	}
	if (err != 0) {
		sys_close(fd);
		return err;
	}
	if ((fd = er_fd_high(fd)) < 0) {
		er_sys(SYS_munmap, (long)p, ER_HEADER_SIZE, 0, 0, 0, 0);
		return -EMFILE;
	}
	memcpy(f->path, path.b, path.n + 1);
	f->dev = (uint64_t)st.st_dev;
	f->ino = (uint64_t)st.st_ino;
	f->hdr = p;
	__atomic_store_n(&f->fd, fd, __ATOMIC_RELEASE);
	return 0;
}

/* proc_dir creates ER_EXPDIR/.proc if it is missing. */
static void proc_dir(void)
{
	struct text x = {.n = 0};
	puts_(&x, er.expdir);
	puts_(&x, "/.proc");
	int exp = er_held_fd(HELD_EXP);
	/* EEXIST is fine; other errors show below */
	er_sys(SYS_mkdirat, exp >= 0 ? exp : AT_FDCWD, (long)(exp >= 0 ? ".proc" : x.b), 0755, 0, 0, 0);
}

/* claim_founder creates ER_EXPDIR/.proc/founder; 1 when this instance created it. */
static int claim_founder(void)
{
	struct text x = {.n = 0};
	proc_dir();
	puts_(&x, er.expdir);
	puts_(&x, "/.proc/founder");
	int fd = sys_openat(HELD_EXP, ".proc/founder", x.b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return 0;
	x.n = 0;
	puts_(&x, "pid=");
	put_u64(&x, (uint64_t)er.pid);
	puts_(&x, "\nstart_ns=");
	put_u64(&x, er.start_ns);
	puts_(&x, "\n");
	write_all(fd, x.b, x.n);
	sys_close(fd);
	return 1;
}

static const char *const how_names[] = {"", "founder", "fork", "exec"};

/* instance_dir creates this instance's directory, .proc/<pid>.<start_ns>, in the experiment
 * directory held from the start (a chroot or a new mount namespace since does not matter), and holds
 * it; where the process's privileges were dropped, in the directory prepared for its user,
 * .proc/u<uid>/. 0, or -errno. */
static int instance_dir(void)
{
	struct text name = {.n = 0}, rel = {.n = 0}, x = {.n = 0};
	put_u64(&name, (uint64_t)er.pid);
	puts_(&name, ".");
	put_u64(&name, er.start_ns);
	puts_(&rel, ".proc/");
	puts_(&rel, name.b);
	puts_(&x, er.expdir);
	puts_(&x, "/.proc/");
	proc_dir();
	int exp = er_held_fd(HELD_EXP), at = exp >= 0 ? exp : AT_FDCWD;
	struct text abs = x;
	puts_(&abs, name.b);
	const char *rn = exp >= 0 ? rel.b : abs.b;
	long r = er_sys(SYS_mkdirat, at, (long)rn, 0755, 0, 0, 0);
	int drop;
	struct stat st;
	if (r != 0 && (errno == EACCES || errno == EPERM) && (drop = er_held_fd(HELD_DROP)) >= 0 &&
	    er_sys(SYS_fstat, drop, (long)&st, 0, 0, 0, 0) == 0) {
		at = drop;
		rn = name.b;
		r = er_sys(SYS_mkdirat, at, (long)rn, 0755, 0, 0, 0);
		puts_(&x, "u");
		put_u64(&x, (uint64_t)st.st_uid);
		puts_(&x, "/");
	}
	if (r != 0)
		return -errno;
	puts_(&x, name.b);
	if (x.n >= sizeof er.dir)
		return -ENAMETOOLONG;
	memcpy(er.dir, x.b, x.n + 1);
	int fd = (int)er_sys(SYS_openat, at, (long)rn, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return -errno;
	er_held_set(HELD_INST, fd);
	return 0;
}

/* dyn_wanted: the instance records the program's generated functions (ER_TRACE "dyn"), which need the
 * stacks file even where no other file is written. A fork child inherits it. */
static int dyn_wanted;

/* instance_begin creates this instance's directory, its info file and its data files (the slots
 * of er.want that can be opened: er.want is trimmed to them). Raw system calls only: a fork child
 * runs it. 0, or -errno. */
static int instance_begin(void)
{
	int e = instance_dir();
	if (e != 0)
		return e;
	struct text x = {.n = 0};
	puts_(&x, "pid=");
	put_u64(&x, (uint64_t)er.pid);
	puts_(&x, "\nppid=");
	put_u64(&x, (uint64_t)er.ppid);
	puts_(&x, "\nstart_ns=");
	put_u64(&x, er.start_ns);
	puts_(&x, "\nhow=");
	puts_(&x, how_names[er.how]);
	puts_(&x, "\nparent_start_ns=");
	put_u64(&x, er.parent_start_ns);
	puts_(&x, "\nexe=");
	char exe[4096];
	long n = er_sys(SYS_readlink, (long)"/proc/self/exe", (long)exe, sizeof exe - 1, 0, 0, 0);
	put(&x, exe, n > 0 ? (size_t)n : 0);
	puts_(&x, "\n");
	struct text path = {.n = 0};
	puts_(&path, er.dir);
	puts_(&path, "/info");
	int fd = sys_openat(HELD_INST, "info", path.b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	int bad = write_all(fd, x.b, x.n);
	int werr = errno;
	sys_close(fd);
	if (bad)
		return -(werr ? werr : EIO);
	er_seccomp_note();

	for (int s = 0; s < SLOT_N; s++)
		file_forget(&files[s]);
	/* The stacks file first: the other files' records refer to it. A file that cannot be created
	 * (a full disk) stops the recording of this instance, and er is told. */
	int err = 0;
	if (((er.want & ~(1 << SLOT_STACKS)) || dyn_wanted) && (err = open_file(SLOT_STACKS)) < 0)
		er.want = 0;
	for (int s = 0; s < SLOT_N; s++) {
		int e;
		if (s != SLOT_STACKS && (er.want & 1 << s) && (e = open_file(s)) < 0) {
			er.want &= ~(1 << s);
			err = err ? err : e;
		}
	}
	if (er.want == (1 << SLOT_STACKS) && !dyn_wanted)
		er.want = 0; /* no data file: no stacks either (unless they hold generated functions) */
	if (err)
		er_stop(-err);
	return 0;
}

/* The environment variable ER_PARENT_START_NS tells an exec'd image the start_ns of the instance
 * that exec'd it. The library sets it once (20 digits) and then rewrites the digits in place, so
 * that a fork child, which must not allocate, can update it. */
static char *env_parent;

static void env_parent_set(uint64_t v)
{
	char *p = __atomic_load_n(&env_parent, __ATOMIC_RELAXED);
	if (!p)
		return;
	for (int i = 19; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
}

void er_env_parent_forget(void) { __atomic_store_n(&env_parent, NULL, __ATOMIC_RELAXED); }

static void env_parent_init(void)
{
	if (setenv("ER_PARENT_START_NS", "00000000000000000000", 1) != 0)
		return;
	char *v = getenv("ER_PARENT_START_NS");
	if (v && strlen(v) == 20)
		env_parent = v;
	env_parent_set(er.start_ns);
}

static void note_threshold(void)
{
	if (!er.sync)
		return;
	char buf[32];
	buf[fmt_u64(buf, er.sync_threshold_ns)] = 0;
	er_note("sync_threshold_ns", buf);
}

/* ---- fork ---- */

/* The forking thread marks itself busy from fork's prepare handler to its parent or child
 * handler: calls that other fork handlers make meanwhile are not recorded (in the child they
 * would go to the parent's blocks). It also holds the pool and maps locks across the fork when it
 * can take them soon, so that the child finds them consistent. */
static ER_TLS int fork_held, fork_busy;

static int lock_try(int *l)
{
	for (int i = 0; i < (1 << 20); i++) {
		if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return 1;
		__builtin_ia32_pause();
	}
	return 0;
}

static void fork_prepare(void)
{
	fork_busy = er_self.busy;
	er_self.busy = ER_HOLD;
	fork_held = 0;
	if (!er.active)
		return;
	if (lock_try(&maps_lock))
		fork_held |= 1;
	if (lock_try(&pool_lock))
		fork_held |= 2;
}

static void fork_parent(void)
{
	if (fork_held & 2)
		pool_release();
	if (fork_held & 1)
		__atomic_store_n(&maps_lock, 0, __ATOMIC_RELEASE);
	fork_held = 0;
	er_self.busy = fork_busy;
}

static void fork_child(void)
{
	er_fork_child();
	fork_held = 0;
	er_self.busy = fork_busy;
}

/* child_start runs in a new child process, as its only thread: a fork child (fork's child handler,
 * or after _Fork), or a process the program cloned itself (raw), found at its first record, where a
 * record of the parent's may still be in progress in this thread (a clone system call in a signal
 * handler). The parent's blocks are the parent's: they are forgotten, never written. With
 * ER_FOLLOW=1 the child starts an instance of its own: new start time, directory and files, fresh
 * stack ids; the unwinder's tables stay valid (same address space). Not where er has ended the
 * collection or is gone: the child then records nothing and creates nothing. Async-signal-safe:
 * raw system calls, no allocation, no lock another thread may have held. */
/* child_passive leaves a child that is not recorded alone: it gives the program its signals back
 * and holds nothing of the experiment's (the descriptors and the control page its parent held). */
static void child_passive(void)
{
	er.active = 0;
	er_signals_release();
	for (int h = 0; h < HELD_N; h++)
		er_held_close(h);
	er_ctl_forget();
}

static void child_start(int raw)
{
	struct er_thread *t = &er_self;
	if (er.sealed) { /* under the parent's seccomp filter: no system call, no instance */
		er.active = 0;
		return;
	}
	__atomic_store_n(&pool_lock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&maps_lock, 0, __ATOMIC_RELAXED);
	er_mark_set();
	t->tid = (int32_t)er_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	t->has_timer = 0; /* timers are not inherited */
	int parent_pid = er.pid;
	uint64_t parent_start = er.start_ns;
	er.pid = (int)er_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (raw) {
		for (int l = 0; l < ER_LEVELS; l++) {
			for (int s = 0; s < SLOT_N; s++)
				t->lv[l].blk[s] = (struct er_block){0};
			if (t->lv[l].cache) /* the parent's stack ids */
				memset(t->lv[l].cache, 0, sizeof *t->lv[l].cache);
		}
	} else {
		levels_drop(t);
		t->level = 0;
		for (int i = 0; i < pool_n; i++)
			block_drop(&pool[i]);
	}
	pool_n = 0;
	er_blocks_forget(raw); /* those of the parent's other threads too */
	int heap = er.heap, sync = er.sync, io = er.io, clock = er.clock, omp = er.omp, java = er.java, dyn = er.dyn;
	er.heap = er.sync = er.io = er.clock = er.omp = er.java = er.dyn = 0;
	for (int s = 0; s < SLOT_N; s++) {
		file_forget(&files[s]); /* the parent's */
		next_block[s] = 0;
	}
	er_fds_child();
	er.stopped = er.stop_errno = 0;
	next_stack_id = 1;
	if (er.ended) {
		/* Ended in the parent: record nothing; the environment is still to be tidied (at the first
		 * interposed call, which the tracing flags bring there). */
		er.heap = heap, er.sync = sync, er.io = io, er.omp = omp;
		er_signals_release();
		return;
	}
	if (!er.active) {
		child_passive();
		return;
	}
	uint32_t stop = er_ctl_stop();
	if (!er.follow || stop == ER_STATE_STOP_ENDED || er_collector_gone()) {
		child_passive();
		if (er.follow) { /* er has ended: nothing after this is recorded */
			er.ended = 1;
			er.env_pending = 1;
			er.heap = heap, er.sync = sync, er.io = io, er.omp = omp;
			er_fds_end();
		}
		return;
	}
	er.ppid = parent_pid;
	er.how = ER_HOW_FORK;
	er.parent_start_ns = parent_start;
	er.start_ns = er_now();
	if (stop != 0)
		er.want = 0; /* -t or -L stopped recording: the directory, to say it ran, and nothing else */
	if (er_fd_lift() != 0) {
		uint32_t soft, hard;
		er_fd_limits(&soft, &hard);
		er_send(ER_MSG_NOFILE, soft, hard, er.start_ns);
		child_passive();
		return;
	}
	int e = instance_begin();
	er_fd_unlift();
	if (e != 0) {
		er_send(ER_MSG_NOSTART, (uint32_t)-e, (uint32_t)er_sys(SYS_geteuid, 0, 0, 0, 0, 0, 0), er.start_ns);
		child_passive();
		return;
	}
	env_parent_set(er.start_ns);
	er_thread();
	/* The mappings, as the parent knew them: the same address space. */
	for (int k = 0; k < known_n && (er.want & 1 << SLOT_STACKS); k++)
		map_record(known[k].start, known[k].end, known[k].offset, map_paths + known[k].path_off, known[k].path_len, ER_MAP_INITIAL);
	er.heap = heap && (er.want & 1 << SLOT_HEAP);
	er.sync = sync && (er.want & 1 << SLOT_SYNC);
	er.omp = omp && (er.want & 1 << SLOT_OMP);
	er.java = java && (er.want & 1 << SLOT_JAVA);
	er.dyn = dyn && (er.want & 1 << SLOT_STACKS);
	note_threshold();
	if (io && (er.want & 1 << SLOT_IO)) {
		er.io = 1;
		er_io_init();
		t->busy = 1; /* io's records end with busy 0; the caller restores the value */
	}
	if (clock && (er.want & 1 << SLOT_CLOCK)) {
		er.clock = 1;
		er_clock_thread_start(t);
	}
	er_send(ER_MSG_FORKED, (uint32_t)parent_pid, (uint32_t)parent_start, er.start_ns);
}

void er_fork_child(void) { child_start(0); }

void er_clone_child(void)
{
	int busy = er_self.busy;
	child_start(1);
	er_self.busy = busy;
}

/* The constructor runs before the program's own constructors and main. */
__attribute__((constructor(101))) static void er_start(void)
{
	er_init();
}

static void held_close(void)
{
	for (int h = 0; h < HELD_N; h++)
		er_held_close(h);
}

/* inert leaves an image that is not to be recorded alone: the programs it runs are run without er. */
static void inert(void)
{
	held_close();
	er_env_clean();
}

static void image_start(void);

/* er_init starts the library in a new process image: the founder (the program er collect
 * started) or an image that a descendant exec'd. */
void er_init(void)
{
	static int done;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	int saved = errno;
	struct er_thread *t = &er_self;
	t->busy = 1;
	const char *dir = getenv("ER_EXPDIR");
	/* (Under a seccomp filter the library could not check: not one more system call.) */
	if (dir && *dir && strlen(dir) + 64 < sizeof er.expdir) {
		strcpy(er.expdir, dir);
		strcpy(er.control, dir);
		strcat(er.control, "/.control");
		if (er_seccomp_start())
			image_start();
	}
	t->busy = 0;
	errno = saved;
}

static void image_start(void)
{
	er.pid = getpid();
	er.ppid = getppid();
	er.start_ns = er_now();
	/* No descriptor out of the program's way (a descriptor limit it lowered): the image records
	 * nothing, and takes no number (but for a moment, to say so). */
	if (er_fd_lift() != 0) {
		uint32_t soft, hard;
		er_fd_limits(&soft, &hard);
		er_send_unheld(ER_MSG_NOFILE, soft, hard);
		return;
	}
	/* The experiment and er, held from here on. Where er is gone, or the experiment is out of reach
	 * (a chroot, a new mount namespace), the image records nothing, and neither do the programs it
	 * runs. */
	if (er_expdir_open() != 0) {
		er_fd_unlift();
		inert();
		return;
	}
	er_ctl_map();
	if (er_ctl_stop() == ER_STATE_STOP_ENDED) {
		er_fd_unlift();
		inert();
		return;
	}
	const char *fl = getenv("ER_FOLLOW");
	er.follow = !(fl && strcmp(fl, "0") == 0);
	int ok;
	uint64_t founder = er_parse_u64(getenv("ER_FOUNDER_PID"), &ok);
	/* Without ER_FOUNDER_PID, the first instance to claim is the founder. */
	int is_founder = (!ok || founder == (uint64_t)er.pid) && claim_founder();
	if (!is_founder && !er.follow) {
		/* Not followed: record nothing, create nothing, leave the signals alone. */
		er_fd_unlift();
		inert();
		return;
	}
	er.how = is_founder ? ER_HOW_FOUNDER : ER_HOW_EXEC;
	if (!is_founder)
		er.parent_start_ns = er_parse_u64(getenv("ER_PARENT_START_NS"), &ok);

	const char *what = getenv("ER_TRACE");
	const char *th = getenv("ER_SYNC_THRESHOLD_NS");
	er.sync_threshold_ns = th ? strtoull(th, NULL, 10) : 0;
	const char *iv = getenv("ER_CLOCK_INTERVAL_NS");
	er.clock_interval_ns = iv ? strtoull(iv, NULL, 10) : 10000000;
	if (er.clock_interval_ns < 100000)
		er.clock_interval_ns = 100000;
	int heap = env_flag(what, "heap"), sync = env_flag(what, "sync"), io = env_flag(what, "io"),
	    clock = env_flag(what, "clock"), omp = env_flag(what, "omp"), java = env_flag(what, "java"),
	    dyn = env_flag(what, "dyn");
	er.want = heap << SLOT_HEAP | sync << SLOT_SYNC | io << SLOT_IO | clock << SLOT_CLOCK | omp << SLOT_OMP | java << SLOT_JAVA |
		  dyn << SLOT_STACKS;
	dyn_wanted = dyn;
	if (er.want)
		er.want |= 1 << SLOT_STACKS;
	if (er_ctl_stop() != 0)
		er.want = 0; /* -t or -L stopped recording: the directory, to say it ran, and nothing else */
	if (sync && er.sync_threshold_ns == (uint64_t)-1)
		er_sync_calibrate();
	int e = instance_begin();
	er_fd_unlift();
	if (e != 0) {
		/* Nothing held: the numbers are the program's. (The programs it runs try again.) */
		er_send(ER_MSG_NOSTART, (uint32_t)-e, (uint32_t)geteuid(), er.start_ns);
		held_close();
		return;
	}
	er_mark_init();
	Dl_info di;
	if (dladdr((void *)er_init, &di) && di.dli_fbase)
		dl_iterate_phdr(self_cb, di.dli_fbase);
	if (dladdr((void *)er_init, &di) && di.dli_fname && strlen(di.dli_fname) < sizeof er_lib_path)
		strcpy(er_lib_path, di.dli_fname);
	er_unwind_init();
	er_jmp_init();
	thread_key_ok = pthread_key_create(&thread_key, thread_exit) == 0;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (er.follow)
		env_parent_init();
	er.active = 1;
	er_thread();
	modules_changed(); /* the unwinder's table and the mappings of the objects loaded now */
	er.heap = heap && (er.want & 1 << SLOT_HEAP);
	er.sync = sync && (er.want & 1 << SLOT_SYNC);
	er.omp = omp && (er.want & 1 << SLOT_OMP);
	er.dyn = dyn && (er.want & 1 << SLOT_STACKS);
	er.java = java && (er.want & 1 << SLOT_JAVA);
	note_threshold();
	if (io && (er.want & 1 << SLOT_IO)) {
		er.io = 1;
		er_io_init();
	}
	if (clock && (er.want & 1 << SLOT_CLOCK)) {
		er.clock = 1;
		er_clock_init();
	}
	er_signals_init();
	if (!er.follow)
		er_env_clean(); /* ER_FOLLOW=0: the founder alone is recorded; its descendants run as without er */
	er_send(is_founder ? ER_MSG_STARTED : ER_MSG_EXECED, (uint32_t)er.ppid, 0, er.start_ns);
}
