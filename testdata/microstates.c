// microstates: one function per thread state, each timing itself, for the microstate metrics
// (TestMicrostatesPhases). Usage: microstates DATAFILE TEXTLIB FUNCS, where DATAFILE is a file of at
// least 64 MiB and TEXTLIB a shared object with functions f0 .. f<FUNCS-1> each on its own page (the
// test makes both). Each phase prints "NAME wall W" and "NAME cpu C", the seconds of CLOCK_MONOTONIC
// and of the calling thread's CPU clock it took (the fault phases also "NAME majflt N", the thread's
// major faults in it); every thread prints "life TID wall W" and "life TID cpu C" as it ends (from
// just before its pthread_create), its creator "joined TID W" as its join returns, and each spinner
// "spinner TID wall W" and "spinner TID cpu C".
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

// Each phase function holds only what it times, between begin and end: what it needs before and
// after (threads started and joined, output) is done by its caller, so that its inclusive metrics are
// its measured time even where a busy machine makes a thread wait for a CPU there.
static double wall0, cpu0;
static struct {
	const char *name;
	double wall, cpu;
} results[16];
static int nresults;
static void begin(void) { wall0 = now(CLOCK_MONOTONIC), cpu0 = now(CLOCK_THREAD_CPUTIME_ID); }
static void end(const char *name) {
	double w = now(CLOCK_MONOTONIC) - wall0, c = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	results[nresults].name = name, results[nresults].wall = w, results[nresults].cpu = c;
	nresults++;
}
// report prints the phases' times ("NAME wall W", "NAME cpu C") since the last report.
static void report(void) {
	for (int i = 0; i < nresults; i++)
		printf("%s wall %.6f\n%s cpu %.6f\n", results[i].name, results[i].wall, results[i].name, results[i].cpu);
	nresults = 0;
}

// start is what a thread of this program is started with: its argument, and the time just before
// pthread_create (a thread's life starts there: on a busy machine it may wait for a CPU before its
// first instruction).
struct start {
	double created;
	void *arg;
	long tid; // set by the thread
};

// spawn starts fn(arg) in a thread, noting when; join waits for it and prints "joined TID W", its
// life up to the join's return (an upper bound: the thread's exit comes before, and on a busy machine
// the thread may wait for a CPU on its way out after its last "life" line).
static struct start *spawn(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
	struct start *st = malloc(sizeof *st);
	st->arg = arg;
	st->created = now(CLOCK_MONOTONIC);
	pthread_create(t, a, fn, st);
	return st;
}

static void join(pthread_t t, struct start *st) {
	pthread_join(t, 0);
	printf("joined %ld %.6f\n", st->tid, now(CLOCK_MONOTONIC) - st->created);
}

static void life(double w0) {
	printf("life %ld wall %.6f\nlife %ld cpu %.6f\n", (long)gettid(), now(CLOCK_MONOTONIC) - w0, (long)gettid(),
	       now(CLOCK_THREAD_CPUTIME_ID));
}

// burn spins for secs of the thread's CPU time, in user mode but for a read of its clock (a system
// call) every some 100 microseconds.
__attribute__((noinline)) static void burn(double secs) {
	volatile unsigned long x = 0;
	double t0 = now(CLOCK_THREAD_CPUTIME_ID);
	while (now(CLOCK_THREAD_CPUTIME_ID) - t0 < secs)
		for (int i = 0; i < 100000; i++)
			x += i;
}

// User CPU (a second: a clock sample that spans two phases goes to the second, 1% of it at -p on).
__attribute__((noinline)) void phase_spin(void) {
	begin();
	burn(1.0);
	end("phase_spin");
}

// System CPU: reading zeros, which the kernel copies out, for a second.
__attribute__((noinline)) void phase_syscalls(void) {
	static char buf[1 << 16];
	int fd = open("/dev/zero", O_RDONLY);
	begin();
	double t0 = now(CLOCK_THREAD_CPUTIME_ID);
	while (now(CLOCK_THREAD_CPUTIME_ID) - t0 < 1.0)
		if (read(fd, buf, sizeof buf) < 0)
			exit(2);
	end("phase_syscalls");
	close(fd);
}

