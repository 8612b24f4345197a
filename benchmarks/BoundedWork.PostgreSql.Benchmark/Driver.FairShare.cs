using System.Diagnostics;
using System.Globalization;
using System.Text;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The fair-share shape (<c>--shapes fair</c>; benchmarks/fair-share-durable.sh): fair share across tenants on the
/// durable queue against plain FIFO claims, in the same run, the two alternating.
/// <list type="bullet">
/// <item><b>Overload</b>: <see cref="FairSettings.Tenants"/> tenants offer <see cref="FairSettings.Load"/> times the
/// fleet's capacity (consumer processes × workers, handlers that block for a fixed time), one of them
/// <see cref="FairSettings.Heavy"/> times as much as each of the others, open loop (one producer, a transaction every
/// 10 ms with what is due). Per tenant: the queue wait (enqueue commit to handler start) of the items enqueued in the
/// measured window; the goodput (handlers ended in the window per second); the most items of one tenant running at
/// once.</item>
/// <item><b>Reference</b>: one quiet tenant alone at the same rate (fair share on), once per round: its wait is what
/// each quiet tenant's is compared with.</item>
/// <item><b>Backlogged</b>: every tenant with a backlog at once (the heavy one 20x each other's, inserted in that
/// proportion), completions per tenant until the first tenant runs dry: shares against weights.</item>
/// </list>
/// Every figure comes from the witness (<see cref="Witness"/>): the handlers' own start and end in a table the library
/// never touches, not from the library's rows or counters.
/// </summary>
internal sealed partial class Driver
{
    private const string FairSchema = "fair_share";

    private readonly List<FairOverload> _fairOverloads = [];
    private readonly List<FairBacklog> _fairBacklogs = [];
    private readonly List<string> _fairNotes = [];
    private readonly List<FairOverload> _fairAlone = [];
    private int _fairNext;

    private FairSettings F => _settings.Fair;

    private static string TenantName(int tenant) => "t" + tenant.ToString(CultureInfo.InvariantCulture);

    /// <summary>Gets each tenant's offered rate (items per second): tenant 0 the heavy one.</summary>
    private double[] FairRates()
    {
        var f = F;
        var quiet = f.Capacity * f.Load / (f.Tenants - 1 + f.Heavy);
        return [.. Enumerable.Range(0, f.Tenants).Select(t => t == 0 ? quiet * f.Heavy : quiet)];
    }

    private int FairWeight(int tenant) => tenant == 0 ? F.HeavyWeight : 1;

