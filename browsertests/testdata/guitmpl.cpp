// guitmpl.cpp: a C++ function template for guiprog.c, so that the profile has a function whose
// name holds <, > and & (the page must show them as text).
// Build: g++ -O1 -g -fno-omit-frame-pointer -fno-inline -c guitmpl.cpp

template <typename T> struct Box {
	T v;
};

template <typename T, typename U> __attribute__((noinline)) U accumulate(const Box<T> &b, U n) {
	U s = 0;
	for (U i = 0; i < n; i++)
		s += i * b.v; // accumulate's loop
	return s;
}

extern "C" unsigned long tmpl_work(unsigned long n) {
	static volatile int seed = 3;
	Box<int> b{seed};
	return accumulate<int, unsigned long>(b, n);
}
