/* control.c: er's control of the recording (docs/trace-format.md, "Processes and control"): the
 * control page er writes, the messages the library sends er through a FIFO, the sample and pause
 * signals, the program's own calls of sigaction and its relatives for the signals the library
 * keeps, and vfork and _Fork, whose children fork's handlers do not see. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"

/* ---- the control page ---- */

static const uint32_t zero_page[4] __attribute__((aligned(8)));
const volatile uint32_t *er_ctl ER_HIDDEN = zero_page;

/* er_ctl_map maps ER_EXPDIR/.proc/state read-only. A missing or short file, or one without the
 * magic number, leaves the page of zeros: nothing paused or stopped. */
void er_ctl_map(void)
{
	char path[sizeof er.expdir + 16];
	strcpy(path, er.expdir);
	strcat(path, "/.proc/state");
	int exp = er_held_fd(HELD_EXP);
	int fd = (int)er_sys(SYS_openat, exp >= 0 ? exp : AT_FDCWD, (long)(exp >= 0 ? ".proc/state" : path),
			     O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0, 0, 0);
	if (fd < 0)
		return;
	struct stat st;
	void *p = MAP_FAILED;
	if (er_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && st.st_size >= 16)
		p = (void *)er_sys(SYS_mmap, 0, 4096, PROT_READ, MAP_SHARED, fd, 0);
	er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if ((unsigned long)p > -4096UL)
		return;
	if (*(const volatile uint32_t *)p != ER_STATE_MAGIC) {
		er_sys(SYS_munmap, (long)p, 4096, 0, 0, 0, 0);
		return;
	}
	__atomic_store_n(&er_ctl, (const volatile uint32_t *)p, __ATOMIC_RELEASE);
}

/* er_ctl_forget replaces the control page's mapping with a page of zeros at the same address (a
 * thread may be reading it): an instance that has ended keeps nothing of the experiment's. */
void er_ctl_forget(void)
{
	const volatile uint32_t *p = __atomic_load_n(&er_ctl, __ATOMIC_ACQUIRE);
	if (p != zero_page)
		er_sys(SYS_mmap, (long)p, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

/* ---- messages ---- */

/* send_to writes one message to fd, the FIFO, without blocking; every error (er gone, FIFO full) is
 * ignored. time 0: now. Async-signal-safe. */
static void send_to(int fd, uint32_t kind, uint32_t arg, uint32_t aux, uint64_t time)
{
	struct er_msg m;
	m.magic = ER_MSG_MAGIC;
	m.kind = kind;
	m.pid = (uint32_t)er_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	m.tid = (uint32_t)er_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	m.time = time ? time : er_now();
	m.arg = arg;
	m.aux = aux;
	/* A FIFO whose reader is gone (er was killed) raises SIGPIPE in the writing thread: it is
	 * blocked for the write, and taken back unless the program had one pending. */
	sigset_t pipe, old, pending;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	er_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&pipe, (long)&old, sizeof(long), 0, 0);
	sigemptyset(&pending);
	int had = er_sys(SYS_rt_sigpending, (long)&pending, sizeof(long), 0, 0, 0, 0) != 0 || sigismember(&pending, SIGPIPE);
	if (er_sys(SYS_write, fd, (long)&m, sizeof m, 0, 0, 0) < 0 && errno == EPIPE && !had) {
		struct timespec none = {0, 0};
		er_sys(SYS_rt_sigtimedwait, (long)&pipe, 0, (long)&none, sizeof(long), 0, 0);
	}
	er_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof(long), 0, 0);
	__atomic_add_fetch(&er_own_writes, 1, __ATOMIC_RELAXED);
}

static int open_fifo(int exp)
{
	return (int)er_sys(SYS_openat, exp >= 0 ? exp : AT_FDCWD, (long)(exp >= 0 ? ".control" : er.control),
			   O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0, 0, 0);
}

/* er_send writes one message to the FIFO ER_EXPDIR/.control, held from the instance's start (a
 * process whose privileges were dropped since could not open it again), else opened for the
 * message. Not once sealed. Async-signal-safe. */
void er_send(uint32_t kind, uint32_t arg, uint32_t aux, uint64_t time)
{
	if (!er.control[0] || er.sealed)
		return;
	int saved = errno;
	if (!er_fds_enter()) {
		errno = saved;
		return;
	}
	int fd = er_held_fd(HELD_FIFO), own = fd < 0;
	if (own)
		fd = open_fifo(er_held_fd(HELD_EXP));
	if (fd >= 0) {
		send_to(fd, kind, arg, aux, time);
		if (own)
			er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	}
	er_fds_leave();
	errno = saved;
}

