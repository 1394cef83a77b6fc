/* harness.c: compares er_backtrace/er_unwind_context with glibc backtrace() (unwind_test.go builds it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "unwind.h"

/* Built with -O2 -fomit-frame-pointer. Output, one line each:
 *   case NAME             starts a case
 *   TAG hex hex ...       a stack (er: er_backtrace, bt: glibc backtrace, ctx: er_unwind_context, ...)
 *   range NAME lo hi      an address range
 *   stat key=value ...    figures */

#define MAXF 128
#define NOINL __attribute__((noinline))

static volatile int sink;
static int quiet; /* probe only unwinds, prints nothing */

static void emit(const char *tag, const uint64_t *pcs, int n)
{
	printf("%s", tag);
	for (int i = 0; i < n; i++)
		printf(" %llx", (unsigned long long)pcs[i]);
	printf("\n");
}

static void emit_bt(const char *tag, void *const *pcs, int n)
{
	printf("%s", tag);
	for (int i = 0; i < n; i++)
		printf(" %llx", (unsigned long long)(uintptr_t)pcs[i]);
	printf("\n");
}

/* Unwinds with both and prints both lists. */
static NOINL void probe(const char *name)
{
	uint64_t pcs[MAXF];
	void *bt[MAXF];
	int n = er_backtrace(pcs, MAXF, 0);
	if (quiet)
		return;
	int m = backtrace(bt, MAXF);
	printf("case %s\n", name);
	emit("er", pcs, n);
	emit_bt("bt", bt, m);
}

/* ---- Frames of several shapes, 10 deep ---- */

static NOINL int f_leafcall(const char *name)
{
	probe(name);
	return sink + 1;
}

static NOINL int f_big(const char *name) /* a large frame: sub $N, %rsp */
{
	volatile char buf[5000];
	buf[sink & 7] = 1;
	return f_leafcall(name) + buf[3];
}

static NOINL int f_alloca(const char *name, int n) /* a VLA: gcc keeps a frame pointer in rbp */
{
	char v[n + 16];
	memset(v, sink, n + 16);
	__asm__ volatile("" : : "r"(v) : "memory");
	return f_big(name) + v[n];
}

static NOINL int f_regs(const char *name, int a, int b, int c, int d, int e, int f) /* saves rbx, rbp, r12-r15 */
{
	int x = a * 3 + sink, y = b * 5 + sink, z = c * 7 + sink, u = d * 11, w = e * 13, q = f * 17;
	int r = f_alloca(name, a);
	return r + x * y + z * u + w * q + a + b + c + d + e + f;
}

static NOINL int f_drap(const char *name, int n) /* VLA + over-aligned local: CFA = *(rbp - 8) */
{
	char b[64] __attribute__((aligned(64)));
	char v[n + 8];
	b[0] = v[0] = sink;
	__asm__ volatile("" : : "r"(b), "r"(v) : "memory");
	return f_regs(name, 1, 2, 3, 4, 5, 6) + b[n] + v[1];
}

static NOINL int f4(const char *name) { return f_drap(name, 3) + 1; }
static NOINL int f3(const char *name) { return f4(name) * 2 + sink; }
static NOINL int f2(const char *name) { return f3(name) + sink; }
static NOINL int f1(const char *name) { return f2(name) - sink; }

static NOINL int rec(int n, const char *name)
{
	if (n == 0) {
		probe(name);
		return 0;
	}
	return rec(n - 1, name) + n + sink;
}

/* ---- libc callbacks ---- */

static int probed;

static int cmp_int(const void *a, const void *b)
{
	if (!probed) {
		probed = 1;
		probe("qsort");
	}
	return *(const int *)a - *(const int *)b;
}

static int cmp_key(const void *a, const void *b)
{
	if (!probed) {
		probed = 1;
		probe("bsearch");
	}
	return *(const int *)a - *(const int *)b;
}

/* Through a pointer: the bsearch of <stdlib.h> is an inline function at -O2, libc's is not. */
static void *(*volatile bsearch_fn)(const void *, const void *, size_t, size_t, int (*)(const void *, const void *)) = bsearch;

static NOINL void libc_callbacks(void)
{
	int v[64];
	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	probed = 0;
	qsort(v, 64, sizeof v[0], cmp_int);
	probed = 1;
	int key = 17;
	qsort(v, 64, sizeof v[0], cmp_int); /* sorted, for bsearch */
	probed = 0;
	sink += bsearch_fn(&key, v, 64, sizeof v[0], cmp_key) != NULL;
}

static void *thread_main(void *arg)
{
	return (void *)(intptr_t)f1(arg);
}

/* ---- Signals ---- */

