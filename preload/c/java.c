/* java.c: the JVMTI agent. er collect loads the collector library into a JVM twice over: preloaded,
 * as into any program, and as the JVM's agent (-agentpath in JAVA_TOOL_OPTIONS, the same file,
 * so the same library instance). The agent records, in the javatrace file, what the stacks that
 * perf samples need to be read as Java: each method (its jmethodID, the JVM's Method* that an
 * interpreter frame holds, its names, source file and line table), each compiled method's code
 * (its address range, the methods inlined at each of its PCs with their bytecode indexes, and its
 * instructions, so that it disassembles after the JVM has exited), the code the JVM generates for
 * itself (the interpreter, adapters, stubs), and which threads are Java threads. It tells er where
 * the interpreter is (ER_MSG_JAVA_INTERP), so that er reads the method of each interpreter frame as
 * it unwinds a sample. The callbacks run on JVM threads outside signal handlers.
 *
 * Built where the JDK's headers are (the Makefile and preload/build.go add -DER_JVMTI); without
 * them the agent refuses to load, and says why. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "collector.h"
#include "unwind.h"

#ifdef ER_JVMTI
#include <jvmti.h>
#include <jvmticmlr.h>

static jvmtiEnv *jv;
static int vm_started; /* VMInit came: the threads started since are the program's */

/* A set of the jmethodIDs whose method record is written, open addressing, mapped once. */
#define SEEN_BITS 20
static uint64_t *seen;
static int seen_lock;
static uint32_t seen_n;

static void lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}
static void unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* first_sight says whether method id is seen for the first time (and marks it seen). With the set
 * full, every sight is a first: the reader keeps the first record of a method. */
static int first_sight(uint64_t id)
{
	if (!seen)
		return 1;
	uint64_t h = id * 0x9e3779b97f4a7c15ull;
	uint32_t mask = (1u << SEEN_BITS) - 1, i = (uint32_t)(h >> (64 - SEEN_BITS));
	int first = 1;
	lock(&seen_lock);
	if (seen_n < mask / 2) {
		for (;; i = (i + 1) & mask) {
			if (seen[i] == id) {
				first = 0;
				break;
			}
			if (seen[i] == 0) {
				seen[i] = id;
				seen_n++;
				break;
			}
		}
	}
	unlock(&seen_lock);
	return first;
}

static void jfree(void *p)
{
	if (p)
		(*jv)->Deallocate(jv, (unsigned char *)p);
}

/* read_self copies n bytes at addr of this process into b, without a fault where addr is not
 * mapped (the JVM's metadata is read where JVMTI does not tell). 0, or -1. */
static int read_self(uint64_t addr, void *b, size_t n)
{
	struct iovec l = {b, n}, r = {(void *)(uintptr_t)addr, n};
	return er_sys(SYS_process_vm_readv, er.pid, (long)&l, 1, (long)&r, 1, 0) == (long)n ? 0 : -1;
}

/* The offset of a method's bytecodes from HotSpot's ConstMethod (the word after a Method's
 * vtable pointer points at it): found once, by finding the bytecodes JVMTI gives of a method
 * there; -1 while not known, -2 where not found (another JVM: the bytecode indexes of
 * interpreter frames are then unknown). */
static int code_off = -1;
static int code_tries;

static uint64_t bytecodes_at(jmethodID m)
{
	uint64_t method = 0, cm = 0;
	if (code_off == -2 || read_self((uint64_t)(uintptr_t)m, &method, 8) || !method || read_self(method + 8, &cm, 8) || !cm)
		return 0;
	if (code_off == -1) {
		jint n = 0;
		unsigned char *bc = NULL;
		if ((*jv)->GetBytecodes(jv, m, &n, &bc) != JVMTI_ERROR_NONE || n < 8) {
			jfree(bc);
			return 0;
		}
		for (int off = 16; off <= 128 && code_off == -1; off += 8) {
			unsigned char w[8];
			if (read_self(cm + (uint64_t)off, w, 8) == 0 && memcmp(w, bc, 8) == 0)
				code_off = off;
		}
		jfree(bc);
		if (code_off == -1 && ++code_tries >= 16)
			code_off = -2;
		if (code_off < 0)
			return 0;
	}
	return cm + (uint64_t)code_off;
}

/* rec_begin and rec_end bracket a record of this thread, as the other tracers do (omp.c). */
static struct er_thread *rec_enter(void)
{
	struct er_thread *t = &er_self;
	if (!er.java || t->busy || er_off())
		return NULL;
	t->busy = 1;
	return er_thread();
}

