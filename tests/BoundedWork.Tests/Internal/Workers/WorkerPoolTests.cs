using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.Workers;

/// <summary>The worker pool's spin, park and wake handshake: on its own against a model source, and through the executor.</summary>
public sealed class WorkerPoolTests
{
    [Theory]
    [InlineData(1, 1)]
    [InlineData(1, 2)]
    [InlineData(2, 6)]
    public void WakeOneUnlessOneSpins_RoundsOfAFewItems_EachRoundIsConsumedWithoutALostWakeUp(int producers, int workers)
    {
        // Each round produces one to three items (with gaps around the workers' spin length, so they spin, park and wake
        // constantly), then waits until they are consumed: every round ends with its last items and nothing after them,
        // so a wake-up lost at any point leaves an item with every worker parked, and that round never completes.
        const int Rounds = 5_000;
        var source = new ModelSource();
        var pool = source.CreatePool(maxWorkerCount: 8, workers);
        using var roundStart = new Barrier(producers);
        long produced = 0;
        string? failure = null;
        var threads = Enumerable.Range(0, producers).Select(p => new Thread(() =>
        {
            var random = new Random(p);
            for (var round = 0; round < Rounds; round++)
            {
                for (var i = random.Next(1, 4); i > 0; i--)
                {
                    Interlocked.Increment(ref produced);
                    source.Produce();
                    Gap(random);
                }

                if (!roundStart.SignalAndWait(TestKit.Safety))
                {
                    return; // another producer's round failed
                }

                var target = Interlocked.Read(ref produced);
                if (!SpinWait.SpinUntil(() => source.Consumed == target, TestKit.Safety))
                {
                    Volatile.Write(ref failure, $"Lost wake-up in round {round}: {source.Consumed} of {target} consumed, {pool.IdleCount} worker(s) parked.");
                    return;
                }

                if (!roundStart.SignalAndWait(TestKit.Safety))
                {
                    return;
                }

                Gap(random);
            }
        })).ToList();

        threads.ForEach(t => t.Start());
        threads.ForEach(t => t.Join());

        Assert.Null(Volatile.Read(ref failure));
        Assert.Equal(Interlocked.Read(ref produced), source.Consumed);
        source.ShutDownAndWaitForTheWorkers();
    }

    [Fact]
    public void ResizeUnsynchronized_ShrinkWhileWorkersGoIdle_TheLiveCountSettlesOnTheTarget()
    {
        // Each round grows the pool, gives it a few items, and shrinks it while its workers run out of work, spin and
        // park. A shrink owes retirements that parked workers must wake up to pay; a worker that parked owing one, after
        // the shrink's wake-up had passed it, would leave the round with more live workers than the target.
        const int Rounds = 2_000;
        var source = new ModelSource();
        var pool = source.CreatePool(maxWorkerCount: 8, workerCount: 1);
        var random = new Random(11);
        long produced = 0;
        for (var round = 0; round < Rounds; round++)
        {
            Resize(pool, random.Next(4, 9));
            for (var i = random.Next(1, 6); i > 0; i--)
            {
                produced++;
                source.Produce();
            }

            if (random.Next(2) == 0)
            {
                // Shrink just after the workers ran out of work: while they spin, or are about to park.
                SpinWait.SpinUntil(() => source.Consumed == produced, TestKit.Safety);
                Thread.SpinWait(random.Next(4_000));
            }
            else
            {
                Gap(random);
            }

            var target = random.Next(1, 4);
            Resize(pool, target);

            Assert.True(
                SpinWait.SpinUntil(() => source.Consumed == produced && Live(pool) == target && pool.IdleCount == target, TestKit.Safety),
                $"Round {round}: {source.Consumed} of {produced} consumed, {Live(pool)} live worker(s) and {pool.IdleCount} parked; the target is {target}.");
        }

        source.ShutDownAndWaitForTheWorkers();
        Assert.Equal(0, Live(pool));
    }

