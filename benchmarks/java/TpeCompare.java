import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.RejectedExecutionHandler;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Java side of the BoundedExecutor comparison: time per item of a fixed-size {@link ThreadPoolExecutor} fed by
 * dedicated producer threads, with the same shapes, item counts and method as the .NET harness
 * ({@code BoundedWork.Benchmarks compare}).
 *
 * <p>Method, per producers/workers shape:
 * <ul>
 *   <li>{@code new ThreadPoolExecutor(w, w, 0, ms, new LinkedBlockingQueue<>(1024), factory, BLOCK)} with every
 *       core thread started up front. Producers call {@code execute(item)}; when the queue is full the pool
 *       hands the task to the {@code BLOCK} handler, which waits for room with {@code queue.put} (the usual
 *       "caller blocks" idiom for a bounded queue: the executor has no waiting policy of its own).</li>
 *   <li>The item is one shared {@link Runnable} (nothing allocated per item). {@code --item counter}, the default:
 *       it increments one {@link AtomicLong} that every worker shares, a little real work with the cache-line
 *       traffic of real shared state, and each round checks that the counter rose by exactly N.
 *       {@code --item empty}: a no-op.</li>
 *   <li>One round: the clock starts, P producers submit N items between them, then the main thread submits W
 *       fence tasks that each wait on a barrier of W + 1 parties and joins that barrier. The queue is FIFO and
 *       there are exactly W workers, so when all W are inside a fence task every earlier item has run; the
 *       clock stops there. After the clock stops, the round is checked: an empty queue at the fence, then exactly
 *       N + W more completed tasks.</li>
 *   <li>Warm-up rounds (not reported), then measured rounds; prints the median and the minimum ns/item.</li>
 * </ul>
 *
 * <p>Output: comment lines start with '#'; each shape gives one tab-separated line
 * {@code RESULT <contender> <producers>/<workers> <median ns/item> <min ns/item> <rounds> <items>}.
 */
public final class TpeCompare {
    private static final int CAPACITY = 1024;
    private static final Runnable EMPTY = () -> { };
    private static final AtomicLong COUNT = new AtomicLong();
    private static final Runnable INCREMENT = COUNT::incrementAndGet;

    /** Blocks the submitting thread until the queue has room (the shutdown check keeps a dead pool from hanging it). */
    private static final RejectedExecutionHandler BLOCK = (task, executor) -> {
        if (executor.isShutdown()) {
            throw new RejectedExecutionException("The pool is shut down.");
        }
        try {
            executor.getQueue().put(task);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RejectedExecutionException("Interrupted while waiting for room.", e);
        }
    };

