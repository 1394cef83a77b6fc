/* prog.c and cold.c: the program of the er archive tests; its samples are synthetic, all in work().
 * Build: gcc -O1 -g -o prog prog.c cold.c; gcc -O1 -g -shared -fPIC -o libcold.so cold.c */
int cold(int n);

__attribute__((noinline)) int work(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * i;
	return s;
}

int main(int argc, char **argv) {
	(void)argv;
	return work(argc) + cold(argc);
}
