using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Tests;

public sealed class LoggingTests
{
    private static async Task<(IHost Host, BoundedExecutor Executor)> StartAsync(FakeLogCollector logs, Action<BoundedExecutorOptions> configure)
    {
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", configure);
        var host = builder.Build();
        await host.StartAsync();
        return (host, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments"));
    }

    [Fact]
    public async Task WorkItemThrows_LogsAnErrorAndRunsTheUserCallbackToo()
    {
        var logs = new FakeLogCollector();
        var userSaw = new TaskCompletionSource<Exception>(TaskCreationOptions.RunContinuationsAsynchronously);
        var (host, executor) = await StartAsync(logs, o =>
        {
            o.WorkerCount = 1;
            o.OnError = args => userSaw.TrySetResult(args.Exception);
        });
        using var _ = host;
        var boom = new InvalidOperationException("boom");

        executor.Execute(() => throw boom);

        Assert.Same(boom, await userSaw.Task.WaitAsync(TestHost.Patience));
        var entry = Assert.Single(logs.WithEvent("WorkItemFailed"));
        Assert.Equal(LogLevel.Error, entry.Level);
        Assert.Same(boom, entry.Exception);
        Assert.Contains("'payments'", entry.Message, StringComparison.Ordinal);
        Assert.Equal("BoundedWork.BoundedExecutor", entry.Category);
        await host.StopAsync();
    }

    [Fact]
    public async Task QueueFullUnderAbort_LogsTheRejectionAndRunsTheUserCallbackToo()
    {
        var logs = new FakeLogCollector();
        var userReasons = new List<RejectionReason>();
        var (host, executor) = await StartAsync(logs, o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 1;
            o.OnRejected = args => userReasons.Add(args.Reason);
        });
        using var _ = host;
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted();
        executor.Execute(() => { });

        Assert.False(executor.TryExecute(() => { }));

        Assert.Equal([RejectionReason.QueueFull], userReasons);
        var entry = Assert.Single(logs.WithEvent("WorkItemRejected"));
        Assert.Equal(LogLevel.Warning, entry.Level);
        Assert.Equal(RejectionReason.QueueFull.ToString(), entry.GetStructuredStateValue("Reason"));
        Assert.Contains("'payments'", entry.Message, StringComparison.Ordinal);
        gate.Open();
        await host.StopAsync();
    }

    [Theory]
    [InlineData(RejectionPolicy.Discard, RejectionReason.Discarded)]
    [InlineData(RejectionPolicy.DiscardOldest, RejectionReason.Evicted)]
    public async Task QueueFullUnderDiscardPolicies_LogsTheDiscard(RejectionPolicy policy, RejectionReason reason)
    {
        var logs = new FakeLogCollector();
        var (host, executor) = await StartAsync(logs, o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 1;
            o.RejectionPolicy = policy;
        });
        using var _ = host;
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted();
        executor.Execute(() => { });

        executor.Execute(() => { });

        var entry = Assert.Single(logs.WithEvent("WorkItemDiscarded"));
        Assert.Equal(reason.ToString(), entry.GetStructuredStateValue("Reason"));
        Assert.Contains("'payments'", entry.Message, StringComparison.Ordinal);
        Assert.Empty(logs.WithEvent("WorkItemRejected"));
        gate.Open();
        await host.StopAsync();
    }

    [Fact]
    public async Task EveryEvent_HasAStableIdAndNamesTheExecutor()
    {
        var logs = new FakeLogCollector();
        var (host, executor) = await StartAsync(logs, o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 2;
        });
        using var _ = host;
        executor.Execute(() => throw new InvalidOperationException());
        await executor.RunAsync(() => { }); // the failed item ran before this one
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted();
        executor.Execute(() => { });
        executor.Execute(() => { });
        Assert.False(executor.TryExecute(() => { }));
        gate.Open();
        await host.StopAsync();

        var expectedIds = new Dictionary<string, int>
        {
            ["WorkItemFailed"] = 1,
            ["WorkItemRejected"] = 2,
            ["ExecutorStarted"] = 8,
            ["ShutdownDrained"] = 9,
        };
        foreach (var (name, id) in expectedIds)
        {
            Assert.Equal(id, Assert.Single(logs.WithEvent(name)).Id.Id);
        }

        Assert.All(logs.GetSnapshot().Where(e => e.Category is not null && e.Category.StartsWith("BoundedWork", StringComparison.Ordinal)), entry =>
        {
            Assert.Equal("payments", entry.GetStructuredStateValue("ExecutorName"));
            Assert.Contains("'payments'", entry.Message, StringComparison.Ordinal);
        });
    }
}
