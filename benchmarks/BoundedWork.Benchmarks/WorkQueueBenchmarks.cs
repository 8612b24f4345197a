using BenchmarkDotNet.Attributes;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Benchmarks;

/// <summary>
/// The typed work queue's overhead per item against the raw executor: a batch of items, each a trivial handler call,
/// from enqueue until the last has run, on an executor with two workers. The queue adds a DI scope and handler
/// resolution per attempt, the Polly pipeline (the default retry plus per-attempt timeout, or an empty one), and, when
/// ordered, the per-key bookkeeping.
/// </summary>
[MemoryDiagnoser]
public class WorkQueueBenchmarks
{
    private const int Batch = 1000;
    private const int Workers = 2;

    private readonly Batcher _batcher = new();
    private BoundedExecutor? _executor;
    private Action<Item>? _raw;
    private ServiceProvider? _services;
    private IWorkQueue<Item>? _queue;

    [GlobalSetup(Target = nameof(RawExecutor))]
    public void SetupRawExecutor()
    {
        _executor = new BoundedExecutor(new BoundedExecutorOptions { Name = "raw", WorkerCount = Workers, QueueCapacity = Batch * 2 });
        var batcher = _batcher;
        _raw = item => batcher.Handled(item);
    }

    [GlobalSetup(Target = nameof(Queue_NoPipeline))]
    public void SetupNoPipeline() => SetupQueue(o =>
    {
        o.MaxRetryAttempts = 0;
        o.AttemptTimeout = Timeout.InfiniteTimeSpan;
    });

    [GlobalSetup(Target = nameof(Queue_DefaultPipeline))]
    public void SetupDefaultPipeline() => SetupQueue(_ => { });

    [GlobalSetup(Target = nameof(Queue_DefaultPipeline_Ordered))]
    public void SetupOrdered() => SetupQueue(o => o.OrderingKey = item => item.Key);

    [GlobalCleanup]
    public void Cleanup()
    {
        _executor?.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult();
        _services?.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _executor = null;
        _services = null;
        _queue = null;
    }

    /// <summary>The same trivial work as fire-and-forget items on a plain executor.</summary>
    [Benchmark(Baseline = true, OperationsPerInvoke = Batch)]
    public void RawExecutor() => RunBatch(static (benchmark, item) => benchmark._executor!.TryExecute(benchmark._raw!, item));

    [Benchmark(OperationsPerInvoke = Batch)]
    public void Queue_NoPipeline() => RunBatch(static (benchmark, item) => benchmark._queue!.TryEnqueue(item));

    [Benchmark(OperationsPerInvoke = Batch)]
    public void Queue_DefaultPipeline() => RunBatch(static (benchmark, item) => benchmark._queue!.TryEnqueue(item));

    /// <summary>The default pipeline with 32 ordering keys.</summary>
    [Benchmark(OperationsPerInvoke = Batch)]
    public void Queue_DefaultPipeline_Ordered() => RunBatch(static (benchmark, item) => benchmark._queue!.TryEnqueue(item));

    private void SetupQueue(Action<WorkQueueOptions<Item>> configure)
    {
        var services = new ServiceCollection();
        services.AddSingleton(_batcher);
        services.AddWorkQueue<Item, ItemHandler>("queue", configure).Configure(o =>
        {
            o.WorkerCount = Workers;
            o.QueueCapacity = Batch * 2;
        });
        _services = services.BuildServiceProvider();
        _queue = _services.GetRequiredService<IWorkQueue<Item>>();
    }

    private void RunBatch(Func<WorkQueueBenchmarks, Item, bool> enqueue)
    {
        _batcher.Reset(Batch);
        for (var i = 0; i < Batch; i++)
        {
            if (!enqueue(this, new Item(i & 31)))
            {
                throw new InvalidOperationException("The batch did not fit in the queue.");
            }
        }

        _batcher.Wait();
    }

    public sealed record Item(int Key);

    public sealed class ItemHandler(Batcher batcher) : IBlockingWorkHandler<Item>
    {
        public void Handle(Item item, CancellationToken cancellationToken) => batcher.Handled(item);
    }

    /// <summary>Counts handled items; the benchmark thread waits for the whole batch on a kernel event.</summary>
    public sealed class Batcher
    {
        private readonly ManualResetEventSlim _done = new(false);
        private int _remaining;

        public void Reset(int count)
        {
            _done.Reset();
            Volatile.Write(ref _remaining, count);
        }

        public void Handled(Item item)
        {
            _ = item;
            if (Interlocked.Decrement(ref _remaining) == 0)
            {
                _done.Set();
            }
        }

        public void Wait()
        {
            if (!_done.Wait(TimeSpan.FromSeconds(30)))
            {
                throw new TimeoutException("The batch did not finish.");
            }
        }
    }
}
