/* heap.c: heap tracing: the memory functions, interposed. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "collector.h"

void *(*real_malloc)(size_t) ER_HIDDEN;
void (*real_free)(void *) ER_HIDDEN;
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_reallocarray)(void *, size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);

/* While dlsym looks the real functions up it may allocate (its error buffer): those requests
 * are served from a static arena, never freed. */
static char arena[64 * 1024] __attribute__((aligned(16)));
static size_t arena_used;
static int resolving;

static void *arena_alloc(size_t n)
{
	size_t at = __atomic_fetch_add(&arena_used, (n + 15) & ~(size_t)15, __ATOMIC_RELAXED);
	if (at + n > sizeof arena)
		return NULL;
	return arena + at;
}

static int in_arena(const void *p) { return (const char *)p >= arena && (const char *)p < arena + sizeof arena; }

static void resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
	real_calloc = er_next("calloc");
	real_realloc = er_next("realloc");
	real_free = er_next("free");
	real_reallocarray = er_next("reallocarray");
	real_posix_memalign = er_next("posix_memalign");
	real_aligned_alloc = er_next("aligned_alloc");
	real_memalign = er_next("memalign");
	real_valloc = er_next("valloc");
	real_pvalloc = er_next("pvalloc");
	real_mmap = er_next("mmap");
	real_munmap = er_next("munmap");
	void *(*m)(size_t) = er_next("malloc");
	__atomic_store_n(&real_malloc, m, __ATOMIC_RELEASE);
	resolving = 0;
}

#define READY() (__builtin_expect(real_malloc != NULL, 1) || (resolve(), real_malloc != NULL))

/* tracing says whether this call is the target's and is to be recorded; it marks the thread busy. */
static inline struct er_thread *tracing(void)
{
	if (__builtin_expect(!er.heap, 1))
		return NULL;
	struct er_thread *t = &er_self;
	if (t->busy || er_off_call())
		return NULL;
	t->busy = 1;
	return er_thread();
}

static void record_at(struct er_thread *t, int op, const void *addr, size_t size, const void *old, void *fn, int stack,
		      uint64_t now)
{
	int saved = errno;
	if (op == ER_HEAP_FREE) {
		struct er_rec_free *f = er_rec_begin(t, SLOT_HEAP, sizeof *f);
		if (f) {
			f->old = (uintptr_t)old;
			er_rec_commit(t, f, sizeof *f, ER_REC_HEAP, op, now);
		}
		t->busy = 0;
		errno = saved;
		return;
	}
	uint32_t st = stack ? er_stack_here(t, (uintptr_t)fn) : 0;
	if (!old && size <= UINT32_MAX) {
		struct er_rec_alloc *a = er_rec_begin(t, SLOT_HEAP, sizeof *a);
		if (a) {
			a->stack = st;
			a->size = (uint32_t)size;
			a->addr = (uintptr_t)addr;
			er_rec_commit(t, a, sizeof *a, ER_REC_HEAP, op, now);
		}
		t->busy = 0;
		errno = saved;
		return;
	}
	struct er_rec_heap *r = er_rec_begin(t, SLOT_HEAP, sizeof *r);
	if (r) {
		r->stack = st;
		r->addr = (uintptr_t)addr;
		r->size = size;
		r->old = (uintptr_t)old;
		er_rec_commit(t, r, sizeof *r, ER_REC_HEAP, op, now);
	}
	t->busy = 0;
	errno = saved;
}

/* record writes a heap event timed now, after the call returned: an allocation exists from
 * then on. */
static void record(struct er_thread *t, int op, const void *addr, size_t size, const void *old, void *fn, int stack)
{
	record_at(t, op, addr, size, old, fn, stack, er_now());
}

ER_EXPORT void *malloc(size_t n)
{
	if (!READY())
		return arena_alloc(n);
	struct er_thread *t = tracing();
	void *p = real_malloc(n);
	if (t)
		record(t, ER_HEAP_MALLOC, p, n, NULL, (void *)real_malloc, 1);
	return p;
}