struct sample {
	int ne, nb, nc;
	uint64_t e[64], c[64];
	void *b[64];
};

#define NSAMP 300
static struct sample samples[NSAMP];
static volatile int nsamp, want_samples, in_unwind, reentrant;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si;
	if (nsamp >= want_samples)
		return;
	struct sample *s = &samples[nsamp];
	reentrant += in_unwind; /* this unwind interrupts one in progress on the same thread */
	s->ne = er_backtrace(s->e, 64, 0);
	s->nb = backtrace(s->b, 64);
	s->nc = er_unwind_context(uc, s->c, 64);
	nsamp++;
}

static void emit_sample(const char *name, const struct sample *s)
{
	printf("case %s\n", name);
	emit("er", s->e, s->ne);
	emit_bt("bt", s->b, s->nb);
	emit("ctx", s->c, s->nc);
}

static NOINL int spin_leaf(int i)
{
	int x = i;
	for (int k = 0; k < 50; k++)
		x = x * 31 + k;
	return x;
}

static NOINL int spin_unwind(int i) /* the handler may interrupt an unwind in progress */
{
	uint64_t pcs[32];
	in_unwind = 1;
	int n = er_backtrace(pcs, 32, i & 1);
	in_unwind = 0;
	return n + i;
}

static NOINL int spin_mid(int i, char *buf)
{
	struct timespec ts;
	memset(buf, i, 64 + (i & 63));   /* through the PLT */
	clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO */
	int v[16];
	for (int k = 0; k < 16; k++)
		v[k] = (k * 7 + i) & 15;
	qsort(v, 16, sizeof v[0], cmp_int);
	return spin_leaf(i) + f_drap("x", i & 3) * 0 + spin_unwind(i) + (int)ts.tv_nsec + v[3];
}

static NOINL void sigprof_stress(int want)
{
	struct sigaction sa = {0};
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	timer_t tm;
	struct sigevent ev = {0};
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGPROF;
	timer_create(CLOCK_MONOTONIC, &ev, &tm);
	struct itimerspec its = {{0, 37000}, {0, 37000}};
	timer_settime(tm, 0, &its, NULL);
	char buf[128];
	probed = 1; /* cmp_int and probe must not print from here on */
	quiet = 1;
	nsamp = 0;
	want_samples = want;
	time_t deadline = time(NULL) + 20; /* in case no timer signal ever comes */
	for (int i = 0; nsamp < want_samples && (i & 1023 || time(NULL) < deadline); i++)
		sink += spin_mid(i, buf);
	timer_delete(tm);
	signal(SIGPROF, SIG_IGN);
	quiet = 0;
	for (int i = 0; i < nsamp; i++)
		emit_sample("sigprof", &samples[i]);
	printf("stat reentrant=%d\n", reentrant);
}

/* ---- Frames without CFI ---- */

/* asm_badrbp(fn): no CFI, calls fn with rbp holding garbage. asm_fp(fn): no CFI, a proper frame pointer. */
__asm__(".text\n"
	".globl asm_badrbp\n"
	"asm_badrbp:\n"
	"	push %rbp\n"
	"	movabs $0xdeadbeefdeadbee8, %rbp\n"
	"	call *%rdi\n"
	"	pop %rbp\n"
	"	ret\n"
	".globl asm_badrbp_end\n"
	"asm_badrbp_end:\n"
	".globl asm_fp\n"
	"asm_fp:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	call *%rdi\n"
	"	pop %rbp\n"
	"	ret\n"
	".globl asm_fp_end\n"
	"asm_fp_end:\n");
void asm_badrbp(void (*fn)(void));
void asm_fp(void (*fn)(void));
extern char asm_badrbp_end[], asm_fp_end[];

/* asm_rbxcfa(fn, arg): realigns the stack as ld.so's lazy-binding and TLS-descriptor trampolines do, its
 * CFA held in rbx (CFA = rbx + 16), and calls fn(arg). The callee saves rbx and clobbers it, so the
 * unwinder must restore rbx from the callee's frame to find this one's CFA. */
__asm__(".text\n"
	".globl asm_rbxcfa\n"
	".type asm_rbxcfa, @function\n"
	"asm_rbxcfa:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset rbx, -16\n"
	"	mov %rsp, %rbx\n"
	"	.cfi_def_cfa_register rbx\n"
	"	and $-64, %rsp\n"
	"	sub $64, %rsp\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	call *%rax\n"
	"	mov %rbx, %rsp\n"
	"	.cfi_def_cfa_register rsp\n"
	"	pop %rbx\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size asm_rbxcfa, .-asm_rbxcfa\n");
void asm_rbxcfa(void (*fn)(const char *), const char *arg);

