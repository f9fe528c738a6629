/*
 * Wk0000.java - the template of tests/helpers/java/Unload's generations:
 * Unload defines this class's bytes again under the names Wk0001,
 * Wk0002, ... (the name is six bytes in each place the class file holds
 * it), one class loader each, so every generation has the same shape and
 * HotSpot lays out its metadata the same way where a freed one was.
 */
public class Wk0000 implements Runnable {
    static long sink;

    public void run() {
        long s = sink;
        for (int i = 0; i < 200000; i++)
            s = s * 6364136223846793005L + i;
        sink = s;
    }
}
