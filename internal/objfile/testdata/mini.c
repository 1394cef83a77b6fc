/* mini.c: the source of mini.elf, a seed and fixture for MiniDebugInfo (.gnu_debugdata). Built
 * without libc so that it is small, stripped of every symbol, with the .symtab of its local
 * functions xz-compressed into .gnu_debugdata as Fedora's find-debuginfo does:
 *
 *   gcc -O1 -nostdlib -static -fno-asynchronous-unwind-tables -Wl,--build-id=none,-n -o mini.elf mini.c
 *   echo helper > keep && echo _start >> keep
 *   objcopy --only-keep-debug mini.elf mini && objcopy -S --keep-symbols=keep mini mini.debug
 *   xz -T1 mini.debug && strip --strip-all mini.elf
 *   objcopy --add-section .gnu_debugdata=mini.debug.xz mini.elf
 */
static __attribute__((noinline)) int helper(int x) { return x * 3 + 1; }

void _start(void) {
	volatile int r = helper(2);
	(void)r;
	for (;;) {
	}
}
