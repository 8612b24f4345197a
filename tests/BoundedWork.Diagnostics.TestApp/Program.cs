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
builder.Services.AddStarvationSentinel(o =>
{
    o.ProbeInterval = TimeSpan.FromMilliseconds(250);
    o.StarvationThreshold = TimeSpan.FromSeconds(1);
    o.DiagnoseAfter = TimeSpan.FromSeconds(2);
    o.DiagnosisInterval = TimeSpan.FromMinutes(10);
});
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
if (Console.IsInputRedirected)
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
