using System.Diagnostics;
using System.Globalization;
using BoundedWork;
using BoundedWork.Benchmarks.FairShare;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

// Fair share across tenants (see benchmarks/README.md, "Fair share"): three measurements, each against FIFO (fair share
// off) in the same run, printed as markdown on stdout, for the executor and for a typed queue (--target).
//
// 1. Overload: 10 tenants at 150% of the executor's capacity in total, one of them sending 20x each of the others.
//    Items block for --item-ms (a blocking call, not CPU), 4 workers. Reports each quiet tenant's p99 queue wait against
//    its wait when it runs alone at the same rate, the refusals, and goodput (items completed per second).
// 2. Shares: 10 tenants of weights 1..10, each with a backlog of 400 items before the workers start; completion shares
//    over the first 2,000 items (while every tenant is still backlogged) against the weights.
// 3. Cost per item (executor only): tiny items through 2 workers, without a tenant and with one (1 and 10 tenants).
//
// The typed queue (BoundedWork.WorkQueues, a blocking handler, the tenant from TenantSelector) runs the same overload
// and shares; its refusals (dead letters of reason Rejected: refused at the door, TryEnqueue's false, or shed from the
// queue after it was accepted) are checked against TryEnqueue and the executor's per-tenant statistics.
var quick = args.Contains("--quick");
var seconds = ArgInt("--seconds", quick ? 1 : 10);
var itemMs = ArgInt("--item-ms", 2);
var target = ArgString("--target", "both");
if (target is not ("executor" or "typed" or "both"))
{
    Console.Error.WriteLine($"--target must be executor, typed or both, not '{target}'.");
    return 2;
}

const int Workers = 4;
const int Tenants = 10;
var capacityPerSecond = Workers * 1000.0 / itemMs;
var total = capacityPerSecond * 1.5;
var quietRate = total / (Tenants - 1 + 20);
var heavyRate = quietRate * 20;
var names = Enumerable.Range(0, Tenants).Select(t => "t" + t).ToArray();
var failures = 0;

Console.WriteLine($"# Fair share: {Environment.ProcessorCount} cores, {Workers} workers, items block {itemMs} ms, capacity {capacityPerSecond:F0}/s, offered {total:F0}/s (heavy {heavyRate:F0}/s, 9 quiet at {quietRate:F0}/s each), {seconds} s per run");
Console.WriteLine();

if (target is "executor" or "both")
{
    var alone = Overload(fair: true, quietOnly: true);
    var fifo = Overload(fair: false, quietOnly: false);
    var fair = Overload(fair: true, quietOnly: false);
    PrintOverload("Executor", alone, fifo, fair);
    PrintShares("Executor", Shares());

    Console.WriteLine($"## Cost per item (tiny items, 2 workers, 1 producer, Wait policy, {CostItems():N0} items, best of 3)");
    Console.WriteLine();
    Console.WriteLine("| Path | ns per item | Allocated per item |");
    Console.WriteLine("|---|---:|---:|");
    foreach (var (name, mode) in new[] { ("Fair share off, no tenant (today's path)", 0), ("Fair share on, item without a tenant", 1), ("Fair share on, 1 tenant", 2), ("Fair share on, 10 tenants", 3) })
    {
        var (ns, bytes) = Cost(mode);
        Console.WriteLine($"| {name} | {ns:F0} | {bytes:F0} B |");
    }

    Console.WriteLine();
}

if (target is "typed" or "both")
{
    var alone = await TypedOverloadAsync(fair: true, quietOnly: true);
    var fifo = await TypedOverloadAsync(fair: false, quietOnly: false);
    var fair = await TypedOverloadAsync(fair: true, quietOnly: false);
    PrintOverload("Typed queue", alone, fifo, fair);
    PrintShares("Typed queue", await TypedSharesAsync());
}

return failures == 0 ? 0 : 1;

