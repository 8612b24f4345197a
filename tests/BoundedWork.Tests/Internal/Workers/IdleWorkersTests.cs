using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.Workers;

/// <summary>The idle-worker stack and its announce, re-check, park handshake, on their own.</summary>
public sealed class IdleWorkersTests
{

    [Fact]
    public void AnnounceRecheckPark_AgainstWakeOnPublish_NeverLosesAWakeUp()
    {
        // A minimal model of the executor's handshake: consumers announce, re-check a shared count and park;
        // producers increment the count and wake one. If a wake-up were lost, items would stay unconsumed.
        const int Items = 100_000;
        const int Consumers = 3;
        var idle = new IdleWorkers();
        long available = 0;
        long consumed = 0;
        var pool = new WorkerPool("model", Consumers, new NoWork(), owner: null);
        var workers = Enumerable.Range(0, Consumers).Select(i => new Worker(pool, 100 + i, $"model#{i}")).ToArray();
        var threads = workers.Select(worker => new Thread(() =>
        {
            while (Interlocked.Read(ref consumed) < Items)
            {
                var current = Interlocked.Read(ref available);
                if (current > 0 && Interlocked.CompareExchange(ref available, current - 1, current) == current)
                {
                    Interlocked.Increment(ref consumed);
                    if (current > 1)
                    {
                        idle.WakeOne(); // the cascade
                    }

                    continue;
                }

                if (current > 0)
                {
                    continue;
                }

                idle.Announce(worker);
                if ((Interlocked.Read(ref available) > 0 || Interlocked.Read(ref consumed) >= Items) && idle.TryWithdraw(worker))
                {
                    continue;
                }

                worker.Parker.Park();
            }
        })).ToList();
        threads.ForEach(t => t.Start());

        for (var i = 0; i < Items; i++)
        {
            if (Interlocked.Increment(ref available) == 1)
            {
                idle.WakeOne();
            }
        }

        Assert.True(SpinWait.SpinUntil(() => Interlocked.Read(ref consumed) == Items, TestKit.Safety), $"Lost wake-up: {Interlocked.Read(ref consumed)} of {Items} consumed.");
        for (var i = 0; i < Consumers; i++)
        {
            idle.WakeAll();
            foreach (var worker in workers)
            {
                worker.Parker.Unpark();
            }
        }

        threads.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
    }

    /// <summary>A source with nothing to run: the model above drives its workers' threads itself.</summary>
    private sealed class NoWork : IWorkSource
    {
        public bool HasWork => false;

        public bool IsDrained => false;

        public bool IsShutdown => false;

        public bool IsAbandoned => false;

        public bool TryRunOne(Worker worker) => false;

        public void OnAllWorkersExited()
        {
        }
    }
}
