using System.Collections.Concurrent;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Polly;
using Polly.Retry;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>A payment notice, identified by its id; <see cref="Key"/> is the order it belongs to.</summary>
public sealed record Notice(int Id, string Key = "");

/// <summary>One handler call as the probe saw it.</summary>
public sealed record Attempt(int Id, string Key, int Number, bool OnWorker, Guid Scope, WorkItemContext Context);

/// <summary>
/// What the test's handler does, shared by every handler instance: records each attempt, then runs the test's
/// behaviour (which may throw to fail the attempt or block on a gate).
/// </summary>
public sealed class Probe
{
    private readonly ConcurrentDictionary<int, int> _attempts = new();
    private readonly ConcurrentQueue<Attempt> _log = new();
    private readonly ConcurrentQueue<int> _handled = new();
    private readonly SemaphoreSlim _handledSignal = new(0);

    public Action<Notice, int, CancellationToken>? Behaviour { get; set; }

    public string QueueName { get; set; } = "payments";

    public IReadOnlyList<Attempt> Attempts => [.. _log];

    public IReadOnlyList<int> Handled => [.. _handled];

    public void Handle(Notice notice, IServiceProvider services, ScopeMarker scope, CancellationToken cancellationToken)
    {
        var number = _attempts.AddOrUpdate(notice.Id, 1, (_, n) => n + 1);
        var executor = services.GetRequiredKeyedService<BoundedExecutor>(QueueName);
        _log.Enqueue(new Attempt(notice.Id, notice.Key, number, executor.IsWorkerThread, scope.Id, services.GetRequiredService<WorkItemContext>()));
        Behaviour?.Invoke(notice, number, cancellationToken);
        _handled.Enqueue(notice.Id);
        _handledSignal.Release();
    }

    public void WaitHandled(int count)
    {
        for (var i = 0; i < count; i++)
        {
            Assert.True(_handledSignal.Wait(TestHost.Patience), $"Only {Handled.Count} items were handled; expected {count}.");
        }
    }
}

/// <summary>A scoped service: one per DI scope, so handlers can tell their scopes apart.</summary>
public sealed class ScopeMarker
{
    public Guid Id { get; } = Guid.NewGuid();
}

/// <summary>A blocking handler that hands every call to the <see cref="Probe"/>.</summary>
public sealed class BlockingNoticeHandler(Probe probe, ScopeMarker scope, IServiceProvider services) : IBlockingWorkHandler<Notice>
{
    public void Handle(Notice item, CancellationToken cancellationToken) => probe.Handle(item, services, scope, cancellationToken);
}

/// <summary>An asynchronous handler that yields before handing the call to the <see cref="Probe"/>.</summary>
public sealed class AsyncNoticeHandler(Probe probe, ScopeMarker scope, IServiceProvider services) : IWorkHandler<Notice>
{
    public async ValueTask HandleAsync(Notice item, CancellationToken cancellationToken)
    {
        await Task.Yield();
        probe.Handle(item, services, scope, cancellationToken);
    }
}

/// <summary>Records dead letters and lets a test wait for them.</summary>
public sealed class RecordingDeadLetters : IDeadLetterHandler<Notice>
{
    private readonly ConcurrentQueue<DeadLetter<Notice>> _letters = new();
    private readonly SemaphoreSlim _signal = new(0);

    public IReadOnlyList<DeadLetter<Notice>> Letters => [.. _letters];

    public ValueTask HandleAsync(DeadLetter<Notice> deadLetter, CancellationToken cancellationToken)
    {
        _letters.Enqueue(deadLetter);
        _signal.Release();
        return ValueTask.CompletedTask;
    }

    public IReadOnlyList<DeadLetter<Notice>> WaitFor(int count)
    {
        for (var i = 0; i < count; i++)
        {
            Assert.True(_signal.Wait(TestHost.Patience), $"Only {Letters.Count} dead letters arrived; expected {count}.");
        }

        return Letters;
    }
}

/// <summary>Builds real hosts with one typed queue of <see cref="Notice"/>.</summary>
public static class WorkQueueHost
{
    public static (IHost Host, Probe Probe, RecordingDeadLetters DeadLetters) Start<THandler>(
        Action<WorkQueueOptions<Notice>>? queue = null,
        Action<BoundedExecutorOptions>? executor = null,
        FakeLogCollector? logs = null,
        bool recordDeadLetters = true,
        Action<IServiceCollection>? services = null)
        where THandler : class
    {
        var builder = TestHost.CreateBuilder(logs);
        services?.Invoke(builder.Services);
        var probe = new Probe();
        var deadLetters = new RecordingDeadLetters();
        builder.Services.AddSingleton(probe);
        builder.Services.AddScoped<ScopeMarker>();
        if (recordDeadLetters)
        {
            builder.Services.AddSingleton<IDeadLetterHandler<Notice>>(deadLetters);
        }

        builder.Services.AddWorkQueue<Notice, THandler>("payments", queue).Configure(o =>
        {
            o.WorkerCount = 1;
            executor?.Invoke(o);
        });
        var host = builder.Build();
        host.StartAsync().WaitAsync(TestHost.Patience).GetAwaiter().GetResult();
        return (host, probe, deadLetters);
    }

    public static IWorkQueue<Notice> Queue(this IHost host) => host.Services.GetRequiredService<IWorkQueue<Notice>>();

    public static BoundedExecutor Executor(this IHost host) => host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");

    /// <summary>A pipeline of one retry whose delay ends when <paramref name="due"/> completes: the test, not a clock, decides.</summary>
    public static Action<ResiliencePipelineBuilder> OneRetryWhen(Task due) => builder => builder.AddRetry(new RetryStrategyOptions
    {
        MaxRetryAttempts = 1,
        DelayGenerator = async _ =>
        {
            await due;
            return TimeSpan.Zero;
        },
    });

    /// <summary>Fast retries for tests that only care about order and outcome: no delay, no timeout.</summary>
    public static void NoDelay(WorkQueueOptions<Notice> o)
    {
        o.RetryDelay = TimeSpan.Zero;
        o.MaxRetryDelay = TimeSpan.Zero;
        o.AttemptTimeout = Timeout.InfiniteTimeSpan;
    }
}