    private TpeCompare() {
    }

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);
        System.out.printf(Locale.ROOT, "# Java %s (%s), %d logical CPUs; %d items/round (item: %s), %d warm-up + %d measured rounds per shape%n",
            System.getProperty("java.version"), System.getProperty("java.vm.name"),
            Runtime.getRuntime().availableProcessors(), options.items, options.item, options.warmup, options.rounds);
        for (int[] shape : options.shapes) {
            double[] perItem = runShape(shape[0], shape[1], options);
            double[] sorted = perItem.clone();
            Arrays.sort(sorted);
            System.out.printf(Locale.ROOT, "RESULT\tjava-tpe\t%d/%d\t%.1f\t%.1f\t%d\t%d%n",
                shape[0], shape[1], median(sorted), sorted[0], sorted.length, options.items);
        }
    }

    private static double[] runShape(int producers, int workers, Options options) throws Exception {
        LinkedBlockingQueue<Runnable> queue = new LinkedBlockingQueue<>(CAPACITY);
        ThreadPoolExecutor pool = new ThreadPoolExecutor(workers, workers, 0L, TimeUnit.MILLISECONDS, queue,
            runnable -> {
                Thread thread = new Thread(runnable, "tpe-worker");
                thread.setDaemon(true);
                return thread;
            }, BLOCK);
        pool.prestartAllCoreThreads();
        Runnable item = options.item.equals("counter") ? INCREMENT : EMPTY;
        ProducerGang gang = new ProducerGang(producers, options.items, pool, item);
        CyclicBarrier fence = new CyclicBarrier(workers + 1);
        Runnable fenceTask = () -> await(fence);
        double[] results = new double[options.rounds];
        try {
            for (int round = -options.warmup; round < options.rounds; round++) {
                long completedBefore = pool.getCompletedTaskCount();
                long countBefore = COUNT.get();
                long start = System.nanoTime();
                gang.runRound();
                for (int i = 0; i < workers; i++) {
                    pool.execute(fenceTask);
                }
                await(fence);
                long elapsed = System.nanoTime() - start;
                if (!queue.isEmpty()) {
                    throw new IllegalStateException(String.format(Locale.ROOT,
                        "shape %d/%d: %d task(s) still queued at the fence", producers, workers, queue.size()));
                }
                if (item == INCREMENT && COUNT.get() != countBefore + options.items) {
                    throw new IllegalStateException(String.format(Locale.ROOT,
                        "shape %d/%d: %d counter items ran in a round of %d", producers, workers, COUNT.get() - countBefore, options.items));
                }
                check(pool, queue, completedBefore + options.items + workers, producers, workers);
                if (round >= 0) {
                    results[round] = (double) elapsed / options.items;
                }
            }
        } finally {
            gang.close();
            pool.shutdown();
            if (!pool.awaitTermination(10, TimeUnit.SECONDS)) {
                System.err.println("# the pool did not terminate within 10 s");
            }
        }
        return results;
    }

    /** After the clock stops: nothing left in the queue and every task of the round ran (nothing lost). */
    private static void check(ThreadPoolExecutor pool, LinkedBlockingQueue<Runnable> queue, long expectedCompleted, int producers, int workers)
            throws InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        // The fence tasks finish just after the barrier trips; their completion is counted a moment later.
        while (pool.getCompletedTaskCount() < expectedCompleted) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException(String.format(Locale.ROOT, "shape %d/%d: %d tasks completed, expected %d (queue %d)",
                    producers, workers, pool.getCompletedTaskCount(), expectedCompleted, queue.size()));
            }
            Thread.sleep(1);
        }
        if (!queue.isEmpty() || pool.getCompletedTaskCount() != expectedCompleted) {
            throw new IllegalStateException(String.format(Locale.ROOT, "shape %d/%d: queue %d, completed %d, expected %d",
                producers, workers, queue.size(), pool.getCompletedTaskCount(), expectedCompleted));
        }
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted at a barrier.", e);
        } catch (BrokenBarrierException | TimeoutException e) {
            throw new IllegalStateException("HANG: a barrier was not reached within 60 s.", e);
        }
    }

    private static double median(double[] sorted) {
        int middle = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }

    /** Dedicated producer threads, created once per shape and reused by every round (no thread start is timed). */
    private static final class ProducerGang {
        private final Thread[] threads;
        private final CyclicBarrier start;
        private final CyclicBarrier done;
        private volatile boolean stopping;
        private volatile Throwable failure;

        ProducerGang(int producers, int items, ThreadPoolExecutor pool, Runnable item) {
            threads = new Thread[producers];
            start = new CyclicBarrier(producers + 1);
            done = new CyclicBarrier(producers + 1);
            for (int p = 0; p < producers; p++) {
                int share = items / producers + (p < items % producers ? 1 : 0);
                threads[p] = new Thread(() -> {
                    while (true) {
                        await(start);
                        if (stopping) {
                            return;
                        }
                        try {
                            for (int i = 0; i < share; i++) {
                                pool.execute(item);
                            }
                        } catch (RuntimeException e) {
                            failure = e;
                        }
                        await(done);
                    }
                }, "producer#" + p);
                threads[p].setDaemon(true);
                threads[p].start();
            }
        }

        /** Releases every producer and returns when all have submitted their share. */
        void runRound() {
            await(start);
            await(done);
            if (failure != null) {
                throw new IllegalStateException("A producer failed.", failure);
            }
        }

        /** Stops the producers (each is waiting at the start barrier between rounds). */
        void close() throws InterruptedException {
            stopping = true;
            await(start);
            for (Thread thread : threads) {
                thread.join(10_000);
            }
        }
    }

    /** Command line: [--quick] [--items N] [--warmup K] [--rounds R] [--shapes P/W,P/W,...] [--item counter|empty]. */
    private static final class Options {
        int items = 2_000_000;
        String item = "counter";
        int warmup = 3;
        int rounds = 7;
        List<int[]> shapes = parseShapes("1/1,2/2,4/8,1/4,4/2");

        static Options parse(String[] args) {
            Options options = new Options();
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--quick" -> {
                        options.items = 20_000;
                        options.warmup = 1;
                        options.rounds = 3;
                    }
                    case "--items" -> options.items = positive(args, ++i);
                    case "--warmup" -> options.warmup = Integer.parseInt(value(args, i++));
                    case "--rounds" -> options.rounds = positive(args, ++i);
                    case "--shapes" -> options.shapes = parseShapes(value(args, i++));
                    case "--item" -> {
                        options.item = value(args, i++);
                        if (!options.item.equals("counter") && !options.item.equals("empty")) {
                            throw new IllegalArgumentException("--item: '" + options.item + "' is not one of counter, empty.");
                        }
                    }
                    default -> throw new IllegalArgumentException("Unknown argument '" + args[i]
                        + "'. Usage: [--quick] [--items N] [--warmup K] [--rounds R] [--shapes P/W,P/W,...] [--item counter|empty]");
                }
            }
            if (options.warmup < 0) {
                throw new IllegalArgumentException("--warmup must be 0 or more (was " + options.warmup + ").");
            }
            return options;
        }

        private static String value(String[] args, int flagIndex) {
            if (flagIndex + 1 >= args.length) {
                throw new IllegalArgumentException(args[flagIndex] + " needs a value.");
            }
            return args[flagIndex + 1];
        }

        private static int positive(String[] args, int index) {
            int value = Integer.parseInt(value(args, index - 1));
            if (value < 1) {
                throw new IllegalArgumentException(args[index - 1] + " must be at least 1 (was " + value + ").");
            }
            return value;
        }

        private static List<int[]> parseShapes(String text) {
            List<int[]> shapes = new ArrayList<>();
            for (String part : text.split(",")) {
                String[] pw = part.trim().split("/");
                if (pw.length != 2) {
                    throw new IllegalArgumentException("--shapes: '" + part + "' is not producers/workers, e.g. 4/8.");
                }
                int producers = Integer.parseInt(pw[0]);
                int workers = Integer.parseInt(pw[1]);
                if (producers < 1 || workers < 1) {
                    throw new IllegalArgumentException("--shapes: '" + part + "' needs at least 1 producer and 1 worker.");
                }
                shapes.add(new int[] {producers, workers});
            }
            return shapes;
        }
    }
}
