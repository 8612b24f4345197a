// A durable consumer node traced with the OpenTelemetry SDK: arguments <connection string> <schema> <queue>.
// Prints READY once started and HANDLED <id> per delivery; on SIGTERM it stops (draining its executor), disposes the
// tracer provider, and prints each span the in-memory exporter holds as a line SPAN <json>, then DONE.
using System.Diagnostics;
using System.Text.Json;
using BoundedWork.Hosting;
using BoundedWork.OpenTelemetry.TestConsumer;
using BoundedWork.PostgreSql;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using OpenTelemetry.Trace;

var connectionString = args[0];
var schema = args[1];
var queue = args[2];

var exported = new List<Activity>();
var builder = Host.CreateApplicationBuilder();
builder.Logging.ClearProviders().AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Warning);
builder.Services.AddOpenTelemetry().WithTracing(tracing => tracing
    .AddBoundedWorkInstrumentation()
    .AddSource(LedgerHandler.SourceName)
    .AddInMemoryExporter(exported));
builder.Services
    .AddWorkQueue<Callback, LedgerHandler>(queue)
    .UsePostgreSql(connectionString, CallbackJson.Default.Callback, o =>
    {
        o.Schema = schema;
        o.PollInterval = TimeSpan.FromMilliseconds(100);
    })
    .Configure(o => o.WorkerCount = 1);

using (var host = builder.Build())
{
    await host.StartAsync();
    Console.WriteLine("READY");
    await host.WaitForShutdownAsync();
}

Activity[] spans;
lock (exported)
{
    spans = [.. exported];
}

foreach (var span in spans)
{
    Console.WriteLine(ExportedSpan.LinePrefix + JsonSerializer.Serialize(ExportedSpan.From(span)));
}

Console.WriteLine("DONE");
