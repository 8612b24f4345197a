namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// What an operator sees for a typed queue's running item (the admin console's <c>running[].method</c>, <c>bw show</c>,
/// slow-item alarms): the handler, the item type, the item's id and its key, not the queue's internal lambda.
/// </summary>
public sealed class RunningItemDescriptionTests
{
    [Fact]
    public async Task RunningItem_OfATypedQueue_NamesTheHandlerTheItemTypeItsIdAndKey()
    {
        using var entered = new ManualResetEventSlim(false);
        using var release = new ManualResetEventSlim(false);
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.OrderingKey = n => n.Key);
        using var _ = host;
        probe.Behaviour = (_, _, token) =>
        {
            entered.Set();
            release.Wait(TestHost.Patience, token);
        };

        Assert.True(host.Queue().TryEnqueue(new Notice(1, "order-7")));
        Assert.True(entered.Wait(TestHost.Patience));
        var running = Assert.Single(host.Executor().GetRunningItems());
        release.Set();
        await host.StopAsync();

        Assert.Equal($"{typeof(BlockingNoticeHandler).FullName}.Handle(Notice #1, key order-7)", running.Item.Description);
    }
}
