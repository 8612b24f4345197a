namespace BoundedWork.Tests;

public sealed class BoundedExecutorOptionsTests
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

    [Theory]
    [InlineData(1)]
    [InlineData(64)]
    [InlineData(65)]
    [InlineData(96)]
    [InlineData(256)]
    public void DefaultWorkerCounts_AreValidOnAnyProcessorCount(int processorCount)
    {
        var options = new BoundedExecutorOptions
        {
            WorkerCount = BoundedExecutorOptions.DefaultWorkerCount(processorCount),
            MaxWorkerCount = BoundedExecutorOptions.DefaultMaxWorkerCount(processorCount),
        };

        Assert.Empty(options.GetValidationErrors());
        Assert.Equal(processorCount, options.WorkerCount);
        Assert.True(options.MaxWorkerCount >= 64);
    }

    [Fact]
    public void DefaultOptions_AreValidOnThisMachine() => Assert.Empty(new BoundedExecutorOptions().GetValidationErrors());
}