void er_send_unheld(uint32_t kind, uint32_t arg, uint32_t aux)
{
	int saved = errno, fd = er.control[0] && !er.sealed ? open_fifo(-1) : -1;
	if (fd >= 0) {
		send_to(fd, kind, arg, aux, 0);
		er_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	}
	errno = saved;
}

/* ---- signals ---- */

#define NSIGS 65

/* The signals the library keeps (guard: why) and what the program asked for them: its calls
 * succeed, report its own previous settings and are remembered here, but not installed. */
static int guard[NSIGS];
static struct sigaction user_act[NSIGS];
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static int real_sa(int sig, const struct sigaction *a, struct sigaction *o)
{
	if (!real_sigaction)
		real_sigaction = er_next("sigaction");
	return real_sigaction(sig, a, o);
}

static int guarded(int sig) { return sig > 0 && sig < NSIGS && guard[sig]; }

/* glibc's sigaction installs every action with SA_RESTORER, and old actions show it. */
#ifndef SA_RESTORER
#define ER_SA_RESTORER 0x04000000
#else
#define ER_SA_RESTORER SA_RESTORER
#endif

int er_sigprof_kept(void) { return (guard[SIGPROF] & ER_GUARD_CLOCK) != 0; }

/* er_run_handler runs a handler of the program's at a signal level of its own: the calls it makes
 * (malloc and free, most often) are recorded, even when the code it interrupted was inside the
 * collector or inside a traced call. */
static void er_run_handler(int sig, siginfo_t *si, void *uc, const struct sigaction *a)
{
	struct er_thread *t = &er_self;
	uint64_t saved = er_signal_enter(t);
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(sig, si, uc);
	else
		a->sa_handler(sig);
	er_signal_leave(t, saved);
}

/* run_user runs the program's handler a of sig as the kernel would have: with its sa_mask blocked
 * too, and reset to SIG_DFL first where it asked for SA_RESETHAND. */
static void run_user(int sig, siginfo_t *si, void *uc, struct sigaction *a)
{
	if (a->sa_flags & SA_RESETHAND) {
		memset(&user_act[sig], 0, sizeof user_act[sig]);
		user_act[sig].sa_handler = SIG_DFL;
		user_act[sig].sa_flags = ER_SA_RESTORER;
	}
	sigset_t old;
	int masked = (!er.sealed || er_seccomp_allows(SYS_rt_sigprocmask)) && !sigisemptyset(&a->sa_mask) &&
		     er_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&a->sa_mask, (long)&old, sizeof(long), 0, 0) == 0;
	er_run_handler(sig, si, uc, a);
	if (masked)
		er_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof(long), 0, 0);
}

/* forward does for a signal the library keeps but did not send itself what the program asked
 * for: SIGPROF from elsewhere than the library's timers, with its default action where the
 * program left it (dfl); the sample or pause signal, from elsewhere than er collect, to the
 * program's handler (its default action, ending the process, is the library's to replace). */
