/* unwind.c: async-signal-safe DWARF-CFI stack unwinder with a lock-free rule cache (x86-64 Linux). */
#define _GNU_SOURCE
#include "unwind.h"

#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>

/* DWARF register numbers of x86-64. */
enum { RBX = 3, RBP = 6, RSP = 7, RIP = 16, NREG = 17 };

/* ---- Module table ---- */

struct mod {
	uint64_t lo, hi;         /* executable text [lo, hi) */
	uint64_t cfi_lo, cfi_hi; /* the loaded segment holding .eh_frame_hdr and .eh_frame: CFI reads stay inside */
	uint64_t hdr;            /* .eh_frame_hdr: the base of datarel encodings */
	uint64_t table;          /* its search table: nfde pairs (initial location, FDE), sorted */
	uint32_t nfde;
	uint8_t tsize; /* bytes per table field: 4 or 8; 0 = no usable table */
};

struct modtab {
	uint64_t gen; /* tags cache keys: rules of an older table never match */
	int n;
	struct mod m[]; /* sorted by lo */
};

static struct modtab *g_tab; /* published with a release store, read with acquire; never freed */
static uint64_t g_gen;
static uint64_t g_main_stack_max = 8 << 20; /* RLIMIT_STACK, read at init */

/* A bounded little-endian reader over CFI bytes. Overruns set bad and read zeros. */
struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_u(struct rd *r, int n)
{
	uint64_t v = 0;
	if (r->bad || r->end - r->p < n) {
		r->bad = 1;
		r->p = r->end;
		return 0;
	}
	memcpy(&v, r->p, n);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0;; shift += 7) {
		uint64_t b = rd_u(r, 1);
		if (shift < 64)
			v |= (b & 0x7f) << shift;
		if (!(b & 0x80) || r->bad)
			return v;
	}
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0, b;
	int shift = 0;
	do {
		b = rd_u(r, 1);
		if (shift < 64)
			v |= (b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !r->bad);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* Reads a pointer in DW_EH_PE encoding enc. datarel is the base of DW_EH_PE_datarel (0: not allowed).
 * DW_EH_PE_indirect is not followed (only personality pointers use it, and those are skipped). */
static uint64_t rd_enc(struct rd *r, uint8_t enc, uint64_t datarel)
{
	uint64_t at = (uint64_t)r->p, v;
	if (enc == 0xff) /* DW_EH_PE_omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00: v = rd_u(r, 8); break;                   /* absptr */
	case 0x01: v = rd_uleb(r); break;                   /* uleb128 */
	case 0x02: v = rd_u(r, 2); break;                   /* udata2 */
	case 0x03: v = rd_u(r, 4); break;                   /* udata4 */
	case 0x04: v = rd_u(r, 8); break;                   /* udata8 */
	case 0x09: v = rd_sleb(r); break;                   /* sleb128 */
	case 0x0a: v = (uint64_t)(int16_t)rd_u(r, 2); break; /* sdata2 */
	case 0x0b: v = (uint64_t)(int32_t)rd_u(r, 4); break; /* sdata4 */
	case 0x0c: v = rd_u(r, 8); break;                   /* sdata8 */
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: return v;      /* absolute */
	case 0x10: return v + at; /* pcrel: relative to the field itself */
	case 0x30:                /* datarel: relative to .eh_frame_hdr */
		if (datarel)
			return v + datarel;
		/* fall through */
	default: r->bad = 1; return 0; /* textrel, funcrel, aligned: not used by gcc/ld on x86-64 */
	}
}

/* Fills m's CFI fields from the .eh_frame_hdr at hdr (the segment bounds already set). */
static void parse_hdr(struct mod *m)
{
	struct rd r = {(const uint8_t *)m->hdr, (const uint8_t *)m->cfi_hi, 0};
	uint8_t version = rd_u(&r, 1), ptr_enc = rd_u(&r, 1), cnt_enc = rd_u(&r, 1), tab_enc = rd_u(&r, 1);
	rd_enc(&r, ptr_enc, m->hdr); /* eh_frame_ptr: not needed, the table points at each FDE */
	uint64_t n = rd_enc(&r, cnt_enc, m->hdr);
	/* Binary search needs fixed-size datarel fields; ld always writes datarel|sdata4. */
	int size = (tab_enc & 0x70) != 0x30 ? 0 : (tab_enc & 7) == 3 ? 4 : (tab_enc & 7) == 4 ? 8 : 0;
	if (r.bad || version != 1 || cnt_enc == 0xff || size == 0 || n > (m->cfi_hi - (uint64_t)r.p) / (2 * size))
		return;
	m->table = (uint64_t)r.p;
	m->nfde = (uint32_t)n;
	m->tsize = size | ((tab_enc & 8) ? 0x80 : 0); /* 0x80: signed fields */
}