void PrintOverload(string what, Result alone, Result fifo, Result fair)
{
    Console.WriteLine($"## {what}: overload, 10 tenants at 150% of capacity, one sending 20x each other");
    Console.WriteLine();
    Console.WriteLine("| Run | Quiet p99 wait (worst tenant) | Quiet p50 wait | Quiet refused | Heavy refused | Goodput (items/s) |");
    Console.WriteLine("|---|---:|---:|---:|---:|---:|");
    foreach (var (name, r) in new[] { ("One quiet tenant alone, same rate", alone), ("FIFO (fair share off)", fifo), ("Fair share (ShedLongestBacklog)", fair) })
    {
        Console.WriteLine($"| {name} | {r.QuietP99:F2} ms | {r.QuietP50:F2} ms | {r.QuietRefused} | {r.HeavyRefused} | {r.Goodput:F0} |");
    }

    Console.WriteLine();
    Console.WriteLine($"Quiet p99 wait, fair share / alone: {fair.QuietP99 / Math.Max(alone.QuietP99, 0.001):F2}x; FIFO / alone: {fifo.QuietP99 / Math.Max(alone.QuietP99, 0.001):F2}x. Goodput, fair share / FIFO: {fair.Goodput / fifo.Goodput:F3}.");
    Console.WriteLine();
}

void PrintShares(string what, double[] shares)
{
    Console.WriteLine($"## {what}: shares while every tenant is backlogged (weights 1..10, first 2,000 completions)");
    Console.WriteLine();
    Console.WriteLine("| Tenant | Weight | Expected share | Measured share | Off by |");
    Console.WriteLine("|---|---:|---:|---:|---:|");
    for (var i = 0; i < Tenants; i++)
    {
        var expected = (i + 1) / 55.0;
        Console.WriteLine($"| t{i} | {i + 1} | {expected:P1} | {shares[i]:P1} | {(shares[i] - expected) / expected:+0.0%;-0.0%} |");
    }

    Console.WriteLine();
}

int CostItems() => quick ? 100_000 : 1_000_000;

Result Overload(bool fair, bool quietOnly)
{
    var waits = Enumerable.Range(0, Tenants).Select(_ => new List<double>()).ToArray();
    var refused = new long[Tenants];
    long completed = 0;
    using var executor = new BoundedExecutor(new BoundedExecutorOptions
    {
        Name = "fair-share",
        WorkerCount = Workers,
        MaxWorkerCount = Workers,
        QueueCapacity = 2_000,
        RejectionPolicy = RejectionPolicy.Abort,
        FlowExecutionContext = false,
        FairShare = fair ? new FairShareSettings { ShedLongestBacklog = true } : null,
        OnRejected = r => Interlocked.Increment(ref refused[((Probe)r.Item.State!).Tenant]),
    });
    var run = (Action<Probe>)(p =>
    {
        var waited = Stopwatch.GetElapsedTime(p.Enqueued).TotalMilliseconds;
        lock (waits[p.Tenant])
        {
            waits[p.Tenant].Add(waited);
        }

        Thread.Sleep(itemMs);
        Interlocked.Increment(ref completed);
    });
    var rates = Enumerable.Range(0, Tenants).Select(t => t == 0 ? (quietOnly ? 0 : heavyRate) : (quietOnly && t != 1 ? 0 : quietRate)).ToArray();
    var sent = new long[Tenants];
    var clock = Stopwatch.StartNew();
    var measured = TimeSpan.FromSeconds(seconds);
    while (clock.Elapsed < measured)
    {
        var now = clock.Elapsed.TotalSeconds;
        for (var t = 0; t < Tenants; t++)
        {
            while (sent[t] < rates[t] * now)
            {
                sent[t]++;
                executor.ForTenant(names[t]).TryExecute(run, new Probe(t, Stopwatch.GetTimestamp()));
            }
        }

        Thread.Sleep(1);
    }

    var done = Interlocked.Read(ref completed);
    var elapsed = clock.Elapsed.TotalSeconds;
    executor.Shutdown(TimeSpan.Zero);
    var quiet = Enumerable.Range(1, Tenants - 1).Where(t => waits[t].Count != 0).ToList();
    return new Result(
        quiet.Max(t => Percentile(waits[t], 0.99)),
        quiet.Max(t => Percentile(waits[t], 0.50)),
        quiet.Sum(t => refused[t]),
        refused[0],
        done / elapsed);
}

