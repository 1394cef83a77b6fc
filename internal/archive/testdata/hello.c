// Test fixture for package archive. Built by the tests:
// gcc -O2 -Wl,--build-id=0xfeedface01 -o hello hello.c
#include <stdio.h>

__attribute__((noinline)) int work(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i ^ (s << 1);
	return s;
}

int main(int argc, char **argv) {
	printf("%d %s\n", work(argc * 1000), argv[0]);
	return 0;
}
