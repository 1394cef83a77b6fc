/* collector.c: the collector library's core: start-up, trace files written in blocks, call
 * stacks, load-object maps and notes. The interposed functions are in heap.c, sync.c, io.c
 * and clock.c. */
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "unwind.h"

struct er_state er ER_HIDDEN;
ER_TLS struct er_thread er_self ER_HIDDEN;

static const char *const file_names[SLOT_N] = {"heaptrace", "synctrace", "iotrace", "clocktrace", "tracestacks", ""};
static const uint32_t file_kinds[SLOT_N] = {ER_FILE_HEAP, ER_FILE_SYNC, ER_FILE_IO, ER_FILE_CLOCK, ER_FILE_STACKS, 0};

static uint64_t next_block[SLOT_N];     /* per file: the next block index to hand out */
static uint32_t next_stack_id = 1;      /* stack ids; 0 is the empty stack */
static pthread_key_t thread_key;
static int thread_key_ok;

long er_sys(long n, long a, long b, long c, long d, long e, long f)
{
	return syscall(n, a, b, c, d, e, f);
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
	if (b->base)
		er_sys(SYS_munmap, (long)b->base, ER_BLOCK_SIZE, 0, 0, 0, 0);
	b->base = NULL;
	b->off = 0;
}

/* block_new gives slot a fresh block of its file: one from the pool, or a new one at the end
 * of the file. The file is extended with fallocate (or a write of its last byte), which never
 * shrinks it, so threads extending it at once cannot lose each other's blocks. */
