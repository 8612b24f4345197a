using BenchmarkDotNet.Attributes;
using BoundedWork.Synchronous;

namespace BoundedWork.Benchmarks;

/// <summary>
/// The cost per call of the legacy-sync adapter against calling the executor directly: one blocking repository call
/// (here a trivial one, so only the overhead shows) awaited from the benchmark thread through an idle executor with
/// one worker.
/// </summary>
[MemoryDiagnoser]
public class LegacyAdapterBenchmarks
{
    private BoundedExecutor _executor = null!;
    private IRepository _repository = null!;
    private BlockingService<IRepository> _bound = null!;
    private int _id;

    public interface IRepository
    {
        int Find(int id);
    }

    [GlobalSetup]
    public void Setup()
    {
        _executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "bench",
            WorkerCount = 1,
            QueueCapacity = 1024,
            FlowExecutionContext = false,
        });
        _repository = new Repository();
        _bound = _executor.Bind(_repository);
    }

    [GlobalCleanup]
    public void Cleanup() => _executor.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult();

    /// <summary>What users write without the adapter: <c>await executor.RunAsync(() =&gt; repo.Find(id))</c>.</summary>
    [Benchmark(Baseline = true)]
    public async Task<int> Direct_RunAsync()
    {
        var repository = _repository;
        var id = ++_id;
        return await _executor.RunAsync(() => repository.Find(id));
    }

    [Benchmark]
    public async Task<int> BlockingService_RunAsync_StaticLambda() =>
        await _bound.RunAsync(static (repository, id) => repository.Find(id), ++_id);

    [Benchmark]
    public async Task<int> BlockingService_RunAsync_Closure()
    {
        var id = ++_id;
        return await _bound.RunAsync(repository => repository.Find(id));
    }

    /// <summary>A synchronous caller on a dedicated thread (the benchmark thread), blocking until the call has run.</summary>
    [Benchmark]
    public int RunAndWait()
    {
        var repository = _repository;
        var id = ++_id;
        return _executor.RunAndWait(() => repository.Find(id));
    }

    private sealed class Repository : IRepository
    {
        public int Find(int id) => id;
    }
}