static void rec_leave(struct er_thread *t) { t->busy = 0; }

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static size_t slen(const char *s, size_t most)
{
	size_t n = s ? strlen(s) : 0;
	return n < most ? n : most;
}

/* The largest record the agent writes: blocks are 64 KiB. */
#define REC_MOST (32 * 1024)

/* method_record writes the record of method m (of class k, class signature csig and source file
 * src) once. */
static void method_record(jmethodID m, const char *csig, const char *src)
{
	if (!m || !first_sight((uint64_t)(uintptr_t)m))
		return;
	char *name = NULL, *sig = NULL;
	if ((*jv)->GetMethodName(jv, m, &name, &sig, NULL) != JVMTI_ERROR_NONE)
		return;
	jint nl = 0;
	jvmtiLineNumberEntry *lines = NULL;
	if ((*jv)->GetLineNumberTable(jv, m, &nl, &lines) != JVMTI_ERROR_NONE)
		nl = 0, lines = NULL;
	jint mods = 0;
	(*jv)->GetMethodModifiers(jv, m, &mods);
	uint64_t code = bytecodes_at(m);
	size_t cl = slen(csig, 4096), nm = slen(name, 4096), sg = slen(sig, 4096), sl = slen(src, 4096);
	size_t most = (REC_MOST - sizeof(struct er_rec_java_method) - cl - nm - sg - sl) / sizeof(struct er_java_line);
	if ((size_t)nl > most)
		nl = (jint)most;
	size_t size = pad8(sizeof(struct er_rec_java_method) + (size_t)nl * sizeof(struct er_java_line) + cl + nm + sg + sl);
	struct er_thread *t = rec_enter();
	if (t) {
		struct er_rec_java_method *r = er_rec_begin(t, SLOT_JAVA, size);
		if (r) {
			r->id = (uint64_t)(uintptr_t)m;
			/* HotSpot's jmethodID points at the slot of its Method*. */
			uint64_t vm = 0;
			r->vm = read_self((uint64_t)(uintptr_t)m, &vm, 8) == 0 ? vm : 0;
			r->code = code;
			r->nlines = (uint32_t)nl;
			r->flags = (mods & 0x0100) ? 1 : 0; /* ACC_NATIVE */
			r->class_len = (uint16_t)cl, r->name_len = (uint16_t)nm, r->sig_len = (uint16_t)sg, r->src_len = (uint16_t)sl;
			struct er_java_line *ln = (struct er_java_line *)(r + 1);
			for (jint i = 0; i < nl; i++) {
				ln[i].bci = (uint32_t)lines[i].start_location;
				ln[i].line = (uint32_t)lines[i].line_number;
			}
			char *p = (char *)(ln + nl);
			memcpy(p, csig, cl), p += cl;
			memcpy(p, name, nm), p += nm;
			memcpy(p, sig, sg), p += sg;
			memcpy(p, src, sl), p += sl;
			memset(p, 0, (size_t)((char *)r + size - p));
			er_rec_commit(t, r, size, ER_REC_JAVA_METHOD, 0, er_now());
		}
		rec_leave(t);
	}
	jfree(name);
	jfree(sig);
	jfree(lines);
}

/* class_record writes the records of class k's methods. */
static void class_record(jclass k)
{
	char *csig = NULL, *src = NULL;
	if ((*jv)->GetClassSignature(jv, k, &csig, NULL) != JVMTI_ERROR_NONE)
		return;
	if ((*jv)->GetSourceFileName(jv, k, &src) != JVMTI_ERROR_NONE)
		src = NULL;
	jint n = 0;
	jmethodID *ms = NULL;
	if ((*jv)->GetClassMethods(jv, k, &n, &ms) == JVMTI_ERROR_NONE)
		for (jint i = 0; i < n; i++)
			method_record(ms[i], csig, src);
	jfree(ms);
	jfree(csig);
	jfree(src);
}

/* method_seen writes the record of method m where it is not written yet: a method of a class
 * that was not prepared in sight of the agent (a hidden class, a lambda form). */
static void method_seen(jmethodID m)
{
	if (!seen || !m)
		return;
	uint64_t id = (uint64_t)(uintptr_t)m;
	uint64_t h = id * 0x9e3779b97f4a7c15ull;
	uint32_t mask = (1u << SEEN_BITS) - 1, i = (uint32_t)(h >> (64 - SEEN_BITS));
	lock(&seen_lock);
	int known = 0;
	for (;; i = (i + 1) & mask) {
		if (seen[i] == id || seen[i] == 0) {
			known = seen[i] == id;
			break;
		}
	}
	unlock(&seen_lock);
	if (known)
		return;
	jclass k = NULL;
	char *csig = NULL, *src = NULL;
	if ((*jv)->GetMethodDeclaringClass(jv, m, &k) == JVMTI_ERROR_NONE && k) {
		(*jv)->GetClassSignature(jv, k, &csig, NULL);
		if ((*jv)->GetSourceFileName(jv, k, &src) != JVMTI_ERROR_NONE)
			src = NULL;
	}
	method_record(m, csig, src);
	jfree(csig);
	jfree(src);
}

