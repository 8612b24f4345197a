using BoundedWork.Testing.Storage;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Polly;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// A pipeline of the application's (ConfigurePipeline or Pipeline) replaces the queue's retry: an in-memory queue that
/// also sets MaxRetryAttempts, RetryDelay or MaxRetryDelay refuses to start with an error naming both, instead of
/// silently running the pipeline's retry. A durable queue keeps both (the settings are the storage's retries).
/// </summary>
public sealed class PipelineSettingsTests
{
    [Theory]
    [InlineData("MaxRetryAttempts")]
    [InlineData("RetryDelay")]
    [InlineData("MaxRetryDelay")]
    public async Task ConfigurePipeline_WithARetrySetting_InMemory_RefusesToStart_NamingBoth(string setting)
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddSingleton(new Probe());
        builder.Services.AddScoped<ScopeMarker>();
        builder.Services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments", o =>
        {
            switch (setting)
            {
                case "MaxRetryAttempts": o.MaxRetryAttempts = 5; break;
                case "RetryDelay": o.RetryDelay = TimeSpan.FromSeconds(2); break;
                default: o.MaxRetryDelay = TimeSpan.FromMinutes(1); break;
            }

            o.ConfigurePipeline = pipeline => pipeline.AddRetry(new Polly.Retry.RetryStrategyOptions());
        });
        using var host = builder.Build();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.StartAsync());

        Assert.Contains("'payments'", error.Message, StringComparison.Ordinal);
        Assert.Contains("ConfigurePipeline", error.Message, StringComparison.Ordinal);
        Assert.Contains("MaxRetryAttempts/RetryDelay/MaxRetryDelay", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ConfigurePipeline_WithoutRetrySettings_InMemory_Starts()
    {
        var (host, _, _) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.ConfigurePipeline = pipeline => pipeline.AddTimeout(TimeSpan.FromSeconds(5)));
        using var _ = host;
        await host.StopAsync();
    }

    [Fact]
    public async Task ConfigurePipeline_WithMaxRetryAttempts_Durable_StartsAndUsesBoth()
    {
        var builder = TestHost.CreateBuilder();
        var probe = new Probe();
        var deadLetters = new RecordingDeadLetters();
        builder.Services.AddSingleton(probe);
        builder.Services.AddScoped<ScopeMarker>();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>>(deadLetters);
        builder.Services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments", o =>
            {
                o.MaxRetryAttempts = 1;
                o.RetryDelay = TimeSpan.Zero;
                o.ConfigurePipeline = pipeline => pipeline.AddTimeout(TimeSpan.FromSeconds(5));
            })
            .UseStorage((_, context) => new InMemoryWorkQueueStorage<Notice>(context))
            .Configure(o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();
        probe.Behaviour = (_, _, _) => throw new InvalidOperationException("declined");

        await host.Services.GetRequiredService<IDurableWorkQueue<Notice>>().EnqueueWithIdAsync(new Notice(1));

        Assert.Equal(2, Assert.Single(deadLetters.WaitFor(1)).Attempts); // the stored retry ran
        await host.StopAsync();
    }
}
