/* io.c: I/O tracing: the POSIX file calls and the stdio stream calls, interposed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collector.h"

/* Operation numbers: enum er_io_op (trace.h), experiment.IOOp. */

#define MAX_NAME 4096

static void io_record(int op, void *fn, uint64_t t0, int fd, int fd2, int64_t ret, int64_t bytes, int err,
		      const char *name)
{
	uint64_t t1 = er_now();
	struct er_thread *t = &er_self;
	int saved = errno;
	t->busy = 1;
	t = er_thread();
	uint32_t st = fn ? er_stack_here(t, (uintptr_t)fn) : 0;
	size_t nl = name ? strnlen(name, MAX_NAME) : 0;
	size_t size = (sizeof(struct er_rec_io) + nl + 7) & ~(size_t)7;
	struct er_rec_io *r = er_rec_begin(t, SLOT_IO, size);
	if (r) {
		r->stack = st;
		r->name_len = (uint32_t)nl;
		r->dur_ns = t1 - t0;
		r->fd = fd;
		r->fd2 = fd2;
		r->ret = ret;
		r->bytes = bytes;
		r->err = err;
		if (nl)
			memcpy(r + 1, name, nl);
		er_rec_commit(t, r, size, ER_REC_IO, op, t1);
	}
	t->busy = 0;
	errno = saved;
}

uint64_t er_own_writes;

/* The system calls the kernel counts: stdio buffers, so that its calls, which the library traces,
 * make fewer system calls (500,000 fprintf calls, 201,439 writes), and those are made inside libc,
 * where no interposer sees them. The process's read- and write-like system calls (syscr and syscw of
 * /proc/self/io: read, pread, readv, write, pwrite, writev, ...) are read when tracing starts and
 * when the process exits; the difference, less the collector's own, is noted as
 * "io_syscalls=READS WRITES" (er print's iostat). */
static uint64_t kernel_r0, kernel_w0, own_w0;
static int kernel_ok;

/* proc_io reads syscr and syscw of /proc/self/io: 0, or -1. Raw system calls only. */
static int proc_io(uint64_t *r, uint64_t *w)
{
	int fd = (int)er_sys(SYS_openat, AT_FDCWD, (long)"/proc/self/io", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return -1;
	char buf[512];
	long n = er_sys(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0, 0);
	er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	int found = 0;
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		uint64_t *v = strncmp(p, "syscr: ", 7) == 0 ? r : strncmp(p, "syscw: ", 7) == 0 ? w : NULL;
		if (!v)
			continue;
		*v = 0;
		for (const char *d = p + 7; *d >= '0' && *d <= '9'; d++)
			*v = *v * 10 + (uint64_t)(*d - '0');
		found++;
	}
	return found == 2 ? 0 : -1;
}

char *er_put_u64(char *p, uint64_t v)
{
	char d[24];
	int n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	while (n > 0)
		*p++ = d[--n];
	return p;
}

/* At the process's exit (after the program's atexit functions): stdio's buffers are flushed first,
 * as exit would flush them next, so that their system calls are counted. */
__attribute__((destructor)) static void io_fini(void)
{
	if (!er.io || !kernel_ok || er_off())
		return;
	struct er_thread *t = &er_self;
	int busy = t->busy;
	t->busy = 1; /* the flush is not one of the program's calls */
	int (*flush)(FILE *) = (int (*)(FILE *))er_next("fflush");
	if (flush)
		flush(NULL);
	t->busy = busy;
	uint64_t r, w;
	if (proc_io(&r, &w) != 0)
		return;
	uint64_t own = __atomic_load_n(&er_own_writes, __ATOMIC_RELAXED) - own_w0;
	r -= kernel_r0 + 1; /* the first reading of /proc/self/io */
	w -= kernel_w0 + own;
	char v[64], *p = er_put_u64(v, r);
	*p++ = ' ';
	*er_put_u64(p, w) = 0;
	er_note("io_syscalls", v);
}

/* er_io_init names the descriptors open at the start (stdin, stdout, ...) from /proc/self/fd, and
 * reads the system calls counted so far. */