struct build {
	struct modtab *t;
	int cap;
};

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size;
	++*(int *)arg;
	return 0;
}

static int add_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct build *b = arg;
	struct mod m = {0};
	const ElfW(Phdr) *eh = NULL;
	(void)size;
	if (b->t->n >= b->cap)
		return 1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			m.lo = m.lo && m.lo < lo ? m.lo : lo;
			m.hi = m.hi > hi ? m.hi : hi;
		} else if (ph->p_type == PT_GNU_EH_FRAME)
			eh = ph;
	}
	if (m.hi == 0)
		return 0;
	if (eh) {
		m.hdr = info->dlpi_addr + eh->p_vaddr;
		for (int i = 0; i < info->dlpi_phnum; i++) {
			const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
			uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
			if (ph->p_type == PT_LOAD && m.hdr >= lo && m.hdr < hi)
				m.cfi_lo = lo, m.cfi_hi = hi;
		}
		if (m.cfi_hi)
			parse_hdr(&m);
	}
	int j = b->t->n++; /* insertion sort by text address */
	while (j > 0 && b->t->m[j - 1].lo > m.lo) {
		b->t->m[j] = b->t->m[j - 1];
		j--;
	}
	b->t->m[j] = m;
	return 0;
}

void er_unwind_refresh(void)
{
	int n = 0;
	dl_iterate_phdr(count_cb, &n);
	n += 16; /* room for modules loaded between the two walks */
	size_t size = sizeof(struct modtab) + n * sizeof(struct mod);
	struct modtab *t = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return;
	struct build b = {t, n};
	dl_iterate_phdr(add_cb, &b);
	t->gen = __atomic_add_fetch(&g_gen, 1, __ATOMIC_RELAXED) % 0xffff + 1; /* 16 bits, never 0 */
	__atomic_store_n(&g_tab, t, __ATOMIC_RELEASE);
}

void er_unwind_init(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) == 0)
		g_main_stack_max = rl.rlim_cur < (1 << 20) ? (1 << 20) : rl.rlim_cur > (1ull << 30) ? (1ull << 30) : rl.rlim_cur;
	if (!__atomic_load_n(&g_tab, __ATOMIC_ACQUIRE))
		er_unwind_refresh();
}