static void forward(int sig, siginfo_t *si, void *uc, int dfl)
{
	struct sigaction a = user_act[sig];
	if (a.sa_flags & SA_SIGINFO) {
		if (a.sa_sigaction)
			run_user(sig, si, uc, &a);
		return;
	}
	if (a.sa_handler == SIG_IGN || (a.sa_handler == SIG_DFL && !dfl))
		return;
	if (a.sa_handler == SIG_DFL) {
		/* Do what would have happened: the default action (SIGPROF's ends the process). */
		struct sigaction d;
		memset(&d, 0, sizeof d);
		d.sa_handler = SIG_DFL;
		real_sa(sig, &d, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		er_sys(SYS_tgkill, er_sys(SYS_getpid, 0, 0, 0, 0, 0, 0), er_sys(SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
		return;
	}
	run_user(sig, si, uc, &a);
}

/* from_er says whether er collect sent the signal: it passes a sample or pause signal sent to it
 * on to the founder with sigqueue and ER_RELAY_COOKIE. */
static int from_er(const siginfo_t *si)
{
	return si && si->si_code == SI_QUEUE && si->si_value.sival_ptr == ER_RELAY_COOKIE;
}

/* dispatch is the handler of every signal the library keeps. */
static void dispatch(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	if (sig == SIGPROF && si && si->si_code == SI_TIMER && si->si_value.sival_ptr == ER_TIMER_COOKIE) {
		er_clock_sample(si, uc);
	} else if (guard[sig] & (ER_GUARD_SAMPLE | ER_GUARD_PAUSE)) {
		if (er.active && (guard[sig] & ER_GUARD_SAMPLE)) {
			er_send(ER_MSG_SAMPLE, (uint32_t)sig, 0, 0);
		} else if (er.active) {
			int p = __atomic_xor_fetch(&er.paused, 1, __ATOMIC_RELAXED);
			er_send(p ? ER_MSG_PAUSED : ER_MSG_RESUMED, (uint32_t)sig, 0, 0);
		}
		if (!from_er(si))
			forward(sig, si, uc, 0);
	} else if (!(sig == SIGPROF && er_clock_held())) { /* the program has SIGPROF blocked: later */
		forward(sig, si, uc, 1);
	}
	errno = saved;
}

/* handler_taken tells er, once per signal and instance, that the program has a handler of its own
 * for the sample or pause signal: the handler runs, but the signal also takes sample points or
 * pauses and resumes recording, and misses the signals er collect passes on. */
static int handler_said[NSIGS];

static void handler_taken(int sig, const struct sigaction *a)
{
	int h = (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction != NULL
					   : (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN && a->sa_handler != SIG_ERR);
	if (!h || !(guard[sig] & (ER_GUARD_SAMPLE | ER_GUARD_PAUSE)) || !er.active || handler_said[sig])
		return;
	handler_said[sig] = 1;
	er_send(ER_MSG_HANDLER, (uint32_t)sig, (uint32_t)guard[sig], 0);
}

/* er_guard_signal installs the library's handler for sig and keeps it; 0 when it cannot. */
int er_guard_signal(int sig, int why)
{
	if (sig <= 0 || sig >= NSIGS || sig == SIGKILL || sig == SIGSTOP)
		return 0;
	if (guard[sig]) {
		guard[sig] |= why;
		return 1;
	}
	struct sigaction a, old;
	memset(&a, 0, sizeof a);
	a.sa_sigaction = dispatch;
	a.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK; /* on the alternate stack where the thread has one (a Go thread must) */
	sigemptyset(&a.sa_mask);
	if (real_sa(sig, NULL, &old) != 0)
		return 0;
	user_act[sig] = old;
	guard[sig] = why;
	if (real_sa(sig, &a, NULL) != 0) {
		guard[sig] = 0;
		return 0;
	}
	return 1;
}

static void unwrap(int alone);

/* release gives the program the handlers it asked for of the signals the library keeps (but
 * SIGPROF's where keep_clock says, while the library's timers may still send it), and its own handlers
 * of the others installed as they are, without the library's wrapper. sigaction is
 * async-signal-safe. */
static void release(int keep_clock)
{
	for (int sig = 1; sig < NSIGS; sig++) {
		if (!guard[sig] || (keep_clock && (guard[sig] & ER_GUARD_CLOCK)))
			continue;
		guard[sig] = 0;
		real_sa(sig, &user_act[sig], NULL);
	}
	er.sample_sig = er.pause_sig = 0;
}

/* er_signals_release: a child that is not followed, or whose parent's instance had ended (it has no
 * timers; it is alone). */
void er_signals_release(void)
{
	release(0);
	unwrap(1);
}

/* er_signals_end: an instance that has ended. SIGPROF stays the library's while a thread's timer may
 * still send it (each thread deletes its timer at its next tick). */
void er_signals_end(void)
{
	release(er.clock);
	unwrap(0);
}

static int env_signal(const char *name)
{
	int ok;
	uint64_t v = er_parse_u64(getenv(name), &ok);
	return ok && v > 0 && v < NSIGS ? (int)v : 0;
}

/* er_signals_init installs the handlers of the sample and pause signals (ER_SAMPLE_SIGNAL,
 * ER_PAUSE_SIGNAL) and starts paused when ER_PAUSED=1. */
void er_signals_init(void)
{
	int s = env_signal("ER_SAMPLE_SIGNAL"), p = env_signal("ER_PAUSE_SIGNAL");
	if (s && er_guard_signal(s, ER_GUARD_SAMPLE))
		er.sample_sig = s;
	if (p && p != s && er_guard_signal(p, ER_GUARD_PAUSE))
		er.pause_sig = p;
	for (int sig = 1; sig < NSIGS; sig++) /* a handler installed before the library's (a constructor's) */
		handler_taken(sig, &user_act[sig]);
	const char *v = getenv("ER_PAUSED");
	if (v && strcmp(v, "1") == 0)
		__atomic_store_n(&er.paused, 1, __ATOMIC_RELAXED);
}

/* ---- the program's handlers of the other signals ----
 *
 * While heap, synchronization or I/O tracing is on, a handler the program installs for any other
 * signal is installed behind er_wrap_handler(), which runs it at a signal level of its own (er_run_handler), so
 * that the calls it makes are recorded. The program sees its own handler and flags, as it set them.
 * The current handler of each signal is one of two copies, switched atomically, so that a signal
 * arriving while another thread changes the handler reads a whole one. */
static struct sigaction wact[NSIGS][2];
static int wcur[NSIGS];
static int wact_lock;

/* (Not where a seccomp filter denies the library the signal mask that wrap_sigaction sets.) */
static int wrapping(void)
{
	return er.active && (er.heap || er.sync || er.io) && (!er.sealed || er_seccomp_allows(SYS_rt_sigprocmask));
}

static void er_wrap_handler(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = wact[sig][__atomic_load_n(&wcur[sig], __ATOMIC_ACQUIRE)];
	er_run_handler(sig, si, uc, &a);
}

static int is_handler(const struct sigaction *a)
{
	void (*h)(int) = a->sa_handler;
	return h != SIG_DFL && h != SIG_IGN && h != SIG_ERR && h != NULL;
}

static int is_wrap(const struct sigaction *a) { return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == er_wrap_handler; }

/* unwrap installs the program's handlers without the wrapper: the library no longer records (an
 * instance that ended, or a child that is not followed). Signals are blocked meanwhile; a fork child,
 * alone, takes the lock whoever held it. */
static void unwrap(int alone)
{
	sigset_t all, mask;
	sigfillset(&all);
	er_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&mask, sizeof(long), 0, 0);
	if (alone)
		__atomic_store_n(&wact_lock, 0, __ATOMIC_RELAXED);
	while (__atomic_exchange_n(&wact_lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	for (int sig = 1; sig < NSIGS; sig++) {
		struct sigaction cur;
		if (sig == SIGKILL || sig == SIGSTOP || guard[sig] || real_sa(sig, NULL, &cur) != 0 || !is_wrap(&cur))
			continue;
		real_sa(sig, &wact[sig][wcur[sig]], NULL);
	}
	__atomic_store_n(&wact_lock, 0, __ATOMIC_RELEASE);
	er_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof(long), 0, 0);
}

/* wrap_sigaction is sigaction for a signal the library does not keep, while wrapping. Signals are
 * blocked while it holds its lock (sigaction is async-signal-safe: a handler may call it). */
static int wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t all, mask;
	sigfillset(&all);
	er_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&mask, sizeof(long), 0, 0);
	while (__atomic_exchange_n(&wact_lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	struct sigaction prog = wact[sig][wcur[sig]], cur;
	int r;
	if (act && is_handler(act)) {
		int n = !wcur[sig];
		wact[sig][n] = *act;
		__atomic_store_n(&wcur[sig], n, __ATOMIC_RELEASE);
		struct sigaction w = *act;
		w.sa_sigaction = er_wrap_handler;
		w.sa_flags |= SA_SIGINFO;
		r = real_sa(sig, &w, &cur);
		if (r != 0)
			__atomic_store_n(&wcur[sig], !n, __ATOMIC_RELEASE);
	} else {
		r = real_sa(sig, act, &cur);
	}
	int err = errno;
	__atomic_store_n(&wact_lock, 0, __ATOMIC_RELEASE);
	er_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof(long), 0, 0);
	if (r == 0 && old) {
		*old = cur;
		if (is_wrap(&cur)) { /* the program's handler; the flags as the kernel has them, less ours */
			old->sa_sigaction = prog.sa_sigaction;
			old->sa_flags = (cur.sa_flags & ~SA_SIGINFO) | (prog.sa_flags & SA_SIGINFO);
		}
	}
	errno = err;
	return r;
}

ER_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!guarded(sig)) {
		if (sig <= 0 || sig >= NSIGS || sig == SIGKILL || sig == SIGSTOP)
			return real_sa(sig, act, old);
		if (wrapping())
			return wrap_sigaction(sig, act, old);
		int r = real_sa(sig, act, old);
		if (r == 0 && old && is_wrap(old)) { /* wrapped before wrapping stopped */
			struct sigaction prog = wact[sig][__atomic_load_n(&wcur[sig], __ATOMIC_ACQUIRE)];
			old->sa_sigaction = prog.sa_sigaction;
			old->sa_flags = (old->sa_flags & ~SA_SIGINFO) | (prog.sa_flags & SA_SIGINFO);
		}
		return r;
	}
	struct sigaction prev = user_act[sig];
	if (act) {
		user_act[sig] = *act;
		user_act[sig].sa_flags |= ER_SA_RESTORER; /* as glibc's sigaction would have installed it */
		handler_taken(sig, act);
	}
	if (old)
		*old = prev;
	return 0;
}

ER_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

static sighandler_t handler_of(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) ? (sighandler_t)(void (*)(void))a->sa_sigaction : a->sa_handler;
}