ER_EXPORT void *calloc(size_t n, size_t m)
{
	if (!READY() || !real_calloc) {
		void *p = arena_alloc(n * m);
		return p; /* the arena is zero */
	}
	struct er_thread *t = tracing();
	void *p = real_calloc(n, m);
	if (t)
		record(t, ER_HEAP_CALLOC, p, n * m, NULL, (void *)real_calloc, 1);
	return p;
}

ER_EXPORT void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (!READY())
		return;
	struct er_thread *t = tracing();
	/* A free is timed before the call: once the block is free another thread may get it from
	 * malloc, and that allocation must come after this free in time order. */
	uint64_t t0 = t ? er_now() : 0;
	real_free(p);
	if (t)
		record_at(t, ER_HEAP_FREE, NULL, 0, p, (void *)real_free, 0, t0);
}

ER_EXPORT void *realloc(void *old, size_t n)
{
	if (!READY())
		return NULL;
	if (in_arena(old)) {
		void *p = malloc(n);
		if (p)
			memcpy(p, old, n < (size_t)(arena + sizeof arena - (char *)old) ? n : (size_t)(arena + sizeof arena - (char *)old));
		return p;
	}
	struct er_thread *t = tracing();
	void *p = real_realloc(old, n);
	if (t)
		record(t, ER_HEAP_REALLOC, p, n, old, (void *)real_realloc, 1);
	return p;
}

ER_EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
	if (!READY())
		return NULL;
	struct er_thread *t = tracing();
	void *p = real_reallocarray(old, n, m);
	if (t)
		record(t, ER_HEAP_REALLOCARRAY, p, n * m, old, (void *)real_reallocarray, 1);
	return p;
}

ER_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (!READY())
		return ENOMEM;
	struct er_thread *t = tracing();
	int r = real_posix_memalign(out, align, n);
	if (t)
		record(t, ER_HEAP_POSIX_MEMALIGN, r == 0 ? *out : NULL, n, NULL, (void *)real_posix_memalign, 1);
	return r;
}

ER_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (!READY())
		return NULL;
	struct er_thread *t = tracing();
	void *p = real_aligned_alloc(align, n);
	if (t)
		record(t, ER_HEAP_ALIGNED_ALLOC, p, n, NULL, (void *)real_aligned_alloc, 1);
	return p;
}

ER_EXPORT void *memalign(size_t align, size_t n)
{
	if (!READY())
		return NULL;
	struct er_thread *t = tracing();
	void *p = real_memalign(align, n);
	if (t)
		record(t, ER_HEAP_MEMALIGN, p, n, NULL, (void *)real_memalign, 1);
	return p;
}

ER_EXPORT void *valloc(size_t n)
{
	if (!READY())
		return NULL;
	struct er_thread *t = tracing();
	void *p = real_valloc(n);
	if (t)
		record(t, ER_HEAP_VALLOC, p, n, NULL, (void *)real_valloc, 1);
	return p;
}

ER_EXPORT void *pvalloc(size_t n)
{
	if (!READY())
		return NULL;
	struct er_thread *t = tracing();
	void *p = real_pvalloc(n);
	if (t)
		record(t, ER_HEAP_PVALLOC, p, n, NULL, (void *)real_pvalloc, 1);
	return p;
}

ER_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!READY())
		return MAP_FAILED;
	struct er_thread *t = tracing();
	void *p = real_mmap(addr, len, prot, flags, fd, off);
	if (t)
		record(t, ER_HEAP_MMAP, p == MAP_FAILED ? NULL : p, len, NULL, (void *)real_mmap, 1);
	return p;
}

ER_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

ER_EXPORT int munmap(void *addr, size_t len)
{
	if (!READY())
		return -1;
	struct er_thread *t = tracing();
	uint64_t t0 = t ? er_now() : 0;
	int r = real_munmap(addr, len);
	if (t) {
		if (r == 0)
			record_at(t, ER_HEAP_MUNMAP, NULL, len, addr, (void *)real_munmap, 0, t0);
		else
			t->busy = 0;
	}
	return r;
}