void er_io_init(void)
{
	own_w0 = __atomic_load_n(&er_own_writes, __ATOMIC_RELAXED);
	kernel_ok = proc_io(&kernel_r0, &kernel_w0) == 0;
	int dfd = (int)er_sys(SYS_openat, AT_FDCWD, (long)"/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (dfd < 0)
		return;
	char buf[4096];
	long n;
	while ((n = er_sys(SYS_getdents64, dfd, (long)buf, sizeof buf, 0, 0, 0)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			int fd = 0;
			for (const char *p = d->d_name; *p; p++)
				fd = fd * 10 + (*p - '0');
			if (fd == dfd || er_fd_mine(fd))
				continue;
			char path[64], target[MAX_NAME];
			strcpy(path, "/proc/self/fd/");
			strcat(path, d->d_name);
			long l = er_sys(SYS_readlink, (long)path, (long)target, sizeof target - 1, 0, 0, 0);
			if (l <= 0)
				continue;
			target[l] = 0;
			io_record(ER_IO_INHERITED, NULL, er_now(), fd, -1, 0, 0, 0, target);
		}
	}
	er_sys(SYS_close, dfd, 0, 0, 0, 0, 0);
}

#define ON() (er.io && !er_self.busy && !er_off_call())
#define REAL(name, type)                                                                           \
	static __typeof__(type) real;                                                              \
	if (__builtin_expect(!real, 0))                                                            \
	real = (type)er_next(name)
#define ERR(bad) ((bad) ? errno : 0)

static mode_t open_mode(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return (mode_t)va_arg(ap, int);
	return 0;
}

static int do_open(const char *path, int flags, mode_t mode)
{
	REAL("open", int (*)(const char *, int, ...));
	if (!ON())
		return real(path, flags, mode);
	uint64_t t0 = er_now();
	int r = real(path, flags, mode);
	io_record(ER_IO_OPEN, (void *)real, t0, r, -1, r, 0, ERR(r < 0), path);
	return r;
}

ER_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_open(path, flags, mode);
}

ER_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_open(path, flags, mode);
}

ER_EXPORT int __open_2(const char *path, int flags) { return do_open(path, flags, 0); }
ER_EXPORT int __open64_2(const char *path, int flags) { return do_open(path, flags, 0); }

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	REAL("openat", int (*)(int, const char *, int, ...));
	if (!ON())
		return real(dirfd, path, flags, mode);
	uint64_t t0 = er_now();
	int r = real(dirfd, path, flags, mode);
	io_record(ER_IO_OPENAT, (void *)real, t0, r, dirfd, r, 0, ERR(r < 0), path);
	return r;
}

ER_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}

ER_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}

ER_EXPORT int __openat_2(int dirfd, const char *path, int flags) { return do_openat(dirfd, path, flags, 0); }
ER_EXPORT int __openat64_2(int dirfd, const char *path, int flags) { return do_openat(dirfd, path, flags, 0); }

ER_EXPORT int creat(const char *path, mode_t mode)
{
	REAL("creat", int (*)(const char *, mode_t));
	if (!ON())
		return real(path, mode);
	uint64_t t0 = er_now();
	int r = real(path, mode);
	io_record(ER_IO_CREAT, (void *)real, t0, r, -1, r, 0, ERR(r < 0), path);
	return r;
}
ER_EXPORT int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

/* The descriptors the library holds (collector.c, "data files") survive what the program does to
 * descriptors: close and the close_range of closefrom leave them open (the program sees success, and
 * the number stays taken, so nothing of the program's ever gets it); dup2 and dup3 onto one move the
 * library's first. */
ER_EXPORT int close(int fd)
{
	REAL("close", int (*)(int));
	if (er_fd_mine(fd))
		return 0;
	if (!ON())
		return real(fd);
	uint64_t t0 = er_now();
	int r = real(fd);
	io_record(ER_IO_CLOSE, (void *)real, t0, fd, -1, r, 0, ERR(r < 0), NULL);
	return r;
}

/* RW defines a read- or write-like call returning ssize_t: bytes moved, or -1. */
#define RW(name, sym, op, params, args, fd)                                                        \
	ER_EXPORT ssize_t name params                                                              \
	{                                                                                          \
		REAL(sym, ssize_t(*) params);                                                      \
		if (!ON())                                                                         \
			return real args;                                                          \
		uint64_t t0 = er_now();                                                            \
		ssize_t r = real args;                                                             \
		io_record(op, (void *)real, t0, fd, -1, r, r > 0 ? r : 0, ERR(r < 0), NULL);       \
		return r;                                                                          \
	}