/* bytecode_record writes method m's bytecode once, in parts: its disassembly. Only for the
 * methods compiled and inlined (the hot ones), not for every method of every class. */
static void bytecode_record(jmethodID m)
{
	/* A key of its own in the seen table: jmethodIDs are user addresses, below 1 << 63. */
	if (!m || !first_sight((uint64_t)(uintptr_t)m | 1ull << 63))
		return;
	jint n = 0;
	unsigned char *bc = NULL;
	if ((*jv)->GetBytecodes(jv, m, &n, &bc) != JVMTI_ERROR_NONE || n <= 0) {
		jfree(bc);
		return;
	}
	struct er_thread *t = rec_enter();
	if (t) {
		uint64_t now = er_now();
		const size_t part = 16 * 1024;
		for (size_t off = 0; off < (size_t)n; off += part) {
			size_t k = (size_t)n - off < part ? (size_t)n - off : part;
			size_t size = pad8(sizeof(struct er_rec_java_bytecodes) + k);
			struct er_rec_java_bytecodes *r = er_rec_begin(t, SLOT_JAVA, size);
			if (!r)
				break;
			r->method = (uint64_t)(uintptr_t)m;
			r->off = (uint32_t)off;
			r->n = (uint32_t)k;
			memcpy(r + 1, bc + off, k);
			memset((char *)(r + 1) + k, 0, size - sizeof *r - k);
			er_rec_commit(t, r, size, ER_REC_JAVA_BYTECODES, 0, now);
		}
		rec_leave(t);
	}
	jfree(bc);
}

/* bytes_record writes code [addr, addr+n) in parts. */
static void bytes_record(struct er_thread *t, const void *addr, size_t n, uint64_t now)
{
	const size_t part = 16 * 1024;
	for (size_t off = 0; off < n; off += part) {
		size_t k = n - off < part ? n - off : part;
		size_t size = pad8(sizeof(struct er_rec_java_bytes) + k);
		struct er_rec_java_bytes *r = er_rec_begin(t, SLOT_JAVA, size);
		if (!r)
			return;
		r->addr = (uint64_t)(uintptr_t)addr;
		r->off = (uint32_t)off;
		r->n = (uint32_t)k;
		memcpy(r + 1, (const char *)addr + off, k);
		memset((char *)(r + 1) + k, 0, size - sizeof *r - k);
		er_rec_commit(t, r, size, ER_REC_JAVA_BYTES, 0, now);
	}
}

