using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Mvc;

// Usage: BoundedWork.Diagnostics.TestApp [--urls http://127.0.0.1:0]
// Prints "LISTENING <address>" once bound; logs as one JSON object a line.
var builder = WebApplication.CreateBuilder(args);
builder.Logging.ClearProviders();
builder.Logging.AddJsonConsole();
builder.Logging.AddFilter("Microsoft", LogLevel.Warning);
builder.Services.AddControllers();
// --Sentinel test (the default: quick settings for the tests), default (the library's defaults) or off (none:
// benchmarks/sentinel-cost.sh compares).
switch (builder.Configuration["Sentinel"] ?? "test")
{
    case "test":
        builder.Services.AddStarvationSentinel(o =>
        {
            o.ProbeInterval = TimeSpan.FromMilliseconds(250);
            o.StarvationThreshold = TimeSpan.FromSeconds(1);
            o.DiagnoseAfter = TimeSpan.FromSeconds(2);
            o.DiagnosisInterval = TimeSpan.FromMinutes(10);
        });
        break;
    case "default":
        builder.Services.AddStarvationSentinel();
        break;
}

builder.Services.AddHealthChecks();
if (builder.Configuration["MeasurePauses"] == "true")
{
    // A bystander on a thread of its own: each second, the longest gap between two 1 ms sleeps ("PAUSE 12.3"), which
    // the runtime's suspensions for stack samples lengthen.
    new Thread(() =>
    {
        var second = System.Diagnostics.Stopwatch.StartNew();
        var last = System.Diagnostics.Stopwatch.GetTimestamp();
        var longest = 0.0;
        while (true)
        {
            Thread.Sleep(1);
            var now = System.Diagnostics.Stopwatch.GetTimestamp();
            longest = Math.Max(longest, System.Diagnostics.Stopwatch.GetElapsedTime(last, now).TotalMilliseconds);
            last = now;
            if (second.ElapsedMilliseconds >= 1000)
            {
                Console.Out.WriteLine(FormattableString.Invariant($"PAUSE {longest:0.0}"));
                longest = 0;
                second.Restart();
            }
        }
    }) { IsBackground = true, Name = "pause bystander" }.Start();
}
// The OpenTelemetry side, as a tracer provider would see it: the sentinel's activity event, one line.
using var listener = new System.Diagnostics.ActivityListener
{
    ShouldListenTo = source => source.Name == "BoundedWork",
    Sample = (ref System.Diagnostics.ActivityCreationOptions<System.Diagnostics.ActivityContext> _) => System.Diagnostics.ActivitySamplingResult.AllDataAndRecorded,
    ActivityStopped = activity =>
    {
        foreach (var e in activity.Events)
        {
            Console.Out.WriteLine($"ACTIVITY {activity.OperationName} EVENT {e.Name} {e.Tags.FirstOrDefault(t => t.Key == "threadpool.verdict").Value}");
        }
    },
};
System.Diagnostics.ActivitySource.AddActivityListener(listener);
var app = builder.Build();
app.MapControllers();
app.MapHealthChecks("/health");
app.Lifetime.ApplicationStarted.Register(() =>
{
    var address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
    Console.Out.WriteLine("LISTENING " + address);
    Console.Out.Flush();
});
if (builder.Configuration["StopOnStdinClose"] == "true")
{
    // Started by a test: stop when its end of stdin closes (a thread of its own: the pool may be starved).
    new Thread(() =>
    {
        Console.In.ReadToEnd();
        app.Lifetime.StopApplication();
    }) { IsBackground = true }.Start();
}

await app.RunAsync();

/// <summary>A dependency with an async API, as a database or an HTTP service has.</summary>
internal static class Inventory
{
    public static async Task<int> CountAsync(int id)
    {
        await Task.Delay(200);
        return id * 2;
    }
}

/// <summary>Sync over async: the action blocks its pool thread on Task.Result.</summary>
[ApiController]
[Route("orders")]
public sealed class OrdersController : ControllerBase
{
    [HttpGet("{id:int}")]
    public int Get(int id) => Inventory.CountAsync(id).Result;
}

/// <summary>Polls a task with Thread.Sleep until it completes.</summary>
[ApiController]
[Route("stock")]
public sealed class StockController : ControllerBase
{
    [HttpGet("{id:int}")]
    public int Get(int id)
    {
        var count = Inventory.CountAsync(id);
        while (!count.IsCompleted)
        {
            Thread.Sleep(10);
        }

        return count.Result;
    }
}

/// <summary>Async all the way: the pool thread is free while the dependency works.</summary>
[ApiController]
[Route("prices")]
public sealed class PricesController : ControllerBase
{
    [HttpGet("{id:int}")]
    public async Task<int> Get(int id) => await Inventory.CountAsync(id);
}

/// <summary>The least an action does: what the sentinel's bookkeeping of running actions costs shows here.</summary>
[ApiController]
[Route("ping")]
public sealed class PingController : ControllerBase
{
    [HttpGet]
    public string Get() => "pong";
}

/// <summary>CPU-bound: the pool thread computes.</summary>
[ApiController]
[Route("quotes")]
public sealed class QuotesController : ControllerBase
{
    [HttpGet("{id:int}")]
    public long Get(int id)
    {
        var until = Environment.TickCount64 + 20;
        long sum = id;
        while (Environment.TickCount64 < until)
        {
            for (var i = 0; i < 10_000; i++)
            {
                sum = unchecked((sum * 31) + i);
            }
        }

        return sum;
    }
}
