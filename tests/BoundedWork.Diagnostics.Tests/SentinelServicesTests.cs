using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace BoundedWork.Diagnostics.Tests;

/// <summary>The sentinel's registration: settings checked at start with their names, its health check and its diagnosis source.</summary>
public sealed class SentinelServicesTests
{
    [Theory]
    [InlineData("ProbeInterval")]
    [InlineData("StarvationThreshold")]
    [InlineData("DiagnoseAfter")]
    [InlineData("DiagnosisInterval")]
    [InlineData("SampleDuration")]
    public async Task Start_SettingOutOfRange_FailsNamingTheSetting(string setting)
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Services.AddStarvationSentinel(o =>
        {
            switch (setting)
            {
                case "ProbeInterval": o.ProbeInterval = TimeSpan.Zero; break;
                case "StarvationThreshold": o.StarvationThreshold = TimeSpan.Zero; break;
                case "DiagnoseAfter": o.DiagnoseAfter = o.ProbeInterval; break;
                case "DiagnosisInterval": o.DiagnosisInterval = TimeSpan.FromSeconds(-1); break;
                case "SampleDuration": o.SampleDuration = TimeSpan.FromMinutes(1); break;
            }
        });
        using var host = builder.Build();

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains(setting, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task HealthCheck_HealthyPool_HealthyWithTheProbesReading()
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Services.AddStarvationSentinel().AddStarvationSentinel(); // a second call adds nothing twice
        using var host = builder.Build();
        await host.StartAsync();
        try
        {
            var report = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();

            var entry = Assert.Single(report.Entries);
            Assert.Equal(StarvationSentinelServiceCollectionExtensions.HealthCheckName, entry.Key);
            Assert.Equal(HealthStatus.Healthy, entry.Value.Status);
            Assert.Equal(false, entry.Value.Data["starved"]);
            Assert.True(entry.Value.Data.ContainsKey("queueLatencyMs"));
            var source = Assert.Single(host.Services.GetServices<IThreadPoolDiagnosisSource>());
            Assert.Null(source.LastDiagnosis);
            Assert.Null(source.Limitation);
            Assert.Single(host.Services.GetServices<IHostedService>(), s => s is IThreadPoolDiagnosisSource);
        }
        finally
        {
            await host.StopAsync();
        }
    }

    [Fact]
    public async Task HealthCheck_AfterADiagnosis_DataHoldsTheLastDiagnosis()
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Services.AddStarvationSentinel();
        using var host = builder.Build();
        var sentinel = host.Services.GetRequiredService<Internal.StarvationSentinel>();
        var diagnosis = new ThreadPoolDiagnosis
        {
            DiagnosedAt = new DateTimeOffset(2026, 1, 2, 3, 4, 5, TimeSpan.Zero),
            IsStarved = true,
            Verdict = "STARVED: 6 of 6 pool threads are blocked in OrdersController.Get (route orders/{id}) (waits on Task.Result: sync over async), and work is queuing behind them.",
            BlockingSites = ["6 of 6 pool threads blocked in OrdersController.Get (route orders/{id}): waits on Task.Result: sync over async"],
            Evidence = ["Work waited for a pool thread in every one of 4 readings."],
            Advice = ["Await the task in OrdersController.Get (route orders/{id}) instead of blocking on it."],
        };

        sentinel.Publish(diagnosis);
        var report = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();

        var data = report.Entries[StarvationSentinelServiceCollectionExtensions.HealthCheckName].Data;
        Assert.Equal(diagnosis.Verdict, data["lastDiagnosis"]);
        Assert.Equal(diagnosis.DiagnosedAt, data["diagnosedAt"]);
        Assert.Equal(diagnosis.BlockingSites, data["blockingSites"]);
        Assert.Equal(diagnosis.Advice, data["advice"]);
        Assert.Same(diagnosis, host.Services.GetRequiredService<IThreadPoolDiagnosisSource>().LastDiagnosis);
    }
}