static void JNICALL on_compiled_load(jvmtiEnv *e, jmethodID m, jint size, const void *addr, jint map_n,
				     const jvmtiAddrLocationMap *map, const void *info)
{
	(void)e;
	const jvmtiCompiledMethodLoadInlineRecord *inl = NULL;
	for (const jvmtiCompiledMethodLoadRecordHeader *h = info; h; h = h->next)
		if (h->kind == JVMTI_CMLR_INLINE_INFO)
			inl = (const jvmtiCompiledMethodLoadInlineRecord *)h;
	method_seen(m);
	bytecode_record(m);
	if (inl)
		for (jint i = 0; i < inl->numpcs; i++)
			for (jint d = 0; d < inl->pcinfo[i].numstackframes; d++) {
				method_seen(inl->pcinfo[i].methods[d]);
				bytecode_record(inl->pcinfo[i].methods[d]);
			}
	uint64_t now = er_now();
	struct er_thread *t = rec_enter();
	if (!t)
		return;
	jint npcs = inl ? inl->numpcs : map_n;
	struct er_rec_java_code *c = er_rec_begin(t, SLOT_JAVA, sizeof *c);
	if (c) {
		c->method = (uint64_t)(uintptr_t)m;
		c->addr = (uint64_t)(uintptr_t)addr;
		c->size = (uint32_t)size;
		c->npcs = (uint32_t)npcs;
		er_rec_commit(t, c, sizeof *c, ER_REC_JAVA_CODE, 0, now);
	}
	/* The debug information, in parts of at most 16 KiB: the inlining records where the JVM gives
	 * them, else the method's own bytecode index at each address. */
	jint i = 0;
	while (c && i < npcs) {
		size_t used = sizeof(struct er_rec_java_pcs);
		jint j = i;
		for (; j < npcs; j++) {
			jint depth = inl ? inl->pcinfo[j].numstackframes : 1;
			size_t more = sizeof(struct er_java_pc) + (size_t)depth * sizeof(struct er_java_frame);
			if (used + more > 16 * 1024 && j > i)
				break;
			used += more;
		}
		if (used > REC_MOST)
			break; /* one PC deeper than a record holds */
		struct er_rec_java_pcs *r = er_rec_begin(t, SLOT_JAVA, used);
		if (!r)
			break;
		r->addr = (uint64_t)(uintptr_t)addr;
		r->n = (uint32_t)(j - i);
		r->pad = 0;
		char *p = (char *)(r + 1);
		for (jint k = i; k < j; k++) {
			struct er_java_pc *pc = (struct er_java_pc *)p;
			p += sizeof *pc;
			if (inl) {
				const PCStackInfo *s = &inl->pcinfo[k];
				pc->off = (uint32_t)((uintptr_t)s->pc - (uintptr_t)addr);
				pc->depth = (uint32_t)s->numstackframes;
				for (jint d = 0; d < s->numstackframes; d++) {
					struct er_java_frame *f = (struct er_java_frame *)p;
					p += sizeof *f;
					f->method = (uint64_t)(uintptr_t)s->methods[d];
					f->bci = s->bcis[d];
					f->pad = 0;
				}
			} else {
				pc->off = (uint32_t)((uintptr_t)map[k].start_address - (uintptr_t)addr);
				pc->depth = 1;
				struct er_java_frame *f = (struct er_java_frame *)p;
				p += sizeof *f;
				f->method = (uint64_t)(uintptr_t)m;
				f->bci = (int32_t)map[k].location;
				f->pad = 0;
			}
		}
		er_rec_commit(t, r, used, ER_REC_JAVA_PCS, 0, now);
		i = j;
	}
	if (c)
		bytes_record(t, addr, (size_t)size, now);
	rec_leave(t);
}

static void JNICALL on_compiled_unload(jvmtiEnv *e, jmethodID m, const void *addr)
{
	(void)e;
	struct er_thread *t = rec_enter();
	if (!t)
		return;
	struct er_rec_java_unload *r = er_rec_begin(t, SLOT_JAVA, sizeof *r);
	if (r) {
		r->method = (uint64_t)(uintptr_t)m;
		r->addr = (uint64_t)(uintptr_t)addr;
		er_rec_commit(t, r, sizeof *r, ER_REC_JAVA_UNLOAD, 0, er_now());
	}
	rec_leave(t);
}

static void JNICALL on_dynamic_code(jvmtiEnv *e, const char *name, const void *addr, jint len)
{
	(void)e;
	if (name && strcmp(name, "Interpreter") == 0 && er.java) {
		er_send(ER_MSG_JAVA_INTERP, (uint32_t)len, 0, (uint64_t)(uintptr_t)addr);
		/* And for the library's own stacks (traced calls): its frames' methods. */
		er_unwind_interpreter((uint64_t)(uintptr_t)addr, (uint64_t)(uintptr_t)addr + (uint64_t)len);
	}
	uint64_t now = er_now();
	struct er_thread *t = rec_enter();
	if (!t)
		return;
	size_t nl = slen(name, 1024), size = pad8(sizeof(struct er_rec_java_stub) + nl);
	struct er_rec_java_stub *r = er_rec_begin(t, SLOT_JAVA, size);
	if (r) {
		r->addr = (uint64_t)(uintptr_t)addr;
		r->size = (uint32_t)len;
		r->name_len = (uint32_t)nl;
		memcpy(r + 1, name, nl);
		memset((char *)(r + 1) + nl, 0, size - sizeof *r - nl);
		er_rec_commit(t, r, size, ER_REC_JAVA_STUB, 0, now);
	}
	/* The interpreter's code is large (some 100 KiB) and of no use to disassemble by PC. */
	if (r && len > 0 && len <= 64 * 1024)
		bytes_record(t, addr, (size_t)len, now);
	rec_leave(t);
}