    [Theory]
    [InlineData(1, 1)]
    [InlineData(2, 4)]
    [InlineData(3, 8)]
    public async Task Executor_TricklingProducersWithRandomGaps_EveryItemRunsWithoutALostWakeUp(int producers, int workers)
    {
        // Gaps around the workers' spin length make them park and wake constantly, racing submitters that skip the
        // wake-up while a worker spins. A lost wake-up leaves an item queued with every worker parked: a hang.
        const int PerProducer = 5_000;
        await using var executor = TestKit.Create(workers: workers, capacity: 64, policy: RejectionPolicy.Wait, configure: o => o.MaxWorkerCount = 8);
        using var ran = new CountdownEvent(producers * PerProducer);
        var threads = Enumerable.Range(0, producers).Select(p => new Thread(() =>
        {
            var random = new Random(p);
            for (var i = 0; i < PerProducer; i++)
            {
                executor.Execute(() => ran.Signal());
                var gap = random.Next(4);
                if (gap == 1)
                {
                    Thread.SpinWait(random.Next(2_000));
                }
                else if (gap == 2)
                {
                    Thread.Yield();
                }
            }
        })).ToList();

        threads.ForEach(t => t.Start());
        threads.ForEach(t => t.Join());

        Assert.True(ran.Wait(TestKit.Safety), $"{ran.CurrentCount} item(s) never ran: a lost wake-up. {executor.GetStatistics()}");
    }

    /// <summary>No gap, a spin about as long as a worker's, or a yield: each makes a different interleaving likely.</summary>
    private static void Gap(Random random)
    {
        switch (random.Next(4))
        {
            case 1:
                Thread.SpinWait(random.Next(2_000));
                break;
            case 2:
                Thread.Yield();
                break;
        }
    }

    private static void Resize(WorkerPool pool, int workerCount)
    {
        bool wake;
        lock (pool.SyncObj)
        {
            wake = pool.ResizeUnsynchronized(workerCount);
        }

        if (wake)
        {
            pool.WakeAll();
        }
    }

    private static int Live(WorkerPool pool) => pool.ReadProgress(0, Timeout.InfiniteTimeSpan, new ItemClock(TimeProvider.System)).Live;

    /// <summary>
    /// A work source as the executor is one, reduced to its handshake: work is a count made visible with an interlocked
    /// step before the pool is asked to wake a worker, and a worker that takes one of several wakes the next (the cascade).
    /// </summary>
    private sealed class ModelSource : IWorkSource
    {
        private readonly ManualResetEventSlim _allExited = new();
        private WorkerPool _pool = null!;
        private long _available;
        private long _consumed;
        private int _shutdown;
        private int _exitedCalls;

        public long Consumed => Interlocked.Read(ref _consumed);

        public bool HasWork => Interlocked.Read(ref _available) > 0 || IsShutdown;

        public bool IsDrained => IsShutdown && Interlocked.Read(ref _available) == 0;

        public bool IsShutdown => Volatile.Read(ref _shutdown) != 0;

        public bool IsAbandoned => false;

        public WorkerPool CreatePool(int maxWorkerCount, int workerCount)
        {
            _pool = new WorkerPool("model", maxWorkerCount, this, owner: null);
            Resize(_pool, workerCount);
            return _pool;
        }

        public void Produce()
        {
            Interlocked.Increment(ref _available);
            _pool.WakeOneUnlessOneSpins();
        }

        public bool TryRunOne(Worker worker)
        {
            while (true)
            {
                var available = Interlocked.Read(ref _available);
                if (available <= 0)
                {
                    return false;
                }

                if (Interlocked.CompareExchange(ref _available, available - 1, available) == available)
                {
                    Interlocked.Increment(ref _consumed);
                    if (available > 1)
                    {
                        _pool.WakeOneUnlessOneSpins();
                    }

                    return true;
                }
            }
        }

        public void OnAllWorkersExited()
        {
            Interlocked.Increment(ref _exitedCalls);
            _allExited.Set();
        }

        public void ShutDownAndWaitForTheWorkers()
        {
            Interlocked.Exchange(ref _shutdown, 1);
            _pool.WakeAll();
            Assert.True(_allExited.Wait(TestKit.Safety), "The workers never all exited after shutdown.");
            Assert.True(_pool.AllWorkersExited());
            Assert.Equal(1, Volatile.Read(ref _exitedCalls));
            _allExited.Dispose();
        }
    }
}