RW(read, "read", ER_IO_READ, (int fd, void *b, size_t n), (fd, b, n), fd)
RW(write, "write", ER_IO_WRITE, (int fd, const void *b, size_t n), (fd, b, n), fd)
RW(pread, "pread", ER_IO_PREAD, (int fd, void *b, size_t n, off_t o), (fd, b, n, o), fd)
RW(pread64, "pread64", ER_IO_PREAD, (int fd, void *b, size_t n, off_t o), (fd, b, n, o), fd)
RW(pwrite, "pwrite", ER_IO_PWRITE, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o), fd)
RW(pwrite64, "pwrite64", ER_IO_PWRITE, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o), fd)
RW(readv, "readv", ER_IO_READV, (int fd, const struct iovec *v, int n), (fd, v, n), fd)
RW(writev, "writev", ER_IO_WRITEV, (int fd, const struct iovec *v, int n), (fd, v, n), fd)
RW(preadv, "preadv", ER_IO_PREADV, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o), fd)
RW(preadv64, "preadv64", ER_IO_PREADV, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o), fd)
RW(pwritev, "pwritev", ER_IO_PWRITEV, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o), fd)
RW(pwritev64, "pwritev64", ER_IO_PWRITEV, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o), fd)
RW(__read_chk, "__read_chk", ER_IO_READ, (int fd, void *b, size_t n, size_t bl), (fd, b, n, bl), fd)
RW(__pread_chk, "__pread_chk", ER_IO_PREAD, (int fd, void *b, size_t n, off_t o, size_t bl), (fd, b, n, o, bl), fd)
RW(__pread64_chk, "__pread64_chk", ER_IO_PREAD, (int fd, void *b, size_t n, off_t o, size_t bl), (fd, b, n, o, bl), fd)

ER_EXPORT off_t lseek(int fd, off_t off, int whence)
{
	REAL("lseek", off_t (*)(int, off_t, int));
	if (!ON())
		return real(fd, off, whence);
	uint64_t t0 = er_now();
	off_t r = real(fd, off, whence);
	io_record(ER_IO_LSEEK, (void *)real, t0, fd, -1, r, 0, ERR(r < 0), NULL);
	return r;
}
ER_EXPORT off_t lseek64(int fd, off_t off, int whence) __attribute__((alias("lseek")));

/* FD1 defines a call on one descriptor returning int: -1 on failure. */
#define FD1(name, op, params, args, fd, fd2)                                                       \
	ER_EXPORT int name params                                                                  \
	{                                                                                          \
		REAL(#name, int (*) params);                                                       \
		if (!ON())                                                                         \
			return real args;                                                          \
		uint64_t t0 = er_now();                                                            \
		int r = real args;                                                                 \
		io_record(op, (void *)real, t0, fd, fd2, r, 0, ERR(r < 0), NULL);                  \
		return r;                                                                          \
	}

FD1(fsync, ER_IO_FSYNC, (int fd), (fd), fd, -1)
FD1(fdatasync, ER_IO_FDATASYNC, (int fd), (fd), fd, -1)
FD1(dup, ER_IO_DUP, (int fd), (fd), fd, r)
ER_EXPORT int dup2(int fd, int to)
{
	REAL("dup2", int (*)(int, int));
	if (fd != to && er_fd_mine(to))
		er_fd_move(to);
	if (!ON())
		return real(fd, to);
	uint64_t t0 = er_now();
	int r = real(fd, to);
	io_record(ER_IO_DUP2, (void *)real, t0, fd, to, r, 0, ERR(r < 0), NULL);
	return r;
}

ER_EXPORT int dup3(int fd, int to, int flags)
{
	REAL("dup3", int (*)(int, int, int));
	if (fd != to && er_fd_mine(to))
		er_fd_move(to);
	if (!ON())
		return real(fd, to, flags);
	uint64_t t0 = er_now();
	int r = real(fd, to, flags);
	io_record(ER_IO_DUP3, (void *)real, t0, fd, to, r, 0, ERR(r < 0), NULL);
	return r;
}

ER_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	return er_close_range(first, last, flags);
}