static int block_new(struct er_thread *t, int slot)
{
	struct er_block *b = &t->blk[slot];
	int file = slot == SLOT_SIGSTACKS ? SLOT_STACKS : slot;
	block_drop(b);
	if (!t->in_signal) {
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
	uint64_t idx = __atomic_fetch_add(&next_block[file], 1, __ATOMIC_RELAXED);
	long off = ER_HEADER_SIZE + (long)idx * ER_BLOCK_SIZE;
	int fd = er.fd[file];
	if (er_sys(SYS_fallocate, fd, 0, off, ER_BLOCK_SIZE, 0, 0) != 0) {
		char z = 0;
		if (er_sys(SYS_pwrite64, fd, (long)&z, 1, off + ER_BLOCK_SIZE - 1, 0, 0) != 1)
			return 0;
	}
	void *p = (void *)er_sys(SYS_mmap, 0, ER_BLOCK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);
	if ((unsigned long)p > -4096UL)
		return 0;
	b->base = p;
	b->off = 0;
	b->file = (uint32_t)file;
	return 1;
}

void *er_rec_begin(struct er_thread *t, int slot, size_t size)
{
	struct er_block *b = &t->blk[slot];
	if (size > ER_BLOCK_SIZE || size % 8 != 0)
		return NULL;
	if (!b->base || b->off + size > ER_BLOCK_SIZE) {
		if (!block_new(t, slot))
			return NULL;
	}
	void *p = b->base + b->off;
	b->off += (uint32_t)size;
	return p;
}

void er_rec_commit(struct er_thread *t, void *rec, size_t size, int kind, int aux, uint64_t time)
{
	struct er_rec *h = rec;
	h->time = time;
	uint64_t w = (uint64_t)(size / 8) | (uint64_t)(kind & 0xff) << 16 | (uint64_t)(aux & 0xff) << 24 |
		     (uint64_t)(uint32_t)t->tid << 32;
	__atomic_store_n((uint64_t *)rec, w, __ATOMIC_RELEASE);
}

/* ---- threads ---- */

static void thread_exit(void *arg)
{
	struct er_thread *t = arg;
	if (t != &er_self)
		return;
	t->busy = 1;
	er_clock_thread_stop(t);
	pool_acquire();
	for (int s = 0; s < SLOT_N; s++) {
		struct er_block *b = &t->blk[s];
		if (b->base && s != SLOT_SIGSTACKS && b->off + 256 <= ER_BLOCK_SIZE && pool_n < POOL_N) {
			pool[pool_n++] = *b;
			b->base = NULL;
		}
	}
	pool_release();
	for (int s = 0; s < SLOT_N; s++)
		block_drop(&t->blk[s]);
	for (int i = 0; i < 2; i++) {
		void *c = t->cache[i];
		t->cache[i] = NULL;
		if (c)
			er_sys(SYS_munmap, (long)c, sizeof(struct er_stack_cache), 0, 0, 0, 0);
	}
	t->busy = 0;
}

struct er_thread *er_thread(void)
{
	struct er_thread *t = &er_self;
	if (__builtin_expect(t->tid == 0, 0))
		t->tid = (int32_t)er_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	if (__builtin_expect(!t->registered, 0) && !t->in_signal && thread_key_ok) {
		t->registered = 1;
		int b = t->busy;
		t->busy = 1;
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

/* stack_cache returns the thread's cache of stack ids (one for events, one for the SIGPROF
 * handler), mapped on first use; NULL when memory is short. */
static struct er_stack_cache *stack_cache(struct er_thread *t)
{
	int which = t->in_signal ? 1 : 0;
	if (!t->cache[which])
		t->cache[which] = map_anon(sizeof(struct er_stack_cache));
	return t->cache[which];
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
	struct er_rec_stack *r = er_rec_begin(t, t->in_signal ? SLOT_SIGSTACKS : SLOT_STACKS, size);
	if (!r)
		return 0;
	r->id = id;
	r->n = (uint32_t)n;
	memcpy(r + 1, pcs, 8 * (size_t)n);
	er_rec_commit(t, r, size, ER_REC_STACK, 0, 0);
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
	 * must know the object to go through it, and the experiment must name it. */
	if (modules_changed()) {
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
static struct known_map {
	uint64_t start, end;
	int seen;
} known[MAPS_N];
static int known_n;
static int maps_lock;

static void map_record(uint64_t start, uint64_t end, uint64_t offset, const char *path, int aux)
{
	struct er_thread *t = er_thread();
	size_t pl = strlen(path);
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
		if (known_n < MAPS_N)
			known[known_n++] = (struct known_map){start, end, 1};
		map_record(start, end, offset, path, initial ? 2 : 0);
	}
	return 0;
}

/* er_maps_update records the executable segments of the objects loaded now that were not
 * recorded yet, and the unmapping of those that are gone. */
void er_maps_update(void)
{
	static int updates;
	if (!er.active)
		return;
	struct er_thread *t = er_thread();
	int b = t->busy;
	t->busy = 1;
	while (__atomic_exchange_n(&maps_lock, 1, __ATOMIC_ACQUIRE))
		;
	for (int k = 0; k < known_n; k++)
		known[k].seen = 0;
	dl_iterate_phdr(maps_cb, updates++ == 0 ? &updates : NULL);
	for (int k = 0; k < known_n;) {
		if (!known[k].seen) {
			map_record(known[k].start, known[k].end, 0, "", 1);
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

static void after_fork_child(void)
{
	/* The child shares the parent's mapped blocks: it must never write them. Descendant
	 * processes are not recorded yet. */
	er.active = 0;
	er.heap = er.sync = er.io = er.clock = 0;
	struct er_thread *t = &er_self;
	t->tid = 0;
	for (int s = 0; s < SLOT_N; s++)
		t->blk[s].base = NULL;
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

static int open_file(int slot)
{
	char path[4200];
	size_t dl = strlen(er.dir);
	memcpy(path, er.dir, dl);
	path[dl] = '/';
	strcpy(path + dl + 1, file_names[slot]);
	int fd = (int)er_sys(SYS_openat, AT_FDCWD, (long)path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644, 0, 0);
	if (fd < 0)
		return fd;
	struct er_file_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, ER_MAGIC, 8);
	h.version = ER_VERSION;
	h.kind = file_kinds[slot];
	h.block_size = ER_BLOCK_SIZE;
	h.pid = (uint32_t)getpid();
	h.param = slot == SLOT_CLOCK ? er.clock_interval_ns : slot == SLOT_SYNC ? er.sync_threshold_ns : 0;
	h.start_ns = er.start_ns;
	if (er_sys(SYS_pwrite64, fd, (long)&h, sizeof h, 0, 0, 0) != (long)sizeof h ||
	    er_sys(SYS_ftruncate, fd, ER_HEADER_SIZE, 0, 0, 0, 0) != 0) {
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
		return -1;
	}
	er.fd[slot] = fd;
	return fd;
}

/* The constructor runs before the program's own constructors and main. */
__attribute__((constructor(101))) static void er_start(void)
{
	er_init();
}

void er_init(void)
{
	static int done;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	int saved = errno;
	struct er_thread *t = &er_self;
	t->busy = 1;
	const char *dir = getenv("ER_EXPDIR");
	const char *what = getenv("ER_TRACE");
	if (!dir || !*dir || strlen(dir) >= sizeof er.dir || !what) {
		t->busy = 0;
		errno = saved;
		return;
	}
	strcpy(er.dir, dir);
	er.start_ns = er_now();
	const char *th = getenv("ER_SYNC_THRESHOLD_NS");
	er.sync_threshold_ns = th ? strtoull(th, NULL, 10) : 0;
	const char *iv = getenv("ER_CLOCK_INTERVAL_NS");
	er.clock_interval_ns = iv ? strtoull(iv, NULL, 10) : 10000000;
	if (er.clock_interval_ns < 100000)
		er.clock_interval_ns = 100000;
	/* The process that creates the stacks file first is the one recorded: descendants that
	 * inherit LD_PRELOAD find it there and stay passive. */
	if (open_file(SLOT_STACKS) < 0) {
		t->busy = 0;
		errno = saved;
		return;
	}
	int heap = env_flag(what, "heap"), sync = env_flag(what, "sync"), io = env_flag(what, "io"),
	    clock = env_flag(what, "clock");
	if (heap)
		heap = open_file(SLOT_HEAP) >= 0;
	if (sync && er.sync_threshold_ns == (uint64_t)-1)
		er_sync_calibrate();
	if (sync)
		sync = open_file(SLOT_SYNC) >= 0;
	if (io)
		io = open_file(SLOT_IO) >= 0;
	if (clock)
		clock = open_file(SLOT_CLOCK) >= 0;
	Dl_info di;
	if (dladdr((void *)er_init, &di) && di.dli_fbase)
		dl_iterate_phdr(self_cb, di.dli_fbase);
	er_unwind_init();
	thread_key_ok = pthread_key_create(&thread_key, thread_exit) == 0;
	pthread_atfork(NULL, NULL, after_fork_child);
	er.active = 1;
	er_thread();
	modules_changed(); /* the unwinder's table and the mappings of the objects loaded now */
	if (sync) {
		char buf[32];
		int n = 0;
		uint64_t v = er.sync_threshold_ns;
		char tmp[32];
		do
			tmp[n++] = (char)('0' + v % 10);
		while ((v /= 10) != 0);
		for (int i = 0; i < n; i++)
			buf[i] = tmp[n - 1 - i];
		buf[n] = 0;
		er_note("sync_threshold_ns", buf);
	}
	er.heap = heap;
	er.sync = sync;
	if (io) {
		er.io = 1;
		er_io_init();
	}
	if (clock) {
		er.clock = 1;
		er_clock_init();
	}
	t->busy = 0;
	errno = saved;
}
