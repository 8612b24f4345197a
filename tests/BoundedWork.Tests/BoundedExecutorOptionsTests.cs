namespace BoundedWork.Tests;

public class BoundedExecutorOptionsTests
{
    public static TheoryData<Action<BoundedExecutorOptions>, string> InvalidSettings => new()
    {
        { o => o.Name = " ", "Name" },
        { o => o.WorkerCount = 0, "WorkerCount" },
        { o => o.WorkerCount = -3, "WorkerCount" },
        { o => { o.WorkerCount = 9; o.MaxWorkerCount = 8; }, "MaxWorkerCount (8)" },
        { o => o.MaxWorkerCount = 0, "MaxWorkerCount" },
        { o => o.MaxWorkerCount = BoundedExecutorOptions.MaxWorkerLimit + 1, "MaxWorkerCount" },
        { o => o.QueueCapacity = 0, "QueueCapacity" },
        { o => o.RejectionPolicy = (RejectionPolicy)42, "RejectionPolicy" },
        { o => o.WaitTimeout = TimeSpan.FromSeconds(-1), "WaitTimeout" },
        { o => o.WaitTimeout = TimeSpan.Zero, "WaitTimeout" },
        { o => o.TimeProvider = null!, "TimeProvider" },
    };

    [Theory]
    [MemberData(nameof(InvalidSettings))]
    public void Constructor_InvalidSetting_ThrowsNamingTheSetting(Action<BoundedExecutorOptions> breakIt, string setting)
    {
        var options = new BoundedExecutorOptions { Name = "payments", WorkerCount = 2, MaxWorkerCount = 8 };
        breakIt(options);

        var ex = Assert.Throws<ArgumentException>("options", () => new BoundedExecutor(options));

        Assert.Contains(setting, ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Constructor_SeveralInvalidSettings_NamesEachOfThem()
    {
        var options = new BoundedExecutorOptions { Name = "payments", WorkerCount = 0, QueueCapacity = -1 };

        var ex = Assert.Throws<ArgumentException>(() => new BoundedExecutor(options));

        Assert.Contains("payments", ex.Message, StringComparison.Ordinal);
        Assert.Contains("WorkerCount", ex.Message, StringComparison.Ordinal);
        Assert.Contains("QueueCapacity", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Constructor_NullOptions_ThrowsArgumentNull() =>
        Assert.Throws<ArgumentNullException>("options", () => new BoundedExecutor(null!));

    [Fact]
    public void Defaults_AreValid()
    {
        var options = new BoundedExecutorOptions();

        Assert.Empty(options.GetValidationErrors());
        Assert.Equal(RejectionPolicy.Abort, options.RejectionPolicy);
        Assert.True(options.FlowExecutionContext);
        Assert.Equal(1024, options.QueueCapacity);
    }

    [Fact]
    public void InfiniteWaitTimeout_IsValid() =>
        Assert.Empty(new BoundedExecutorOptions { WaitTimeout = Timeout.InfiniteTimeSpan }.GetValidationErrors());

    [Fact]
    public async Task Options_ChangedAfterConstruction_DoNotAffectTheExecutor()
    {
        var options = new BoundedExecutorOptions { Name = "copy", WorkerCount = 1, QueueCapacity = 3 };
        await using var executor = new BoundedExecutor(options);

        options.QueueCapacity = 1000;
        options.Name = "changed";

        Assert.Equal(3, executor.QueueCapacity);
        Assert.Equal("copy", executor.Name);
    }

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