double[] Shares()
{
    var done = new int[Tenants];
    var counted = 0;
    var settings = new FairShareSettings();
    for (var t = 0; t < Tenants; t++)
    {
        settings = settings.WithWeight("t" + t, t + 1);
    }

    using var executor = new BoundedExecutor(new BoundedExecutorOptions { Name = "shares", WorkerCount = Workers, MaxWorkerCount = Workers, QueueCapacity = 5_000, FairShare = settings });
    executor.Pause("filling the backlogs");
    for (var i = 0; i < 400; i++)
    {
        for (var t = 0; t < Tenants; t++)
        {
            var tenant = t;
            executor.ForTenant("t" + t).Execute(() =>
            {
                if (Interlocked.Increment(ref counted) <= 2_000)
                {
                    Interlocked.Increment(ref done[tenant]);
                }
            });
        }
    }

    executor.Resume();
    executor.Shutdown(Timeout.InfiniteTimeSpan);
    return [.. done.Select(d => d / 2_000.0)];
}

(double Ns, double Bytes) Cost(int mode)
{
    var Items = CostItems();
    var best = double.MaxValue;
    var bytes = 0.0;
    for (var round = 0; round < 3; round++)
    {
        using var executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "cost",
            WorkerCount = 2,
            MaxWorkerCount = 2,
            QueueCapacity = 1_024,
            RejectionPolicy = RejectionPolicy.Wait,
            FairShare = mode == 0 ? null : new FairShareSettings(),
        });
        var remaining = Items;
        using var finished = new ManualResetEventSlim();
        Action work = () =>
        {
            if (Interlocked.Decrement(ref remaining) == 0)
            {
                finished.Set();
            }
        };
        var tenants = Enumerable.Range(0, 10).Select(t => executor.ForTenant("t" + t)).ToArray();
        var allocated = GC.GetTotalAllocatedBytes(precise: true);
        var clock = Stopwatch.StartNew();
        for (var i = 0; i < Items; i++)
        {
            switch (mode)
            {
                case 0 or 1:
                    executor.Execute(work);
                    break;
                case 2:
                    tenants[0].Execute(work);
                    break;
                default:
                    tenants[i % 10].Execute(work);
                    break;
            }
        }

        finished.Wait();
        var ns = clock.Elapsed.TotalNanoseconds / Items;
        if (ns < best)
        {
            best = ns;
            bytes = (GC.GetTotalAllocatedBytes(precise: true) - allocated) / (double)Items;
        }
    }

    return (best, bytes);
}

async Task<Result> TypedOverloadAsync(bool fair, bool quietOnly)
{
    var recorder = new Recorder(Tenants, itemMs);
    using var host = TypedHost(recorder, "fair-share", o =>
    {
        o.QueueCapacity = 2_000;
        o.RejectionPolicy = RejectionPolicy.Abort;
        o.FlowExecutionContext = false;
        o.FairShare = fair ? new FairShareSettings { ShedLongestBacklog = true } : null;
    });
    await host.StartAsync();
    var queue = host.Services.GetRequiredService<IWorkQueue<Probe>>();
    var rates = Enumerable.Range(0, Tenants).Select(t => t == 0 ? (quietOnly ? 0 : heavyRate) : (quietOnly && t != 1 ? 0 : quietRate)).ToArray();
    var sent = new long[Tenants];
    var refused = new long[Tenants];
    var clock = Stopwatch.StartNew();
    var measured = TimeSpan.FromSeconds(seconds);
    while (clock.Elapsed < measured)
    {
        var now = clock.Elapsed.TotalSeconds;
        for (var t = 0; t < Tenants; t++)
        {
            while (sent[t] < rates[t] * now)
            {
                sent[t]++;
                if (!queue.TryEnqueue(new Probe(t, Stopwatch.GetTimestamp())))
                {
                    refused[t]++;
                }
            }
        }

        Thread.Sleep(1);
    }

    var done = recorder.StopMeasuring();
    var elapsed = clock.Elapsed.TotalSeconds;
    var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("fair-share");
    var counted = fair ? executor.GetTenantStatistics(Tenants).ToDictionary(s => s.Tenant, s => s.Refused) : null;
    await host.StopAsync();

    // Every refusal is counted, and the counts agree: each refused item is a dead letter of reason Rejected; those refused
    // at the door are TryEnqueue's false, the rest were shed from the queue after it accepted them (ShedLongestBacklog:
    // RejectionReason.Evicted); with fair share on, the executor's per-tenant statistics count both.
    var refusedAll = new long[Tenants];
    for (var t = 0; t < Tenants; t++)
    {
        refusedAll[t] = recorder.Rejected(t);
        var statistics = counted is null ? refusedAll[t] : counted.GetValueOrDefault(names[t]);
        if (refusedAll[t] - recorder.Shed(t) != refused[t] || statistics != refusedAll[t])
        {
            failures++;
            Console.WriteLine($"**Refusals disagree for t{t}: TryEnqueue false {refused[t]}, dead letters {refusedAll[t]} ({recorder.Shed(t)} shed after queueing), tenant statistics {statistics}.**");
        }
    }

    var quiet = Enumerable.Range(1, Tenants - 1).Where(t => recorder.Waits[t].Count != 0).ToList();
    return new Result(
        quiet.Max(t => Percentile(recorder.Waits[t], 0.99)),
        quiet.Max(t => Percentile(recorder.Waits[t], 0.50)),
        quiet.Sum(t => refusedAll[t]),
        refusedAll[0],
        done / elapsed);
}