/* closefrom (glibc 2.34) closes with the close_range system call, which the library's does around
 * its descriptors; where the kernel has none, each descriptor open is closed. */
ER_EXPORT void closefrom(int low)
{
	if (low < 0)
		low = 0;
	if (er_close_range((unsigned)low, ~0U, 0) == 0 || errno != ENOSYS)
		return;
	int dfd = (int)er_sys(SYS_openat, AT_FDCWD, (long)"/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (dfd < 0)
		return;
	char buf[4096];
	long n;
	while ((n = er_sys(SYS_getdents64, dfd, (long)buf, sizeof buf, 0, 0, 0)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			int fd = 0;
			for (const char *p = d->d_name; *p >= '0' && *p <= '9'; p++)
				fd = fd * 10 + (*p - '0');
			if (d->d_name[0] >= '0' && d->d_name[0] <= '9' && fd >= low && fd != dfd && !er_fd_mine(fd))
				er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
		}
	}
	er_sys(SYS_close, dfd, 0, 0, 0, 0, 0);
}

ER_EXPORT int pipe(int fds[2])
{
	REAL("pipe", int (*)(int *));
	if (!ON())
		return real(fds);
	uint64_t t0 = er_now();
	int r = real(fds);
	io_record(ER_IO_PIPE, (void *)real, t0, r == 0 ? fds[0] : -1, r == 0 ? fds[1] : -1, r, 0, ERR(r < 0), NULL);
	return r;
}

ER_EXPORT int pipe2(int fds[2], int flags)
{
	REAL("pipe2", int (*)(int *, int));
	if (!ON())
		return real(fds, flags);
	uint64_t t0 = er_now();
	int r = real(fds, flags);
	io_record(ER_IO_PIPE2, (void *)real, t0, r == 0 ? fds[0] : -1, r == 0 ? fds[1] : -1, r, 0, ERR(r < 0), NULL);
	return r;
}

/* ---- stdio ---- */

static int stream_fd(FILE *f) { return f ? fileno_unlocked(f) : -1; }

static FILE *do_fopen(const char *path, const char *mode)
{
	REAL("fopen", FILE *(*)(const char *, const char *));
	if (!ON())
		return real(path, mode);
	uint64_t t0 = er_now();
	FILE *f = real(path, mode);
	io_record(ER_IO_FOPEN, (void *)real, t0, stream_fd(f), -1, f ? stream_fd(f) : -1, 0, ERR(!f), path);
	return f;
}

ER_EXPORT FILE *fopen(const char *path, const char *mode) { return do_fopen(path, mode); }
ER_EXPORT FILE *fopen64(const char *path, const char *mode) { return do_fopen(path, mode); }

ER_EXPORT FILE *fdopen(int fd, const char *mode)
{
	REAL("fdopen", FILE *(*)(int, const char *));
	if (!ON())
		return real(fd, mode);
	uint64_t t0 = er_now();
	FILE *f = real(fd, mode);
	io_record(ER_IO_FDOPEN, (void *)real, t0, fd, -1, f ? fd : -1, 0, ERR(!f), NULL);
	return f;
}

static FILE *do_freopen(const char *path, const char *mode, FILE *old)
{
	REAL("freopen", FILE *(*)(const char *, const char *, FILE *));
	if (!ON())
		return real(path, mode, old);
	int oldfd = stream_fd(old);
	uint64_t t0 = er_now();
	FILE *f = real(path, mode, old);
	io_record(ER_IO_FREOPEN, (void *)real, t0, stream_fd(f), oldfd, f ? stream_fd(f) : -1, 0, ERR(!f), path);
	return f;
}

ER_EXPORT FILE *freopen(const char *p, const char *m, FILE *f) { return do_freopen(p, m, f); }
ER_EXPORT FILE *freopen64(const char *p, const char *m, FILE *f) { return do_freopen(p, m, f); }

ER_EXPORT int fclose(FILE *f)
{
	REAL("fclose", int (*)(FILE *));
	if (!ON())
		return real(f);
	int fd = stream_fd(f);
	uint64_t t0 = er_now();
	int r = real(f);
	io_record(ER_IO_FCLOSE, (void *)real, t0, fd, -1, r, 0, ERR(r == EOF), NULL);
	return r;
}

static size_t do_fread(void *b, size_t s, size_t n, FILE *f, size_t bl, int chk)
{
	static size_t (*plain)(void *, size_t, size_t, FILE *);
	static size_t (*checked)(void *, size_t, size_t, size_t, FILE *);
	if (__builtin_expect(!plain, 0)) {
		checked = (size_t(*)(void *, size_t, size_t, size_t, FILE *))er_next("__fread_chk");
		plain = (size_t(*)(void *, size_t, size_t, FILE *))er_next("fread");
	}
	chk = chk && checked;
	if (!ON())
		return chk ? checked(b, bl, s, n, f) : plain(b, s, n, f);
	uint64_t t0 = er_now();
	size_t r = chk ? checked(b, bl, s, n, f) : plain(b, s, n, f);
	int bad = r < n && ferror_unlocked(f);
	io_record(ER_IO_FREAD, chk ? (void *)checked : (void *)plain, t0, stream_fd(f), -1, (int64_t)r, (int64_t)(r * s),
		  ERR(bad), NULL);
	return r;
}

ER_EXPORT size_t fread(void *b, size_t s, size_t n, FILE *f) { return do_fread(b, s, n, f, 0, 0); }
ER_EXPORT size_t __fread_chk(void *b, size_t bl, size_t s, size_t n, FILE *f)
{
	return do_fread(b, s, n, f, bl, 1);
}

ER_EXPORT size_t fwrite(const void *b, size_t s, size_t n, FILE *f)
{
	REAL("fwrite", size_t (*)(const void *, size_t, size_t, FILE *));
	if (!ON())
		return real(b, s, n, f);
	uint64_t t0 = er_now();
	size_t r = real(b, s, n, f);
	io_record(ER_IO_FWRITE, (void *)real, t0, stream_fd(f), -1, (int64_t)r, (int64_t)(r * s), ERR(r < n), NULL);
	return r;
}

static char *do_fgets(char *s, int n, FILE *f, size_t bl, int chk)
{
	static char *(*plain)(char *, int, FILE *);
	static char *(*checked)(char *, size_t, int, FILE *);
	if (__builtin_expect(!plain, 0)) {
		checked = (char *(*)(char *, size_t, int, FILE *))er_next("__fgets_chk");
		plain = (char *(*)(char *, int, FILE *))er_next("fgets");
	}
	chk = chk && checked;
	if (!ON())
		return chk ? checked(s, bl, n, f) : plain(s, n, f);
	uint64_t t0 = er_now();
	char *r = chk ? checked(s, bl, n, f) : plain(s, n, f);
	int bad = !r && ferror_unlocked(f);
	int64_t bytes = r ? (int64_t)strlen(r) : 0;
	io_record(ER_IO_FGETS, chk ? (void *)checked : (void *)plain, t0, stream_fd(f), -1, bytes, bytes, ERR(bad), NULL);
	return r;
}

ER_EXPORT char *fgets(char *s, int n, FILE *f) { return do_fgets(s, n, f, 0, 0); }
ER_EXPORT char *__fgets_chk(char *s, size_t bl, int n, FILE *f) { return do_fgets(s, n, f, bl, 1); }

ER_EXPORT int fputs(const char *s, FILE *f)
{
	REAL("fputs", int (*)(const char *, FILE *));
	if (!ON())
		return real(s, f);
	uint64_t t0 = er_now();
	int r = real(s, f);
	io_record(ER_IO_FPUTS, (void *)real, t0, stream_fd(f), -1, r, r == EOF ? 0 : (int64_t)strlen(s), ERR(r == EOF), NULL);
	return r;
}

ER_EXPORT int puts(const char *s)
{
	REAL("puts", int (*)(const char *));
	if (!ON())
		return real(s);
	uint64_t t0 = er_now();
	int r = real(s);
	io_record(ER_IO_PUTS, (void *)real, t0, stream_fd(stdout), -1, r, r == EOF ? 0 : (int64_t)strlen(s) + 1,
		  ERR(r == EOF), NULL);
	return r;
}

/* GETC and PUTC define the one-character calls. */
#define GETC(name, op)                                                                             \
	ER_EXPORT int name(FILE *f)                                                                \
	{                                                                                          \
		REAL(#name, int (*)(FILE *));                                                      \
		if (!ON())                                                                         \
			return real(f);                                                            \
		uint64_t t0 = er_now();                                                            \
		int r = real(f);                                                                   \
		int bad = r == EOF && ferror_unlocked(f);                                          \
		io_record(op, (void *)real, t0, stream_fd(f), -1, r, r == EOF ? 0 : 1, ERR(bad), NULL); \
		return r;                                                                          \
	}
#define PUTC(name, op)                                                                             \
	ER_EXPORT int name(int c, FILE *f)                                                         \
	{                                                                                          \
		REAL(#name, int (*)(int, FILE *));                                                 \
		if (!ON())                                                                         \
			return real(c, f);                                                         \
		uint64_t t0 = er_now();                                                            \
		int r = real(c, f);                                                                \
		io_record(op, (void *)real, t0, stream_fd(f), -1, r, r == EOF ? 0 : 1, ERR(r == EOF), NULL); \
		return r;                                                                          \
	}

GETC(fgetc, ER_IO_FGETC)
GETC(getc, ER_IO_GETC)
PUTC(fputc, ER_IO_FPUTC)
PUTC(putc, ER_IO_PUTC)

/* The printf family: each is timed around the real vfprintf (or its checking variant). */
static int do_vfprintf(int op, FILE *f, int flag, const char *fmt, va_list ap)
{
	static int (*vf)(FILE *, const char *, va_list);
	static int (*vfchk)(FILE *, int, const char *, va_list);
	if (!vf) {
		vfchk = (int (*)(FILE *, int, const char *, va_list))er_next("__vfprintf_chk");
		vf = (int (*)(FILE *, const char *, va_list))er_next("vfprintf");
	}
	if (!ON())
		return flag >= 0 && vfchk ? vfchk(f, flag, fmt, ap) : vf(f, fmt, ap);
	uint64_t t0 = er_now();
	int r = flag >= 0 && vfchk ? vfchk(f, flag, fmt, ap) : vf(f, fmt, ap);
	io_record(op, flag >= 0 && vfchk ? (void *)vfchk : (void *)vf, t0, stream_fd(f), -1, r, r > 0 ? r : 0,
		  ERR(r < 0), NULL);
	return r;
}

ER_EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = do_vfprintf(ER_IO_FPRINTF, f, -1, fmt, ap);
	va_end(ap);
	return r;
}

ER_EXPORT int printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = do_vfprintf(ER_IO_PRINTF, stdout, -1, fmt, ap);
	va_end(ap);
	return r;
}

ER_EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap) { return do_vfprintf(ER_IO_VFPRINTF, f, -1, fmt, ap); }
ER_EXPORT int vprintf(const char *fmt, va_list ap) { return do_vfprintf(ER_IO_VPRINTF, stdout, -1, fmt, ap); }

