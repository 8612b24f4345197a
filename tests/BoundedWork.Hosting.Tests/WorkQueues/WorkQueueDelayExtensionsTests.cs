using System.Diagnostics;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// The obsolete delay overloads (<c>queue.EnqueueAsync(item, TimeSpan | DateTimeOffset)</c>) still work as they did
/// until they are removed: they forward to the one way, <see cref="EnqueueOptions"/>.
/// </summary>
// These tests call the obsolete members on purpose: they are what is tested.
#pragma warning disable CS0618
public sealed class WorkQueueDelayExtensionsTests
{
    [Fact]
    public void ObsoleteDelayOverloads_DelayTheItem_AsEnqueueOptionsDo()
    {
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o => o.WorkerCount = 1);
        using (host)
        {
            var started = new System.Collections.Concurrent.ConcurrentDictionary<int, long>();
            probe.Behaviour = (notice, _, _) => started[notice.Id] = Stopwatch.GetTimestamp();
            var enqueued = Stopwatch.GetTimestamp();
            Assert.True(host.Queue().EnqueueAsync(new Notice(1), TimeSpan.FromMilliseconds(300)).IsCompletedSuccessfully);
            Assert.True(host.Queue().EnqueueAsync(new Notice(2), DateTimeOffset.UtcNow.AddHours(-1)).IsCompletedSuccessfully); // past: now

            probe.WaitHandled(2);
            Assert.True(Stopwatch.GetElapsedTime(enqueued, started[1]) >= TimeSpan.FromMilliseconds(300));
            Assert.All(probe.Attempts, attempt => Assert.True(attempt.OnWorker));
        }
    }

    [Fact]
    public void ObsoleteDelayOverloads_InvalidDelays_AreRefused_AndAQueueThatIsNotBoundedWorks_IsNotSupported()
    {
        var (host, _, _) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using (host)
        {
            Assert.Throws<ArgumentOutOfRangeException>(() => host.Queue().EnqueueAsync(new Notice(1), TimeSpan.FromMilliseconds(-1)));
            Assert.Throws<ArgumentOutOfRangeException>(() => host.Queue().EnqueueAsync(new Notice(1), TimeSpan.FromDays(366)));
            Assert.Throws<ArgumentOutOfRangeException>(() => host.Queue().EnqueueAsync(new Notice(1), DateTimeOffset.UtcNow.AddDays(400)));
            Assert.Throws<NotSupportedException>(() => new Stub().EnqueueAsync(new Notice(1), TimeSpan.FromSeconds(1)));
        }
    }

    private sealed class Stub : IWorkQueue<Notice>
    {
        public string Name => "stub";

        public bool TryEnqueue(Notice item) => true;

        public ValueTask EnqueueAsync(Notice item, CancellationToken cancellationToken = default) => ValueTask.CompletedTask;
    }
}
