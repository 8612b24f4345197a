using System.Collections.Concurrent;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>What a test's handler does with each delivery; records every delivery.</summary>
public sealed class Behavior
{
    private readonly SemaphoreSlim _changed = new(0);

    public Action<Notice, WorkItemContext> Handle { get; set; } = (_, _) => { };

    /// <summary>Gets or sets a handler that also gets the attempt's cancellation token; when set, it runs instead of <see cref="Handle"/>.</summary>
    public Action<Notice, WorkItemContext, CancellationToken>? HandleWithToken { get; set; }

    public ConcurrentQueue<(Notice Item, long Id, int Attempt, string Node)> Deliveries { get; } = new();

    public ConcurrentQueue<DeadLetter<Notice>> DeadLetters { get; } = new();

    internal void Record(Notice item, WorkItemContext context, string node)
    {
        Deliveries.Enqueue((item, context.ItemId, context.Attempt, node));
        _changed.Release();
    }

    internal void RecordDeadLetter(DeadLetter<Notice> letter)
    {
        DeadLetters.Enqueue(letter);
        _changed.Release();
    }

    /// <summary>Waits until the condition holds, re-checking on every delivery and dead letter (and at least every 100 ms).</summary>
    public async Task WaitUntilAsync(Func<bool> condition, string what)
    {
        using var deadline = new CancellationTokenSource(QueueNode.Patience);
        while (!condition())
        {
            try
            {
                await _changed.WaitAsync(TimeSpan.FromMilliseconds(100), deadline.Token);
            }
            catch (OperationCanceledException)
            {
                Assert.Fail($"Timed out waiting until {what}; {Deliveries.Count} deliveries, {DeadLetters.Count} dead letters.");
            }
        }
    }
}

public sealed class TestHandler(Behavior behavior, WorkItemContext context, QueueNode.NodeName node) : IBlockingWorkHandler<Notice>
{
    public void Handle(Notice item, CancellationToken cancellationToken)
    {
        if (behavior.HandleWithToken is { } handle)
        {
            handle(item, context, cancellationToken);
        }
        else
        {
            behavior.Handle(item, context);
        }

        behavior.Record(item, context, node.Value);
    }
}

public sealed class TestDeadLetters(Behavior behavior) : IDeadLetterHandler<Notice>
{
    public ValueTask HandleAsync(DeadLetter<Notice> deadLetter, CancellationToken cancellationToken)
    {
        behavior.RecordDeadLetter(deadLetter);
        return ValueTask.CompletedTask;
    }
}

/// <summary>A consumer node in this process: a real host with one PostgreSQL-backed queue.</summary>
public sealed class QueueNode : IAsyncDisposable
{
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    private QueueNode(IHost host, string name)
    {
        Host = host;
        Queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<Notice>>();
        Storage = host.Services.GetServices<IWorkQueueStorage>().Single();
        Executor = host.Services.GetRequiredKeyedService<BoundedExecutor>(name);
    }

    public IHost Host { get; }

    public IPostgreSqlWorkQueue<Notice> Queue { get; }

    public IWorkQueueStorage Storage { get; }

    public BoundedExecutor Executor { get; }

    /// <summary>
    /// A node that enqueues and reads but claims nothing (<c>Consume = false</c>), with a handler nobody waits on;
    /// <paramref name="keyed"/> gives its items their <see cref="Notice.Key"/> as ordering key.
    /// </summary>
    public static Task<QueueNode> StartProducerAsync(string connectionString, string schema, string node = "a", bool keyed = false) =>
        StartAsync(connectionString, schema, new Behavior(), node, storage: static o => o.Consume = false, queue: keyed ? static o => o.OrderingKey = static n => n.Key : null);

    public static async Task<QueueNode> StartAsync(
        string connectionString,
        string schema,
        Behavior behavior,
        string node = "a",
        Action<WorkQueueOptions<Notice>>? queue = null,
        Action<PostgreSqlWorkQueueOptions<Notice>>? storage = null,
        Action<BoundedExecutorOptions>? executor = null,
        Action<IServiceCollection>? services = null)
    {
        var builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();
        builder.Logging.ClearProviders();
        if (Environment.GetEnvironmentVariable("BOUNDEDWORK_TEST_LOG") is "1")
        {
            builder.Logging.AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Debug);
        }
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(10));
        builder.Services.AddSingleton(behavior);
        builder.Services.AddSingleton(new NodeName(node));
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>, TestDeadLetters>();
        builder.Services
            .AddWorkQueue<Notice, TestHandler>("notices", o =>
            {
                o.RetryDelay = TimeSpan.FromMilliseconds(20);
                o.MaxRetryDelay = TimeSpan.FromMilliseconds(100);
                queue?.Invoke(o);
            })
            .UsePostgreSql(connectionString, NoticeJson.Default.Notice, o =>
            {
                o.Schema = schema;
                o.LeaseDuration = TimeSpan.FromSeconds(2);
                o.PollInterval = TimeSpan.FromMilliseconds(100);
                o.StatisticsInterval = TimeSpan.FromMilliseconds(200);
                o.MaxReconnectDelay = TimeSpan.FromMilliseconds(500);
                storage?.Invoke(o);
            })
            .Configure(o =>
            {
                o.WorkerCount = 2;
                o.MaxWorkerCount = 8;
                executor?.Invoke(o);
            });
        services?.Invoke(builder.Services);
        var host = builder.Build();
        try
        {
            await host.StartAsync();
        }
        catch
        {
            await ((IAsyncDisposable)host).DisposeAsync();
            throw;
        }

        return new QueueNode(host, "notices");
    }

    public async ValueTask DisposeAsync()
    {
        (Storage as Internal.PostgreSqlWorkQueue<Notice>)?.AssertInvariants();
        await Host.StopAsync();
        (Storage as Internal.PostgreSqlWorkQueue<Notice>)?.AssertInvariants();
        Host.Dispose();
    }

    public sealed record NodeName(string Value);
}
