/*
 * Unload.java - JVM workloads for tests/integration/sampler_java_many.sh.
 *
 *   java -cp DIR Unload unload GENS MS
 *     GENS generations, one after the other: the class Wk0000 (its bytes
 *     read from DIR) defined again as Wk<g> by a class loader of its own,
 *     run until the thread has used MS ms of CPU (in slices of 50 ms of
 *     wall clock under its driver: a busy host slows a generation down
 *     but does not thin its samples), then dropped and collected until
 *     the class is unloaded. Odd generations run under Unload.driveOdd, even
 *     ones under Unload.driveEven: a frame of one generation's class
 *     named with another's name shows as Wk<odd> under driveEven or the
 *     reverse. Prints "gen G unloaded true|false" per generation and
 *     "unloaded N", the JVM's count of classes unloaded.
 *     Prints "gen G cpu_ms C wall_ms W" as each generation ends.
 *
 *   java -cp DIR Unload many MS
 *     spins in Unload.many until the thread has used MS ms of CPU, then
 *     exits (one of many JVMs at once).
 */
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.ref.WeakReference;
import java.nio.charset.StandardCharsets;

public class Unload {
    static volatile long sink;
    static byte[] template;

    static class Loader extends ClassLoader {
        final String name;
        final byte[] bytes;

        Loader(String name, byte[] bytes) {
            super(Unload.class.getClassLoader());
            this.name = name;
            this.bytes = bytes;
        }

        @Override
        protected Class<?> findClass(String n) throws ClassNotFoundException {
            if (!n.equals(name))
                throw new ClassNotFoundException(n);
            return defineClass(n, bytes, 0, bytes.length);
        }
    }

    static byte[] readTemplate() throws Exception {
        try (InputStream in = Unload.class.getResourceAsStream("/Wk0000.class")) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            return out.toByteArray();
        }
    }

    /* The template with every "Wk0000" replaced by to (six bytes). */
    static byte[] renamed(String to) {
        byte[] from = "Wk0000".getBytes(StandardCharsets.US_ASCII);
        byte[] by = to.getBytes(StandardCharsets.US_ASCII);
        byte[] b = template.clone();
        for (int i = 0; i + from.length <= b.length; i++) {
            int k = 0;
            while (k < from.length && b[i + k] == from[k])
                k++;
            if (k == from.length)
                System.arraycopy(by, 0, b, i, by.length);
        }
        return b;
    }

    static void driveOdd(Runnable r, long until) {
        while (System.nanoTime() < until)
            r.run();
    }

    static void driveEven(Runnable r, long until) {
        while (System.nanoTime() < until)
            r.run();
    }

    /* Kept out of main's frame: nothing of the generation outlives it
     * but the weak reference. */
    static WeakReference<Class<?>> generation(int g, long ms) throws Exception {
        String name = String.format("Wk%04d", g);
        Class<?> c = new Loader(name, renamed(name)).loadClass(name);
        Runnable r = (Runnable) c.getDeclaredConstructor().newInstance();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long cpu0 = mx.getCurrentThreadCpuTime(), wall0 = System.nanoTime(), cpu;
        while ((cpu = mx.getCurrentThreadCpuTime() - cpu0) < ms * 1_000_000L) {
            long until = System.nanoTime() + 50_000_000L;
            if (g % 2 == 1)
                driveOdd(r, until);
            else
                driveEven(r, until);
        }
        System.out.println("gen " + g + " cpu_ms " + cpu / 1_000_000L + " wall_ms " +
                           (System.nanoTime() - wall0) / 1_000_000L);
        return new WeakReference<>(c);
    }

    static void many(long ms) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long end = mx.getCurrentThreadCpuTime() + ms * 1_000_000L;
        long s = 0;
        while (mx.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 100000; i++)
                s = s * 6364136223846793005L + i;
        sink = s;
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("many")) {
            many(Long.parseLong(args[1]));
            return;
        }
        int gens = Integer.parseInt(args[1]);
        long ms = Long.parseLong(args[2]);
        template = readTemplate();
        for (int g = 1; g <= gens; g++) {
            WeakReference<Class<?>> ref = generation(g, ms);
            for (int t = 0; t < 100 && ref.get() != null; t++) {
                System.gc();
                Thread.sleep(10);
            }
            System.out.println("gen " + g + " unloaded " + (ref.get() == null));
        }
        System.out.println("unloaded " + ManagementFactory.getClassLoadingMXBean().getUnloadedClassCount());
    }
}
