using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.Workers;

/// <summary>The worker pool's spin, park and wake handshake: on its own against a model source, and through the executor.</summary>
public sealed class WorkerPoolTests
{

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
}
