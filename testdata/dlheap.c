/* dlheap.c: a program that loads a plug-in with dlopen after it started, and leaks memory
 * allocated in it: the leak's stack must go through the plug-in's function, by name. Built as the
 * plug-in with -DPLUGIN -shared, and as the program.
 * Build: gcc -O2 -g -shared -fPIC -DPLUGIN -o libplugin.so dlheap.c; gcc -O2 -g -o dlheap dlheap.c */
#include <stdlib.h>
#ifdef PLUGIN
void *volatile plugin_kept;
__attribute__((noipa)) void plugin_alloc(void) {
	plugin_kept = malloc(777);
}
#else
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*f)(void) = (void (*)(void))dlsym(h, "plugin_alloc");
	f();
	return 0;
}
#endif
