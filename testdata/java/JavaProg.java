// JavaProg: a Java program that times its own methods, for er's Java view modes (issue 30). Each
// method measures, with its thread's CPU clock (ThreadMXBean), the work it does, and prints one
// line a method:
//
//   java METHOD cpu_ns N
//
// alpha spins in its own loop (it runs interpreted, then compiled on stack replacement); beta calls
// hot, a small method with a loop of its own, which C2 inlines into beta; gamma calls a JNI native
// method (libjavaprog.so, javaprog.c) that spins in C and returns the CPU time it measured.
// Build: javac JavaProg.java; gcc -shared -fPIC -O1 -I$JDK/include -I$JDK/include/linux
// javaprog.c -o libjavaprog.so; run: java -Djava.library.path=. JavaProg [seconds].
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class JavaProg {
    static final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    static volatile double sink;

    static long cpu() { return mx.getCurrentThreadCpuTime(); }

    static native long spinNative(long ns);

    // alpha burns ns of CPU time in its own loop and returns what it measured.
    static long alpha(long ns) {
        long t0 = cpu(), t;
        double x = 1;
        do {
            for (int i = 0; i < 20000; i++)
                x = x * 1.0000001 + 0.5;
            t = cpu();
        } while (t - t0 < ns);
        sink += x;
        return t - t0;
    }

    // hot is inlined into beta by C2: 64 multiply-adds.
    static double hot(double x) {
        for (int i = 0; i < 64; i++)
            x = x * 0.9999999 + 0.25;
        return x;
    }

    // beta calls hot in batches for ns of CPU time; it returns its own time and hot's (the batches').
    static long[] beta(long ns) {
        long t0 = cpu(), inHot = 0, t;
        double s = 0;
        do {
            long a = cpu();
            for (int k = 0; k < 400; k++)
                s = hot(s);
            t = cpu();
            inHot += t - a;
        } while (t - t0 < ns);
        sink += s;
        return new long[] {t - t0, inHot};
    }

    // gamma calls the native method for ns of CPU time.
    static long[] gamma(long ns) {
        long t0 = cpu();
        long inNative = spinNative(ns);
        return new long[] {cpu() - t0, inNative};
    }

    public static void main(String[] args) {
        double secs = args.length > 0 ? Double.parseDouble(args[0]) : 1.0;
        long ns = (long) (secs * 1e9);
        System.loadLibrary("javaprog");
        long t0 = cpu();
        long a = alpha(ns);
        long[] b = beta(ns);
        long[] g = gamma(ns / 2);
        long all = cpu() - t0;
        System.out.println("java JavaProg.alpha cpu_ns " + a);
        System.out.println("java JavaProg.beta cpu_ns " + b[0]);
        System.out.println("java JavaProg.hot cpu_ns " + b[1]);
        System.out.println("java JavaProg.gamma cpu_ns " + g[0]);
        System.out.println("java spin_native cpu_ns " + g[1]);
        System.out.println("java JavaProg.main cpu_ns " + all);
    }
}
