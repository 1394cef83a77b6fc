// JavaSync: Java threads that wait for a monitor, in Object.wait and in Thread.join, and time
// their waits (System.nanoTime: a wait's time is wall time), for er's Java synchronization test
// (cmd/er/java_test.go, TestJavaSync). It prints "java NAME wait_ns N".
public class JavaSync {
    static final Object lock = new Object();
    static long counter;
    static long contended; // ns the workers waited to enter the monitor (all of them)

    static void holdLock() {
        long a = System.nanoTime();
        synchronized (lock) {
            long b = System.nanoTime();
            synchronized (JavaSync.class) {
                contended += b - a;
            }
            long end = b + 20_000_000L;
            while (System.nanoTime() < end)
                counter++;
        }
    }

    static long waiter() throws InterruptedException {
        synchronized (lock) {
            long a = System.nanoTime();
            lock.wait(300);
            return System.nanoTime() - a;
        }
    }

    public static void main(String[] args) throws Exception {
        Thread[] ts = new Thread[2];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                for (int k = 0; k < 10; k++)
                    holdLock();
            }, "worker-" + i);
            ts[i].start();
        }
        long a = System.nanoTime();
        for (Thread t : ts)
            t.join();
        long joined = System.nanoTime() - a;
        long waited = waiter();
        System.out.println("java JavaSync.waiter wait_ns " + waited);
        System.out.println("java Thread.join wait_ns " + joined);
        System.out.println("java JavaSync.holdLock wait_ns " + contended);
        System.out.println("counter " + (counter > 0));
    }
}
