using System.Collections.Concurrent;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Testing.Storage;

/// <summary>An item of the storage contract tests.</summary>
/// <param name="Number">Which item.</param>
/// <param name="Key">Its ordering key, if any.</param>
/// <param name="Fail">Whether its handler throws.</param>
public sealed record ContractItem(int Number, string? Key = null, bool Fail = false);

/// <summary>
/// What every durable storage promises, through the public contract only (<see cref="IDurableWorkQueue{T}"/> on a real
/// host): each storage's test project derives a class that supplies the storage.
/// </summary>
public abstract class StorageContractTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    /// <summary>Plugs the storage under test into a fresh queue (each call: empty storage).</summary>
    /// <param name="claimsPerWorker">How many items the node may hold per worker (claimed, not yet recorded).</param>
    protected abstract Task<Action<WorkQueueBuilder<ContractItem>>> CreateStorageAsync(int claimsPerWorker = 2);

    [Fact]
    public async Task EnqueuedItems_AreEachHandledOnce_WithTheIdTheEnqueueReturned()
    {
        await using var node = await Node.StartAsync(await CreateStorageAsync());
        var ids = new Dictionary<long, int>();
        for (var i = 0; i < 100; i++)
        {
            ids.Add(await node.Queue.EnqueueWithIdAsync(new ContractItem(i)), i);
        }

        await node.WaitUntilAsync(() => node.Handled.Count >= 100, "100 items are handled");
        var handled = node.Handled.ToArray();
        Assert.Equal(100, handled.Length);
        Assert.All(handled, h => Assert.Equal(ids[h.Id], h.Item.Number));
        Assert.All(handled, h => Assert.Equal(1, h.Attempt));
        Assert.Equal(100, handled.Select(h => h.Id).Distinct().Count());
    }

    [Fact]
    public async Task FailingItem_IsRetriedByTheStorage_ThenDeadLettered_AndListedWithItsAttempts()
    {
        await using var node = await Node.StartAsync(await CreateStorageAsync(), maxRetryAttempts: 2);
        var id = await node.Queue.EnqueueWithIdAsync(new ContractItem(1, Fail: true));

        await node.WaitUntilAsync(() => !node.DeadLetters.IsEmpty, "the item is dead-lettered");
        var letter = Assert.Single(node.DeadLetters);
        Assert.Equal(id, letter.ItemId);
        Assert.Equal(DeadLetterReason.Failed, letter.Reason);
        Assert.Equal(3, letter.Attempts);
        Assert.Equal([1, 2, 3], node.Attempts.Where(a => a.Id == id).Select(a => a.Attempt).Order());

        await node.WaitUntilAsync(() => node.Queue.ListDeadLettersAsync(new DeadLetterQuery()).Result.Items.Count == 1, "the dead letter is recorded");
        var stored = Assert.Single((await node.Queue.ListDeadLettersAsync(new DeadLetterQuery())).Items);
        Assert.Equal(id, stored.ItemId);
        Assert.Equal(3, stored.Attempts);
    }

    [Fact]
    public async Task IdempotentEnqueue_WithTheSameKey_StoresAndRunsTheItemOnce()
    {
        await using var node = await Node.StartAsync(await CreateStorageAsync());
        var first = await node.Queue.EnqueueAsync(new ContractItem(1), new EnqueueOptions { IdempotencyKey = "callback-1" });
        var second = await node.Queue.EnqueueAsync(new ContractItem(2), new EnqueueOptions { IdempotencyKey = "callback-1" });

        Assert.False(first.IsDuplicate);
        Assert.True(second.IsDuplicate);
        Assert.Equal(first.ItemId, second.ItemId);
        await node.WaitUntilAsync(() => !node.Handled.IsEmpty, "the item is handled");
        await node.Queue.EnqueueWithIdAsync(new ContractItem(3));
        await node.WaitUntilAsync(() => node.Handled.Count >= 2, "a later item is handled");
        Assert.Equal([1, 3], node.Handled.Select(h => h.Item.Number).Order());
    }

    [Fact]
    public async Task Cancel_ScheduledItem_NeverRuns_AndEachLaterCancelSaysWhatItFound()
    {
        await using var node = await Node.StartAsync(await CreateStorageAsync());
        var id = (await node.Queue.EnqueueAsync(new ContractItem(1), new EnqueueOptions { Delay = TimeSpan.FromDays(1) })).ItemId;

        Assert.Equal(CancelResult.Cancelled, await node.Queue.CancelAsync(id));
        Assert.Equal(CancelResult.AlreadyCancelled, await node.Queue.CancelAsync(id));
        Assert.Equal(CancelResult.NotFound, await node.Queue.CancelAsync(id + 1000));

        var done = await node.Queue.EnqueueWithIdAsync(new ContractItem(2));
        await node.WaitUntilAsync(() => !node.Handled.IsEmpty, "the other item is handled");
        await node.WaitUntilAsync(() => node.Queue.CancelAsync(done).Result == CancelResult.AlreadyCompleted, "the other item is recorded completed");
        Assert.DoesNotContain(node.Handled, h => h.Id == id);
        Assert.Equal(1, (await node.Queue.ReadStatisticsAsync()).Cancelled);
    }

    [Fact]
    public async Task Cancel_RunningItem_FiresTheHandlersToken_AndTheItemEndsCancelled_NotRetried()
    {
        await using var node = await Node.StartAsync(await CreateStorageAsync(), maxRetryAttempts: 3);
        var id = await node.Queue.EnqueueWithIdAsync(new ContractItem(1, Key: "wait-for-cancel"));
        await node.WaitUntilAsync(() => node.Attempts.Any(a => a.Id == id), "the item is running");

        Assert.Equal(CancelResult.CancellationRequested, await node.Queue.CancelAsync(id));
        await node.WaitUntilAsync(() => node.Queue.CancelAsync(id).Result == CancelResult.AlreadyCancelled, "the item is recorded cancelled");
        Assert.Single(node.Attempts, a => a.Id == id);
        Assert.Empty(node.DeadLetters);
    }

    [Fact]
    public async Task ItemsWithTheSameOrderingKey_RunOneAtATime_InEnqueueOrder()
    {
        await using var node = await Node.StartAsync(await CreateStorageAsync(), workers: 4);
        for (var i = 0; i < 40; i++)
        {
            await node.Queue.EnqueueWithIdAsync(new ContractItem(i, Key: "k" + (i % 2)));
        }

        await node.WaitUntilAsync(() => node.Handled.Count >= 40, "40 items are handled");
        foreach (var key in (string[])["k0", "k1"])
        {
            var order = node.Handled.Where(h => h.Item.Key == key).Select(h => h.Item.Number).ToList();
            Assert.Equal(order.Order(), order);
        }

        Assert.Equal(1, node.MaxConcurrentPerKey);
    }

    [Fact]
    public async Task HigherPriority_RunsFirst_AmongReadyItems()
    {
        // One worker, one claim: while the first item holds the worker, the node claims nothing more.
        await using var node = await Node.StartAsync(await CreateStorageAsync(claimsPerWorker: 1), workers: 1, gate: true);
        await node.Queue.EnqueueWithIdAsync(new ContractItem(0)); // holds the only worker until the gate opens
        await node.WaitUntilAsync(() => !node.Attempts.IsEmpty, "the first item is running");
        await node.Queue.EnqueueManyAsync([new ContractItem(1), new ContractItem(2)], new EnqueueOptions { Priority = -5 });
        await node.Queue.EnqueueAsync(new ContractItem(3), new EnqueueOptions { Priority = 5 });
        node.Gate.Set();

        await node.WaitUntilAsync(() => node.Handled.Count >= 4, "4 items are handled");
        Assert.Equal([0, 3, 1, 2], node.Handled.Select(h => h.Item.Number));
    }

    [Fact]
    public async Task DelayedItem_IsScheduled_ThenRuns()
    {
        await using var node = await Node.StartAsync(await CreateStorageAsync());
        await node.Queue.EnqueueAsync(new ContractItem(1), new EnqueueOptions { Delay = TimeSpan.FromMilliseconds(300) });
        await node.WaitUntilAsync(() => !node.Handled.IsEmpty, "the delayed item is handled");
        Assert.Equal(1, Assert.Single(node.Handled).Item.Number);
    }

    /// <summary>A real host with one queue on the storage under test.</summary>
    protected sealed class Node : IAsyncDisposable
    {
        private readonly SemaphoreSlim _changed = new(0);
        private readonly ConcurrentDictionary<string, int> _runningPerKey = new(StringComparer.Ordinal);
        private int _maxConcurrentPerKey;

        private Node(IHost host)
        {
            Host = host;
            Queue = host.Services.GetRequiredService<IDurableWorkQueue<ContractItem>>();
        }

        public IHost Host { get; }

        public IDurableWorkQueue<ContractItem> Queue { get; }

        public ConcurrentQueue<(ContractItem Item, long Id, int Attempt)> Handled { get; } = new();

        public ConcurrentQueue<(long Id, int Attempt)> Attempts { get; } = new();

        public ConcurrentQueue<DeadLetter<ContractItem>> DeadLetters { get; } = new();

        public ManualResetEventSlim Gate { get; } = new(true);

        public int MaxConcurrentPerKey => Volatile.Read(ref _maxConcurrentPerKey);

        public static async Task<Node> StartAsync(Action<WorkQueueBuilder<ContractItem>> storage, int workers = 2, int maxRetryAttempts = 0, bool gate = false)
        {
            var builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();
            builder.Logging.ClearProviders();
            Node? node = null;
            builder.Services.AddSingleton(_ => node!);
            builder.Services.AddSingleton<IDeadLetterHandler<ContractItem>, DeadLetters>();
            var queue = builder.Services.AddWorkQueue<ContractItem, Handler>("contract", o =>
            {
                o.MaxRetryAttempts = maxRetryAttempts;
                o.RetryDelay = TimeSpan.FromMilliseconds(10);
                o.MaxRetryDelay = TimeSpan.FromMilliseconds(50);
                o.OrderingKey = item => item.Key;
            });
            queue.Configure(o =>
            {
                o.WorkerCount = workers;
                o.MaxWorkerCount = Math.Max(workers, 4);
                o.QueueCapacity = 100;
            });
            storage(queue);
            var host = builder.Build();
            node = new Node(host);
            if (gate)
            {
                node.Gate.Reset();
            }

            await host.StartAsync();
            return node;
        }

        public async Task WaitUntilAsync(Func<bool> condition, string what)
        {
            using var deadline = new CancellationTokenSource(Patience);
            while (!condition())
            {
                try
                {
                    await _changed.WaitAsync(TimeSpan.FromMilliseconds(50), deadline.Token);
                }
                catch (OperationCanceledException)
                {
                    Assert.Fail($"Timed out waiting until {what}; {Handled.Count} handled, {DeadLetters.Count} dead letters.");
                }
            }
        }

        public async ValueTask DisposeAsync()
        {
            Gate.Set();
            await Host.StopAsync();
            Host.Dispose();
            Gate.Dispose();
        }

        internal void Run(ContractItem item, WorkItemContext context, CancellationToken cancellationToken)
        {
            Attempts.Enqueue((context.ItemId, context.Attempt));
            _changed.Release();
            var key = item.Key ?? string.Empty;
            var running = _runningPerKey.AddOrUpdate(key, 1, (_, n) => n + 1);
            if (item.Key is not null)
            {
                InterlockedMax(ref _maxConcurrentPerKey, running);
            }

            try
            {
                Gate.Wait(cancellationToken);
                if (item.Key == "wait-for-cancel")
                {
                    cancellationToken.WaitHandle.WaitOne(Patience);
                    cancellationToken.ThrowIfCancellationRequested();
                }

                if (item.Fail)
                {
                    throw new InvalidOperationException($"item {item.Number} fails");
                }

                Handled.Enqueue((item, context.ItemId, context.Attempt));
            }
            finally
            {
                _runningPerKey.AddOrUpdate(key, 0, (_, n) => n - 1);
                _changed.Release();
            }
        }

        internal void DeadLettered(DeadLetter<ContractItem> letter)
        {
            DeadLetters.Enqueue(letter);
            _changed.Release();
        }

        private static void InterlockedMax(ref int location, int value)
        {
            int current;
            while ((current = Volatile.Read(ref location)) < value && Interlocked.CompareExchange(ref location, value, current) != current)
            {
            }
        }
    }

    private sealed class Handler(Node node, WorkItemContext context) : IBlockingWorkHandler<ContractItem>
    {
        public void Handle(ContractItem item, CancellationToken cancellationToken) => node.Run(item, context, cancellationToken);
    }

    private sealed class DeadLetters(Node node) : IDeadLetterHandler<ContractItem>
    {
        public ValueTask HandleAsync(DeadLetter<ContractItem> deadLetter, CancellationToken cancellationToken)
        {
            node.DeadLettered(deadLetter);
            return ValueTask.CompletedTask;
        }
    }
}
