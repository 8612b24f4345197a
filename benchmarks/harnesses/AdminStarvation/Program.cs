// Measures how long the admin console's two incident requests take -- GET {prefix}/executors and
// PUT {prefix}/executors/{name}/workers -- with a healthy ThreadPool and with a starved one.
//
// The client is a raw blocking socket on a dedicated thread, so the measurement itself never needs the pool.
// Scenarios:
//   healthy  -- nothing blocks the pool.
//   capped   -- the pool capped at its minimum and every pool thread blocked (as the core's starvation tests do).
//   flood    -- the pool left to grow as it does in production, with 4 x cores blocking items queued ahead.
// Each starved scenario is measured through Kestrel (TCP) and through the console's local socket (LocalSocketPath).
// Usage: dotnet run -c Release --project benchmarks/harnesses/AdminStarvation [-- samples]
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

var samples = args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 20;
var timeout = TimeSpan.FromSeconds(10);

var builder = WebApplication.CreateSlimBuilder();
builder.WebHost.UseUrls("http://127.0.0.1:0");
builder.Logging.ClearProviders();
builder.Services.AddBoundedExecutor("payments", o => { o.WorkerCount = 2; o.MaxWorkerCount = 16; });
var socketPath = Path.Combine(Path.GetTempPath(), $"bounded-work-{Environment.ProcessId}.sock");
builder.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = socketPath);
await using var app = builder.Build();
app.MapBoundedWorkAdmin().AllowAnonymousAdmin(); // measurement only: the cost of authorization is the app's own
await app.StartAsync();
var address = new Uri(app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single());
var endpoint = new IPEndPoint(IPAddress.Loopback, address.Port);

Console.WriteLine($".NET {Environment.Version}, {Environment.ProcessorCount} cores, {samples} samples per request, timeout {timeout.TotalSeconds:0} s");
ThreadPool.GetMinThreads(out var minWorkers, out var minIo);
ThreadPool.GetMaxThreads(out var maxWorkers, out var maxIo);

// Healthy, with the number of ThreadPool work items each request costs.
Measure("healthy", samples, keepAlive: true);
MeasureLocal("healthy", samples);

// Capped: no pool thread will ever be free until the blockers are released.
using (var gate = new ManualResetEventSlim(false))
{
    ThreadPool.SetMinThreads(Environment.ProcessorCount, minIo);
    ThreadPool.SetMaxThreads(Environment.ProcessorCount, maxIo);
    using var warm = Connect();
    Request(warm, Get(), timeout); // a keep-alive connection opened before the starvation
    for (var i = 0; i < Environment.ProcessorCount; i++)
    {
        ThreadPool.UnsafeQueueUserWorkItem(static g => g.Wait(), gate, preferLocal: false);
    }

    SpinWait.SpinUntil(() => { ThreadPool.GetAvailableThreads(out var available, out _); return available == 0; }, timeout);
    var get = Timed(() => Request(warm, Get(), TimeSpan.FromSeconds(5)));
    Console.WriteLine($"capped   GET executors on an open connection: {Describe(get)}");
    using (var fresh = Connect())
    {
        var put = Timed(() => Request(fresh, Put(3), TimeSpan.FromSeconds(5)));
        Console.WriteLine($"capped   PUT workers on a new connection:     {Describe(put)}");
    }

    var localGet = Timed(() => Request(ConnectLocal(), Get(""), timeout));
    var localPut = Timed(() => Request(ConnectLocal(), Put(4, ""), timeout));
    Console.WriteLine($"capped   local socket: GET executors {Describe(localGet)}, PUT workers {Describe(localPut)}; pool still starved: {ThreadPool.PendingWorkItemCount > 0}");
    gate.Set();
    ThreadPool.SetMaxThreads(maxWorkers, maxIo);
    ThreadPool.SetMinThreads(minWorkers, minIo);
}

SpinWait.SpinUntil(() => ThreadPool.PendingWorkItemCount == 0, timeout);
Measure("after", 5, keepAlive: true);

// Flood: the pool may grow, but 4 x cores blocking items are queued ahead of every request.
using (var gate = new ManualResetEventSlim(false))
{
    using var warm = Connect();
    Request(warm, Get(), timeout);
    var blockers = 4 * Environment.ProcessorCount;
    var threadsBefore = ThreadPool.ThreadCount;
    for (var i = 0; i < blockers; i++)
    {
        ThreadPool.UnsafeQueueUserWorkItem(static g => g.Wait(), gate, preferLocal: false);
    }

    var localGet = Timed(() => Request(ConnectLocal(), Get(""), timeout));
    var localPut = Timed(() => Request(ConnectLocal(), Put(3, ""), timeout));
    Console.WriteLine($"flood    local socket: GET executors {Describe(localGet)}, PUT workers {Describe(localPut)}");
    var get = Timed(() => Request(warm, Get(), timeout));
    Console.WriteLine($"flood    GET executors ({blockers} blockers queued, {threadsBefore} pool threads before): {Describe(get)}, pool threads now {ThreadPool.ThreadCount}");
    var put = Timed(() => Request(warm, Put(4), timeout));
    Console.WriteLine($"flood    PUT workers right after:                            {Describe(put)}");
    gate.Set();
}