static NOINL void rbx_user(const char *name)
{
	__asm__ volatile("mov $0xdeadbeef, %%ebx" : : : "rbx"); /* garbage in rbx: the prologue saved the caller's */
	probe(name);
	sink++;
}

static NOINL void rbx_cfa(const char *name)
{
	asm_rbxcfa(rbx_user, name);
	sink++;
}

static NOINL void probe_er_only(void)
{
	uint64_t pcs[MAXF];
	int n = er_backtrace(pcs, MAXF, 0);
	emit("er", pcs, n);
}

static NOINL void via_asm(void (*asmfn)(void (*)(void)), const char *name)
{
	void *bt[MAXF];
	int m = backtrace(bt, MAXF); /* this function's own stack, for the frames below the asm one */
	printf("case %s\n", name);
	emit_bt("bt", bt, m);
	asmfn(probe_er_only);
	sink++;
}

/* ---- Pseudo-frames and skip ---- */

static NOINL void probe_limits(void)
{
	uint64_t full[MAXF], part[MAXF];
	int n = er_backtrace(full, MAXF, 0);
	printf("case limits\n");
	emit("er", full, n);
	emit("trunc3", part, er_backtrace(part, 3, 0));
	emit("one", part, er_backtrace(part, 1, 0));
	emit("exact", part, er_backtrace(part, n, 0));
	emit("skip2", part, er_backtrace(part, MAXF, 2));
	printf("stat zero=%d\n", er_backtrace(part, 0, 0));
}

static NOINL int limits_rec(int n)
{
	if (n == 0) {
		probe_limits();
		return 0;
	}
	return limits_rec(n - 1) + sink;
}

/* ---- A corrupt stack must not crash the unwinder ---- */

extern void *__libc_stack_end;
int main(int argc, char **argv);

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/* Overwrites words of the frames above its own (its return address, saved registers, its callers'
 * frames) with plausible garbage: code addresses in the program and in libc, stack addresses up to
 * and past the stack's end, small numbers, random bits. Unwinds each time, restores them at the end. */
static NOINL void smash(int rounds, uint64_t seed)
{
	uint64_t *top = __builtin_frame_address(0), saved[48], pcs[MAXF], x = seed | 1;
	int failed = 0, ok = 0;
	memcpy(saved, top, sizeof saved);
	for (int i = 0; i < rounds; i++) {
		for (int k = 0; k < 4; k++) {
			uint64_t r = rnd(&x), v;
			switch (r % 7) {
			case 0: v = (uint64_t)(uintptr_t)main + (r >> 8) % 65536 - 32768; break;
			case 1: v = (uint64_t)(uintptr_t)qsort + (r >> 8) % 1048576 - 524288; break;
			case 2: v = (uint64_t)(uintptr_t)top + (r >> 8) % 8192 - 4096; break;
			case 3: v = (uint64_t)(uintptr_t)__libc_stack_end + (r >> 8) % 512 - 256; break;
			case 4: v = (r >> 8) % 64; break;
			default: v = rnd(&x);
			}
			top[(r >> 40) % 48] = v;
		}
		int n = er_backtrace(pcs, MAXF, 0);
		if (n < 1 || n > MAXF)
			printf("error: er_backtrace returned %d\n", n);
		failed += pcs[n - 1] == ER_PC_FAILED;
		ok += pcs[n - 1] != ER_PC_FAILED && pcs[n - 1] != ER_PC_TRUNCATED;
	}
	memcpy(top, saved, sizeof saved);
	__asm__ volatile("" ::: "memory");
	printf("stat smashed=%d smash_failed=%d smash_ended=%d\n", rounds, failed, ok);
}

/* ---- Many threads, with module-table refreshes going on ---- */

static volatile int stop_refresh;
static int mismatches[4];
static long unwinds[4];

static NOINL int thr_rec(int d, int id)
{
	if (d > 0)
		return thr_rec(d - 1, id) + sink;
	uint64_t a[MAXF], b[MAXF];
	int na = er_backtrace(a, MAXF, 0);
	for (int k = 0; k < 200; k++) {
		int nb = er_backtrace(b, MAXF, 0); /* same call site each time: the same list */
		unwinds[id]++;
		if (nb != na || memcmp(a + 1, b + 1, (na - 1) * sizeof a[0]))
			mismatches[id]++;
	}
	return 0;
}

static void *thr_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < 300; i++)
		thr_rec((i * 7 + id) % 23, id);
	return NULL;
}