// Other Wait: nanosleep.
__attribute__((noinline)) void phase_sleep(void) {
	begin();
	struct timespec t = {0, 10000000};
	for (int i = 0; i < 30; i++)
		nanosleep(&t, 0);
	end("phase_sleep");
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, signalled;

static void *holder(void *p) {
	struct start *st = p;
	st->tid = gettid();
	double w0 = st->created;
	void *arg = st->arg;
	pthread_mutex_lock(&mu);
	pthread_mutex_lock((pthread_mutex_t *)arg); // tell main the mutex is held
	ready = 1;
	pthread_mutex_unlock((pthread_mutex_t *)arg);
	burn(0.3);
	pthread_mutex_unlock(&mu);
	life(w0);
	return 0;
}

// mutex_setup starts the thread that holds the mutex, and waits until it does.
static struct start *mutex_setup(pthread_t *t) {
	static pthread_mutex_t flag = PTHREAD_MUTEX_INITIALIZER;
	struct start *st = spawn(t, 0, holder, &flag);
	for (;;) {
		pthread_mutex_lock(&flag);
		int r = ready;
		pthread_mutex_unlock(&flag);
		if (r)
			break;
		sched_yield();
	}
	return st;
}

// User Lock: waiting for a mutex another thread holds for 0.3 s of its CPU time.
__attribute__((noinline)) void phase_mutex(void) {
	begin();
	pthread_mutex_lock(&mu);
	end("phase_mutex");
}

static void *signaller(void *p) {
	struct start *st = p;
	st->tid = gettid();
	double w0 = st->created;
	void *arg = st->arg;
	struct timespec t = {0, 300000000};
	nanosleep(&t, 0);
	pthread_mutex_lock(&mu);
	signalled = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	life(w0);
	return arg;
}

// User Lock: a condition variable signalled after 0.3 s.
__attribute__((noinline)) void phase_cond(pthread_t *t, struct start **st) {
	begin();
	*st = spawn(t, 0, signaller, 0);
	pthread_mutex_lock(&mu);
	while (!signalled)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	end("phase_cond");
}

// Data Page Fault: one byte of each page of a file whose pages were evicted, without readahead.
__attribute__((noinline)) void phase_datafault(const char *path) {
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	size_t len = 64 << 20;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	volatile unsigned char *p = mmap(0, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	madvise((void *)p, len, MADV_RANDOM);
	unsigned sum = 0;
	begin();
	for (size_t off = 0; off < len; off += 4096)
		sum += p[off];
	end("phase_datafault");
	munmap((void *)p, len);
	close(fd);
	if (sum == 12345)
		printf("\n");
}

static volatile int evicting, evicted;

// evictor drops the pages of file arg from the page cache while evicting is set: the kernel reads
// ahead around a fault in executable code whatever madvise says, so the text pages are evicted again
// and again while they are called.
static void *evictor(void *p) {
	struct start *st = p;
	st->tid = gettid();
	double w0 = st->created;
	void *arg = st->arg;
	int fd = open((const char *)arg, O_RDONLY);
	while (evicting) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		evicted = 1;
	}
	close(fd);
	life(w0);
	return 0;
}

// textlib is the text fault phase's library, set up (its functions found, the evictor started) before
// the phase and torn down after, so that the phase's function holds only what it measures.
struct textlib {
	int (**f)(int);
	int n;
	uintptr_t lo, hi;
	pthread_t evictor;
	struct start *st;
};

static void textfault_setup(const char *lib, int n, struct textlib *tl) {
	void *h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(2);
	}
	tl->n = n;
	tl->f = calloc(n, sizeof *tl->f);
	char name[32];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof name, "f%d", i);
		tl->f[i] = (int (*)(int))dlsym(h, name);
	}
	tl->lo = (uintptr_t)tl->f[0] & ~4095UL, tl->hi = ((uintptr_t)tl->f[n - 1] + 4096) & ~4095UL;
	madvise((void *)tl->lo, tl->hi - tl->lo, MADV_RANDOM);
	evicting = 1;
	tl->st = spawn(&tl->evictor, 0, evictor, (void *)lib);
	while (!evicted)
		sched_yield();
}