ER_EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = do_vfprintf(ER_IO_FPRINTF, f, flag, fmt, ap);
	va_end(ap);
	return r;
}

ER_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = do_vfprintf(ER_IO_PRINTF, stdout, flag, fmt, ap);
	va_end(ap);
	return r;
}

ER_EXPORT int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
	return do_vfprintf(ER_IO_VFPRINTF, f, flag, fmt, ap);
}

ER_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap) { return do_vfprintf(ER_IO_VPRINTF, stdout, flag, fmt, ap); }

ER_EXPORT int fflush(FILE *f)
{
	REAL("fflush", int (*)(FILE *));
	if (!ON())
		return real(f);
	uint64_t t0 = er_now();
	int r = real(f);
	io_record(ER_IO_FFLUSH, (void *)real, t0, stream_fd(f), -1, r, 0, ERR(r == EOF), NULL);
	return r;
}

ER_EXPORT int fseek(FILE *f, long off, int whence)
{
	REAL("fseek", int (*)(FILE *, long, int));
	if (!ON())
		return real(f, off, whence);
	uint64_t t0 = er_now();
	int r = real(f, off, whence);
	io_record(ER_IO_FSEEK, (void *)real, t0, stream_fd(f), -1, r, 0, ERR(r < 0), NULL);
	return r;
}
