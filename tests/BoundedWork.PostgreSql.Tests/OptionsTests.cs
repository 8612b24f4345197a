using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests;

public sealed class OptionsTests
{
    [Fact]
    public void InvalidSettings_AreRefusedAtRegistration_EachNamed()
    {
        var services = new ServiceCollection();
        var error = Assert.Throws<ArgumentException>(() => services.AddWorkQueue<Notice, TestHandler>("payments").UsePostgreSql("Host=localhost", NoticeJson.Default.Notice, o =>
        {
            o.Schema = "Bad-Schema";
            o.LeaseDuration = TimeSpan.FromMilliseconds(10);
            o.ClaimsPerWorker = 0;
            o.CompletedRetention = TimeSpan.FromSeconds(-1);
            o.PollInterval = TimeSpan.Zero;
            o.TimeProvider = null!;
            o.ClusterPermitWaitThreshold = TimeSpan.FromMilliseconds(10);
        }));
        Assert.StartsWith("Invalid PostgreSqlWorkQueueOptions for work queue 'payments':", error.Message, StringComparison.Ordinal);
        foreach (var setting in new[] { "Schema", "LeaseDuration", "ClaimsPerWorker", "CompletedRetention", "PollInterval", "TimeProvider", "ClusterPermitWaitThreshold" })
        {
            Assert.Contains(setting + " must be", error.Message, StringComparison.Ordinal);
        }
    }

    [Theory]
    [InlineData(1, null)]
    [InlineData(1000, null)]
    [InlineData(1001, "ClaimsPerWorker must be between 1 and 1000 (was 1001).")]
    [InlineData(-1, "ClaimsPerWorker must be between 1 and 1000 (was -1).")]
    public void ClaimsPerWorker_FromOneToAThousand(int claims, string? refused)
    {
        var services = new ServiceCollection();
        var register = () => services.AddWorkQueue<Notice, TestHandler>("payments").UsePostgreSql("Host=localhost", NoticeJson.Default.Notice, o => o.ClaimsPerWorker = claims);
        if (refused is null)
        {
            register();
        }
        else
        {
            Assert.Contains(refused, Assert.Throws<ArgumentException>(register).Message, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void ClusterPermitWaitThreshold_Infinite_IsValid()
    {
        var services = new ServiceCollection();
        services.AddWorkQueue<Notice, TestHandler>("payments").UsePostgreSql("Host=localhost", NoticeJson.Default.Notice, o => o.ClusterPermitWaitThreshold = Timeout.InfiniteTimeSpan);
    }

    [Fact]
    public void BadConnectionString_IsRefusedWithTheQueueName()
    {
        var services = new ServiceCollection();
        var error = Assert.Throws<ArgumentException>(() => services.AddWorkQueue<Notice, TestHandler>("payments").UsePostgreSql("Hots=x;;Nonsense", NoticeJson.Default.Notice));
        Assert.Contains("The PostgreSQL connection string of work queue 'payments' is invalid", error.Message, StringComparison.Ordinal);
        Assert.Equal("connectionString", error.ParamName);
    }

    [Fact]
    public void SecondStorage_IsRefused()
    {
        var builder = new ServiceCollection().AddWorkQueue<Notice, TestHandler>("payments").UsePostgreSql("Host=localhost", NoticeJson.Default.Notice);
        var error = Assert.Throws<InvalidOperationException>(() => builder.UsePostgreSql("Host=elsewhere", NoticeJson.Default.Notice));
        Assert.Equal("Work queue 'payments' already has a storage.", error.Message);
    }
}

public sealed class StartTests
{
    [Fact]
    public async Task UnreachableDatabase_FailsTheHostStart_WithTheQueueNamed()
    {
        var missing = Path.Combine(Path.GetTempPath(), "boundedwork-no-server-" + Guid.NewGuid().ToString("N")[..8]);
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            QueueNode.StartAsync($"Host={missing};Username=postgres;Timeout=2", "nowhere", new Behavior()));
        Assert.StartsWith("Work queue 'notices' could not create or upgrade its schema \"nowhere\" in PostgreSQL at start:", error.Message, StringComparison.Ordinal);
        Assert.IsAssignableFrom<Npgsql.NpgsqlException>(error.InnerException);
    }
}