static void textfault_teardown(struct textlib *tl) {
	evicting = 0;
	join(tl->evictor, tl->st);
}

// Text Page Fault: calls of functions of a shared object, each on its own page, whose pages another
// thread keeps evicting.
__attribute__((noinline)) void phase_textfault(struct textlib *tl) {
	int sum = 0;
	begin();
	while (now(CLOCK_MONOTONIC) - wall0 < 0.3) {
		for (int i = 0; i < tl->n; i++)
			sum += tl->f[i](i);
		// The pages called stay mapped (and cached) until unmapped: the next round maps them again.
		madvise((void *)tl->lo, tl->hi - tl->lo, MADV_DONTNEED);
	}
	end("phase_textfault");
	if (sum == 12345)
		printf("\n");
}

// spinner spins for 0.25 s of its CPU time and measures its wall and CPU time (only that: its
// thread prints them).
__attribute__((noinline)) void spinner(double *wall, double *cpu) {
	double w1 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
	burn(0.25);
	*wall = now(CLOCK_MONOTONIC) - w1, *cpu = now(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static void *spin_thread(void *p) {
	struct start *st = p;
	st->tid = gettid();
	double w0 = st->created, wall, cpu;
	spinner(&wall, &cpu);
	printf("spinner %ld wall %.6f\nspinner %ld cpu %.6f\n", (long)gettid(), wall, (long)gettid(), cpu);
	life(w0);
	return st->arg;
}

// Wait CPU: 4 threads that spin on 2 CPUs.
__attribute__((noinline)) void phase_waitcpu(void) {
	cpu_set_t all, two;
	sched_getaffinity(0, sizeof all, &all);
	CPU_ZERO(&two);
	for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &all))
			CPU_SET(c, &two), k++;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof two, &two);
	pthread_t t[4];
	struct start *st[4];
	for (int i = 0; i < 4; i++)
		st[i] = spawn(&t[i], &a, spin_thread, 0);
	for (int i = 0; i < 4; i++)
		join(t[i], st[i]);
}

// Wait CPU after wakeups: this thread (at SCHED_BATCH, whose wakeups do not preempt) and a thread
// that spins share one CPU; from another CPU a waker sleeps 2 ms, notes the time and writes it to a
// pipe that this thread reads, 100 times (each after this thread's answer): from each write to the
// return of the read this thread waits for the CPU the spinner holds. Prints "phase_wakeup wakewait
// W", the sum of those waits, and "phase_wakeup preempted P", its time off a CPU while it ran between
// its reads (preempted).
static int wake_pipe[2], ack_pipe[2];
static volatile int hog_stop;
static cpu_set_t wake_cpu, waker_cpu;

static void *wake_hog(void *p) {
	struct start *st = p;
	st->tid = gettid();
	sched_setaffinity(0, sizeof wake_cpu, &wake_cpu);
	while (!hog_stop)
		;
	life(st->created);
	return 0;
}

static void *waker(void *p) {
	struct start *st = p;
	st->tid = gettid();
	sched_setaffinity(0, sizeof waker_cpu, &waker_cpu);
	// Real-time where permitted (root), so that no busy neighbour delays its write after its clock
	// reading: that delay would count as a wait of the woken thread here, and not to the kernel.
	struct sched_param rt = {1};
	sched_setscheduler(0, SCHED_FIFO, &rt);
	for (int i = 0; i < 100; i++) {
		struct timespec d = {0, 2000000};
		nanosleep(&d, 0);
		double t = now(CLOCK_MONOTONIC);
		char c;
		if (write(wake_pipe[1], &t, sizeof t) != sizeof t || read(ack_pipe[0], &c, 1) != 1)
			break;
	}
	life(st->created);
	return 0;
}

// wakeup is what the wakeup phase's setup and teardown share.
static struct {
	cpu_set_t all;
	pthread_t h, w;
	struct start *hs, *ws;
	double waited, preempted;
} wk;

