using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>A starvation sentinel's diagnosis source that holds what the test gives it.</summary>
internal sealed class FakeSource(ThreadPoolDiagnosis? last, string? limitation) : IThreadPoolDiagnosisSource
{
    public ThreadPoolDiagnosis? LastDiagnosis => last;

    public string? Limitation => limitation;
}

/// <summary>The console's /threadpool document carries the starvation sentinel's last diagnosis, or why it cannot make one.</summary>
public sealed class ThreadPoolDiagnosisTests
{
    [Fact]
    public async Task ThreadPool_SentinelDiagnosed_DocumentCarriesTheLastDiagnosis()
    {
        var diagnosis = new ThreadPoolDiagnosis
        {
            DiagnosedAt = new DateTimeOffset(2026, 1, 2, 3, 4, 5, TimeSpan.Zero),
            IsStarved = true,
            Verdict = "STARVED: 47 of 52 pool threads are blocked in OrdersController.Get (route orders/{id}) (waits on Task.Result: sync over async), and work is queuing behind them.",
            BlockingSites = ["47 of 52 pool threads blocked in OrdersController.Get (route orders/{id}): waits on Task.Result: sync over async"],
            Evidence = ["Work waited for a pool thread in every one of 4 readings (queue length 40 to 90)."],
            Advice = ["Await the task in OrdersController.Get (route orders/{id}) instead of blocking on it."],
        };
        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddSingleton<IThreadPoolDiagnosisSource>(new FakeSource(diagnosis, null)));

        var json = await (await server.Client.GetAsync("/bounded-work/threadpool")).JsonAsync();

        var last = json.GetProperty("lastDiagnosis");
        Assert.True(last.GetProperty("isStarved").GetBoolean());
        Assert.Equal(diagnosis.Verdict, last.GetProperty("verdict").GetString());
        Assert.Equal(diagnosis.BlockingSites, last.GetProperty("blockingSites").EnumerateArray().Select(e => e.GetString()));
        Assert.Equal(diagnosis.Advice, last.GetProperty("advice").EnumerateArray().Select(e => e.GetString()));
        Assert.Equal(diagnosis.DiagnosedAt, last.GetProperty("diagnosedAt").GetDateTimeOffset());
        Assert.False(json.TryGetProperty("diagnosisLimitation", out _));
    }

    [Fact]
    public async Task ThreadPool_SentinelCannotDiagnose_DocumentSaysWhy()
    {
        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddSingleton<IThreadPoolDiagnosisSource>(new FakeSource(null, "DOTNET_EnableDiagnostics=0 turns the runtime's diagnostics port off.")));

        var json = await (await server.Client.GetAsync("/bounded-work/threadpool")).JsonAsync();

        Assert.Equal("DOTNET_EnableDiagnostics=0 turns the runtime's diagnostics port off.", json.GetProperty("diagnosisLimitation").GetString());
        Assert.False(json.TryGetProperty("lastDiagnosis", out _));
    }

    [Fact]
    public async Task ThreadPool_NoSentinel_NoDiagnosisFields()
    {
        await using var server = await AdminServer.StartAsync();

        var json = await (await server.Client.GetAsync("/bounded-work/threadpool")).JsonAsync();

        Assert.False(json.TryGetProperty("lastDiagnosis", out _));
        Assert.False(json.TryGetProperty("diagnosisLimitation", out _));
    }
}
