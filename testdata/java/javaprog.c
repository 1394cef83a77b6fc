/* javaprog.c: the JNI native method of JavaProg.java: JavaProg.spinNative(ns) burns ns of the
 * thread's CPU time in spin_native and returns what it measured (CLOCK_THREAD_CPUTIME_ID). */
#include <jni.h>
#include <time.h>

static long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile double sink;

__attribute__((noinline)) long long spin_native(long long ns)
{
	long long t0 = cpu_ns(), t;
	double x = 1;
	do {
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5;
		t = cpu_ns();
	} while (t - t0 < ns);
	sink = x;
	return t - t0;
}

JNIEXPORT jlong JNICALL Java_JavaProg_spinNative(JNIEnv *env, jclass cls, jlong ns)
{
	(void)env, (void)cls;
	return spin_native(ns);
}