static const struct mod *find_mod(const struct modtab *t, uint64_t pc)
{
	int lo = 0, hi = t ? t->n : 0;
	while (lo < hi) { /* the first module with lo > pc */
		int mid = (lo + hi) / 2;
		if (t->m[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && pc < t->m[lo - 1].hi ? &t->m[lo - 1] : NULL;
}

/* ---- CIE, FDE and the CFA program ---- */

struct cie {
	uint64_t caf;     /* code alignment factor */
	int64_t daf;      /* data alignment factor */
	uint64_t ra_reg;  /* the return-address column */
	uint8_t fde_enc;  /* 'R': encoding of FDE addresses */
	uint8_t signal;   /* 'S': a signal trampoline */
	uint8_t aug_z;    /* 'z': FDEs carry an augmentation-data length */
	struct rd insn;   /* initial instructions */
};

/* Opens a CIE or FDE record at p: checks it lies in m's CFI segment, reads the length and the
 * 4-byte CIE id / CIE pointer. Returns a reader over the rest of the record, and in *id_at and *id
 * the id field's address and value. */
static struct rd open_entry(const struct mod *m, uint64_t p, uint64_t *id_at, uint64_t *id)
{
	struct rd r = {(const uint8_t *)m->cfi_hi, (const uint8_t *)m->cfi_hi, 1};
	if (p >= m->cfi_lo && p < m->cfi_hi)
		r.p = (const uint8_t *)p, r.bad = 0;
	uint64_t len = rd_u(&r, 4);
	if (len == 0xffffffff)
		len = rd_u(&r, 8);
	if (len == 0 || len > (uint64_t)(r.end - r.p))
		r.bad = 1;
	else
		r.end = r.p + len;
	*id_at = (uint64_t)r.p;
	*id = rd_u(&r, 4);
	return r;
}

static int parse_cie(const struct mod *m, uint64_t p, struct cie *c)
{
	uint64_t id_at, id;
	struct rd r = open_entry(m, p, &id_at, &id);
	uint8_t version = rd_u(&r, 1);
	char aug[8];
	int na = 0;
	for (uint8_t ch; (ch = rd_u(&r, 1)) != 0 && !r.bad;)
		if (na < (int)sizeof aug)
			aug[na++] = ch;
	if (r.bad || id != 0 || (version != 1 && version != 3) || na == sizeof aug)
		return 0;
	memset(c, 0, sizeof *c);
	c->caf = rd_uleb(&r);
	c->daf = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u(&r, 1) : rd_uleb(&r);
	if (na > 0 && aug[0] != 'z')
		return 0; /* without 'z' an unknown augmentation hides where the instructions start */
	if (na > 0) {
		c->aug_z = 1;
		uint64_t len = rd_uleb(&r);
		if (r.bad || len > (uint64_t)(r.end - r.p))
			return 0;
		const uint8_t *end = r.p + len;
		for (int i = 1; i < na && !r.bad; i++) {
			if (aug[i] == 'R')
				c->fde_enc = rd_u(&r, 1);
			else if (aug[i] == 'L')
				rd_u(&r, 1);
			else if (aug[i] == 'P')
				rd_enc(&r, rd_u(&r, 1) & 0x7f, 1); /* personality: skip it */
			else if (aug[i] == 'S')
				c->signal = 1;
			else
				break; /* unknown letters come last in practice; 'z' lets us skip them */
		}
		r.p = end;
	}
	c->insn = r;
	return !r.bad;
}

/* Rules for the registers we track besides the CFA: the return address, rbp, and rbx (ld.so's
 * lazy-binding and TLS-descriptor trampolines realign the stack and keep their CFA in rbx). */
enum { H_SAME, H_UNDEF, H_AT_CFA, H_VAL_CFA, H_AT_RBP, H_OTHER };
enum { C_REG, C_DEREF, C_PLT, C_BAD }; /* CFA = reg+off, *(reg+off), the PLT expression, unknown */

struct regrule {
	uint8_t how;
	int64_t off;
};

struct row {
	uint8_t cfa_how, cfa_reg, plt_k;
	int64_t cfa_off;
	struct regrule rbp, rbx, ra;
};

static void set_rule(struct row *row, const struct cie *c, uint64_t reg, int how, int64_t off)
{
	struct regrule *rr = reg == c->ra_reg ? &row->ra : reg == RBP ? &row->rbp : reg == RBX ? &row->rbx : NULL;
	if (rr)
		rr->how = how, rr->off = off;
}

static uint8_t cfa_reg(struct rd *r)
{
	uint64_t reg = rd_uleb(r);
	return reg < NREG ? reg : 0xff;
}

/* Recognizes the DW_CFA_def_cfa_expression forms we can evaluate: gcc's stack-realignment
 * "DW_OP_bregN off; DW_OP_deref" and the PLT one that ld emits: rsp + off + ((rip & 15) >= k ? 8 : 0),
 * i.e. DW_OP_breg7 off; DW_OP_breg16 0; lit15; and; lit<k>; ge; lit3; shl; plus. */
static void cfa_expr(struct row *row, struct rd e)
{
	uint8_t op = rd_u(&e, 1);
	int64_t off = rd_sleb(&e);
	static const uint8_t plt[] = {0x80, 0x00, 0x3f, 0x1a, 0, 0x2a, 0x33, 0x24, 0x22};
	row->cfa_how = C_BAD;
	if (e.bad || op < 0x70 || op > 0x7f)
		return;
	row->cfa_reg = op - 0x70;
	row->cfa_off = off;
	if (e.end - e.p == 1 && e.p[0] == 0x06)
		row->cfa_how = C_DEREF;
	else if (op == 0x77 && e.end - e.p == sizeof plt && e.p[4] >= 0x30 && e.p[4] < 0x50 &&
		 !memcmp(e.p, plt, 4) && !memcmp(e.p + 5, plt + 5, 4)) {
		row->cfa_how = C_PLT;
		row->plt_k = e.p[4] - 0x30;
	}
}

/* Runs a CFA program from location loc until the row that covers pc. init is the CIE's row
 * (for DW_CFA_restore), NULL while running the CIE itself. Returns 0 on success. */
static int run_cfa(struct rd r, const struct cie *c, uint64_t loc, uint64_t pc, struct row *row,
		   const struct row *init)
{
	struct row saved[8]; /* DW_CFA_remember_state stack */
	int nsaved = 0;
	while (r.p < r.end && !r.bad) {
		uint8_t op = rd_u(&r, 1);
		uint64_t reg = op & 0x3f, delta = 0;
		switch (op >> 6) {
		case 1: delta = reg; goto advance;                                    /* advance_loc */
		case 2: set_rule(row, c, reg, H_AT_CFA, rd_uleb(&r) * c->daf); continue; /* offset */
		case 3: goto restore;                                                 /* restore */
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x01:        /* set_loc */
			loc = rd_enc(&r, c->fde_enc, 0);
			if (loc > pc)
				return 0;
			break;
		case 0x02: delta = rd_u(&r, 1); goto advance;
		case 0x03: delta = rd_u(&r, 2); goto advance;
		case 0x04: delta = rd_u(&r, 4); goto advance;
		case 0x05: reg = rd_uleb(&r); set_rule(row, c, reg, H_AT_CFA, rd_uleb(&r) * c->daf); break;
		case 0x06: reg = rd_uleb(&r); goto restore;
		case 0x07: set_rule(row, c, rd_uleb(&r), H_UNDEF, 0); break;
		case 0x08: set_rule(row, c, rd_uleb(&r), H_SAME, 0); break;
		case 0x09: reg = rd_uleb(&r); rd_uleb(&r); set_rule(row, c, reg, H_OTHER, 0); break; /* register */
		case 0x0a: if (nsaved == 8) return -1; saved[nsaved++] = *row; break; /* remember_state */
		case 0x0b: if (nsaved == 0) return -1; *row = saved[--nsaved]; break; /* restore_state */
		case 0x0c: row->cfa_how = C_REG; row->cfa_reg = cfa_reg(&r); row->cfa_off = rd_uleb(&r); break;
		case 0x0d: row->cfa_how = C_REG; row->cfa_reg = cfa_reg(&r); break;
		case 0x0e: row->cfa_off = rd_uleb(&r); break;
		case 0x12: row->cfa_how = C_REG; row->cfa_reg = cfa_reg(&r); /* fall through */
		case 0x13: row->cfa_off = rd_sleb(&r) * c->daf; break;
		case 0x0f:   /* def_cfa_expression */
		case 0x10:   /* expression */
		case 0x16: { /* val_expression */
			reg = op == 0x0f ? 0 : rd_uleb(&r);
			uint64_t len = rd_uleb(&r);
			if (r.bad || len > (uint64_t)(r.end - r.p))
				return -1;
			struct rd e = {r.p, r.p + len, 0};
			r.p += len;
			if (op == 0x0f)
				cfa_expr(row, e);
			else if (op == 0x10 && len >= 2 && e.p[0] == 0x76) { /* saved at [rbp+off]: gcc's DRAP frames */
				e.p++;
				int64_t off = rd_sleb(&e);
				set_rule(row, c, reg, e.bad || e.p != e.end ? H_OTHER : H_AT_RBP, off);
			} else
				set_rule(row, c, reg, H_OTHER, 0);
			break;
		}
		case 0x11: reg = rd_uleb(&r); set_rule(row, c, reg, H_AT_CFA, rd_sleb(&r) * c->daf); break;
		case 0x14: reg = rd_uleb(&r); set_rule(row, c, reg, H_VAL_CFA, rd_uleb(&r) * c->daf); break;
		case 0x15: reg = rd_uleb(&r); set_rule(row, c, reg, H_VAL_CFA, rd_sleb(&r) * c->daf); break;
		case 0x2e: rd_uleb(&r); break; /* GNU_args_size */
		case 0x2f: reg = rd_uleb(&r); set_rule(row, c, reg, H_AT_CFA, -(int64_t)rd_uleb(&r) * c->daf); break;
		default: return -1;
		}
		continue;
	advance:
		loc += delta * c->caf;
		if (loc > pc)
			return 0;
		continue;
	restore:
		if (!init)
			return -1;
		if (reg == c->ra_reg)
			row->ra = init->ra;
		else if (reg == RBP)
			row->rbp = init->rbp;
		else if (reg == RBX)
			row->rbx = init->rbx;
	}
	return r.bad ? -1 : 0;
}

/* ---- Rules and their cache ---- */

/* What it takes to step from a frame to its caller: the unwind-table row at one PC, reduced. */
enum { R_FAIL, R_CFA, R_DEREF, R_PLT, R_SIGNAL, R_END, R_FP };
struct rule {
	int32_t cfa_off; /* CFA = reg + cfa_off (R_DEREF: *(reg + cfa_off); R_PLT: + 8 past plt_k) */
	int16_t rbp_off, rbx_off;
	int16_t ra_off;  /* the return address is saved at CFA + ra_off */
	uint8_t kind;    /* R_*: R_END = outermost frame, R_FP = no CFI: use the frame pointer */
	uint8_t cfa_reg;
	uint8_t rbp_how, rbx_how; /* H_SAME, H_AT_CFA, H_VAL_CFA, H_AT_RBP; anything else: the register is lost */
	uint8_t plt_k;
	uint8_t pad;
};
_Static_assert(sizeof(struct rule) == 16, "rule");

static int fits(int64_t v, int bits)
{
	return v >= -(1ll << (bits - 1)) && v < (1ll << (bits - 1));
}

/* The rule at PC key (the PC itself, or a return address - 1). pc is the frame's real PC. */
static __attribute__((noinline)) struct rule compute_rule(const struct modtab *t, uint64_t key, uint64_t pc)
{
	const struct mod *m = find_mod(t, key);
	struct rule ru = {.kind = R_FP}, fail = {.kind = R_FAIL};
	if (!m)
		return ru;
	/* The FDE: the last table entry whose initial location is <= key. */
	uint64_t fde = 0;
	uint32_t lo = 0, hi = m->nfde;
	int sz = m->tsize & 0x7f, sgn = m->tsize & 0x80;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct rd r = {(const uint8_t *)m->table + (uint64_t)mid * 2 * sz, (const uint8_t *)m->cfi_hi, 0};
		uint64_t loc = rd_u(&r, sz);
		if (sgn && sz == 4)
			loc = (uint64_t)(int32_t)loc;
		if (loc + m->hdr <= key) {
			lo = mid + 1;
			fde = rd_u(&r, sz);
			fde = (sgn && sz == 4 ? (uint64_t)(int32_t)fde : fde) + m->hdr;
		} else
			hi = mid;
	}
	struct cie c;
	uint64_t id_at, id;
	struct rd r = open_entry(m, fde, &id_at, &id);
	if (r.bad || id == 0 || !parse_cie(m, id_at - id, &c))
		goto no_fde;
	uint64_t start = rd_enc(&r, c.fde_enc, 0), len = rd_enc(&r, c.fde_enc & 0x0f, 0);
	if (r.bad || key < start || key - start >= len)
		goto no_fde;
	if (c.signal)
		return (struct rule){.kind = R_SIGNAL};
	if (c.aug_z) {
		uint64_t alen = rd_uleb(&r);
		if (alen > (uint64_t)(r.end - r.p))
			return fail;
		r.p += alen;
	}
	struct row row = {C_BAD, 0, 0, 0, {H_SAME, 0}, {H_SAME, 0}, {H_SAME, 0}}, init;
	if (run_cfa(c.insn, &c, start, ~0ull, &row, NULL) || (init = row, run_cfa(r, &c, start, key, &row, &init)))
		return fail;
	ru.kind = row.ra.how == H_UNDEF ? R_END
		 : row.ra.how != H_AT_CFA || !fits(row.ra.off, 16) || !fits(row.cfa_off, 32) ? R_FAIL
		 : row.cfa_how == C_REG ? R_CFA : row.cfa_how == C_DEREF ? R_DEREF : row.cfa_how == C_PLT ? R_PLT : R_FAIL;
	ru.cfa_reg = row.cfa_reg;
	if (row.cfa_reg >= NREG)
		ru.kind = R_FAIL;
	ru.cfa_off = row.cfa_off;
	ru.ra_off = row.ra.off;
	ru.plt_k = row.plt_k;
	ru.rbp_how = fits(row.rbp.off, 16) ? row.rbp.how : H_OTHER;
	ru.rbp_off = row.rbp.off;
	ru.rbx_how = fits(row.rbx.off, 16) ? row.rbx.how : H_OTHER;
	ru.rbx_off = row.rbx.off;
	return ru;
no_fde:
	/* No CFI: maybe an undescribed sigreturn trampoline, "mov $15, %rax; syscall" (rt_sigreturn). */
	if (pc >= m->lo && pc + 9 <= m->hi && !memcmp((const void *)pc, "\x48\xc7\xc0\x0f\x00\x00\x00\x0f\x05", 9))
		ru.kind = R_SIGNAL;
	return ru;
}

/* The rule cache: direct-mapped and global, one seqlock per entry. A reader copies the entry between
 * two loads of its sequence number and uses it only if the number was even and unchanged. A
 * writer takes the entry by a compare-and-swap from even to odd, and skips the insert if that fails.
 * Nobody ever waits, so threads share the cache, and a signal handler that interrupts an insert on
 * the same thread just sees a miss (odd sequence) and computes its rule without caching it.
 * Keys are pc | table generation << 48, so a refresh of the module table retires all old rules. */
#define CACHE_BITS 12
struct centry {
	uint64_t seq, key, w[2];
};
static struct centry g_cache[1 << CACHE_BITS] __attribute__((aligned(64)));

static struct centry *centry_of(uint64_t key)
{
	return &g_cache[(key * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS)];
}

/* A rule as the cache stores it: two words, packed and unpacked by hand so that a rule read from
 * the cache stays in registers. */
static inline void pack(const struct rule *r, uint64_t w[2])
{
	w[0] = (uint32_t)r->cfa_off | (uint64_t)(uint16_t)r->rbp_off << 32 | (uint64_t)(uint16_t)r->rbx_off << 48;
	w[1] = (uint16_t)r->ra_off | (uint64_t)r->kind << 16 | (uint64_t)r->cfa_reg << 24 |
	       (uint64_t)r->rbp_how << 32 | (uint64_t)r->rbx_how << 40 | (uint64_t)r->plt_k << 48;
}

static inline struct rule unpack(uint64_t w0, uint64_t w1)
{
	struct rule r = {(int32_t)w0, (int16_t)(w0 >> 32), (int16_t)(w0 >> 48), (int16_t)w1, w1 >> 16, w1 >> 24,
			 w1 >> 32, w1 >> 40, w1 >> 48, 0};
	return r;
}

static inline struct rule get_rule(const struct modtab *t, uint64_t key, uint64_t pc)
{
	if (!t || key >= 1ull << 47)
		return compute_rule(t, key, pc);
	uint64_t tagged = key | t->gen << 48, w[2];
	struct centry *e = centry_of(tagged);
	uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if (!(seq & 1) && __atomic_load_n(&e->key, __ATOMIC_RELAXED) == tagged) {
		uint64_t w0 = __atomic_load_n(&e->w[0], __ATOMIC_RELAXED);
		uint64_t w1 = __atomic_load_n(&e->w[1], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq)
			return unpack(w0, w1);
	}
	struct rule r = compute_rule(t, key, pc);
	seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	if ((seq & 1) || !__atomic_compare_exchange_n(&e->seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return r;
	pack(&r, w);
	__atomic_store_n(&e->key, tagged, __ATOMIC_RELAXED);
	__atomic_store_n(&e->w[0], w[0], __ATOMIC_RELAXED);
	__atomic_store_n(&e->w[1], w[1], __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
	return r;
}

/* ---- The walk ---- */

extern void *__libc_stack_end; /* glibc: the main thread's initial stack pointer (&argc) */

/* The top of the known stack that sp lies in, 0 if none: every stack read is checked against
 * [sp, top). A glibc thread's descriptor (pthread_self) sits just above its stack, in the same
 * mapping; the main thread's stack ends at __libc_stack_end (argv and the environment follow); a
 * signal handler may run on the sigaltstack. */
static uint64_t stack_top(uint64_t sp)
{
	uint64_t self = (uint64_t)pthread_self(), end = (uint64_t)__libc_stack_end;
	if (sp < self && self - sp < (256u << 20))
		return self;
	if (sp < end && end - sp < g_main_stack_max)
		return end + 16;
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) && sp >= (uint64_t)ss.ss_sp &&
	    sp < (uint64_t)ss.ss_sp + ss.ss_size)
		return (uint64_t)ss.ss_sp + ss.ss_size;
	return 0;
}

/* The lowest address of the stack that sp lies in that a walk reads. An interrupted function may
 * have just popped saved registers in its epilogue while its CFI still says they are saved below
 * the CFA, now below sp: in the 128-byte red zone, which the kernel leaves intact. Reads stay in
 * sp's own page, surely mapped. */
static uint64_t stack_lo(uint64_t sp)
{
	return sp - 128 > (sp & ~4095ull) ? sp - 128 : sp & ~4095ull;
}

/* Where the unwind stands. Kept apart from all[] so that the compiler keeps it in registers. */
struct cursor {
	uint64_t pc, sp, bp, bx; /* rip, rsp, rbp, rbx */
	uint32_t valid;      /* bit i: DWARF register i is known (all[i], or pc, sp, bp) */
	uint64_t lo, hi;     /* the current stack's readable range */
};

static inline int rd_stack(const struct cursor *c, uint64_t addr, uint64_t *v)
{
	if (addr < c->lo || addr > c->hi - 8 || (addr & 7))
		return 0;
	*v = *(const uint64_t *)addr;
	return 1;
}

/* The ucontext_t gregs index of each DWARF register. */
static const uint8_t greg[NREG] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
				    REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

/* Steps through a signal frame: a sigreturn trampoline's rsp points at the interrupted
 * ucontext_t, which restores every register. Returns 2 (the next PC is exact) or like step. */
static int sigframe(struct cursor *c, uint64_t *all)
{
	uint64_t g = c->sp + offsetof(ucontext_t, uc_mcontext.gregs), hi = c->hi;
	for (int i = 0; i < NREG; i++)
		if (!rd_stack(c, g + 8 * greg[i], &all[i]))
			return -1;
	/* The interrupted code ran higher on this stack, or on another known one (the handler ran
	 * on the sigaltstack). */
	if ((all[RSP] <= c->sp || all[RSP] >= hi) && !(hi = stack_top(all[RSP])))
		return -1;
	c->pc = all[RIP], c->sp = all[RSP], c->bp = all[RBP], c->bx = all[RBX];
	c->valid = (1u << NREG) - 1;
	c->lo = stack_lo(c->sp);
	c->hi = hi;
	return c->pc ? 2 : 0;
}

/* Steps from the frame at c to its caller. exact: the frame's PC is not a return address (the
 * first frame, or one interrupted by a signal), so its own row applies rather than the call's.
 * Returns 1 (caller in c), 2 (caller in c, interrupted by a signal: its PC is exact), 0 (this
 * was the outermost frame) or -1 (unwind failed). */
static inline __attribute__((always_inline)) int step(struct cursor *c, uint64_t *all, const struct modtab *t, int exact)
{
	uint64_t cfa, ra, bp = c->bp;
	struct rule ru = get_rule(t, exact ? c->pc : c->pc - 1, c->pc);
	switch (ru.kind) {
	case R_END:
		return 0;
	case R_SIGNAL: {
		struct cursor s = *c; /* a copy: c itself stays in registers */
		int st = sigframe(&s, all);
		*c = s;
		return st;
	}
	case R_FP: /* no CFI: trust rbp only if it looks like a frame pointer on this stack */
		if (!(c->valid & 1u << RBP) || (bp & 7) || bp < c->sp || bp > c->hi - 16)
			return -1;
		cfa = bp + 16, ru.ra_off = -8, ru.rbp_how = H_AT_CFA, ru.rbp_off = -16;
		ru.rbx_how = H_OTHER; /* where it saved rbx, if it did, is unknown */
		break;
	case R_CFA:
	case R_DEREF:
	case R_PLT:
		if (!(c->valid >> ru.cfa_reg & 1))
			return -1;
		cfa = (ru.cfa_reg == RSP ? c->sp : ru.cfa_reg == RBP ? bp : ru.cfa_reg == RBX ? c->bx : all[ru.cfa_reg]) + ru.cfa_off;
		if (ru.kind == R_DEREF && !rd_stack(c, cfa, &cfa))
			return -1;
		if (ru.kind == R_PLT && (c->pc & 15) >= ru.plt_k)
			cfa += 8;
		break;
	default:
		return -1;
	}
	/* The CFA grows strictly, frame after frame, and stays on this stack: no loops, no wild reads. */
	if (cfa <= c->sp || cfa > c->hi || !rd_stack(c, cfa + ru.ra_off, &ra))
		return -1;
	uint32_t valid = 1u << RSP | 1u << RIP | 1u << RBP | 1u << RBX;
	uint64_t bx = c->bx;
	switch (ru.rbx_how) { /* before rbp's rule: H_AT_RBP means this frame's rbp */
	case H_SAME: valid &= c->valid | ~(1u << RBX); break;
	case H_AT_CFA: valid &= rd_stack(c, cfa + ru.rbx_off, &bx) ? ~0u : ~(1u << RBX); break;
	case H_VAL_CFA: bx = cfa + ru.rbx_off; break;
	case H_AT_RBP: valid &= (c->valid & 1u << RBP) && rd_stack(c, bp + ru.rbx_off, &bx) ? ~0u : ~(1u << RBX); break;
	default: valid &= ~(1u << RBX);
	}
	switch (ru.rbp_how) {
	case H_SAME: valid &= c->valid | ~(1u << RBP); break;
	case H_AT_CFA: valid &= rd_stack(c, cfa + ru.rbp_off, &bp) ? ~0u : ~(1u << RBP); break;
	case H_VAL_CFA: bp = cfa + ru.rbp_off; break;
	case H_AT_RBP: valid &= (c->valid & 1u << RBP) && rd_stack(c, bp + ru.rbp_off, &bp) ? ~0u : ~(1u << RBP); break;
	default: valid &= ~(1u << RBP);
	}
	c->sp = cfa, c->pc = ra, c->bp = bp, c->bx = bx, c->valid = valid;
	return ra ? 1 : 0;
}

static uint64_t interp_lo, interp_hi;

void er_unwind_interpreter(uint64_t lo, uint64_t hi)
{
	__atomic_store_n(&interp_hi, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&interp_lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&interp_hi, hi, __ATOMIC_RELEASE);
}

/* The slots of a HotSpot interpreter frame below its rbp: the Method* (frame::interpreter_frame_
 * method_offset, -3 words) and the bytecode pointer (interpreter_frame_bcp_offset, -8 words). */
#define INTERP_METHOD_SLOT (3 * 8)
#define INTERP_BCP_SLOT (8 * 8)

/* interp_frames writes, after a frame of the interpreter at pc whose rbp is bp, its method and
 * bytecode pointer into pcs[n], pcs[n+1]; it returns how many it wrote (0 or 2). */
static int interp_frames(const struct cursor *c, uint64_t pc, uint64_t bp, uint32_t valid, uint64_t *pcs, int n, int max)
{
	uint64_t hi = __atomic_load_n(&interp_hi, __ATOMIC_ACQUIRE), lo = __atomic_load_n(&interp_lo, __ATOMIC_RELAXED);
	if (pc < lo || pc >= hi || !(valid & 1u << RBP) || bp < INTERP_BCP_SLOT || n + 2 >= max)
		return 0;
	uint64_t m, bcp;
	if (!rd_stack(c, bp - INTERP_METHOD_SLOT, &m) || !rd_stack(c, bp - INTERP_BCP_SLOT, &bcp) || m == 0 || m >= 1ull << 47)
		return 0;
	if (bcp >= 1ull << 47)
		bcp = 0;
	pcs[n] = ER_JAVA_METHOD_FRAME(m);
	pcs[n + 1] = ER_JAVA_BCP_FRAME(bcp);
	return 2;
}

/* Unwinds from the registers in all[] (known where valid says), writing pcs as er_backtrace does. */
static int walk(uint64_t *all, uint32_t valid, uint64_t *pcs, int max, int skip)
{
	const struct modtab *t = __atomic_load_n(&g_tab, __ATOMIC_ACQUIRE);
	struct cursor c = {all[RIP], all[RSP], all[RBP], all[RBX], valid, stack_lo(all[RSP]), stack_top(all[RSP])};
	int n = 0, exact = 1;
	if (max <= 0)
		return 0;
	if (!c.hi) /* an unknown stack (a coroutine's): only sp's own page is surely mapped */
		c.hi = (c.sp | 4095) + 1;
	for (int guard = 0; guard < 100000; guard++) { /* signal frames may move the stack: bound the loop */
		uint64_t pc = c.pc, bp = c.bp;
		uint32_t bpvalid = c.valid;
		int st = step(&c, all, t, exact);
		if (skip > 0)
			skip--;
		else if (n == max - 1 && st != 0) {
			pcs[n++] = st > 0 ? ER_PC_TRUNCATED : ER_PC_FAILED;
			return n;
		} else {
			pcs[n++] = pc;
			n += interp_frames(&c, pc, bp, bpvalid, pcs, n, max);
		}
		if (st <= 0) {
			if (st < 0)
				pcs[n++] = ER_PC_FAILED;
			return n;
		}
		exact = st == 2;
	}
	pcs[n++] = ER_PC_FAILED;
	return n;
}

__attribute__((noinline)) int er_backtrace(uint64_t *pcs, int max, int skip)
{
	uint64_t all[NREG];
	/* Start from this very instruction: its PC, rsp and rbp fit its own CFI row. */
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3"
			 : "=r"(all[RIP]), "=r"(all[RSP]), "=r"(all[RBP]), "=r"(all[RBX]));
	skip = skip < 0 ? 0 : skip > 100000 ? 100000 : skip;
	int n = walk(all, 1u << RIP | 1u << RSP | 1u << RBP | 1u << RBX, pcs, max, skip + 1); /* + our own frame */
	__asm__ volatile("" ::: "memory"); /* no tail call: our frame must stay */
	return n;
}

int er_unwind_context(const void *ucontext, uint64_t *pcs, int max)
{
	const ucontext_t *uc = ucontext;
	uint64_t all[NREG];
	for (int i = 0; i < NREG; i++)
		all[i] = uc->uc_mcontext.gregs[greg[i]];
	return walk(all, (1u << NREG) - 1, pcs, max, 0);
}
