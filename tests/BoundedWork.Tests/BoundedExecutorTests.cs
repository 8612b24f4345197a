namespace BoundedWork.Tests;

/// <summary>The executor's own argument checks: a bad argument throws, names itself, and changes or counts nothing.</summary>
public sealed class BoundedExecutorTests
{

    [Fact]
    public async Task SubmitMethods_NullDelegate_ThrowArgumentNullAndCountNothing()
    {
        await using var executor = TestKit.Create();

        Assert.Throws<ArgumentNullException>("action", () => executor.TryExecute(null!));
        Assert.Throws<ArgumentNullException>("action", () => executor.TryExecute<string>(null!, "s"));
        Assert.Throws<ArgumentNullException>("action", () => executor.Execute(null!));
        Assert.Throws<ArgumentNullException>("action", () => executor.Execute<string>(null!, "s"));
        Assert.Throws<ArgumentNullException>("action", () => { _ = executor.ExecuteAsync(null!); });
        Assert.Throws<ArgumentNullException>("action", () => { _ = executor.ExecuteAsync<string>(null!, "s"); });
        Assert.Throws<ArgumentNullException>("action", () => { _ = executor.RunAsync(null!); });
        Assert.Throws<ArgumentNullException>("function", () => { _ = executor.RunAsync<int>(null!); });

        Assert.Equal(0, executor.GetStatistics().Submitted);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(-1)]
    [InlineData(9)]
    public async Task Resize_OutOfRange_ThrowsAndChangesNothing(int workerCount)
    {
        await using var executor = TestKit.Create(workers: 2, configure: o => o.MaxWorkerCount = 8);

        var ex = Assert.Throws<ArgumentOutOfRangeException>("workerCount", () => executor.Resize(workerCount));

        Assert.Contains("MaxWorkerCount (8)", ex.Message, StringComparison.Ordinal);
        var statistics = executor.GetStatistics();
        Assert.Equal(2, statistics.TargetWorkerCount);
        Assert.Equal(2, statistics.LiveWorkerCount);
    }

    [Fact]
    public async Task ShutdownAsync_NegativeTimeout_Throws()
    {
        await using var executor = TestKit.Create();

        await Assert.ThrowsAsync<ArgumentOutOfRangeException>("timeout", () => executor.ShutdownAsync(TimeSpan.FromSeconds(-2)));
    }
}
