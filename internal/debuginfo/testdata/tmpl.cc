// Test fixture for package debuginfo: C++ templates, an inlined template
// member, and a lambda. Built by the tests: g++ -O2 -g -o tmpl tmpl.cc
#include <cstdio>
#include <vector>

volatile int sink;

template <typename T> __attribute__((noinline)) T twice(T x) {
	return x + x;                    // MARK twice_body
}

template <typename T> struct Acc {
	T total{};
	void add(T v) { total += v * 2; sink = 1; } // MARK acc_add
};

__attribute__((noinline)) long sum_acc(const std::vector<long> &v) {
	Acc<long> a;
	for (long x : v)
		a.add(x);                    // MARK call_add
	return a.total;
}

__attribute__((noinline)) int apply(int n) {
	auto f = [n](int k) { sink = k; return k * n; }; // MARK lambda_body
	int s = 0;
	for (int i = 0; i < n; i++)
		s += f(i);
	return s;
}

int main(int argc, char **) {
	std::vector<long> v{1, 2, 3, argc};
	std::printf("%d %g %ld %d\n", twice(argc), twice(argc * 0.5), sum_acc(v), apply(argc + 3));
	return 0;
}
