using System.Globalization;
using System.Threading.Tasks.Dataflow;
using BenchmarkDotNet.Attributes;
using BoundedWork.Benchmarks.Contenders;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks;

/// <summary>
/// Throughput of tiny items: each operation pushes <see cref="Items"/> items (one interlocked decrement each, on one
/// counter shared by every consumer) from <see cref="Producers"/> dedicated producer threads through a contender with
/// <see cref="Workers"/> consumers and a queue of <see cref="Capacity"/>, and ends when the last item has run. Times,
/// allocations, ThreadPool work items and lock contentions are reported per item (<c>OperationsPerInvoke</c>).
/// </summary>
/// <remarks>
/// <para>
/// Shapes (producers/workers): 1/1, 1/2, 1/4, 2/1, 2/2, 2/4 and 4/8 (<see cref="ShapeFilterAttribute"/> drops the
/// other combinations of the two parameters).
/// </para>
/// <para>
/// BoundedExecutor runs in its default configuration (<c>FlowExecutionContext = true</c>, no <c>FairShare</c>) unless
/// the method's name ends in <c>FlowOff</c> (no ExecutionContext flow) or <c>Tenants1</c> / <c>Tenants100</c> (fair share
/// on, items submitted through <c>ForTenant</c>: against <see cref="Executor_Execute"/> in the same run, what tenants
/// cost and that an executor without them keeps its path), and the producer threads carry a request's ExecutionContext
/// (<see cref="RequestContext"/>), so the default cases measure what request code gets.
/// </para>
/// <para>
/// Executors, threads, blocks and limiters are built once per benchmark case in a GlobalSetup and torn down in
/// GlobalCleanup, never per operation. Every contender bounds its queue at <see cref="Capacity"/> and makes its
/// producers wait when it is full (backpressure); the ThreadPool contender is the exception (unbounded, and its
/// concurrency is the pool's, not <see cref="Workers"/>).
/// </para>
/// </remarks>
[MemoryDiagnoser]
[Net10ThreadingDiagnoser]
[ShapeFilter("1/1", "1/2", "1/4", "2/1", "2/2", "2/4", "4/8")]
public class ThroughputBenchmarks
{
    public const int Items = 100_000;
    public const int Capacity = 1024;

    private readonly WorkCounter _counter = new();
    private readonly Func<string> _describe;
    private ProducerGang? _producers;
    private ChannelWorkerPool? _channel;
    private BoundedExecutor? _executor;
    private ActionBlock<Action>? _block;
    private LimiterGate? _limiter;
    private Task[][]? _windows;

    [Params(1, 2, 4, 8)]
    public int Workers { get; set; }

    [Params(1, 2, 4)]
    public int Producers { get; set; }

    public ThroughputBenchmarks()
    {
        // Cached: a method group passed per operation would allocate a delegate every time and show up as 64 B/op.
        _describe = Describe;
    }

    [GlobalSetup(Target = nameof(RawChannel))]
    public void SetupRawChannel()
    {
        _channel = new ChannelWorkerPool(Workers, Capacity);
        var work = _counter.Work;
        StartProducers((_, count) =>
        {
            for (var i = 0; i < count; i++)
            {
                _channel.Submit(work);
            }
        });
    }

    [GlobalSetup(Target = nameof(Executor_Execute))]
    public void SetupExecutorExecute() => SetupExecute(flowExecutionContext: true);

    [GlobalSetup(Target = nameof(Executor_Execute_FlowOff))]
    public void SetupExecutorExecuteFlowOff() => SetupExecute(flowExecutionContext: false);

    private void SetupExecute(bool flowExecutionContext)
    {
        _executor = CreateExecutor(flowExecutionContext);
        var work = _counter.Work;
        var executor = _executor;
        StartProducers((_, count) =>
        {
            for (var i = 0; i < count; i++)
            {
                executor.Execute(work);
            }
        });
    }

    [GlobalSetup(Target = nameof(Executor_Execute_Tenants1))]
    public void SetupExecutorTenants1() => SetupTenants(1);

    [GlobalSetup(Target = nameof(Executor_Execute_Tenants100))]
    public void SetupExecutorTenants100() => SetupTenants(100);

