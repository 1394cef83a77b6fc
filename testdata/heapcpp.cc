// heapcpp.cc: C++ new and delete go through malloc and free, so heap tracing sees them: one
// function leaks, one frees all it allocates. It prints its counts as testdata/heap.c does.
// Build: g++ -O1 -g -fno-omit-frame-pointer -fno-inline -o heapcpp heapcpp.cc
#include <cstdio>
#include <unistd.h>

struct Node {
	long a, b, c;
};

static Node *volatile kept;
static int *volatile kept_array;

__attribute__((noipa)) void cpp_leak() {
	kept = new Node{1, 2, 3};   // 24 bytes, leaked
	kept_array = new int[100];  // 400 bytes, leaked
}

__attribute__((noipa)) void cpp_clean() {
	for (int i = 0; i < 10; i++) {
		Node *volatile n = new Node{i, i, i};
		delete n;
		int *volatile a = new int[10 + i];
		delete[] a;
	}
}

int main() {
	cpp_leak();
	cpp_clean();
	// cpp_clean: 10 Nodes of 24 bytes and arrays of 10..19 ints.
	long clean_bytes = 10 * 24;
	for (int i = 0; i < 10; i++)
		clean_bytes += 4 * (10 + i);
	char out[256];
	int n = snprintf(out, sizeof out,
			 "expect cpp_leak allocs 2 bytes 424 leaks 2 leaked 424\n"
			 "expect cpp_clean allocs 20 bytes %ld leaks 0 leaked 0\n",
			 clean_bytes);
	return write(1, out, n) == n ? 0 : 1;
}
