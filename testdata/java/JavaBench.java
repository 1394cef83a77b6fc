// JavaBench: fixed CPU-bound work for the Java overhead benchmark (BenchmarkJava): a sieve of
// primes, word counts in a HashMap of generated strings, and sorts of arrays, some 3 s on one core.
// It prints a checksum, so that the work cannot be skipped.
import java.util.Arrays;
import java.util.HashMap;
import java.util.Random;

public class JavaBench {
    static int sieve(int n) {
        boolean[] comp = new boolean[n + 1];
        int count = 0;
        for (int i = 2; i <= n; i++) {
            if (comp[i])
                continue;
            count++;
            for (long j = (long) i * i; j <= n; j += i)
                comp[(int) j] = true;
        }
        return count;
    }

    static int words(int n, Random r) {
        HashMap<String, Integer> m = new HashMap<>();
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.setLength(0);
            int len = 3 + r.nextInt(5);
            for (int k = 0; k < len; k++)
                sb.append((char) ('a' + r.nextInt(6)));
            m.merge(sb.toString(), 1, Integer::sum);
        }
        return m.size();
    }

    static long sorts(int n, Random r) {
        long sum = 0;
        for (int k = 0; k < 20; k++) {
            int[] a = new int[n];
            for (int i = 0; i < n; i++)
                a[i] = r.nextInt();
            Arrays.sort(a);
            sum += a[n / 2];
        }
        return sum;
    }

    public static void main(String[] args) {
        int scale = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        Random r = new Random(42);
        long check = 0;
        for (int s = 0; s < scale; s++) {
            check += sieve(30_000_000);
            check += words(3_000_000, r);
            check += sorts(1_000_000, r);
        }
        System.out.println("checksum " + check);
    }
}