// wakeup_setup pins this thread beside a spinner on one CPU, at SCHED_BATCH.
static void wakeup_setup(void) {
	cpu_set_t all;
	sched_getaffinity(0, sizeof all, &all);
	wk.all = all;
	CPU_ZERO(&wake_cpu);
	CPU_ZERO(&waker_cpu);
	int first = -1, last = -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			if (first < 0)
				first = c;
			last = c;
		}
	CPU_SET(last, &wake_cpu);
	CPU_SET(first, &waker_cpu);
	if (pipe(wake_pipe) || pipe(ack_pipe))
		exit(1);
	sched_setaffinity(0, sizeof wake_cpu, &wake_cpu);
	struct sched_param sp = {0};
	sched_setscheduler(0, SCHED_BATCH, &sp);
	wk.hs = spawn(&wk.h, 0, wake_hog, 0);
}

// wakeup_teardown prints what the phase measured, restores this thread and joins the others.
static void wakeup_teardown(void) {
	report();
	printf("phase_wakeup wakewait %.6f\nphase_wakeup preempted %.6f\n", wk.waited, wk.preempted);
	struct sched_param sp = {0};
	sched_setscheduler(0, SCHED_OTHER, &sp);
	sched_setaffinity(0, sizeof wk.all, &wk.all);
	join(wk.w, wk.ws);
	hog_stop = 1;
	join(wk.h, wk.hs);
}

__attribute__((noinline)) void phase_wakeup(void) {
	double waited = 0, preempted = 0;
	begin();
	wk.ws = spawn(&wk.w, 0, waker, 0);
	for (int i = 0; i < 100; i++) {
		double t;
		if (read(wake_pipe[0], &t, sizeof t) != sizeof t)
			break;
		double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
		waited += w0 - t;
		int ok = write(ack_pipe[1], "x", 1) == 1;
		// From the read's return to the next read this thread does not block: its time off a CPU
		// there is preemption.
		preempted += now(CLOCK_MONOTONIC) - w0 - (now(CLOCK_THREAD_CPUTIME_ID) - c0);
		if (!ok)
			break;
	}
	end("phase_wakeup");
	wk.waited = waited, wk.preempted = preempted;
}

// Other Wait: stopped by SIGSTOP until a shell sends SIGCONT 0.5 s later (a program of its own, so
// that its sleep is not under this function in its subexperiment).
static pid_t child;

__attribute__((noinline)) void phase_stopped(void) {
	char cmd[64];
	snprintf(cmd, sizeof cmd, "sleep 0.5; kill -CONT %d", (int)getpid());
	begin();
	pid_t c = fork();
	if (c == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)0);
		_exit(127);
	}
	raise(SIGSTOP);
	end("phase_stopped");
	child = c;
}

// majors prints the thread's major faults since the last call, as "NAME majflt N".
static void majors(const char *name) {
	static long last;
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	printf("%s majflt %ld\n", name, ru.ru_majflt - last);
	last = ru.ru_majflt;
}

int main(int argc, char **argv) {
	double w0 = now(CLOCK_MONOTONIC);
	if (argc != 4) {
		fprintf(stderr, "usage: microstates DATAFILE TEXTLIB FUNCS\n");
		return 2;
	}
	setvbuf(stdout, 0, _IOLBF, 0);
	printf("main %ld\n", (long)gettid());
	phase_spin();
	phase_syscalls();
	phase_sleep();
	report();
	pthread_t t;
	struct start *st = mutex_setup(&t);
	phase_mutex();
	pthread_mutex_unlock(&mu);
	join(t, st);
	phase_cond(&t, &st);
	join(t, st);
	report();
	majors("before");
	phase_datafault(argv[1]);
	majors("phase_datafault");
	struct textlib tl;
	textfault_setup(argv[2], atoi(argv[3]), &tl);
	majors("before");
	phase_textfault(&tl);
	majors("phase_textfault");
	textfault_teardown(&tl);
	report();
	phase_waitcpu();
	wakeup_setup();
	phase_wakeup();
	wakeup_teardown();
	phase_stopped();
	waitpid(child, 0, 0);
	report();
	life(w0);
	return 0;
}