/* mine says whether the library handles what the program does to sig: it keeps sig, or wraps the
 * program's handlers. */
static int mine(int sig) { return guarded(sig) || (sig > 0 && sig < NSIGS && sig != SIGKILL && sig != SIGSTOP && wrapping()); }

/* remember sets the program's handler of sig as signal() and its relatives would, through the
 * library's sigaction. */
static sighandler_t remember(int sig, sighandler_t h, int flags, int block_self)
{
	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	struct sigaction a, prev;
	memset(&a, 0, sizeof a);
	a.sa_handler = h;
	a.sa_flags = flags;
	sigemptyset(&a.sa_mask);
	if (block_self)
		sigaddset(&a.sa_mask, sig);
	if (sigaction(sig, &a, &prev) != 0)
		return SIG_ERR;
	return handler_of(&prev);
}

#define REAL_SIGNAL(name)                                                                       \
	static sighandler_t (*real)(int, sighandler_t);                                         \
	if (__builtin_expect(!real, 0))                                                         \
		real = (sighandler_t(*)(int, sighandler_t))er_next(name)

/* signal, bsd_signal and ssignal have BSD semantics: restart, the signal blocked in its handler. */
ER_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	REAL_SIGNAL("signal");
	return mine(sig) ? remember(sig, h, SA_RESTART, 1) : real(sig, h);
}

