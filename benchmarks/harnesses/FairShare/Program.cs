using System.Diagnostics;
using System.Globalization;
using BoundedWork;

// Fair share across tenants (see benchmarks/README.md, "Fair share"): three measurements, each against the FIFO executor
// in the same run, printed as markdown on stdout.
//
// 1. Overload: 10 tenants at 150% of the executor's capacity in total, one of them sending 20x each of the others.
//    Items block for --item-ms (a blocking call, not CPU), 4 workers. Reports each quiet tenant's p99 queue wait against
//    its wait when it runs alone at the same rate, the refusals, and goodput (items completed per second).
// 2. Shares: 10 tenants of weights 1..10, each with a backlog of 400 items before the workers start; completion shares
//    over the first 2,000 items (while every tenant is still backlogged) against the weights.
// 3. Cost per item: tiny items through 2 workers, without a tenant and with one (1 and 10 tenants).
var seconds = ArgInt("--seconds", 10);
var itemMs = ArgInt("--item-ms", 2);
const int Workers = 4;
const int Tenants = 10;
var capacityPerSecond = Workers * 1000.0 / itemMs;
var total = capacityPerSecond * 1.5;
var quietRate = total / (Tenants - 1 + 20);
var heavyRate = quietRate * 20;

Console.WriteLine($"# Fair share: {Environment.ProcessorCount} cores, {Workers} workers, items block {itemMs} ms, capacity {capacityPerSecond:F0}/s, offered {total:F0}/s (heavy {heavyRate:F0}/s, 9 quiet at {quietRate:F0}/s each), {seconds} s per run");
Console.WriteLine();

var alone = Overload(fair: true, quietOnly: true);
var fifo = Overload(fair: false, quietOnly: false);
var fair = Overload(fair: true, quietOnly: false);
Console.WriteLine("## Overload: 10 tenants at 150% of capacity, one sending 20x each other");
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

var shares = Shares();
Console.WriteLine("## Shares while every tenant is backlogged (weights 1..10, first 2,000 completions)");
Console.WriteLine();
Console.WriteLine("| Tenant | Weight | Expected share | Measured share | Off by |");
Console.WriteLine("|---|---:|---:|---:|---:|");
for (var i = 0; i < Tenants; i++)
{
    var expected = (i + 1) / 55.0;
    Console.WriteLine($"| t{i} | {i + 1} | {expected:P1} | {shares[i]:P1} | {(shares[i] - expected) / expected:+0.0%;-0.0%} |");
}

Console.WriteLine();
Console.WriteLine("## Cost per item (tiny items, 2 workers, 1 producer, Wait policy, 1,000,000 items, best of 3)");
Console.WriteLine();
Console.WriteLine("| Path | ns per item | Allocated per item |");
Console.WriteLine("|---|---:|---:|");
foreach (var (name, mode) in new[] { ("Fair share off, no tenant (today's path)", 0), ("Fair share on, item without a tenant", 1), ("Fair share on, 1 tenant", 2), ("Fair share on, 10 tenants", 3) })
{
    var (ns, bytes) = Cost(mode);
    Console.WriteLine($"| {name} | {ns:F0} | {bytes:F0} B |");
}

return 0;

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
    var names = Enumerable.Range(0, Tenants).Select(t => "t" + t).ToArray();
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
    const int Items = 1_000_000;
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

/// <summary>One item's tenant and when it was submitted.</summary>
internal sealed record Probe(int Tenant, long Enqueued);

/// <summary>One overload run.</summary>
internal sealed record Result(double QuietP99, double QuietP50, long QuietRefused, long HeavyRefused, double Goodput);