async Task<double[]> TypedSharesAsync()
{
    var settings = new FairShareSettings();
    for (var t = 0; t < Tenants; t++)
    {
        settings = settings.WithWeight("t" + t, t + 1);
    }

    var recorder = new Recorder(Tenants, itemMs: 0) { CountFirst = 2_000 };
    using var host = TypedHost(recorder, "shares", o =>
    {
        o.QueueCapacity = 5_000;
        o.FairShare = settings;
    });
    await host.StartAsync();
    var queue = host.Services.GetRequiredService<IWorkQueue<Probe>>();
    var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("shares");
    executor.Pause("filling the backlogs");
    for (var i = 0; i < 400; i++)
    {
        for (var t = 0; t < Tenants; t++)
        {
            await queue.EnqueueAsync(new Probe(t, Stopwatch.GetTimestamp()));
        }
    }

    executor.Resume();
    await recorder.AllCounted.WaitAsync(TimeSpan.FromMinutes(5));
    await host.StopAsync();
    return [.. recorder.First.Select(d => d / 2_000.0)];
}

IHost TypedHost(Recorder recorder, string name, Action<BoundedExecutorOptions> executor)
{
    var builder = Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
    builder.Logging.ClearProviders();
    builder.Services.AddSingleton(recorder);
    builder.Services.AddSingleton<IDeadLetterHandler<Probe>>(recorder);
    builder.Services.AddWorkQueue<Probe, ProbeHandler>(name, o =>
    {
        o.TenantSelector = p => names[p.Tenant];
        o.MaxRetryAttempts = 0;
    }).Configure(o =>
    {
        o.WorkerCount = Workers;
        o.MaxWorkerCount = Workers;
        executor(o);
    });
    return builder.Build();
}

static double Percentile(List<double> values, double p)
{
    lock (values)
    {
        var sorted = values.Order().ToArray();
        return sorted.Length == 0 ? 0 : sorted[Math.Min(sorted.Length - 1, (int)Math.Ceiling(p * sorted.Length) - 1)];
    }
}

int ArgInt(string name, int fallback)
{
    var i = Array.IndexOf(args, name);
    return i >= 0 && i + 1 < args.Length ? int.Parse(args[i + 1], CultureInfo.InvariantCulture) : fallback;
}

string ArgString(string name, string fallback)
{
    var i = Array.IndexOf(args, name);
    return i >= 0 && i + 1 < args.Length ? args[i + 1] : fallback;
}

/// <summary>One overload run.</summary>
internal sealed record Result(double QuietP99, double QuietP50, long QuietRefused, long HeavyRefused, double Goodput);