static void *refresher(void *arg)
{
	int *count = arg;
	struct timespec ts = {0, 200000};
	while (!stop_refresh) {
		er_unwind_refresh();
		++*count;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static NOINL void threads(void)
{
	pthread_t t[4], r;
	int refreshes = 0;
	pthread_create(&r, NULL, refresher, &refreshes);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thr_main, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	stop_refresh = 1;
	pthread_join(r, NULL);
	printf("stat threads mismatches=%d unwinds=%ld refreshes=%d\n", mismatches[0] + mismatches[1] + mismatches[2] + mismatches[3],
	       unwinds[0] + unwinds[1] + unwinds[2] + unwinds[3], refreshes);
}

/* ---- Timing ---- */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct bench {
	int depth, iters, frames, bt_frames;
	double er_ns, bt_ns;
};

static NOINL int bench_rec(int d, struct bench *b)
{
	if (d > 0)
		return bench_rec(d - 1, b) + sink;
	uint64_t pcs[64];
	void *bt[64];
	b->frames = er_backtrace(pcs, 64, 0);
	b->bt_frames = backtrace(bt, 64);
	if (b->iters == 0)
		return 0;
	double t0 = now_ns();
	for (int i = 0; i < b->iters; i++)
		sink += er_backtrace(pcs, 64, 0);
	double t1 = now_ns();
	int bt_iters = b->iters / 20 + 1;
	for (int i = 0; i < bt_iters; i++)
		sink += backtrace(bt, 64);
	double t2 = now_ns();
	b->er_ns = (t1 - t0) / b->iters;
	b->bt_ns = (t2 - t1) / bt_iters;
	return 0;
}

static void *bench_thread(void *arg)
{
	struct bench *b = arg;
	bench_rec(b->depth, b);
	return NULL;
}

/* Runs the timing in a fresh thread (its stack is the shortest: thread function, start_thread, clone3). */
static void bench(int frames, int iters)
{
	struct bench b = {0};
	pthread_t t;
	pthread_create(&t, NULL, bench_thread, &b); /* depth 0: how many frames the base has */
	pthread_join(t, NULL);
	b.depth = frames - b.frames;
	b.iters = iters;
	if (b.depth < 0) {
		printf("error: the base stack has %d frames\n", b.frames);
		exit(1);
	}
	pthread_create(&t, NULL, bench_thread, &b);
	pthread_join(t, NULL);
	printf("stat bench frames=%d bt_frames=%d er_ns=%.2f bt_ns=%.2f\n", b.frames, b.bt_frames, b.er_ns, b.bt_ns);
}

int main(int argc, char **argv)
{
	er_unwind_init();
	void *warm[4];
	backtrace(warm, 4); /* loads libgcc_s now, not in a signal handler */
	if (argc >= 4 && !strcmp(argv[1], "bench")) {
		bench(atoi(argv[2]), atoi(argv[3]));
		return 0;
	}
	if (argc < 3 || strcmp(argv[1], "check")) {
		fprintf(stderr, "usage: harness check DSO [SAMPLES [SEED]] | bench FRAMES ITERS\n");
		return 2;
	}
	printf("range asm_badrbp %llx %llx\n", (unsigned long long)(uintptr_t)asm_badrbp,
	       (unsigned long long)(uintptr_t)asm_badrbp_end);
	printf("range asm_fp %llx %llx\n", (unsigned long long)(uintptr_t)asm_fp, (unsigned long long)(uintptr_t)asm_fp_end);
	f1("nested");
	rec(12, "recursion");
	libc_callbacks();
	pthread_t t;
	pthread_create(&t, NULL, thread_main, "thread");
	pthread_join(t, NULL);

	/* A library loaded after init: known once the table is refreshed. */
	void *h = dlopen(argv[2], RTLD_NOW);
	if (!h) {
		printf("error: %s\n", dlerror());
		return 1;
	}
	er_unwind_refresh();
	void (*dso_call)(void (*)(const char *), const char *) = (void (*)(void (*)(const char *), const char *))(uintptr_t)dlsym(h, "dso_call");
	dso_call(probe, "dlopen");

	rbx_cfa("rbxcfa");
	limits_rec(10);
	via_asm(asm_badrbp, "badrbp");
	via_asm(asm_fp, "fp");

	struct sigaction sa = {0};
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	nsamp = 0;
	want_samples = 1;
	raise(SIGUSR1);
	emit_sample("raise", &samples[0]);

	/* A handler on the alternate signal stack: the unwind crosses from it to the thread's stack. */
	stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16};
	sigaltstack(&ss, NULL);
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	nsamp = 0;
	raise(SIGUSR2);
	emit_sample("altstack", &samples[0]);

	sigprof_stress(argc >= 4 ? atoi(argv[3]) : 200);
	smash(20000, argc >= 5 ? strtoull(argv[4], NULL, 0) : 88172645463325252ull);
	threads();
	fflush(stdout);
	return 0;
}