ER_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	REAL_SIGNAL("bsd_signal");
	return mine(sig) ? remember(sig, h, SA_RESTART, 1) : real(sig, h);
}

ER_EXPORT sighandler_t ssignal(int sig, sighandler_t h)
{
	REAL_SIGNAL("ssignal");
	return mine(sig) ? remember(sig, h, SA_RESTART, 1) : real(sig, h);
}

/* sysv_signal: the handler is reset on delivery and the signal not blocked in it. */
ER_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	REAL_SIGNAL("sysv_signal");
	return mine(sig) ? remember(sig, h, SA_RESETHAND | SA_NODEFER, 0) : real(sig, h);
}

ER_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h)
{
	REAL_SIGNAL("__sysv_signal");
	return mine(sig) ? remember(sig, h, SA_RESETHAND | SA_NODEFER, 0) : real(sig, h);
}

/* sigset (System V): SIG_HOLD blocks the signal (the mask is the program's to set); another
 * disposition is set and unblocks it. Returns SIG_HOLD when the signal was blocked. */
ER_EXPORT sighandler_t sigset(int sig, sighandler_t h)
{
	REAL_SIGNAL("sigset");
	if (!mine(sig))
		return real(sig, h);
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, sig);
	if (h == SIG_HOLD) {
		struct sigaction cur;
		if (sigaction(sig, NULL, &cur) != 0 || sigprocmask(SIG_BLOCK, &set, &old) != 0)
			return SIG_ERR;
		return sigismember(&old, sig) ? SIG_HOLD : handler_of(&cur);
	}
	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sighandler_t prev = remember(sig, h, 0, 1);
	if (prev == SIG_ERR || sigprocmask(SIG_UNBLOCK, &set, &old) != 0)
		return SIG_ERR;
	return sigismember(&old, sig) ? SIG_HOLD : prev;
}

ER_EXPORT int sigignore(int sig)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))er_next("sigignore");
	if (!guarded(sig))
		return real(sig);
	remember(sig, SIG_IGN, 0, 0);
	return 0;
}

