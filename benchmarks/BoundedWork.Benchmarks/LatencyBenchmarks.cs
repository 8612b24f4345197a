using System.Threading.Tasks.Dataflow;
using BenchmarkDotNet.Attributes;
using BoundedWork.Benchmarks.Contenders;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks;

/// <summary>
/// Round-trip latency of one item through an idle contender with one worker: submit it from the benchmark thread
/// and wait until it has run. This is the cost of waking a parked consumer and signalling back, which dominates
/// when items arrive one at a time (the payment-callback shape at low load).
/// </summary>
[MemoryDiagnoser]
[Net10ThreadingDiagnoser]
public class LatencyBenchmarks
{
    private const int Workers = 1;
    private const int Capacity = ThroughputBenchmarks.Capacity;

    private readonly WorkCounter _counter = new();
    private readonly Func<string> _describe;
    private ChannelWorkerPool? _channel;
    private BoundedExecutor? _executor;
    private ActionBlock<Action>? _block;
    private LimiterGate? _limiter;

    public LatencyBenchmarks()
    {
        // Cached: a method group passed per operation would allocate a delegate every time and show up as 64 B/op.
        _describe = Describe;
    }

    [GlobalSetup(Target = nameof(RawChannel))]
    public void SetupRawChannel() => _channel = new ChannelWorkerPool(Workers, Capacity);

    [GlobalSetup(Targets = [nameof(Executor_Execute), nameof(Executor_ExecuteWithState), nameof(Executor_RunAsync_Wait), nameof(Executor_RunAsync_Await)])]
    public void SetupExecutor() => _executor = new BoundedExecutor(new BoundedExecutorOptions
    {
        Name = "bench",
        WorkerCount = Workers,
        QueueCapacity = Capacity,
        RejectionPolicy = RejectionPolicy.Wait,
        FlowExecutionContext = false,
    });

    [GlobalSetup(Target = nameof(Dataflow_ActionBlock))]
    public void SetupActionBlock() => _block = new ActionBlock<Action>(static action => action(), new ExecutionDataflowBlockOptions
    {
        MaxDegreeOfParallelism = Workers,
        BoundedCapacity = Capacity,
    });

    [GlobalSetup(Target = nameof(Limiter_ConcurrencyLimiter))]
    public void SetupLimiter() => _limiter = new LimiterGate(Workers, Capacity, _counter.Work);

    [GlobalSetup(Target = nameof(ThreadPool_UnsafeQueue))]
    public void SetupThreadPool()
    {
        // Nothing to build: the shared pool is already there.
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _channel?.Dispose();
        _channel = null;
        if (_executor is not null)
        {
            _executor.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult();
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
    }

    [Benchmark(Baseline = true)]
    public void RawChannel()
    {
        _counter.Reset(1);
        _channel!.Submit(_counter.Work);
        _counter.Wait(_describe);
    }

    [Benchmark]
    public void Executor_Execute()
    {
        _counter.Reset(1);
        _executor!.Execute(_counter.Work);
        _counter.Wait(_describe);
    }

    [Benchmark]
    public void Executor_ExecuteWithState()
    {
        _counter.Reset(1);
        _executor!.Execute(static c => c.Signal(), _counter);
        _counter.Wait(_describe);
    }

    /// <summary>RunAsync, the caller blocking on the task (a legacy synchronous caller).</summary>
    [Benchmark]
    public void Executor_RunAsync_Wait()
    {
        _counter.Reset(1);
        if (!_executor!.RunAsync(_counter.Work).Wait(WorkCounter.HangTimeout))
        {
            throw new TimeoutException($"HANG: RunAsync task not completed. {Describe()}");
        }
    }

    /// <summary>RunAsync awaited: includes the hop of the caller's continuation to the ThreadPool.</summary>
    [Benchmark]
    public async Task Executor_RunAsync_Await()
    {
        _counter.Reset(1);
        await _executor!.RunAsync(_counter.Work).ConfigureAwait(false);
    }

    [Benchmark]
    public void ThreadPool_UnsafeQueue()
    {
        _counter.Reset(1);
        ThreadPool.UnsafeQueueUserWorkItem(static c => c.Signal(), _counter, preferLocal: false);
        _counter.Wait(_describe);
    }

    [Benchmark]
    public void Dataflow_ActionBlock()
    {
        _counter.Reset(1);
        if (!_block!.Post(_counter.Work))
        {
            throw new InvalidOperationException("The ActionBlock declined an item.");
        }

        _counter.Wait(_describe);
    }

    [Benchmark]
    public void Limiter_ConcurrencyLimiter()
    {
        _counter.Reset(1);
        _limiter!.Submit();
        _counter.Wait(_describe);
    }

    private string Describe() => _executor is not null ? $"Executor: {_executor.GetStatistics()}" : _limiter?.Describe() ?? string.Empty;
}