    /// <summary>Fair share on (default weights, no per-tenant bounds); each producer submits to the tenants in turn, from its own offset.</summary>
    private void SetupTenants(int tenants)
    {
        _executor = CreateExecutor(flowExecutionContext: true, new FairShareSettings());
        var work = _counter.Work;
        var lanes = Enumerable.Range(0, tenants).Select(t => _executor.ForTenant("t" + t.ToString(CultureInfo.InvariantCulture))).ToArray();
        StartProducers((producer, count) =>
        {
            for (var i = 0; i < count; i++)
            {
                lanes[(i + producer) % lanes.Length].Execute(work);
            }
        });
    }

    [GlobalSetup(Target = nameof(Executor_ExecuteWithState))]
    public void SetupExecutorExecuteWithState()
    {
        _executor = CreateExecutor(flowExecutionContext: true);
        var counter = _counter;
        var executor = _executor;
        StartProducers((_, count) =>
        {
            for (var i = 0; i < count; i++)
            {
                executor.Execute(static c => c.Signal(), counter);
            }
        });
    }

    [GlobalSetup(Target = nameof(Executor_RunAsync))]
    public void SetupExecutorRunAsync()
    {
        _executor = CreateExecutor(flowExecutionContext: true);
        var work = _counter.Work;
        var executor = _executor;
        StartWindowedProducers(() => executor.RunAsync(work));
    }

    [GlobalSetup(Target = nameof(Executor_RunAsyncResult))]
    public void SetupExecutorRunAsyncResult()
    {
        _executor = CreateExecutor(flowExecutionContext: true);
        var work = _counter.Work;
        var executor = _executor;

        // One cached Func<int>: the harness allocates nothing per call, so Allocated is RunAsync<T>'s own.
        Func<int> function = () =>
        {
            work();
            return 1;
        };
        StartWindowedProducers(() => executor.RunAsync(function));
    }

    /// <summary>
    /// Starts producers that submit through a task-returning API with at most <see cref="Capacity"/> tasks outstanding.
    /// </summary>
    private void StartWindowedProducers(Func<Task> submit)
    {
        // Each producer keeps at most Capacity / Producers tasks outstanding and waits for the task it submitted
        // that many items earlier before submitting another: "submit, then wait for the tasks", bounded so that the
        // queue never overflows and every submit takes RunAsync's fast path (no Wait-policy async wait).
        _windows = new Task[Producers][];
        for (var p = 0; p < Producers; p++)
        {
            _windows[p] = new Task[Capacity / Producers];
        }

        var windows = _windows;
        StartProducers((index, count) =>
        {
            var window = windows[index];
            for (var i = 0; i < count; i++)
            {
                ref var slot = ref window[i % window.Length];
                slot?.Wait();
                slot = submit();
            }

            for (var i = 0; i < window.Length; i++)
            {
                window[i]?.Wait();
                window[i] = null!;
            }
        });
    }

    [GlobalSetup(Target = nameof(ThreadPool_UnsafeQueue))]
    public void SetupThreadPool()
    {
        var counter = _counter;
        StartProducers((_, count) =>
        {
            for (var i = 0; i < count; i++)
            {
                ThreadPool.UnsafeQueueUserWorkItem(static c => c.Signal(), counter, preferLocal: false);
            }
        });
    }

    [GlobalSetup(Target = nameof(Dataflow_ActionBlock))]
    public void SetupActionBlock()
    {
        _block = new ActionBlock<Action>(static action => action(), new ExecutionDataflowBlockOptions
        {
            MaxDegreeOfParallelism = Workers,
            BoundedCapacity = Capacity,
        });
        var block = _block;
        var work = _counter.Work;
        StartProducers((_, count) =>
        {
            for (var i = 0; i < count; i++)
            {
                if (!block.Post(work) && !block.SendAsync(work).GetAwaiter().GetResult())
                {
                    throw new InvalidOperationException("The ActionBlock declined an item.");
                }
            }
        });
    }

