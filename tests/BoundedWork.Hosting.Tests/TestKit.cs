using System.Collections.Concurrent;
using System.Text;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Tests;

/// <summary>Builds real hosts with in-memory configuration, captured logs and no default sources.</summary>
public static class TestHost
{
    public static HostApplicationBuilder CreateBuilder(FakeLogCollector? logs = null, IDictionary<string, string?>? settings = null, string? json = null)
    {
        var builder = Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
        if (json is not null)
        {
            builder.Configuration.AddJsonStream(new MemoryStream(Encoding.UTF8.GetBytes(json)));
        }

        builder.Configuration.AddInMemoryCollection(settings ?? new Dictionary<string, string?>());
        builder.Logging.ClearProviders();
        builder.Logging.SetMinimumLevel(LogLevel.Trace);
        if (logs is not null)
        {
            builder.Logging.AddProvider(new FakeLoggerProvider(logs));
        }

        builder.Services.AddMetrics();
        return builder;
    }

    /// <summary>Changes configuration values and fires the reload token, synchronously.</summary>
    public static void Reload(this IHost host, params (string Key, string? Value)[] changes)
    {
        var configuration = (IConfigurationRoot)host.Services.GetRequiredService<IConfiguration>();
        foreach (var (key, value) in changes)
        {
            configuration[key] = value;
        }

        configuration.Reload();
    }

    /// <summary>Waits, spinning, until a condition the test is driving towards holds; fails after <see cref="Patience"/>.</summary>
    public static void WaitUntil(Func<bool> condition) =>
        Assert.True(SpinWait.SpinUntil(condition, Patience), "The expected state was not reached in time.");

    /// <summary>A generous bound for waits that should end at once; a failure, not a sleep.</summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);
}

/// <summary>An item that blocks its worker until released, and reports when it started.</summary>
public sealed class Gate : IDisposable
{
    private readonly ManualResetEventSlim _release = new(false);
    private readonly SemaphoreSlim _started = new(0);

    public Action Item => () =>
    {
        _started.Release();
        _release.Wait(TestHost.Patience);
    };

    public void WaitStarted(int count = 1)
    {
        for (var i = 0; i < count; i++)
        {
            Assert.True(_started.Wait(TestHost.Patience), "A gated item did not start in time.");
        }
    }

    public void Open() => _release.Set();

    public void Dispose()
    {
        _release.Set();
        _release.Dispose();
        _started.Dispose();
    }
}
