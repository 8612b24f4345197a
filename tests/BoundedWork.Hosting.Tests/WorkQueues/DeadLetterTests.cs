using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>Every item that is not handled becomes a dead letter, by identity, on each path.</summary>
public sealed class DeadLetterTests
{
    [Fact]
    public async Task RetriesExhausted_TheItemIsDeadLetteredWithItsLastFailure()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o =>
        {
            o.MaxRetryAttempts = 2;
            o.RetryDelay = TimeSpan.FromMilliseconds(1);
        });
        using var _ = host;
        probe.Behaviour = (notice, attempt, _) => throw new InvalidOperationException($"notice {notice.Id} attempt {attempt}");

        host.Queue().TryEnqueue(new Notice(41));

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(41, letter.Item.Id);
        Assert.Equal(DeadLetterReason.Failed, letter.Reason);
        Assert.Equal(3, letter.Attempts);
        Assert.Equal("notice 41 attempt 3", letter.Exception?.Message);
        Assert.Equal("payments", letter.QueueName);
        Assert.Null(letter.RejectionReason);
        await host.StopAsync();
    }

    [Fact]
    public async Task QueueFull_RejectedItemsAreDeadLettered_TryEnqueueFalse_EnqueueAsyncThrows()
    {
        using var gate = new ManualResetEventSlim(false);
        using var started = new ManualResetEventSlim(false);
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o => o.QueueCapacity = 1);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                started.Set();
                Assert.True(gate.Wait(TestHost.Patience, CancellationToken.None));
            }
        };
        Assert.True(host.Queue().TryEnqueue(new Notice(1)));
        Assert.True(started.Wait(TestHost.Patience));
        Assert.True(host.Queue().TryEnqueue(new Notice(2)));

        Assert.False(host.Queue().TryEnqueue(new Notice(3)));
        var rejected = await Assert.ThrowsAsync<RejectedExecutionException>(() => host.Queue().EnqueueAsync(new Notice(4)).AsTask());

        Assert.Equal(RejectionReason.QueueFull, rejected.Reason);
        var letters = deadLetters.WaitFor(2);
        Assert.Equal([3, 4], letters.Select(l => l.Item.Id));
        Assert.All(letters, l => Assert.Equal(DeadLetterReason.Rejected, l.Reason));
        Assert.All(letters, l => Assert.Equal(RejectionReason.QueueFull, l.RejectionReason));
        Assert.All(letters, l => Assert.Equal(0, l.Attempts));
        gate.Set();
        probe.WaitHandled(2);
        await host.StopAsync();
        Assert.Equal(2, host.Executor().GetStatistics().Rejected);
    }

    [Fact]
    public async Task RetryDueWhileTheQueueIsFull_IsDeadLetteredAsRejected()
    {
        var retryDue = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var gate = new ManualResetEventSlim(false);
        using var started = new ManualResetEventSlim(false);
        using var failedOnce = new ManualResetEventSlim(false);
        var failure = new InvalidOperationException("n1 fails");
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o => o.ConfigurePipeline = WorkQueueHost.OneRetryWhen(retryDue.Task),
            executor: o => o.QueueCapacity = 1);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                failedOnce.Set();
                throw failure;
            }

            if (notice.Id == 2)
            {
                started.Set();
                Assert.True(gate.Wait(TestHost.Patience, CancellationToken.None));
            }
        };
        Assert.True(host.Queue().TryEnqueue(new Notice(1)));
        Assert.True(failedOnce.Wait(TestHost.Patience));
        Assert.True(host.Queue().TryEnqueue(new Notice(2)));
        Assert.True(started.Wait(TestHost.Patience));
        Assert.True(host.Queue().TryEnqueue(new Notice(3))); // fills the queue

        retryDue.SetResult();

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(1, letter.Item.Id);
        Assert.Equal(DeadLetterReason.Rejected, letter.Reason);
        Assert.Equal(RejectionReason.QueueFull, letter.RejectionReason);
        Assert.Same(failure, letter.Exception);
        Assert.Equal(1, letter.Attempts);
        gate.Set();
        probe.WaitHandled(2);
        await host.StopAsync();
    }

    [Fact]
    public async Task KeyBacklogFull_TheItemIsRejectedAndDeadLettered()
    {
        using var gate = new ManualResetEventSlim(false);
        using var started = new ManualResetEventSlim(false);
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.OrderingKey = n => n.Key, executor: o => o.QueueCapacity = 1);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                started.Set();
                Assert.True(gate.Wait(TestHost.Patience, CancellationToken.None));
            }
        };
        host.Queue().TryEnqueue(new Notice(1, "a"));
        Assert.True(started.Wait(TestHost.Patience));
        Assert.True(host.Queue().TryEnqueue(new Notice(2, "a"))); // held back behind 1: the backlog is full

        Assert.False(host.Queue().TryEnqueue(new Notice(3, "a")));
        await Assert.ThrowsAsync<RejectedExecutionException>(() => host.Queue().EnqueueAsync(new Notice(4, "a")).AsTask());

        var letters = deadLetters.WaitFor(2);
        Assert.Equal([3, 4], letters.Select(l => l.Item.Id));
        Assert.All(letters, l => Assert.Equal(RejectionReason.QueueFull, l.RejectionReason));
        gate.Set();
        probe.WaitHandled(2);
        Assert.Equal([1, 2], probe.Handled);
        await host.StopAsync();
    }

    [Fact]
    public async Task EnqueueAsync_CancelledWhileWaitingForRoom_ThrowsAndIsNotDeadLettered()
    {
        using var gate = new ManualResetEventSlim(false);
        using var started = new ManualResetEventSlim(false);
        var logs = new FakeLogCollector();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o => o.OrderingKey = n => n.Key,
            executor: o =>
            {
                o.QueueCapacity = 1;
                o.RejectionPolicy = RejectionPolicy.Wait;
                o.WaitTimeout = Timeout.InfiniteTimeSpan;
            },
            logs: logs);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                started.Set();
                Assert.True(gate.Wait(TestHost.Patience, CancellationToken.None));
            }
        };
        await host.Queue().EnqueueAsync(new Notice(1, "a"));
        Assert.True(started.Wait(TestHost.Patience));
        await host.Queue().EnqueueAsync(new Notice(2, "b"));
        using var cancel = new CancellationTokenSource();

        var waiting = host.Queue().EnqueueAsync(new Notice(3, "c"), cancel.Token).AsTask();
        Assert.False(waiting.IsCompleted);
        await cancel.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting);
        gate.Set();
        probe.WaitHandled(2);

        // Key "c" was released: a later item of it runs.
        await host.Queue().EnqueueAsync(new Notice(4, "c"));
        probe.WaitHandled(1);
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
        Assert.Equal([1, 2, 4], probe.Handled);
        Assert.Empty(logs.WithEvent("StoppedWithItemsInFlight"));
    }

    [Fact]
    public async Task DiscardOldest_TheEvictedItemIsDeadLettered()
    {
        using var gate = new ManualResetEventSlim(false);
        using var started = new ManualResetEventSlim(false);
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o =>
        {
            o.QueueCapacity = 1;
            o.RejectionPolicy = RejectionPolicy.DiscardOldest;
        });
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                started.Set();
                Assert.True(gate.Wait(TestHost.Patience, CancellationToken.None));
            }
        };
        host.Queue().TryEnqueue(new Notice(1));
        Assert.True(started.Wait(TestHost.Patience));
        await host.Queue().EnqueueAsync(new Notice(2));

        await host.Queue().EnqueueAsync(new Notice(3)); // evicts 2

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(2, letter.Item.Id);
        Assert.Equal(DeadLetterReason.Rejected, letter.Reason);
        Assert.Equal(RejectionReason.Evicted, letter.RejectionReason);
        gate.Set();
        probe.WaitHandled(2);
        Assert.Equal([1, 3], probe.Handled);
        await host.StopAsync();
    }

    [Fact]
    public async Task ShutdownDeadline_ItemsStillQueuedAreDeadLettered()
    {
        using var gate = new ManualResetEventSlim(false);
        using var started = new ManualResetEventSlim(false);
        var logs = new FakeLogCollector();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(logs: logs);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                started.Set();
                Assert.True(gate.Wait(TestHost.Patience, CancellationToken.None));
            }
        };
        host.Queue().TryEnqueue(new Notice(1));
        Assert.True(started.Wait(TestHost.Patience));
        host.Queue().TryEnqueue(new Notice(2));
        host.Queue().TryEnqueue(new Notice(3));

        // A deadline that has already passed: the executor abandons its queue at once.
        await host.StopAsync(new CancellationToken(canceled: true));

        var letters = deadLetters.WaitFor(2);
        Assert.Equal([2, 3], letters.Select(l => l.Item.Id));
        Assert.All(letters, l => Assert.Equal(DeadLetterReason.ShutDown, l.Reason));
        Assert.All(letters, l => Assert.Equal(RejectionReason.Abandoned, l.RejectionReason));
        var stoppedEarly = Assert.Single(logs.WithEvent("StoppedWithItemsInFlight"));
        Assert.Equal("1", stoppedEarly.GetStructuredStateValue("InFlightCount"));
        gate.Set();
        probe.WaitHandled(1);
        Assert.Equal([1], probe.Handled);
    }

    [Fact]
    public async Task AfterShutdown_NewItemsAreDeadLettered()
    {
        var (host, _, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using var _ = host;
        await host.StopAsync();

        Assert.False(host.Queue().TryEnqueue(new Notice(9)));

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(9, letter.Item.Id);
        Assert.Equal(DeadLetterReason.ShutDown, letter.Reason);
        Assert.Equal(RejectionReason.ShutDown, letter.RejectionReason);
    }

    [Fact]
    public async Task NoDeadLetterHandler_TheItemIsLoggedAtError()
    {
        var logs = new FakeLogCollector();
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(WorkQueueHost.NoDelay, logs: logs, recordDeadLetters: false);
        using var _ = host;
        probe.Behaviour = (_, _, _) => throw new InvalidOperationException("card declined");

        host.Queue().TryEnqueue(new Notice(77));
        await host.StopAsync();

        var entry = Assert.Single(logs.WithEvent("DeadLettered"));
        Assert.Equal(LogLevel.Error, entry.Level);
        Assert.Equal(100, entry.Id.Id);
        Assert.Equal(new Notice(77).ToString(), entry.GetStructuredStateValue("Item"));
        Assert.Equal("card declined", entry.Exception?.Message);
        Assert.Contains("Notice { Id = 77", entry.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ThrowingDeadLetterHandler_IsLoggedWithTheItem_AndTheOtherHandlersStillRun()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        var probe = new Probe { Behaviour = (_, _, _) => throw new InvalidOperationException("declined") };
        var recorder = new RecordingDeadLetters();
        builder.Services.AddSingleton(probe);
        builder.Services.AddScoped<ScopeMarker>();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>, ThrowingDeadLetters>();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>>(recorder);
        builder.Services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments", WorkQueueHost.NoDelay).Configure(o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();

        host.Queue().TryEnqueue(new Notice(8));
        Assert.Equal(8, Assert.Single(recorder.WaitFor(1)).Item.Id);
        await host.StopAsync();

        var failed = Assert.Single(logs.WithEvent("DeadLetterHandlerFailed"));
        Assert.Equal(LogLevel.Error, failed.Level);
        Assert.Equal(new Notice(8).ToString(), failed.GetStructuredStateValue("Item"));
    }

    [Fact]
    public async Task DeadLetterHandlerWhoseConstructorThrows_IsLoggedWithTheItem_AndEveryOtherHandlerGetsTheLetter()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        var probe = new Probe { Behaviour = (_, _, _) => throw new InvalidOperationException("declined") };
        var recorder = new RecordingDeadLetters();
        var sink = new LetterSink();
        builder.Services.AddSingleton(probe);
        builder.Services.AddSingleton(sink);
        builder.Services.AddScoped<ScopeMarker>();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>, UnconstructibleDeadLetters>();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>, SingletonSinkDeadLetters>();
        builder.Services.AddScoped<IDeadLetterHandler<Notice>, ScopedSinkDeadLetters>();
        builder.Services.AddTransient<IDeadLetterHandler<Notice>>(provider => new ScopedSinkDeadLetters(provider.GetRequiredService<LetterSink>(), "factory"));
        builder.Services.AddTransient(typeof(IDeadLetterHandler<>), typeof(GenericSinkDeadLetters<>));
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>>(recorder);
        builder.Services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments", o => o.MaxRetryAttempts = 0).Configure(o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();

        host.Queue().TryEnqueue(new Notice(8));
        host.Queue().TryEnqueue(new Notice(9));

        Assert.Equal([8, 9], recorder.WaitFor(2).Select(l => l.Item.Id));
        await host.StopAsync();
        Assert.Equal(["singleton 8", "scoped 8", "factory 8", "generic 8", "singleton 9", "scoped 9", "factory 9", "generic 9"], sink.Letters);
        Assert.Equal(1, sink.SingletonsCreated);
        Assert.Equal(4, sink.Disposed); // the scoped and transient handlers of both letters
        var failures = logs.WithEvent("DeadLetterHandlerFailed");
        Assert.Equal([new Notice(8).ToString(), new Notice(9).ToString()], failures.Select(f => f.GetStructuredStateValue("Item")));
        Assert.All(failures, f => Assert.Equal("outbox unreachable", f.Exception?.Message));
    }

    /// <summary>What the sink handlers saw, in order.</summary>
    public sealed class LetterSink
    {
        private readonly System.Collections.Concurrent.ConcurrentQueue<string> _letters = new();
        private int _singletonsCreated;
        private int _disposed;

        public IReadOnlyList<string> Letters => [.. _letters];

        public int SingletonsCreated => Volatile.Read(ref _singletonsCreated);

        public int Disposed => Volatile.Read(ref _disposed);

        public void Add(string handler, DeadLetter<Notice> letter) => Add(handler, letter.Item);

        public void Add(string handler, object? item) => _letters.Enqueue($"{handler} {(item as Notice)?.Id}");

        public void SingletonCreated() => Interlocked.Increment(ref _singletonsCreated);

        public void HandlerDisposed() => Interlocked.Increment(ref _disposed);
    }

    private sealed class UnconstructibleDeadLetters : IDeadLetterHandler<Notice>
    {
        public UnconstructibleDeadLetters() => throw new InvalidOperationException("outbox unreachable");

        public ValueTask HandleAsync(DeadLetter<Notice> deadLetter, CancellationToken cancellationToken) => ValueTask.CompletedTask;
    }

    private sealed class SingletonSinkDeadLetters : IDeadLetterHandler<Notice>
    {
        private readonly LetterSink _sink;

        public SingletonSinkDeadLetters(LetterSink sink)
        {
            _sink = sink;
            sink.SingletonCreated();
        }

        public ValueTask HandleAsync(DeadLetter<Notice> deadLetter, CancellationToken cancellationToken)
        {
            _sink.Add("singleton", deadLetter);
            return ValueTask.CompletedTask;
        }
    }

    private sealed class ScopedSinkDeadLetters(LetterSink sink, string name = "scoped") : IDeadLetterHandler<Notice>, IDisposable
    {
        public ValueTask HandleAsync(DeadLetter<Notice> deadLetter, CancellationToken cancellationToken)
        {
            sink.Add(name, deadLetter);
            return ValueTask.CompletedTask;
        }

        public void Dispose() => sink.HandlerDisposed();
    }

    private sealed class GenericSinkDeadLetters<T>(LetterSink sink) : IDeadLetterHandler<T>
    {
        public ValueTask HandleAsync(DeadLetter<T> deadLetter, CancellationToken cancellationToken)
        {
            sink.Add("generic", deadLetter.Item);
            return ValueTask.CompletedTask;
        }
    }

    private sealed class ThrowingDeadLetters : IDeadLetterHandler<Notice>
    {
        public ValueTask HandleAsync(DeadLetter<Notice> deadLetter, CancellationToken cancellationToken) =>
            throw new InvalidOperationException("outbox down");
    }
}
