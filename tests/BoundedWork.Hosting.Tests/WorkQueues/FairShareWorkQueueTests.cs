using BoundedWork.Hosting;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>A typed queue takes each item's tenant from its selector: the executor's weights and bounds apply to it.</summary>
public sealed class FairShareWorkQueueTests
{
    [Fact]
    public async Task TenantSelector_FloodingTenant_BoundedAndQuietTenantRunsNext()
    {
        using var gate = new ManualResetEventSlim();
        using var blocked = new ManualResetEventSlim();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o => o.TenantSelector = n => n.Key,
            executor: o => o.FairShare = new FairShareSettings { MaxQueuedPerTenant = 2 });
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 0)
            {
                blocked.Set();
                Assert.True(gate.Wait(TestHost.Patience, CancellationToken.None), "The gate was never opened.");
            }
        };

        var queue = host.Queue();
        Assert.True(queue.TryEnqueue(new Notice(0, "gate")));
        Assert.True(blocked.Wait(TestHost.Patience));
        var accepted = Enumerable.Range(1, 5).Count(i => queue.TryEnqueue(new Notice(i, "flood")));
        Assert.Equal(2, accepted);
        Assert.True(queue.TryEnqueue(new Notice(100, "quiet")));

        gate.Set();
        probe.WaitHandled(4);
        Assert.Contains(100, probe.Handled.Skip(1).Take(2)); // FIFO would run it last
        var flood = host.Executor().GetTenantStatistics().Single(t => t.Tenant == "flood");
        Assert.Equal(3, flood.Refused);
        Assert.Equal(2, flood.Completed);
        Assert.Equal(3, deadLetters.WaitFor(3).Count);
        await host.StopAsync();
    }

    [Fact]
    public void TenantSelector_InvalidTenant_EnqueueThrowsNamingTheSetting()
    {
        var (host, _, _) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.TenantSelector = _ => "");
        using var _ = host;
        var error = Assert.Throws<ArgumentException>(() => host.Queue().TryEnqueue(new Notice(1)));
        Assert.Contains("TenantSelector", error.Message, StringComparison.Ordinal);
    }
}
