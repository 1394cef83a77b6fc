/* dso.c: a library that the harness dlopens after er_unwind_init, to test er_unwind_refresh. */
static volatile int dso_sink;

__attribute__((noinline)) void dso_call(void (*fn)(const char *), const char *name)
{
	fn(name);
	dso_sink++; /* not a tail call: this frame stays on the stack */
}
