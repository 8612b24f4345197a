using BoundedWork.Synchronous;

namespace BoundedWork.Tests.Synchronous;

/// <summary>A legacy synchronous service bound to an executor: every call runs on a worker.</summary>
public sealed class BlockingServiceTests
{
    private interface IProductRepository
    {
        string Get(int id);

        void Save(int id, string name);
    }

    private sealed class ProductRepository : IProductRepository
    {
        public List<(int Id, bool OnWorker)> Calls { get; } = [];

        public BoundedExecutor? Executor { get; set; }

        public string Get(int id)
        {
            Calls.Add((id, Executor!.IsWorkerThread));
            return $"product {id}";
        }

        public void Save(int id, string name) => Calls.Add((id, Executor!.IsWorkerThread));
    }

    [Fact]
    public async Task RunAsync_EveryShape_RunsTheCallOnAWorker()
    {
        await using var executor = TestKit.Create(workers: 1);
        var repository = new ProductRepository { Executor = executor };
        var products = executor.Bind<IProductRepository>(repository);

        var first = await products.RunAsync(p => p.Get(1));
        var second = await products.RunAsync(static (p, id) => p.Get(id), 2);
        await products.RunAsync(p => p.Save(3, "three"));
        var fourth = products.RunAndWait(p => p.Get(4));

        Assert.Equal("product 1", first);
        Assert.Equal("product 2", second);
        Assert.Equal("product 4", fourth);
        Assert.Equal([(1, true), (2, true), (3, true), (4, true)], repository.Calls);
        Assert.Same(executor, products.Executor);
    }

    [Fact]
    public async Task RunAsync_CallThrows_FaultsTheTaskWithTheCallsException()
    {
        await using var executor = TestKit.Create(workers: 1);
        var products = executor.Bind<IProductRepository>(new ProductRepository());

        // Executor is not set, so Get throws a NullReferenceException on the worker.
        await Assert.ThrowsAsync<NullReferenceException>(() => products.RunAsync(p => p.Get(1)));
        TestKit.WaitForStatistics(executor, s => s.Failed == 1); // counted by the worker just after the task faults
    }

    [Fact]
    public void Constructor_NullArguments_Throw()
    {
        var executor = TestKit.Create(workers: 1);
        Assert.Throws<ArgumentNullException>(() => new BlockingService<IProductRepository>(null!, new ProductRepository()));
        Assert.Throws<ArgumentNullException>(() => new BlockingService<IProductRepository>(executor, null!));
        executor.ShutdownAsync().WaitOrFail("shutdown");
    }
}
