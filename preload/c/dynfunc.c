/* dynfunc.c: the collector API's collector_func_load and collector_func_unload
 * (preload/include/collectorAPI.h): a program that generates code names it; the library records
 * the function, its line table and a copy of its instructions (dyntext) in the stacks file. */
#include <stdint.h>
#include <string.h>

#include "collector.h"
#include "trace.h"

typedef struct {
	unsigned int offset;
	unsigned int lineno;
} Lineno;

/* The largest part of a record: blocks are 64 KiB. */
#define PART (16 * 1024)
#define LINES_MOST 1024

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static size_t slen(const char *s, size_t most)
{
	size_t n = s ? strnlen(s, most) : 0;
	return n;
}

/* enter says whether the call is to be recorded, and marks the thread busy. A paused collection
 * still records it: the samples after the resume need its name. */
static struct er_thread *enter(void)
{
	if (er_child_unstarted())
		er_clone_child();
	struct er_thread *t = &er_self;
	if (!__atomic_load_n(&er.dyn, __ATOMIC_RELAXED) || t->busy || __atomic_load_n(&er.stopped, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&er.ended, __ATOMIC_RELAXED))
		return NULL;
	t->busy = ER_BUSY;
	return er_thread();
}

ER_EXPORT void collector_func_load(const char *name, const char *alias, const char *sourcename, void *vaddr, int size,
				   int lntsize, const Lineno *lntable)
{
	if (!name || !vaddr || size <= 0)
		return;
	struct er_thread *t = enter();
	if (!t)
		return;
	uint64_t now = er_now();
	size_t nl = slen(name, 4096), al = slen(alias, 4096), sl = slen(sourcename, 4096);
	size_t lines = lntable && lntsize > 0 ? (size_t)lntsize : 0;
	if (lines > LINES_MOST)
		lines = LINES_MOST; /* the rest of a long table is not kept */
	size_t body = sizeof(struct er_rec_dyn_func) + lines * sizeof(struct er_dyn_line) + nl + al + sl;
	size_t rsize = pad8(body);
	struct er_rec_dyn_func *r = er_rec_begin(t, SLOT_STACKS, rsize);
	if (r) {
		r->addr = (uint64_t)(uintptr_t)vaddr;
		r->size = (uint32_t)size;
		r->nlines = (uint32_t)lines;
		r->name_len = (uint16_t)nl;
		r->alias_len = (uint16_t)al;
		r->src_len = (uint16_t)sl;
		r->pad = 0;
		struct er_dyn_line *l = (struct er_dyn_line *)(r + 1);
		for (size_t i = 0; i < lines; i++) {
			l[i].off = lntable[i].offset;
			l[i].line = lntable[i].lineno;
		}
		char *p = (char *)(l + lines);
		memcpy(p, name, nl);
		if (al)
			memcpy(p + nl, alias, al);
		if (sl)
			memcpy(p + nl + al, sourcename, sl);
		memset((char *)r + body, 0, rsize - body);
		er_rec_commit(t, r, rsize, ER_REC_DYN_FUNC, 0, now);
		/* The instructions, in parts. */
		for (size_t off = 0; off < (size_t)size; off += PART) {
			size_t k = (size_t)size - off < PART ? (size_t)size - off : PART;
			size_t bs = pad8(sizeof(struct er_rec_dyn_bytes) + k);
			struct er_rec_dyn_bytes *b = er_rec_begin(t, SLOT_STACKS, bs);
			if (!b)
				break;
			b->addr = r->addr;
			b->off = (uint32_t)off;
			b->n = (uint32_t)k;
			memcpy(b + 1, (const char *)vaddr + off, k);
			memset((char *)(b + 1) + k, 0, bs - sizeof *b - k);
			er_rec_commit(t, b, bs, ER_REC_DYN_BYTES, 0, now);
		}
	}
	t->busy = 0;
}

ER_EXPORT void collector_func_unload(void *vaddr)
{
	struct er_thread *t = enter();
	if (!t)
		return;
	struct er_rec_dyn_unload *r = er_rec_begin(t, SLOT_STACKS, sizeof *r);
	if (r) {
		r->addr = (uint64_t)(uintptr_t)vaddr;
		er_rec_commit(t, r, sizeof *r, ER_REC_DYN_UNLOAD, 0, er_now());
	}
	t->busy = 0;
}
