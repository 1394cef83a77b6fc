/* collectorAPI.h: the part of the collector API that er's collector library implements, for
 * programs that generate code at run time: name each function you generate, so that er's reports
 * and disassembly show it (docs/java.md, "Dynamic functions").
 *
 *   #include "collectorAPI.h"
 *   collector_func_load("my_kernel", NULL, "kernels.c", code, size, 0, NULL);
 *   ... run it ...
 *   collector_func_unload(code);   // before the memory holds other code
 *
 * The functions are weak: a program built with this header runs unchanged without er, where the
 * calls do nothing. Under er collect, the library copies the function's instructions at the call
 * (so its code disassembles after the program has exited) and its line table. Linking needs no
 * library; er collect loads its own into a program that calls these. */
#ifndef COLLECTOR_API_H
#define COLLECTOR_API_H

#ifdef __cplusplus
extern "C" {
#endif

/* A line-table entry: the instructions from offset on (bytes from the function's start) are of
 * source line lineno. */
typedef struct {
	unsigned int offset;
	unsigned int lineno;
} Lineno;

/* collector_func_load says that [vaddr, vaddr+size) now holds function name (alias: another name
 * for it, which er keeps but does not show; sourcename: its source file, or NULL), whose lines
 * lntable gives (lntsize entries, offsets ascending; 0 and NULL: none). */
void collector_func_load(const char *name, const char *alias, const char *sourcename, void *vaddr, int size,
			 int lntsize, const Lineno *lntable) __attribute__((weak));

/* collector_func_unload says that the function loaded at vaddr is gone. */
void collector_func_unload(void *vaddr) __attribute__((weak));

/* Without er's library the weak functions are null: the calls do nothing. */
#define collector_func_load(name, alias, src, vaddr, size, n, lines)                                             \
	((collector_func_load) ? (collector_func_load)((name), (alias), (src), (vaddr), (size), (n), (lines)) : (void)0)
#define collector_func_unload(vaddr) ((collector_func_unload) ? (collector_func_unload)(vaddr) : (void)0)

#ifdef __cplusplus
}
#endif
#endif