ER_EXPORT int siginterrupt(int sig, int flag)
{
	static int (*real)(int, int);
	if (!real)
		real = (int (*)(int, int))er_next("siginterrupt");
	if (!guarded(sig))
		return real(sig, flag);
	if (flag)
		user_act[sig].sa_flags &= ~SA_RESTART;
	else
		user_act[sig].sa_flags |= SA_RESTART;
	return 0;
}

/* ---- longjmp out of a handler ----
 *
 * A handler of the program's that leaves by longjmp (or siglongjmp, or their fortified forms) never
 * returns to er_run_handler: the jump itself says that the level it ran at is left. The real
 * functions are looked up at start-up, as dlsym may not be called in a signal handler. */
typedef void (*jmp_fn)(void *, int);
static jmp_fn real_longjmp, real__longjmp, real_siglongjmp, real_longjmp_chk;

void er_jmp_init(void)
{
	real_longjmp = (jmp_fn)er_next("longjmp");
	real__longjmp = (jmp_fn)er_next("_longjmp");
	real_siglongjmp = (jmp_fn)er_next("siglongjmp");
	real_longjmp_chk = (jmp_fn)er_next("__longjmp_chk");
}

static __attribute__((noreturn)) void jump(jmp_fn *real, const char *name, void *env, int val)
{
	if (!*real)
		*real = (jmp_fn)er_next(name);
	er_signal_unwound();
	(*real)(env, val);
	__builtin_unreachable();
}

ER_EXPORT __attribute__((noreturn)) void longjmp(void *env, int val) { jump(&real_longjmp, "longjmp", env, val); }
ER_EXPORT __attribute__((noreturn)) void _longjmp(void *env, int val) { jump(&real__longjmp, "_longjmp", env, val); }
ER_EXPORT __attribute__((noreturn)) void siglongjmp(void *env, int val) { jump(&real_siglongjmp, "siglongjmp", env, val); }
ER_EXPORT __attribute__((noreturn)) void __longjmp_chk(void *env, int val) { jump(&real_longjmp_chk, "__longjmp_chk", env, val); }

/* ---- children that fork's handlers do not see ---- */

/* _Fork (glibc 2.34) forks without running the fork handlers: the child must still leave the
 * parent's blocks alone. */
ER_EXPORT pid_t _Fork(void)
{
	static pid_t (*real)(void);
	if (!real)
		real = (pid_t(*)(void))er_next("_Fork");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	int busy = er_self.busy;
	er_self.busy = ER_HOLD;
	pid_t p = real();
	if (p == 0)
		er_fork_child();
	er_self.busy = busy;
	return p;
}

/* vfork: the child shares the parent's memory, its thread's TLS included, until it execs or exits,
 * so it must record nothing: it marks the thread busy, and the parent, resumed, restores the value
 * it had. In assembly, as glibc's: the child must not return through a frame the parent still
 * uses, so the return address is kept in a register across the system call. */
_Static_assert(offsetof(struct er_thread, busy) == 4, "vfork's assembly: er_thread.busy at offset 4");

ER_HIDDEN __attribute__((used)) long er_vfork_fail(long err)
{
	errno = (int)err;
	return -1;
}

__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	".globl __vfork\n"
	".type __vfork, @function\n"
	"vfork:\n"
	"__vfork:\n"
	".cfi_startproc\n"
	"	popq %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_register 16, 5\n"
	"	movq er_self@gottpoff(%rip), %rsi\n"
	"	movl %fs:4(%rsi), %edx\n"
	"	movl $" ER_STR(SYS_vfork) ", %eax\n"
	"	syscall\n"
	"	pushq %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset 16, 0\n"
	"	testq %rax, %rax\n"
	"	jnz 1f\n"
	"	movl $" ER_STR(ER_HOLD) ", %fs:4(%rsi)\n" /* the child: record nothing */
	"	ret\n"
	"1:	movl %edx, %fs:4(%rsi)\n" /* the parent, resumed */
	"	cmpq $-4095, %rax\n"
	"	jae 2f\n"
	"	ret\n"
	"2:	movq %rax, %rdi\n"
	"	negq %rdi\n"
	"	jmp er_vfork_fail\n"
	".cfi_endproc\n"
	".size vfork, .-vfork\n"
	".size __vfork, .-__vfork\n");
