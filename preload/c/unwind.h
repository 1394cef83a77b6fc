/* unwind.h: the collector library's in-process stack unwinder (DWARF CFI, x86-64 Linux). */
#ifndef ER_UNWIND_H
#define ER_UNWIND_H

#include <stdint.h>

#include "trace.h" /* ER_PC_TRUNCATED and ER_PC_FAILED, the pseudo-frames that end a stack whose unwinding stopped early */

/* Hidden by default: the collector library calls these and exports nothing of its own. A test
 * that links against the unwinder as a shared library defines ER_UNWIND_API to export them. */
#ifndef ER_UNWIND_API
#define ER_UNWIND_API __attribute__((visibility("hidden")))
#endif

/* Builds the table of loaded modules (text ranges, .eh_frame_hdr search tables, load biases).
 * Call once, outside signal context, before the first unwind (the library constructor does). */
ER_UNWIND_API void er_unwind_init(void);

/* Rebuilds the module table after dlopen or dlclose (not from a signal handler). The new table
 * replaces the old one with an atomic pointer swap; old tables are never freed. Cached rules of
 * the old table are dropped. Until the next refresh, a PC in a module loaded since then has no CFI
 * (frame-pointer fallback, else an unwind-failed frame). */
ER_UNWIND_API void er_unwind_refresh(void);

/* Unwinds the calling thread's stack. Leaf first: with skip = 0, pcs[0] is the return address of
 * er_backtrace itself (a PC in its caller, like glibc backtrace()'s buffer[0]), pcs[1] the return
 * address of that caller, and so on down to the outermost frame (_start, or the thread start
 * under clone/clone3). skip drops that many of these first entries. Returns the number of entries
 * written (at most max); when the unwind stopped early the last one is ER_PC_TRUNCATED or
 * ER_PC_FAILED. Through a signal frame the list goes on as backtrace() does: the sigreturn
 * trampoline's address, then the interrupted PC, then return addresses. Async-signal-safe. */
ER_UNWIND_API int er_backtrace(uint64_t *pcs, int max, int skip);

/* For a signal handler: unwinds the interrupted code from its ucontext_t (the handler's third
 * argument). pcs[0] is the interrupted PC (REG_RIP), then return addresses, with the same
 * pseudo-frames and return value as er_backtrace. Async-signal-safe. */
ER_UNWIND_API int er_unwind_context(const void *ucontext, uint64_t *pcs, int max);

/* A JVM's interpreter, [lo, hi): after a frame of it, the unwinders write the method it runs and
 * the bytecode pointer, read from its frame (HotSpot's x86-64 layout), as the symbolic frames
 * ER_JAVA_METHOD_FRAME and ER_JAVA_BCP_FRAME of the method's Method* and of the bytecode pointer,
 * which er's reader turns into the Java method (docs/java.md). Set by the JVMTI agent. */
ER_UNWIND_API void er_unwind_interpreter(uint64_t lo, uint64_t hi);
#define ER_JAVA_METHOD_FRAME(m) (0x8000000000000000ull | ((m) & ((1ull << 47) - 1)))
#define ER_JAVA_BCP_FRAME(b) (0x8000000000000000ull | (1ull << 47) | ((b) & ((1ull << 47) - 1)))

#endif