await app.StopAsync();
return;

void Measure(string label, int count, bool keepAlive)
{
    using var socket = Connect();
    Request(socket, Get(), timeout);
    Request(socket, Put(2), timeout);
    var gets = new List<double>();
    var puts = new List<double>();
    long poolItems = 0;
    for (var i = 0; i < count; i++)
    {
        var before = ThreadPool.CompletedWorkItemCount;
        gets.Add(Timed(() => Request(socket, Get(), timeout)).Ms);
        puts.Add(Timed(() => Request(socket, Put(2 + (i % 2)), timeout)).Ms);
        poolItems += ThreadPool.CompletedWorkItemCount - before;
    }

    Console.WriteLine($"{label,-8} GET executors: median {Median(gets):0.000} ms, max {gets.Max():0.000} ms; PUT workers: median {Median(puts):0.000} ms, max {puts.Max():0.000} ms; ThreadPool work items per GET+PUT pair: {(double)poolItems / count:0.0}");
}

void MeasureLocal(string label, int count)
{
    var gets = new List<double>();
    var puts = new List<double>();
    for (var i = 0; i < count; i++)
    {
        gets.Add(Timed(() => Request(ConnectLocal(), Get(""), timeout)).Ms);
        puts.Add(Timed(() => Request(ConnectLocal(), Put(2 + (i % 2), ""), timeout)).Ms);
    }

    Console.WriteLine($"{label,-8} local socket (new connection each): GET executors median {Median(gets):0.000} ms, max {gets.Max():0.000} ms; PUT workers median {Median(puts):0.000} ms, max {puts.Max():0.000} ms");
}

Socket ConnectLocal()
{
    var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
    socket.Connect(new UnixDomainSocketEndPoint(socketPath));
    return socket;
}

Socket Connect()
{
    var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
    socket.Connect(endpoint);
    return socket;
}

string Get(string prefix = "/bounded-work") => $"GET {prefix}/executors HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

string Put(int workers, string prefix = "/bounded-work")
{
    var body = $"{{\"workers\": {workers}}}";
    return $"PUT {prefix}/executors/payments/workers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-BoundedWork-Admin: 1\r\nContent-Length: {body.Length}\r\n\r\n{body}";
}

// Sends one request and reads one response with blocking socket calls; returns the status code, or 0 on timeout.
static int Request(Socket socket, string request, TimeSpan timeout)
{
    socket.ReceiveTimeout = (int)timeout.TotalMilliseconds;
    socket.Send(Encoding.ASCII.GetBytes(request));
    var buffer = new byte[64 * 1024];
    var received = 0;
    try
    {
        while (true)
        {
            var n = socket.Receive(buffer, received, buffer.Length - received, SocketFlags.None);
            if (n == 0)
            {
                return 0;
            }

            received += n;
            var text = Encoding.ASCII.GetString(buffer, 0, received);
            var headerEnd = text.IndexOf("\r\n\r\n", StringComparison.Ordinal);
            if (headerEnd < 0)
            {
                continue;
            }

            var headers = text[..headerEnd];
            var status = int.Parse(headers.AsSpan(9, 3), CultureInfo.InvariantCulture);
            var lengthAt = headers.IndexOf("Content-Length: ", StringComparison.OrdinalIgnoreCase);
            if (lengthAt >= 0)
            {
                var end = headers.IndexOf("\r\n", lengthAt, StringComparison.Ordinal);
                var length = int.Parse(end < 0 ? headers[(lengthAt + 16)..] : headers[(lengthAt + 16)..end], CultureInfo.InvariantCulture);
                if (received >= headerEnd + 4 + length)
                {
                    return status;
                }
            }
            else if (text.EndsWith("\r\n0\r\n\r\n", StringComparison.Ordinal))
            {
                return status;
            }
        }
    }
    catch (SocketException exception) when (exception.SocketErrorCode == SocketError.TimedOut)
    {
        return 0;
    }
}

static (int Status, double Ms) Timed(Func<int> request)
{
    var started = Stopwatch.GetTimestamp();
    var status = request();
    return (status, Stopwatch.GetElapsedTime(started).TotalMilliseconds);
}

static string Describe((int Status, double Ms) result) =>
    result.Status == 0 ? $"no response within {result.Ms / 1000:0.0} s" : $"{result.Status} in {result.Ms:0.0} ms";

static double Median(List<double> values)
{
    var sorted = values.Order().ToList();
    return sorted[sorted.Count / 2];
}