/* thread_record says that the calling thread is Java thread th. */
static void thread_record(jthread th)
{
	jvmtiThreadInfo ti;
	memset(&ti, 0, sizeof ti);
	if ((*jv)->GetThreadInfo(jv, th, &ti) != JVMTI_ERROR_NONE)
		return;
	uint32_t flags = ti.is_daemon ? 1 : 0;
	jvmtiThreadGroupInfo gi;
	memset(&gi, 0, sizeof gi);
	if (ti.thread_group && (*jv)->GetThreadGroupInfo(jv, ti.thread_group, &gi) == JVMTI_ERROR_NONE) {
		if (gi.name && strcmp(gi.name, "system") == 0)
			flags |= 2; /* Reference Handler, Finalizer, Signal Dispatcher, Common-Cleaner */
		jfree(gi.name);
	}
	if (!vm_started)
		flags |= 2;
	struct er_thread *t = rec_enter();
	if (t) {
		size_t nl = slen(ti.name, 1024), size = pad8(sizeof(struct er_rec_java_thread) + nl);
		struct er_rec_java_thread *r = er_rec_begin(t, SLOT_JAVA, size);
		if (r) {
			r->name_len = (uint32_t)nl;
			r->flags = flags;
			memcpy(r + 1, ti.name, nl);
			memset((char *)(r + 1) + nl, 0, size - sizeof *r - nl);
			er_rec_commit(t, r, size, ER_REC_JAVA_THREAD, 0, er_now());
		}
		rec_leave(t);
	}
	jfree(ti.name);
}

static void JNICALL on_thread_start(jvmtiEnv *e, JNIEnv *jni, jthread th)
{
	(void)e, (void)jni;
	thread_record(th);
}

static void JNICALL on_class_prepare(jvmtiEnv *e, JNIEnv *jni, jthread th, jclass k)
{
	(void)e, (void)jni, (void)th;
	class_record(k);
}

static void JNICALL on_vm_init(jvmtiEnv *e, JNIEnv *jni, jthread th)
{
	(void)e, (void)jni;
	jint n = 0;
	jclass *ks = NULL;
	if ((*jv)->GetLoadedClasses(jv, &n, &ks) == JVMTI_ERROR_NONE)
		for (jint i = 0; i < n; i++)
			class_record(ks[i]);
	jfree(ks);
	vm_started = 1;
	thread_record(th); /* main */
	/* What was compiled before: the reader keeps one record of each code. */
	(*jv)->GenerateEvents(jv, JVMTI_EVENT_COMPILED_METHOD_LOAD);
}

/* Agent_OnLoad starts the agent in a JVM that loads the library with -agentpath. A library that
 * records no Java (er collect -j off, or a JVM that er does not record) lets the JVM run as
 * without it. */
ER_EXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	(void)options, (void)reserved;
	if (!er.java || jv)
		return JNI_OK;
	if ((*vm)->GetEnv(vm, (void **)&jv, JVMTI_VERSION_1_2) != JNI_OK || !jv) {
		er_note("java", "no JVMTI environment: Java methods are not recorded");
		jv = NULL;
		return JNI_OK;
	}
	void *p = (void *)er_sys(SYS_mmap, 0, sizeof(uint64_t) << SEEN_BITS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	seen = (unsigned long)p > -4096UL ? NULL : p;
	jvmtiCapabilities caps;
	memset(&caps, 0, sizeof caps);
	caps.can_generate_compiled_method_load_events = 1;
	caps.can_get_source_file_name = 1;
	caps.can_get_line_numbers = 1;
	caps.can_get_bytecodes = 1;
	if ((*jv)->AddCapabilities(jv, &caps) != JVMTI_ERROR_NONE)
		er_note("java", "the JVM refused the capabilities for compiled methods and lines");
	jvmtiEventCallbacks cb;
	memset(&cb, 0, sizeof cb);
	cb.VMInit = on_vm_init;
	cb.ClassPrepare = on_class_prepare;
	cb.CompiledMethodLoad = on_compiled_load;
	cb.CompiledMethodUnload = on_compiled_unload;
	cb.DynamicCodeGenerated = on_dynamic_code;
	cb.ThreadStart = on_thread_start;
	(*jv)->SetEventCallbacks(jv, &cb, sizeof cb);
	const jvmtiEvent evs[] = {JVMTI_EVENT_VM_INIT, JVMTI_EVENT_CLASS_PREPARE, JVMTI_EVENT_COMPILED_METHOD_LOAD,
				  JVMTI_EVENT_COMPILED_METHOD_UNLOAD, JVMTI_EVENT_DYNAMIC_CODE_GENERATED, JVMTI_EVENT_THREAD_START};
	for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
		(*jv)->SetEventNotificationMode(jv, JVMTI_ENABLE, evs[i], NULL);
	return JNI_OK;
}

#else

/* Built without the JDK's headers: the agent cannot start. */
ER_EXPORT int Agent_OnLoad(void *vm, char *options, void *reserved)
{
	(void)vm, (void)options, (void)reserved;
	if (er.java)
		er_note("java", "this collector library was built without the JDK's headers: Java methods are not recorded");
	return 0;
}

#endif
