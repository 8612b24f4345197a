namespace BoundedWork.Tests.Adaptive;

/// <summary>The adaptive settings in the one settings record: defaults, validation naming the field, diff and reload merge.</summary>
public sealed class AdaptiveSettingsTests
{
    private static readonly BoundedExecutorSettings Settings = new BoundedExecutorOptions { WorkerCount = 4 }.ToSettings();

    [Fact]
    public void Defaults_AdaptiveOff_MinimumOne_MaximumTheHardMaximum()
    {
        Assert.Equal((AdaptiveMode.Off, 1, (int?)null), (Settings.AdaptiveMode, Settings.AdaptiveMinWorkerCount, Settings.AdaptiveMaxWorkerCount));
        using var executor = TestKit.Create(workers: 2);
        var s = executor.GetStatistics();
        Assert.Equal((AdaptiveMode.Off, 1, executor.MaxWorkerCount, false), (s.AdaptiveMode, s.AdaptiveMinWorkerCount, s.AdaptiveMaxWorkerCount, s.IsWorkerCountPinned));
    }

    [Theory]
    [InlineData(0, null, "AdaptiveMinWorkerCount", "AdaptiveMinWorkerCount must be at least 1 (was 0).")]
    [InlineData(9, null, "AdaptiveMinWorkerCount", "AdaptiveMinWorkerCount (9) must not exceed MaxWorkerCount (8).")]
    [InlineData(1, 9, "AdaptiveMaxWorkerCount", "AdaptiveMaxWorkerCount (9) must not exceed MaxWorkerCount (8).")]
    [InlineData(4, 3, "AdaptiveMaxWorkerCount", "AdaptiveMaxWorkerCount (3) must be at least AdaptiveMinWorkerCount (4) and at least 1.")]
    public void GetValidationErrors_BadBounds_NamesTheField(int min, int? max, string field, string message)
    {
        var errors = (Settings with { AdaptiveMinWorkerCount = min, AdaptiveMaxWorkerCount = max }).GetValidationErrors(8);
        Assert.Equal(message, Assert.Contains(field, errors));
    }

    [Fact]
    public void GetValidationErrors_UndefinedMode_NamesTheField()
    {
        var errors = (Settings with { AdaptiveMode = (AdaptiveMode)7 }).GetValidationErrors(8);
        Assert.Equal("AdaptiveMode '7' is not one of Off, On, Advisory.", errors["AdaptiveMode"]);
    }

    [Fact]
    public void Reconfigure_BadBounds_Throws_AndNothingChanges()
    {
        using var executor = TestKit.Create(workers: 2);
        var error = Assert.Throws<ArgumentException>(() => executor.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.On, AdaptiveMaxWorkerCount = 100 }));
        Assert.Contains("AdaptiveMaxWorkerCount (100)", error.Message, StringComparison.Ordinal);
        Assert.Equal(AdaptiveMode.Off, executor.Settings.AdaptiveMode);
    }

    [Fact]
    public void WithChanges_ReloadChangesOnlyTheAdaptiveSettingsThatChanged()
    {
        var operatorChanged = Settings with { WorkerCount = 7 };
        var reloaded = operatorChanged.WithChanges(Settings, Settings with { AdaptiveMode = AdaptiveMode.Advisory, AdaptiveMaxWorkerCount = 6 });
        Assert.Equal((7, AdaptiveMode.Advisory, (int?)6), (reloaded.WorkerCount, reloaded.AdaptiveMode, reloaded.AdaptiveMaxWorkerCount));
        Assert.Equal("AdaptiveMode Off -> Advisory, AdaptiveMaxWorkerCount the hard maximum -> 6", new BoundedExecutorReconfiguration(Settings, Settings with { AdaptiveMode = AdaptiveMode.Advisory, AdaptiveMaxWorkerCount = 6 }).ToString());
    }

    [Fact]
    public void Options_InvalidAdaptiveBounds_ConstructorNamesThem()
    {
        var error = Assert.Throws<ArgumentException>(() => TestKit.Create(workers: 2, configure: o => o.AdaptiveMinWorkerCount = 0));
        Assert.Contains("AdaptiveMinWorkerCount must be at least 1", error.Message, StringComparison.Ordinal);
    }
}
