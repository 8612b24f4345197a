using System.Collections.Concurrent;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Hosting.Tests;

public sealed class LifecycleTests
{
    /// <summary>Records what it is handed.</summary>
    private sealed class RecordingHandler : IAbandonedWorkHandler
    {
        public ConcurrentQueue<(string Executor, IReadOnlyList<WorkItem> Items)> Calls { get; } = new();

        public Task HandleAsync(string executorName, IReadOnlyList<WorkItem> items)
        {
            Calls.Enqueue((executorName, items));
            return Task.CompletedTask;
        }
    }

    private sealed class ThrowingHandler : IAbandonedWorkHandler
    {
        public Task HandleAsync(string executorName, IReadOnlyList<WorkItem> items) =>
            throw new InvalidOperationException("outbox unavailable");
    }

    [Fact]
    public async Task StartAsync_CreatesEveryExecutorWithTheHost()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
        builder.Services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
        using var host = builder.Build();
        Assert.Empty(logs.WithEvent("ExecutorStarted"));

        await host.StartAsync();

        var started = logs.WithEvent("ExecutorStarted");
        Assert.Equal(["payments", "mail"], started.Select(e => e.GetStructuredStateValue("ExecutorName")));
        await host.StopAsync();
    }

    [Fact]
    public async Task StopAsync_WithinTheDeadline_DrainsEveryQueuedItem()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        await using var started = await QueuedBehindAGatedItem.StartAsync(builder, queued: 5);
        var executor = started.Executor;

        var stopping = started.Host.StopAsync();
        Assert.True(executor.IsShutdown);
        Assert.False(executor.TryExecute(() => { }));
        started.Gate.Open();
        await stopping;

        Assert.Equal(5, started.Ran);
        Assert.True(executor.Completion.IsCompleted);
        Assert.Single(logs.WithEvent("ShutdownDrained"));
        Assert.Empty(logs.WithEvent("ShutdownAbandoned"));
    }

    public static TheoryData<TimeSpan> LongShutdownTimeouts => new()
    {
        Timeout.InfiniteTimeSpan,
        TimeSpan.FromDays(40), // about as long as the host itself accepts
    };

    [Theory]
    [MemberData(nameof(LongShutdownTimeouts))]
    public async Task StopAsync_HostShutdownTimeoutInfiniteOrVeryLong_DrainsInsteadOfAbandoningAtOnce(TimeSpan shutdownTimeout)
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = shutdownTimeout);
        builder.Services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 1;
            o.SlowItemThreshold = TimeSpan.FromMilliseconds(20); // the watchdog looks every 5 ms
        });
        await using var started = await QueuedBehindAGatedItem.StartAsync(builder, queued: 3);
        var executor = started.Executor;

        var stopping = started.Host.StopAsync();
        Assert.True(executor.IsShutdown);

        // The watchdog keeps the executor's deadline: once it has looked, a deadline it took as passed would show.
        var passes = executor.WatchdogPasses;
        TestHost.WaitUntil(() => executor.WatchdogPasses >= passes + 2);
        Assert.Equal(0, executor.GetStatistics().Abandoned);
        Assert.False(stopping.IsCompleted);
        started.Gate.Open();
        await stopping.WaitAsync(TestHost.Patience);

        Assert.Equal(3, started.Ran);
        Assert.Single(logs.WithEvent("ShutdownDrained"));
        Assert.Empty(logs.WithEvent("ShutdownAbandoned"));
        Assert.Empty(logs.WithEvent("ShutdownWorkersStillRunning"));
    }

    [Fact]
    public async Task StopAsync_DeadlinePassed_HandsQueuedItemsToEveryHandlerAndLogsTheCount()
    {
        var logs = new FakeLogCollector();
        var recording = new RecordingHandler();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        builder.Services.AddSingleton<IAbandonedWorkHandler>(recording);
        builder.Services.AddSingleton<IAbandonedWorkHandler, ThrowingHandler>();
        await using var started = await GatedHost.StartAsync(builder);
        var (host, executor, gate) = started;
        var queued = new List<Action>();
        for (var i = 0; i < 3; i++)
        {
            Action item = () => { };
            queued.Add(item);
            executor.Execute(item);
        }

        await host.StopAsync(new CancellationToken(canceled: true));

        var (name, items) = Assert.Single(recording.Calls);
        Assert.Equal("payments", name);
        Assert.Equal(queued, items.Select(i => i.Callback));
        var abandoned = Assert.Single(logs.WithEvent("ShutdownAbandoned"));
        Assert.Equal("3", abandoned.GetStructuredStateValue("AbandonedCount"));
        Assert.Equal("2", abandoned.GetStructuredStateValue("HandlerCount"));
        var handlerFailure = Assert.Single(logs.WithEvent("AbandonedWorkHandlerFailed"));
        Assert.IsType<InvalidOperationException>(handlerFailure.Exception);
        var stillRunning = Assert.Single(logs.WithEvent("ShutdownWorkersStillRunning"));
        Assert.Equal("1", stillRunning.GetStructuredStateValue("BusyWorkerCount")); // read at the deadline, before the handlers ran
        Assert.Empty(logs.WithEvent("AbandonedItemNotPersisted")); // handlers were registered
        Assert.Equal(3, executor.GetStatistics().Abandoned);

        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    /// <summary>A scoped handler, as an outbox over a unit of work would be.</summary>
    private sealed class ScopedOutbox(ConcurrentQueue<int> written) : IAbandonedWorkHandler, IDisposable
    {
        public bool Disposed { get; private set; }

        public Task HandleAsync(string executorName, IReadOnlyList<WorkItem> items)
        {
            Assert.False(Disposed);
            written.Enqueue(items.Count);
            return Task.CompletedTask;
        }

        public void Dispose() => Disposed = true;
    }

    [Fact]
    public async Task StopAsync_DeadlinePassed_ResolvesScopedHandlersInAScope()
    {
        var written = new ConcurrentQueue<int>();
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        builder.Services.AddSingleton(written);
        builder.Services.AddScoped<IAbandonedWorkHandler, ScopedOutbox>();
        await using var started = await GatedHost.StartAsync(builder);
        var (host, executor, gate) = started;
        executor.Execute(() => { });
        executor.Execute(() => { });

        await host.StopAsync(new CancellationToken(canceled: true));

        Assert.Equal([2], written);
        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task StopAsync_DeadlinePassedWithoutAHandler_StillLogsTheCount()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
        await using var started = await GatedHost.StartAsync(builder, "mail");
        var (host, executor, gate) = started;
        var awaited = executor.RunAsync(() => 1);
        executor.Execute(() => { });

        await host.StopAsync(new CancellationToken(canceled: true));

        var abandoned = Assert.Single(logs.WithEvent("ShutdownAbandoned"));
        Assert.Equal("2", abandoned.GetStructuredStateValue("AbandonedCount"));
        Assert.Equal("0", abandoned.GetStructuredStateValue("HandlerCount"));
        Assert.Contains("'mail'", abandoned.Message, StringComparison.Ordinal);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => awaited);
        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task StopAsync_DeadlinePassed_LogsLambdaItemsByTheirDeclaringMethodNotTheirCompilerName()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        await using var started = await QueuedBehindAGatedItem.StartAsync(builder, queued: 1);

        await started.Host.StopAsync(new CancellationToken(canceled: true));

        // Both items are lambdas: the running one in Gate.Item's getter, the queued one in the helper's async method.
        Assert.Contains(
            $"{typeof(Gate).FullName}.get_Item (lambda) with state null",
            Assert.Single(logs.WithEvent("ShutdownItemInterrupted")).Message,
            StringComparison.Ordinal);
        Assert.Contains(
            $"{typeof(LifecycleTests).FullName}.{nameof(QueuedBehindAGatedItem)}.{nameof(QueuedBehindAGatedItem.StartAsync)} (lambda) with state null",
            Assert.Single(logs.WithEvent("AbandonedItemNotPersisted")).Message,
            StringComparison.Ordinal);
        started.Gate.Open();
        await started.Executor.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task StopAsync_ShutdownTimeoutOfTheHost_IsTheDeadline()
    {
        var recording = new RecordingHandler();
        var builder = TestHost.CreateBuilder();
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.Zero);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        builder.Services.AddSingleton<IAbandonedWorkHandler>(recording);
        await using var started = await GatedHost.StartAsync(builder);
        var (host, executor, gate) = started;
        executor.Execute(() => { });

        await host.StopAsync();

        Assert.Single(Assert.Single(recording.Calls).Items);
        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task DisposeAsync_OfAProviderWithoutAHost_DrainsTheExecutors()
    {
        var services = new ServiceCollection();
        services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        var provider = services.BuildServiceProvider();
        var executor = provider.GetRequiredService<IBoundedExecutorRegistry>().GetExecutor("payments");
        using var gate = new Gate();
        var ran = 0;
        executor.Execute(gate.Item);
        gate.WaitStarted();
        executor.Execute(() => Interlocked.Increment(ref ran));

        var disposing = provider.DisposeAsync().AsTask();
        Assert.True(executor.IsShutdown);
        gate.Open();
        await disposing.WaitAsync(TestHost.Patience);

        Assert.Equal(1, Volatile.Read(ref ran));
        Assert.True(executor.Completion.IsCompleted);
    }

    private sealed record PaymentCallback(string OrderId);

    private static void Process(PaymentCallback callback) => GC.KeepAlive(callback);

    [Fact]
    public async Task StopAsync_DeadlinePassedWithoutAHandler_LogsEachAbandonedItemWithItsMethodAndStateAtError()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        await using var started = await GatedHost.StartAsync(builder);
        var (host, executor, gate) = started;
        executor.Execute(Process, new PaymentCallback("order-1"));
        executor.Execute(Process, new PaymentCallback("order-2"));

        await host.StopAsync(new CancellationToken(canceled: true));

        var lost = logs.WithEvent("AbandonedItemNotPersisted");
        Assert.Equal(2, lost.Count);
        Assert.All(lost, entry => Assert.Equal(Microsoft.Extensions.Logging.LogLevel.Error, entry.Level));
        Assert.Contains($"{typeof(LifecycleTests).FullName}.{nameof(Process)} with state PaymentCallback {{ OrderId = order-1 }}", lost[0].Message, StringComparison.Ordinal);
        Assert.Contains("order-2", lost[1].Message, StringComparison.Ordinal);
        Assert.Empty(logs.WithEvent("AbandonedItemsNotLogged"));
        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task StopAsync_ManyAbandonedWithoutAHandler_LogsTheFirstOneByOneAndTheRestAsATotal()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 1000;
        });
        await using var started = await GatedHost.StartAsync(builder);
        var (host, executor, gate) = started;
        for (var i = 0; i < 250; i++)
        {
            executor.Execute(Process, new PaymentCallback($"order-{i}"));
        }

        await host.StopAsync(new CancellationToken(canceled: true));

        Assert.Equal(100, logs.WithEvent("AbandonedItemNotPersisted").Count);
        var rest = Assert.Single(logs.WithEvent("AbandonedItemsNotLogged"));
        Assert.Equal("150", rest.GetStructuredStateValue("NotLoggedCount"));
        Assert.Equal("250", rest.GetStructuredStateValue("AbandonedCount"));
        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task StopAsync_ItemsRunningAtTheDeadline_AreReportedOneByOneAsInterrupted()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
        await using var started = await GatedHost.StartAsync(builder, gatedItems: 2);
        var (host, executor, gate) = started;

        await host.StopAsync(new CancellationToken(canceled: true));

        Assert.Equal("2", Assert.Single(logs.WithEvent("ShutdownWorkersStillRunning")).GetStructuredStateValue("BusyWorkerCount"));
        var interrupted = logs.WithEvent("ShutdownItemInterrupted");
        Assert.Equal(2, interrupted.Count);
        Assert.Equal(["payments#1", "payments#2"], interrupted.Select(e => (string)e.GetStructuredStateValue("WorkerName")!).Order());
        Assert.All(interrupted, e => Assert.Contains(nameof(Gate), (string)e.GetStructuredStateValue("Item")!, StringComparison.Ordinal));
        Assert.Empty(logs.WithEvent("ShutdownDrained"));
        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task StopAsync_RunningItemEndsBeforeTheHostsShutdownTimeout_IsWaitedFor()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TestHost.Patience);
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();
        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        using var gate = new Gate();
        var finished = 0;
        executor.Execute(() =>
        {
            gate.Item();
            Volatile.Write(ref finished, 1);
        });
        gate.WaitStarted();

        var stopping = host.StopAsync();
        Assert.False(stopping.IsCompleted);
        gate.Open();
        await stopping;

        Assert.Equal(1, Volatile.Read(ref finished));
        Assert.Single(logs.WithEvent("ShutdownDrained"));
        Assert.Empty(logs.WithEvent("ShutdownItemInterrupted"));
    }

    /// <summary>A hosted service that takes a while to stop, on the test's clock.</summary>
    private sealed class SlowToStop(FakeTimeProvider clock, TimeSpan takes) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

        public Task StopAsync(CancellationToken cancellationToken)
        {
            clock.Advance(takes);
            return Task.CompletedTask;
        }
    }

    [Fact]
    public async Task StopAsync_TimeOtherServicesTookToStop_CountsAgainstTheShutdownTimeout()
    {
        var clock = new FakeTimeProvider();
        var recording = new RecordingHandler();
        var builder = TestHost.CreateBuilder();
        builder.Services.AddSingleton<TimeProvider>(clock);
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromMinutes(10));
        builder.Services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 1;
            o.TimeProvider = clock;
        });
        builder.Services.AddSingleton<IAbandonedWorkHandler>(recording);
        builder.Services.AddHostedService(_ => new SlowToStop(clock, TimeSpan.FromMinutes(10))); // stops before the executors
        await using var started = await GatedHost.StartAsync(builder);
        var (host, executor, gate) = started;
        executor.Execute(() => { });

        // The whole ShutdownTimeout went to the other service: the executors' deadline has passed when they stop.
        await host.StopAsync().WaitAsync(TestHost.Patience);

        Assert.Single(Assert.Single(recording.Calls).Items);
        gate.Open();
        await executor.Completion.WaitAsync(TestHost.Patience);
    }

    /// <summary>
    /// A started host whose executor (registered by the caller) runs <c>gatedItems</c> gated items, started; disposing
    /// it opens the gate and disposes the host.
    /// </summary>
    private sealed class GatedHost : IAsyncDisposable
    {
        private GatedHost(IHost host, string executorName)
        {
            Host = host;
            Executor = host.Services.GetRequiredKeyedService<BoundedExecutor>(executorName);
        }

        public IHost Host { get; }

        public BoundedExecutor Executor { get; }

        public Gate Gate { get; } = new();

        public void Deconstruct(out IHost host, out BoundedExecutor executor, out Gate gate) => (host, executor, gate) = (Host, Executor, Gate);

        public static async Task<GatedHost> StartAsync(HostApplicationBuilder builder, string executorName = "payments", int gatedItems = 1)
        {
            var started = new GatedHost(builder.Build(), executorName);
            await started.Host.StartAsync();
            for (var i = 0; i < gatedItems; i++)
            {
                started.Executor.Execute(started.Gate.Item);
            }

            started.Gate.WaitStarted(gatedItems);
            return started;
        }

        public ValueTask DisposeAsync()
        {
            Gate.Dispose();
            Host.Dispose();
            return ValueTask.CompletedTask;
        }
    }

    /// <summary>
    /// A started host whose executor "payments" (registered by the caller, one worker) runs a gated item with
    /// <c>queued</c> counting items queued behind it.
    /// </summary>
    private sealed class QueuedBehindAGatedItem(GatedHost gated) : IAsyncDisposable
    {
        private int _ran;

        public IHost Host => gated.Host;

        public BoundedExecutor Executor => gated.Executor;

        public Gate Gate => gated.Gate;

        /// <summary>Gets how many of the queued items have run.</summary>
        public int Ran => Volatile.Read(ref _ran);

        public static async Task<QueuedBehindAGatedItem> StartAsync(HostApplicationBuilder builder, int queued)
        {
            var started = new QueuedBehindAGatedItem(await GatedHost.StartAsync(builder));
            for (var i = 0; i < queued; i++)
            {
                started.Executor.Execute(() => Interlocked.Increment(ref started._ran));
            }

            return started;
        }

        public ValueTask DisposeAsync() => gated.DisposeAsync();
    }
}
