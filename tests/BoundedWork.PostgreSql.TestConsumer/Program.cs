// A consumer node: arguments <connection string> <schema> <queue> <workers> <handler milliseconds> <lease milliseconds>
// [limits | schedule | limiter]. Each delivery is recorded in <schema>.deliveries; its effect goes to <schema>.effects once per item id (an
// idempotent handler). With "limits", items are ordered by their key, and each handler records its start and end in
// <schema>.runs (the cluster-limit tests measure concurrency from them). Environment variables set its cluster
// membership (see ClusterMember). Prints READY once the host has started; stops on SIGTERM, dies on SIGKILL.
using System.Globalization;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

// Every connection of this node names it, so a test can tell when a killed node's connections (and whatever
// statement they had sent) are gone from the server.
var connectionString = new NpgsqlConnectionStringBuilder(args[0]) { ApplicationName = "bw-consumer-" + Environment.ProcessId.ToString(CultureInfo.InvariantCulture) }.ConnectionString;
var schema = args[1];
var queue = args[2];
var workers = int.Parse(args[3], CultureInfo.InvariantCulture);
var handlerTime = TimeSpan.FromMilliseconds(int.Parse(args[4], CultureInfo.InvariantCulture));
var lease = TimeSpan.FromMilliseconds(int.Parse(args[5], CultureInfo.InvariantCulture));
var limits = args.Length > 6 && args[6] == "limits";
if (args.Length > 6 && args[6] == "limiter")
{
    // Code outside the queue under its cluster rate limiter: <workers> is its permit limit, <handler milliseconds> how long each lease is held.
    await LimiterClient.RunAsync(connectionString, schema, queue, workers, handlerTime);
    return;
}

if (args.Length > 6 && args[6] == "schedule")
{
    await ScheduleConsumer.RunAsync(connectionString, schema, workers, lease);
    return;
}


var builder = Host.CreateApplicationBuilder();
builder.Logging.ClearProviders().AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Warning);
builder.Services.AddSingleton(new EffectStore(NpgsqlDataSource.Create(connectionString), schema, handlerTime) { RecordsRuns = limits });
builder.Services
    .AddWorkQueue<Notice, RecordingHandler>(queue, o =>
    {
        o.RetryDelay = TimeSpan.FromMilliseconds(50);
        if (limits)
        {
            o.OrderingKey = n => n.Key;
        }
    })
    .UsePostgreSql(connectionString, NoticeJson.Default.Notice, o =>
    {
        o.Schema = schema;
        o.LeaseDuration = lease;
        o.PollInterval = TimeSpan.FromMilliseconds(100);
        o.StatisticsInterval = TimeSpan.FromMilliseconds(500);
        ClusterMember.ConfigureStorage(o);
    })
    .Configure(o =>
    {
        o.WorkerCount = workers;
        o.MaxWorkerCount = Math.Max(workers, 4);
        ClusterMember.ConfigureExecutor(o);
    });
ClusterMember.AddReporter(builder.Services, queue);

using var host = builder.Build();
await host.StartAsync();
ClusterMember.PinIfAsked(host.Services, queue);
Console.WriteLine("READY");
await host.WaitForShutdownAsync();
