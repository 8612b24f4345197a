// One node of a durable queue's cluster: several of these processes consume the queue "durable-demo" stored in one
// PostgreSQL database, each with its own bounded executor. run-cluster.sh starts a throwaway database and three nodes.
//
//   dotnet run --project samples/DurableCluster -- --port 0 --node node-1 \
//       --ConnectionStrings:durable "Host=/tmp/pg;Username=postgres;Database=postgres"
//
// Options (any configuration source: the command line, ConnectionStrings__durable in the environment, ...):
//   --port N                  the loopback port (0: a free one); the node prints "LISTENING http://127.0.0.1:N"
//   --node NAME               the node's name in the cluster (default: {host}:{process id}:{random})
//   --DownstreamMs 200        how long the slow downstream call blocks each item's worker
//   --Workers 4               this node's worker count (until the fleet-wide WorkersPerNode says otherwise)
//   --LeaseSeconds 10         how long a dead node's items wait before they run elsewhere
// Endpoints: POST /enqueue?count=50&keys=5 (count items; every other one carries one of `keys` ordering keys),
// GET /node (what this node has handled), the admin console and dashboard under /bounded-work/ (Development only).
using System.Globalization;
using System.Net;
using BoundedWork.Hosting;
using DurableCluster;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;

const string Queue = "durable-demo";

var builder = WebApplication.CreateBuilder(args);
var connectionString = builder.Configuration.GetConnectionString("durable")
    ?? Environment.GetEnvironmentVariable("DURABLE_CLUSTER_DB");
if (string.IsNullOrWhiteSpace(connectionString))
{
    Console.Error.WriteLine("No database: give --ConnectionStrings:durable \"Host=...;Username=...;Database=...\" (or set DURABLE_CLUSTER_DB).");
    return 2;
}

var port = builder.Configuration.GetValue("port", 0);
var downstream = TimeSpan.FromMilliseconds(builder.Configuration.GetValue("DownstreamMs", 200));
var workers = builder.Configuration.GetValue("Workers", 4);
var lease = TimeSpan.FromSeconds(builder.Configuration.GetValue("LeaseSeconds", 10));
var nodeName = builder.Configuration["node"];

// Loopback only, whatever ASPNETCORE_URLS or --urls say: the sample maps an anonymous admin console.
builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, port));
builder.Logging.AddFilter("BoundedWork.PostgreSql", LogLevel.Information); // the cluster's audit events: joins, settings

builder.Services.AddSingleton(new Downstream(downstream));
builder.Services
    .AddWorkQueue<Job, JobHandler>(Queue, o => o.OrderingKey = job => job.Key) // a key's items run one at a time, in order
    .UsePostgreSql(connectionString, JobJson.Default.Job, o =>
    {
        o.NodeName = string.IsNullOrWhiteSpace(nodeName) ? null : nodeName;
        o.LeaseDuration = lease;
    })
    .Configure(o =>
    {
        o.WorkerCount = workers;
        o.MaxWorkerCount = 32; // the most a fleet-wide WorkersPerNode may ask of this node
    });

builder.Services.AddBoundedWorkAdmin();
builder.Services.AddBoundedWorkDiagnosticsSocket(); // bw cluster durable-demo -p PID

var app = builder.Build();

app.MapPost("/enqueue", async (IDurableWorkQueue<Job> queue, int? count, int? keys, CancellationToken cancellationToken) =>
{
    var n = count ?? 20;
    var k = keys ?? 3;
    if (n is < 1 or > 100_000 || k is < 0 or > 1_000)
    {
        return Results.Problem("count is 1 to 100000, keys 0 to 1000.", statusCode: StatusCodes.Status400BadRequest);
    }

    var batch = Guid.NewGuid().ToString("N")[..8];
    var jobs = Enumerable.Range(1, n)
        .Select(i => new Job(batch, i, k > 0 && i % 2 == 0 ? "customer-" + (i / 2 % k).ToString(CultureInfo.InvariantCulture) : null))
        .ToList();
    var ids = await queue.EnqueueManyAsync(jobs, cancellationToken);
    return Results.Ok(new { batch, enqueued = ids.Count, keyed = jobs.Count(j => j.Key is not null), firstId = ids[0], lastId = ids[^1] });
});
app.MapGet("/node", (Downstream d) => Results.Ok(new { processId = Environment.ProcessId, handled = d.Handled, downstreamMs = d.Duration.TotalMilliseconds }));

if (app.Environment.IsDevelopment())
{
    // ---- DEVELOPMENT ONLY ---------------------------------------------------------------------------------------
    // Anyone who can reach 127.0.0.1 may read AND change the cluster's settings. In production register the
    // "BoundedWorkAdmin" authorization policy and map the console without AllowAnonymousAdmin().
    app.MapBoundedWorkAdmin("/bounded-work").AllowAnonymousAdmin();
    // -----------------------------------------------------------------------------------------------------------
}
else
{
    Console.Error.WriteLine("The admin console is mapped in Development only (ASPNETCORE_ENVIRONMENT=Development); bw works over the diagnostics socket.");
}

await app.StartAsync();
Console.WriteLine("LISTENING " + app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First());
await app.WaitForShutdownAsync();
return 0;
