// Test fixture for package objfile: C++ names with namespaces and templates.
// Built by the tests: g++ -O1 -o progxx prog.cc
#include <cstdio>
#include <vector>

namespace ns {
template <typename T> struct Box {
	T v;
	__attribute__((noinline)) T get() const { return v; }
};

template <typename T> __attribute__((noinline)) T twice(T x) { return x + x; }

__attribute__((noinline)) int plain(int a, double b) { return a + (int)b; }
} // namespace ns

int main(int argc, char **) {
	ns::Box<int> b{argc};
	ns::Box<double> d{1.5};
	std::vector<int> v{1, 2, 3};
	v.push_back(argc);
	std::printf("%d %g %d %ld\n", b.get(), d.get(), ns::twice<long>(argc) > 0 ? ns::plain(argc, 2.0) : 0, (long)v.size());
	return 0;
}
