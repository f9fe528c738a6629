/*
 * Known.java - a JVM with a known answer, for sampler/java/'s tests
 * (tests/unit/test_hotspot*.c). Started as
 *
 *   java -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Known::heavy
 *        -XX:CompileCommand=dontinline,Known::light -cp DIR Known LIBJNI
 *
 * (plus -Xint or -XX:TieredStopAtLevel=1 for the interpreter-only and
 * C1-only phases), it runs:
 *
 *  - k-hot: heavy() then light(), 10:1 in work; each call timed with the
 *    thread's own CPU clock (ThreadMXBean), totals printed on "times";
 *  - k-jni: a loop through native code and back: Java -> native
 *    (Known.down) -> C -> CallStaticLongMethod -> call stub -> Java
 *    (Known.up), which works;
 *    both run only while told to ("spin MS"; the first half second after the
 *    start too, for the compilers), and sleep otherwise: a test pays for
 *    the CPU it samples, not more;
 *  - k-deep: a stack that stays put once warm: d1 -> d2 -> d3 -> down
 *    (JNI) -> up -> u1 -> u2 -> park (JNI, pauses in C forever), after
 *    warming every method of the chain so that the compilers have had
 *    them (the last call takes the parking path);
 *    d2 calls Shape.area, which the compilers inline while Sq is its only
 *    implementation: "deopt" loads Circle, and HotSpot deoptimizes the
 *    parked compiled frames (their return addresses now lead to the
 *    deopt handler, their original pcs saved in the frame);
 *  - k-holder holds a lock and sleeps; k-blocked waits for that lock;
 *  - k-parker parks 20 ms at a time (LockSupport.parkNanos, the way
 *    java.util.concurrent waits), off CPU nearly all its life.
 *
 * Commands on stdin: "dump" prints every thread's Java stack as the JVM
 * sees it (Thread.getAllStackTraces), "times" the CPU totals of heavy
 * and light, "spin MS" lets k-hot and k-jni run for MS milliseconds,
 * "deep" says whether k-deep parked, "deopt" loads Circle, "quit" exits.
 * Each answer ends with a line "end".
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

public class Known {
    static native long down(long n, boolean park);
    static native void park();

    static volatile long sink;
    static volatile boolean deepReady;
    static volatile long heavyNs, lightNs, heavyCalls, lightCalls;
    static final Object lock = new Object();
    static volatile long spinUntil = System.nanoTime() + 500_000_000L;

    /* Until the spinning threads are told to run. */
    static void awaitSpin() {
        while (System.nanoTime() - spinUntil > 0) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
            }
        }
    }

    /* 10 units of work (n = 10 units). */
    static long heavy(long seed, int n) {
        long s = seed;
        for (int i = 0; i < n; i++) {
            s = s * 6364136223846793005L + 1442695040888963407L;
            s ^= s >>> 29;
        }
        return s;
    }

    /* 1 unit of work (n = 1 unit). */
    static long light(long seed, int n) {
        long s = seed;
        for (int i = 0; i < n; i++) {
            s = s * 6364136223846793005L + 1442695040888963407L;
            s ^= s >>> 29;
        }
        return s;
    }

    static void hot() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long s = 1, r = 0x9e3779b97f4a7c15L;
        for (;;) {
            awaitSpin();
            /* A unit of 10k-30k iterations drawn per cycle, the same for
             * both calls: a cycle of fixed length near a multiple of the
             * sampling period (interpreted, a cycle takes tens of ms)
             * aliases with it, and the samples' share strays far from
             * the binomial band the test judges it by. */
            r ^= r << 13;
            r ^= r >>> 7;
            r ^= r << 17;
            int unit = 10000 + (int) ((r >>> 33) % 20000);
            long t0 = mx.getCurrentThreadCpuTime();
            s = heavy(s, 10 * unit);
            long t1 = mx.getCurrentThreadCpuTime();
            s = light(s, unit);
            long t2 = mx.getCurrentThreadCpuTime();
            heavyNs += t1 - t0;
            lightNs += t2 - t1;
            heavyCalls++;
            lightCalls++;
            sink = s;
        }
    }

    /* Called back from C (known_jni.c) with the park flag it was given. */
    static long up(long n, boolean park) {
        if (park)
            return u1(n);
        long s = n;
        for (int i = 0; i < 2000; i++)
            s = s * 31 + i;
        return s;
    }

    static long u1(long n) { return u2(n) + 1; }

    static long u2(long n) {
        park();
        return n;
    }

    static abstract class Shape {
        abstract long area(long n);
    }

    static class Sq extends Shape {
        long area(long n) { return n * n; }
    }

    static class Circle extends Shape {
        long area(long n) { return 3 * n * n; }
    }

    static Shape shape = new Sq();

    static long d1(long n, boolean park) { return d2(n, park) + 1; }
    static long d2(long n, boolean park) { return d3(n + shape.area(n & 7), park) * 3; }
    static long d3(long n, boolean park) { return down(n, park) ^ 5; }

    static void jniLoop() {
        long s = 0;
        for (;;) {
            awaitSpin();
            for (int i = 0; i < 100; i++)
                s += down(s, false);
        }
    }

    static void deep() {
        long s = 0;
        /* Warm: the compilers see the chain called through JNI often. */
        for (int i = 0; i < 30000; i++)
            s += d1(i, false);
        sink = s;
        deepReady = true;
        d1(s, true);
    }

    static void holder() {
        synchronized (lock) {
            for (;;) {
                try {
                    Thread.sleep(100000);
                } catch (InterruptedException e) {
                }
            }
        }
    }

    static void blocked() {
        synchronized (lock) {
            sink++;
        }
    }

    static void parker() {
        for (;;)
            LockSupport.parkNanos(20_000_000L);
    }

    static Thread start(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        start("k-hot", Known::hot);
        start("k-jni", Known::jniLoop);
        start("k-deep", Known::deep);
        start("k-holder", Known::holder);
        Thread.sleep(50);
        start("k-blocked", Known::blocked);
        start("k-parker", Known::parker);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("dump")) {
                for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                    System.out.println("T " + e.getKey().getName() + " " + e.getKey().getState());
                    for (StackTraceElement f : e.getValue())
                        System.out.println("F " + f.getClassName() + "." + f.getMethodName() + " " +
                                           f.getFileName() + " " + f.getLineNumber());
                }
            } else if (line.equals("times")) {
                System.out.println("heavy " + heavyNs + " " + heavyCalls);
                System.out.println("light " + lightNs + " " + lightCalls);
            } else if (line.startsWith("spin ")) {
                spinUntil = System.nanoTime() + Long.parseLong(line.substring(5)) * 1_000_000L;
            } else if (line.equals("deopt")) {
                /* By name: a `new Circle()` here would have the verifier
                 * load Circle with Known, before anything was compiled. */
                Shape c = (Shape) Class.forName("Known$Circle").getDeclaredConstructor().newInstance();
                sink += c.area(2);
            } else if (line.equals("deep")) {
                System.out.println("deep " + deepReady);
            } else if (line.equals("quit")) {
                System.out.println("end");
                System.out.flush();
                System.exit(0);
            }
            System.out.println("end");
            System.out.flush();
        }
    }
}
