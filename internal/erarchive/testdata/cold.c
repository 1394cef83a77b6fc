/* cold.c: a function of the er archive tests that has no samples. See prog.c. */
__attribute__((noinline)) int cold(int n) {
	return n * 3;
}