    private async Task FairShareAsync()
    {
        var f = F;
        var rates = FairRates();
        Progress($"fair share: {f.Consumers} process(es) x {f.Workers} workers, {f.HandlerMilliseconds} ms handlers (capacity {Format(f.Capacity, "0")} items/s); "
            + $"{f.Tenants} tenants offering {Format(f.Load * 100, "0")}% of it (t0 {Format(rates[0], "0.0")}/s, each other {Format(rates[1], "0.0")}/s); "
            + $"{f.Rounds} round(s) of {Format(f.Seconds, "0.#")} s after {Format(f.WarmUpSeconds, "0.#")} s, fair share (MaxRunningPerTenant {f.EffectiveBound}, t0 weight {f.HeavyWeight}) and FIFO alternating");
        var host = await StartProducerHostAsync(FairSchema);
        List<ConsumerProcess> consumers = [];
        try
        {
            await ScalarAsync<int>($"{DriverTag}{Witness.CreateTable(FairSchema)}; SELECT 1");
            var queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<BenchItem>>();
            var cluster = host.Services.GetServices<IWorkQueueCluster>().Single(c => c.QueueName == ConsumerNode.QueueName);
            await SetFairShareAsync(cluster, fair: false);
            consumers = await ConsumerProcess.StartManyAsync(f.Consumers,
                ["--connection", ConnectionString, "--schema", FairSchema, "--workers", f.Workers.ToString(CultureInfo.InvariantCulture),
                 "--handler-ms", f.HandlerMilliseconds.ToString(CultureInfo.InvariantCulture),
                 "--claims-per-worker", f.ClaimsPerWorker.ToString(CultureInfo.InvariantCulture), "--witness"], _cancellation);

            // Warm-up, not measured: each mode once for a moment (JIT, connection pools, each claim's plan).
            var warmUp = Math.Min(1, f.WarmUpSeconds + 0.2);
            await OverloadAsync(queue, cluster, consumers, fair: false, round: 0, rates, warmUp, 0);
            await OverloadAsync(queue, cluster, consumers, fair: true, round: 0, rates, warmUp, 0);

            // One quiet tenant alone at its rate (fair share on), the reference, once per round: the machine's noise hits it
            // as it hits the runs it is compared with.
            var alone = new double[rates.Length];
            alone[1] = rates[1];
            for (var round = 1; round <= f.Rounds; round++)
            {
                var reference = await OverloadAsync(queue, cluster, consumers, fair: true, round, alone, f.ReferenceSeconds, Math.Min(1, f.WarmUpSeconds));
                _fairAlone.Add(reference);
                Progress($"  round {round}, t1 alone: p99 wait {Format(reference.Tenants[1].P99, "0.0")} ms");
                bool[] modes = round % 2 == 1 ? [false, true] : [true, false];
                foreach (var fair in modes)
                {
                    var run = await OverloadAsync(queue, cluster, consumers, fair, round, rates, f.Seconds, f.WarmUpSeconds);
                    _fairOverloads.Add(run);
                    Progress($"  round {round}, {ModeName(fair)}: goodput {Format(run.Goodput, "0.0")}/s, quiet p99 (worst) {Format(run.Tenants.Skip(1).Max(t => t.P99), "0.0")} ms, "
                        + $"t0 p99 {Format(run.Tenants[0].P99, "0.0")} ms, most running of one tenant {run.Tenants.Max(t => t.MaxRunning)}");
                }

                foreach (var fair in modes)
                {
                    var backlog = await BacklogAsync(queue, cluster, consumers, fair, round);
                    _fairBacklogs.Add(backlog);
                    Progress($"  round {round}, {ModeName(fair)}, backlogged: {backlog.Completed.Sum()} completions in {Format(backlog.WindowSeconds, "0.0")} s, "
                        + $"t0 share {Format(backlog.Share(0) * 100, "0.0")}%");
                }
            }
        }
        finally
        {
            await StopConsumersAsync(consumers);
            await StopHostAsync(host);
        }
    }

    private static string ModeName(bool fair) => fair ? "fair share" : "FIFO";

    /// <summary>Turns fair share on (the shape's weights and bound) or off (plain FIFO claims) fleet-wide, through the queue's cluster API, and gives the nodes a moment to hear of it.</summary>
    private async Task SetFairShareAsync(IWorkQueueCluster cluster, bool fair)
    {
        var f = F;
        var fairShare = fair
            ? new WorkQueueFairShare { MaxRunningPerTenant = f.EffectiveBound }.WithWeight(TenantName(0), f.HeavyWeight)
            : null;
        await cluster.UpdateSettingsAsync(s => s with { FairShare = fairShare }, "fair-share benchmark", _cancellation);

        // A node that claims under the old settings claims nothing and reads the new ones (the claim checks the version).
        await Task.Delay(TimeSpan.FromSeconds(1), _cancellation);
    }

    /// <summary>
    /// Offers <paramref name="rates"/> for <paramref name="warmUp"/> + <paramref name="seconds"/> seconds; waits until every
    /// item enqueued in the measured window has started (bounded: what never started is counted with the wait it had
    /// when the run ended, a lower bound), deletes what is still ready, and reads the witness.
    /// </summary>
    private async Task<FairOverload> OverloadAsync(IPostgreSqlWorkQueue<BenchItem> queue, IWorkQueueCluster cluster, List<ConsumerProcess> consumers,
        bool fair, int round, double[] rates, double seconds, double warmUp)
    {
        await SetFairShareAsync(cluster, fair);
        var first = _fairNext;
        var (items, start) = await OfferAsync(queue, rates, warmUp + seconds);
        var windowStart = start + (long)(warmUp * Stopwatch.Frequency);
        var windowEnd = windowStart + (long)(seconds * Stopwatch.Frequency);
        var measured = items.Where(i => i.Enqueued >= windowStart && i.Enqueued < windowEnd).ToList();

        // Wait until every measured item of the quiet tenants has started (FIFO's backlog drains at the fleet's
        // capacity), at most one more run's length: the heavy tenant's that did not start by then (under fair share it
        // holds the backlog) are counted with the wait they had, a lower bound.
        var quiet = measured.Where(i => i.Tenant != 0).ToList();
        if (quiet.Count > 0)
        {
            var (low, high) = (quiet.Min(i => i.Number), quiet.Max(i => i.Number));
            var deadline = Stopwatch.GetTimestamp() + (long)(Math.Max(10, warmUp + seconds) * Stopwatch.Frequency);
            while (await ScalarAsync<long>($"{DriverTag}SELECT count(*) FROM {FairSchema}.fair_witness WHERE number BETWEEN {low} AND {high} AND tenant <> '{TenantName(0)}'") < quiet.Count
                && Stopwatch.GetTimestamp() < deadline)
            {
                await Task.Delay(100, _cancellation);
            }
        }

        var ended = Stopwatch.GetTimestamp();
        var runs = await FinishFairRunAsync(consumers, first);
        var tenants = new List<FairTenant>();
        for (var t = 0; t < rates.Length; t++)
        {
            var waits = new List<double>();
            var censored = 0;
            foreach (var item in measured.Where(i => i.Tenant == t))
            {
                if (runs.TryGetValue(item.Number, out var run))
                {
                    waits.Add(Math.Max(0, Milliseconds(item.Enqueued, run.Started)));
                }
                else
                {
                    waits.Add(Milliseconds(item.Enqueued, ended));
                    censored++;
                }
            }

            waits.Sort();
            var mine = runs.Values.Where(r => r.Tenant == TenantName(t)).ToList();
            tenants.Add(new FairTenant(rates[t], waits, censored, MaxConcurrent(mine), mine.Count(r => r.Ended >= windowStart && r.Ended < windowEnd)));
        }

        var goodput = runs.Values.Count(r => r.Ended >= windowStart && r.Ended < windowEnd) / seconds;
        if (seconds >= 1)
        {
            var (idle, atBound) = IdleShares(runs.Values, windowStart, windowEnd);
            Progress($"  {ModeName(fair)}: workers idle {Format(idle * 100, "0.0")}% of the window's worker time, "
                + $"{Format(atBound * 100, "0.0")}% while t0 ran {F.EffectiveBound} handlers (its bound), {Format((idle - atBound) * 100, "0.0")}% while it ran fewer");
        }

        return new FairOverload(round, fair, seconds, goodput, tenants);
    }

    /// <summary>
    /// Every tenant with a backlog at once, inserted in one transaction in ten slices, each with the tenants' items in
    /// proportion to their rates (so FIFO serves them in arrival proportion); completions per tenant from the commit until
    /// the first tenant ran dry, or <see cref="FairSettings.BacklogSeconds"/>.
    /// </summary>
    private async Task<FairBacklog> BacklogAsync(IPostgreSqlWorkQueue<BenchItem> queue, IWorkQueueCluster cluster, List<ConsumerProcess> consumers, bool fair, int round)
    {
        var f = F;
        await SetFairShareAsync(cluster, fair);
        var totalWeight = Enumerable.Range(0, f.Tenants).Sum(FairWeight);
        const int Slices = 10;
        var quiet = Slices * (int)Math.Ceiling(Math.Max(20, f.Capacity / totalWeight * f.BacklogSeconds * 1.5) / Slices);
        var counts = Enumerable.Range(0, f.Tenants).Select(t => t == 0 ? (int)Math.Ceiling(quiet * f.Heavy / Slices) * Slices : quiet).ToArray();
        var first = _fairNext;
        long committed;
        await using (var connection = await Database.OpenConnectionAsync(_cancellation))
        {
            await using var transaction = await connection.BeginTransactionAsync(_cancellation);
            for (var slice = 0; slice < Slices; slice++)
            {
                for (var t = 0; t < f.Tenants; t++)
                {
                    var name = TenantName(t);
                    var batch = Enumerable.Range(0, counts[t] / Slices).Select(_ => new BenchItem(_fairNext++, Tenant: name)).ToList();
                    await queue.EnqueueManyAsync(batch, new EnqueueOptions { Tenant = name }, transaction, _cancellation);
                }
            }

            await transaction.CommitAsync(_cancellation);
            committed = Stopwatch.GetTimestamp();
        }

        await Task.Delay(TimeSpan.FromSeconds(f.BacklogSeconds), _cancellation);
        var runs = await FinishFairRunAsync(consumers, first);
        var windowEnd = committed + (long)(f.BacklogSeconds * Stopwatch.Frequency);
        for (var t = 0; t < f.Tenants; t++)
        {
            var mine = runs.Values.Where(r => r.Tenant == TenantName(t)).ToList();
            if (mine.Count == counts[t])
            {
                // This tenant ran dry: the window ends when its last item started.
                windowEnd = Math.Min(windowEnd, mine.Max(r => r.Started));
            }
        }

        var completed = Enumerable.Range(0, f.Tenants)
            .Select(t => runs.Values.Count(r => r.Tenant == TenantName(t) && r.Ended <= windowEnd))
            .ToArray();
        return new FairBacklog(round, fair, (windowEnd - committed) / (double)Stopwatch.Frequency, counts, completed);
    }

    /// <summary>
    /// Offers the rates open loop: every 10 ms one transaction with every item due by then (one EnqueueManyAsync per
    /// tenant, its tenant in the options); each item's enqueue time is its transaction's commit.
    /// </summary>
    private async Task<(List<(int Number, int Tenant, long Enqueued)> Items, long Start)> OfferAsync(IPostgreSqlWorkQueue<BenchItem> queue, double[] rates, double seconds)
    {
        var options = Enumerable.Range(0, rates.Length).Select(t => new EnqueueOptions { Tenant = TenantName(t) }).ToArray();
        var sent = new long[rates.Length];
        var items = new List<(int Number, int Tenant, long Enqueued)>();
        await using var connection = await Database.OpenConnectionAsync(_cancellation);
        using var timer = new PeriodicTimer(TimeSpan.FromMilliseconds(10));
        var start = Stopwatch.GetTimestamp();
        var end = start + (long)(seconds * Stopwatch.Frequency);
        var batch = new List<BenchItem>[rates.Length];
        while (true)
        {
            var now = Stopwatch.GetTimestamp();
            var elapsed = (Math.Min(now, end) - start) / (double)Stopwatch.Frequency;
            var any = false;
            for (var t = 0; t < rates.Length; t++)
            {
                var due = (long)Math.Floor(rates[t] * elapsed) - sent[t];
                batch[t] = [.. Enumerable.Range(0, (int)Math.Max(0, due)).Select(_ => new BenchItem(_fairNext++, Tenant: TenantName(t)))];
                sent[t] += batch[t].Count;
                any |= batch[t].Count > 0;
            }

            if (any)
            {
                await using (var transaction = await connection.BeginTransactionAsync(_cancellation))
                {
                    for (var t = 0; t < rates.Length; t++)
                    {
                        if (batch[t].Count > 0)
                        {
                            await queue.EnqueueManyAsync(batch[t], options[t], transaction, _cancellation);
                        }
                    }

                    await transaction.CommitAsync(_cancellation);
                }

                var committed = Stopwatch.GetTimestamp();
                for (var t = 0; t < rates.Length; t++)
                {
                    items.AddRange(batch[t].Select(item => (item.Number, t, committed)));
                }
            }

            if (now >= end)
            {
                return (items, start);
            }

            await timer.WaitForNextTickAsync(_cancellation);
        }
    }

    /// <summary>
    /// Deletes what is still ready, waits until nothing runs and the witness holds every handler run the nodes counted,
    /// reads the witness's runs of items <paramref name="first"/> onwards, and empties the items table for the next run.
    /// </summary>
    private async Task<Dictionary<int, (string? Tenant, long Started, long Ended)>> FinishFairRunAsync(List<ConsumerProcess> consumers, int first)
    {
        await ScalarAsync<long>($"{DriverTag}WITH d AS (DELETE FROM {FairSchema}.items WHERE state IN (0, 5) RETURNING 1) SELECT count(*) FROM d");
        await WaitRowsDoneAsync(FairSchema);
        var deadline = Stopwatch.GetTimestamp() + (long)(30 * Stopwatch.Frequency);
        await Task.Delay(300, _cancellation); // the nodes' counts and witness copies run every 100 ms
        while (await ScalarAsync<long>($"{DriverTag}SELECT count(*) FROM {FairSchema}.fair_witness") < consumers.Sum(p => p.Count))
        {
            if (Stopwatch.GetTimestamp() > deadline)
            {
                throw new TimeoutException($"The witness did not catch up with the {consumers.Sum(p => p.Count)} handler runs the nodes counted within 30 s.");
            }

            await Task.Delay(50, _cancellation);
        }

        var runs = new Dictionary<int, (string? Tenant, long Started, long Ended)>();
        await using (var command = Database.CreateCommand($"{DriverTag}SELECT number, tenant, started, ended FROM {FairSchema}.fair_witness WHERE number >= {first}"))
        await using (var reader = await command.ExecuteReaderAsync(_cancellation))
        {
            while (await reader.ReadAsync(_cancellation))
            {
                var number = reader.GetInt32(0);
                if (!runs.TryAdd(number, (reader.IsDBNull(1) ? null : reader.GetString(1), reader.GetInt64(2), reader.GetInt64(3))))
                {
                    _fairNotes.Add($"Item {number} ran more than once (the witness holds two runs of it).");
                }
            }
        }

        await ScalarAsync<int>($"{DriverTag}TRUNCATE {FairSchema}.items; SELECT 1");
        return runs;
    }

    /// <summary>
    /// Where goodput goes, from the witness: the fleet's idle worker time in [<paramref name="from"/>, <paramref name="to"/>)
    /// as a share of its worker time, in all and while t0 ran as many handlers as its bound (the rest: while t0, whose
    /// backlog never runs dry, ran fewer: the time from a handler's end to the next start, a claim's round trips included).
    /// </summary>
    private (double Idle, double AtBound) IdleShares(IEnumerable<(string? Tenant, long Started, long Ended)> runs, long from, long to)
    {
        var events = new List<(long At, int Delta, bool Heavy)>();
        foreach (var r in runs)
        {
            var (start, end) = (Math.Max(r.Started, from), Math.Min(r.Ended, to));
            if (start < end)
            {
                events.Add((start, +1, r.Tenant == TenantName(0)));
                events.Add((end, -1, r.Tenant == TenantName(0)));
            }
        }

        events.Sort((a, b) => a.At != b.At ? a.At.CompareTo(b.At) : a.Delta.CompareTo(b.Delta));
        var (workers, bound) = (F.Consumers * F.Workers, F.EffectiveBound);
        double idle = 0, atBound = 0;
        var (running, heavy, at) = (0, 0, from);
        events.Add((to, 0, false));
        foreach (var e in events)
        {
            var free = Math.Max(0, workers - running) * (double)(e.At - at);
            idle += free;
            atBound += heavy >= bound ? free : 0;
            running += e.Delta;
            heavy += e.Heavy ? e.Delta : 0;
            at = e.At;
        }

        var total = (double)workers * (to - from);
        return (idle / total, atBound / total);
    }

    /// <summary>The most runs at once, from their start (+1) and end (-1) stamps; an end sorts before a start at the same instant.</summary>
    private static int MaxConcurrent(IEnumerable<(string? Tenant, long Started, long Ended)> runs)
    {
        var events = runs.SelectMany(r => new[] { (At: r.Started, Delta: +1), (At: r.Ended, Delta: -1) })
            .OrderBy(e => e.At).ThenBy(e => e.Delta);
        int level = 0, max = 0;
        foreach (var e in events)
        {
            level += e.Delta;
            max = Math.Max(max, level);
        }

        return max;
    }

    // ---- output ----

    private string RenderFairShare()
    {
        var f = F;
        var rates = FairRates();
        var text = new StringBuilder();
        var bound = f.EffectiveBound;
        text.AppendLine(CultureInfo.InvariantCulture, $"## Fair share on PostgreSQL: {f.Tenants} tenants at {Format(f.Load * 100, "0")}% of the fleet's capacity, one sending {Format(f.Heavy, "0.#")}x each other");
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"{f.Consumers} consumer processes × {f.Workers} workers ({f.ClaimsPerWorker} claims/worker), handlers that block {f.HandlerMilliseconds} ms: a capacity of {Format(f.Capacity, "0")} items/s. "
            + $"Offered {Format(rates.Sum(), "0")} items/s: t0 {Format(rates[0], "0.0")}/s, each other tenant {Format(rates[1], "0.0")}/s (open loop, one transaction every 10 ms). "
            + $"Fair share: `FairShare = {{ MaxRunningPerTenant = {bound}, Weights = {{ t0: {f.HeavyWeight} }} }}` (the others weight 1); FIFO: no fair share (today's claim). "
            + $"{f.Rounds} round(s), the modes alternating; {Format(f.Seconds, "0.#")} s measured after {Format(f.WarmUpSeconds, "0.#")} s each. "
            + $"Wait = enqueue commit to handler start, of the items enqueued in the measured window, pooled over the rounds; "
            + $"*alone* = t1 alone at its rate, fair share on, {Format(f.ReferenceSeconds, "0.#")} s per round. Every figure from the handlers' own witness table.");
        text.AppendLine();
        text.AppendLine("| Tenant | Offered/s | Weight | p99 wait alone | FIFO p50 / p99 wait | Fair share p50 / p99 wait | Fair share p99 / alone | Most running at once, FIFO | Most running at once, fair share |");
        text.AppendLine("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        var fifo = _fairOverloads.Where(r => !r.Fair).ToList();
        var fair = _fairOverloads.Where(r => r.Fair).ToList();
        var alone = Pooled(_fairAlone, 1).P99;
        var worstRatio = 0.0;
        for (var t = 0; t < f.Tenants; t++)
        {
            var (fifoP50, fifoP99, fifoCensored) = Pooled(fifo, t);
            var (fairP50, fairP99, fairCensored) = Pooled(fair, t);
            var ratio = t == 0 ? double.NaN : fairP99 / alone;
            if (t > 0)
            {
                worstRatio = Math.Max(worstRatio, ratio);
            }

            text.AppendLine(CultureInfo.InvariantCulture, $"| {TenantName(t)}{(t == 0 ? " (heavy)" : string.Empty)} | {Format(rates[t], "0.0")} | {FairWeight(t)} | {(t == 0 ? "–" : Format(alone, "0.0") + " ms")} | "
                + $"{Format(fifoP50, "0.0")} / {(fifoCensored > 0 ? "≥ " : string.Empty)}{Format(fifoP99, "0.0")} ms | {Format(fairP50, "0.0")} / {(fairCensored > 0 ? "≥ " : string.Empty)}{Format(fairP99, "0.0")} ms | "
                + $"{(t == 0 ? "–" : Format(ratio, "0.00") + "x")} | {fifo.Select(r => r.Tenants[t].MaxRunning).DefaultIfEmpty().Max()} | {fair.Select(r => r.Tenants[t].MaxRunning).DefaultIfEmpty().Max()} |");
        }

        var goodputRatios = _fairOverloads.GroupBy(r => r.Round)
            .Where(g => g.Any(r => r.Fair) && g.Any(r => !r.Fair))
            .Select(g => g.First(r => r.Fair).Goodput / g.First(r => !r.Fair).Goodput)
            .ToList();
        var goodputRatio = Median(goodputRatios);
        var mostRunning = fair.SelectMany(r => r.Tenants).Select(t => t.MaxRunning).DefaultIfEmpty().Max();
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"Goodput (handlers ended in the window per second): FIFO {Format(Median(fifo.Select(r => r.Goodput)), "0.0")}, fair share {Format(Median(fair.Select(r => r.Goodput)), "0.0")} items/s (medians); "
            + $"fair share / FIFO {Format(goodputRatio, "0.00")} (per round: {string.Join(" ", goodputRatios.Select(r => Format(r, "0.00")))}).");

        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"### Shares while every tenant is backlogged (t0 {Format(f.Heavy, "0.#")}x each other's backlog, inserted in that proportion)");
        text.AppendLine();
        var totalWeight = Enumerable.Range(0, f.Tenants).Sum(FairWeight);
        var fairBacklogs = _fairBacklogs.Where(b => b.Fair).ToList();
        var fifoBacklogs = _fairBacklogs.Where(b => !b.Fair).ToList();
        text.AppendLine(CultureInfo.InvariantCulture, $"Completions per tenant from the commit until the first tenant ran dry (at most {Format(f.BacklogSeconds, "0.#")} s; windows: fair share "
            + $"{string.Join(", ", fairBacklogs.Select(b => Format(b.WindowSeconds, "0.0") + " s"))}, FIFO {string.Join(", ", fifoBacklogs.Select(b => Format(b.WindowSeconds, "0.0") + " s"))}), summed over the rounds.");
        text.AppendLine();
        text.AppendLine("| Tenant | Weight | Expected share (fair share) | Fair share: measured | Off by | FIFO: measured |");
        text.AppendLine("| --- | ---: | ---: | ---: | ---: | ---: |");
        var worstOff = 0.0;
        for (var t = 0; t < f.Tenants; t++)
        {
            var expected = FairWeight(t) / (double)totalWeight;
            var measured = SummedShare(fairBacklogs, t);
            var off = (measured / expected) - 1;
            worstOff = Math.Max(worstOff, Math.Abs(off));
            text.AppendLine(CultureInfo.InvariantCulture, $"| {TenantName(t)} | {FairWeight(t)} | {Format(expected * 100, "0.0")} % | {Format(measured * 100, "0.0")} % | {(off >= 0 ? "+" : string.Empty)}{Format(off * 100, "0.0")}% | {Format(SummedShare(fifoBacklogs, t) * 100, "0.0")} % |");
        }

        text.AppendLine();
        text.AppendLine("| Goal | Measured | |");
        text.AppendLine("| --- | --- | --- |");
        text.AppendLine(CultureInfo.InvariantCulture, $"| Each quiet tenant's p99 wait within 2x its wait alone | worst {Format(worstRatio, "0.00")}x | {(worstRatio <= 2 ? "met" : "not met")} |");
        text.AppendLine(CultureInfo.InvariantCulture, $"| Completion shares within 10% of the weights while every tenant is backlogged | worst {Format(worstOff * 100, "0.0")}% off | {(worstOff <= 0.10 ? "met" : "not met")} |");
        text.AppendLine(CultureInfo.InvariantCulture, $"| Goodput at least 0.95x FIFO's | {Format(goodputRatio, "0.00")}x | {(goodputRatio >= 0.95 ? "met" : "not met")} |");
        text.AppendLine(CultureInfo.InvariantCulture, $"| No tenant above MaxRunningPerTenant {bound} (the witness, every fair-share run) | most {mostRunning} | {(mostRunning <= bound ? "held" : "**exceeded**")} |");
        text.AppendLine();
        text.AppendLine(MachineLine());
        text.AppendLine(CultureInfo.InvariantCulture, $"Command: `{C.CommandLine ?? "BoundedWork.PostgreSql.Benchmark run " + string.Join(' ', Environment.GetCommandLineArgs().Skip(2))}`");
        foreach (var note in _fairNotes.Distinct().Take(20))
        {
            text.AppendLine("- " + note);
        }

        return text.ToString();
    }

    /// <summary>A tenant's waits pooled over the runs: p50, p99, and how many of its items never started (their wait a lower bound).</summary>
    private static (double P50, double P99, int Censored) Pooled(List<FairOverload> runs, int tenant)
    {
        var waits = runs.SelectMany(r => r.Tenants[tenant].Waits).Order().ToList();
        return waits.Count == 0
            ? (double.NaN, double.NaN, 0)
            : (Percentile(waits, 0.50), Percentile(waits, 0.99), runs.Sum(r => r.Tenants[tenant].Censored));
    }

    private static double SummedShare(List<FairBacklog> runs, int tenant)
    {
        var all = runs.Sum(b => b.Completed.Sum());
        return all == 0 ? double.NaN : runs.Sum(b => b.Completed[tenant]) / (double)all;
    }

    /// <summary>One tenant in one overload run: its offered rate, the waits of its measured items (ms, sorted), how many never started, most running at once, handlers ended in the window.</summary>
    private sealed record FairTenant(double Rate, List<double> Waits, int Censored, int MaxRunning, int Completed)
    {
        public double P99 => Waits.Count == 0 ? double.NaN : Percentile(Waits, 0.99);
    }

    private sealed record FairOverload(int Round, bool Fair, double Seconds, double Goodput, List<FairTenant> Tenants);

    private sealed record FairBacklog(int Round, bool Fair, double WindowSeconds, int[] Backlog, int[] Completed)
    {
        public double Share(int tenant) => Completed.Sum() == 0 ? double.NaN : Completed[tenant] / (double)Completed.Sum();
    }
}