    [GlobalSetup(Target = nameof(Limiter_ConcurrencyLimiter))]
    public void SetupLimiter()
    {
        _limiter = new LimiterGate(Workers, Capacity, _counter.Work);
        var limiter = _limiter;
        StartProducers((_, count) =>
        {
            for (var i = 0; i < count; i++)
            {
                limiter.Submit();
            }
        });
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _producers?.Dispose();
        _producers = null;
        _channel?.Dispose();
        _channel = null;
        if (_executor is not null)
        {
            var result = _executor.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult();
            if (result.AbandonedItems.Count > 0 || !result.WorkersExited)
            {
                Console.Error.WriteLine($"Executor shutdown: {result.AbandonedItems.Count} abandoned, workers exited: {result.WorkersExited}.");
            }

            _executor = null;
        }

        if (_block is not null)
        {
            _block.Complete();
            _block.Completion.Wait(TimeSpan.FromSeconds(10));
            _block = null;
        }

        _limiter?.Dispose();
        _limiter = null;
        _windows = null;
    }

    /// <summary>A bounded <c>Channel&lt;Action&gt;</c> drained by W dedicated threads (what people hand-roll).</summary>
    [Benchmark(Baseline = true, OperationsPerInvoke = Items)]
    public void RawChannel() => RunOperation();

    /// <summary><c>BoundedExecutor.Execute(Action)</c>, Wait policy, the default configuration: the producer's ExecutionContext flows to the item.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Executor_Execute() => RunOperation();

    /// <summary><c>BoundedExecutor.Execute(Action)</c>, Wait policy, <c>FlowExecutionContext = false</c>.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Executor_Execute_FlowOff() => RunOperation();

    /// <summary><c>executor.ForTenant(t).Execute(Action)</c> with <c>FairShare</c> set, every item of one tenant: the fair-share path at its most contended.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Executor_Execute_Tenants1() => RunOperation();

    /// <summary><c>executor.ForTenant(t).Execute(Action)</c> with <c>FairShare</c> set, the items spread over 100 tenants in turn.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Executor_Execute_Tenants100() => RunOperation();

    /// <summary><c>BoundedExecutor.Execute&lt;TState&gt;(static lambda, state)</c>, Wait policy, default configuration.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Executor_ExecuteWithState() => RunOperation();

    /// <summary><c>BoundedExecutor.RunAsync(Action)</c>: the task-returning path, each task waited for.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Executor_RunAsync() => RunOperation();

    /// <summary><c>BoundedExecutor.RunAsync&lt;T&gt;(Func&lt;T&gt;)</c>: the result-returning path, each task waited for.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Executor_RunAsyncResult() => RunOperation();

    /// <summary><c>ThreadPool.UnsafeQueueUserWorkItem</c> (unbounded; the pool picks its own thread count).</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void ThreadPool_UnsafeQueue() => RunOperation();

    /// <summary>TPL Dataflow <c>ActionBlock</c>, MaxDegreeOfParallelism = W, BoundedCapacity = capacity.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Dataflow_ActionBlock() => RunOperation();

    /// <summary>ThreadPool work gated by <c>ConcurrencyLimiter</c> (PermitLimit = W, QueueLimit = capacity).</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public void Limiter_ConcurrencyLimiter() => RunOperation();

    private void RunOperation()
    {
        _counter.Reset(Items);
        _producers!.Run(_describe);
        _counter.Wait(_describe);
    }

    private void StartProducers(Action<int, int> produce) => _producers = new ProducerGang(Producers, Items, produce);

    private BoundedExecutor CreateExecutor(bool flowExecutionContext, FairShareSettings? fairShare = null) => new(new BoundedExecutorOptions
    {
        Name = "bench",
        WorkerCount = Workers,
        MaxWorkerCount = Math.Max(Workers, 4),
        WaitTimeout = Timeout.InfiniteTimeSpan,
        QueueCapacity = Capacity,
        RejectionPolicy = RejectionPolicy.Wait,
        FlowExecutionContext = flowExecutionContext,
        FairShare = fairShare,
    });

    private string Describe()
    {
        var parts = new List<string> { $"Workers={Workers}, Producers={Producers}." };
        if (_executor is not null)
        {
            parts.Add($"Executor: {_executor.GetStatistics()}");
        }

        if (_channel is not null)
        {
            parts.Add($"Channel: {_channel.Count} queued.");
        }

        if (_block is not null)
        {
            parts.Add($"ActionBlock: {_block.InputCount} queued.");
        }

        if (_limiter is not null)
        {
            parts.Add(_limiter.Describe());
        }

        return string.Join(" ", parts);
    }
}
