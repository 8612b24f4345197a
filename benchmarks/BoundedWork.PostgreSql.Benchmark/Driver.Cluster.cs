using System.Diagnostics;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The cluster shape (<c>--shapes cluster</c>; benchmarks/cluster-limits.sh): the cluster limits a queue's
/// <c>queue_settings</c> row sets (global concurrency <c>max_running</c>, per key <c>max_running_per_key</c>, rate
/// <c>starts_per_second</c>), set with a plain SQL upsert as an operator would.
/// <list type="bullet">
/// <item><b>Overhead</b>: with 1, 2 and 4 consumer processes, items bulk-inserted and drained with no limit and with
/// each limit set high enough not to bind, the cases alternating within a round (forward, then backward in the next
/// round) so the machine's drift hits every case alike; each case's rate over its baseline's in the same round.</item>
/// <item><b>Binding</b>: 4 processes × 8 workers whose handlers block for 20 ms, against max_running 6, a rate of
/// 200/s, and 2 per key over 3 keys; the concurrency the handlers really reached, from their own start and end
/// stamps (a <see cref="Stopwatch"/> timestamp, one clock for every process), the rows in state 1 sampled from the
/// database, and the starts per second.</item>
/// </list>
/// A limit that did not hold is said so in the verdict column (and fails the run with <c>--strict</c>).
/// </summary>
internal sealed partial class Driver
{
    /// <summary>Marks the driver's own statements, so the statement counts leave them out.</summary>
    private const string DriverTag = "/* bench-driver */ ";

    /// <summary>A limit high enough never to bind here.</summary>
    private const int HighConcurrency = 100_000;

    private const double HighRate = 1_000_000;

    private readonly List<OverheadResult> _overhead = [];
    private readonly List<BindingResult> _binding = [];
    private readonly List<string> _clusterNotes = [];
    private readonly List<string> _failedLimits = [];
    private string _serverVersion = "unknown";
    private string _loadAtStart = "unknown";
    private readonly long _runStarted = Stopwatch.GetTimestamp();

    /// <summary>The overhead cases: the baseline each is compared with, its items, and the row it sets (null: no row).</summary>
    private static readonly OverheadCase[] OverheadCases =
    [
        new("no limit", "no row", Keyed: false, Baseline: "no limit", Limits: null),
        new("max_running", $"max_running {HighConcurrency:#,0}", Keyed: false, Baseline: "no limit", Limits: new(HighConcurrency, 1, null)),
        new("starts_per_second", $"starts_per_second {HighRate:#,0} (burst default)", Keyed: false, Baseline: "no limit", Limits: new(null, 1, HighRate)),
        new("keyed, no row", "no row (per key 1, today's ordering)", Keyed: true, Baseline: "keyed, no row", Limits: null),
        new("keyed, max_running_per_key", $"max_running_per_key {HighConcurrency:#,0}", Keyed: true, Baseline: "keyed, no row", Limits: new(null, HighConcurrency, null)),
    ];

    private ClusterSettings C => _settings.Cluster;

    private async Task ClusterAsync()
    {
        var c = C;
        Progress($"cluster limits: overhead with {string.Join(",", c.Consumers)} process(es) x {c.Workers} workers, {c.Items} items per case, {c.Rounds} round(s) of {OverheadCases.Length} cases; "
            + $"binding with {c.BindingConsumers} x {c.BindingWorkers} workers, {c.HandlerMilliseconds} ms handlers, {c.BindingSeconds} s after {c.BindingWarmUpSeconds} s");
        foreach (var consumers in c.Consumers)
        {
            await OverheadAsync(consumers);
        }

        _binding.Add(await BindingAsync("global concurrency", "cluster_bind_running", new(c.MaxRunning, 1, null), keys: 0));
        _binding.Add(await BindingAsync("rate", "cluster_bind_rate", new(null, 1, c.Rate, c.Burst > 0 ? c.Burst : null), keys: 0));
        _binding.Add(await BindingAsync("per key", "cluster_bind_key", new(null, c.MaxRunningPerKey, null), keys: c.BindingKeys));
    }

    // ---- overhead ----

    private async Task OverheadAsync(int consumerCount)
    {
        var c = C;
        var schema = "cluster_c" + consumerCount.ToString(CultureInfo.InvariantCulture);
        Progress($"cluster overhead: {consumerCount} consumer process(es) x {c.Workers} workers");
        var host = await StartProducerHostAsync(schema, queueOptions: o => o.OrderingKey = item => item.Key);
        List<ConsumerProcess> consumers = [];
        try
        {
            consumers = await ConsumerProcess.StartManyAsync(consumerCount, ClusterConsumerArguments(schema, c.Workers), _cancellation);
            var queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<BenchItem>>();
            var next = 0;

            // Warm-up: every case once, unmeasured (JIT, connection pools, each statement's plan).
            foreach (var warmUp in OverheadCases)
            {
                await DrainCaseAsync(schema, queue, consumers, warmUp, Math.Min(c.Items, 500), next);
                next += c.Items;
            }

            for (var round = 0; round < c.Rounds; round++)
            {
                var order = round % 2 == 0 ? OverheadCases : Enumerable.Reverse(OverheadCases).ToArray();
                var results = new Dictionary<string, (double Rate, double ServerCpu, double Statements, double SettingsReads)>(StringComparer.Ordinal);
                foreach (var @case in order)
                {
                    results[@case.Name] = await DrainCaseAsync(schema, queue, consumers, @case, c.Items, next);
                    next += c.Items;
                }

                foreach (var @case in OverheadCases)
                {
                    var r = results[@case.Name];
                    _overhead.Add(new OverheadResult(round + 1, consumerCount, c.Workers, @case, c.Items, r.Rate, r.Rate / results[@case.Baseline].Rate, r.ServerCpu, r.Statements, r.SettingsReads));
                }

                Progress($"  round {round + 1}: " + string.Join(", ", OverheadCases.Select(k => $"{k.Name} {Format(results[k.Name].Rate, "#,0")}/s")));
            }
        }
        finally
        {
            await StopConsumersAsync(consumers);
            await StopHostAsync(host);
        }
    }

    /// <summary>
    /// Sets the case's row, bulk-inserts <paramref name="count"/> items in one transaction while the consumers wait,
    /// and measures from its commit to the last handler's end; then waits until every row is completed, reads what the
    /// server ran, and empties the table for the next case.
    /// </summary>
    private async Task<(double Rate, double ServerCpu, double Statements, double SettingsReads)> DrainCaseAsync(
        string schema, IPostgreSqlWorkQueue<BenchItem> queue, List<ConsumerProcess> consumers, OverheadCase @case, int count, int first)
    {
        await SetLimitsAsync(schema, @case.Limits);
        var before = consumers.Sum(p => p.Count);
        await ResetStatementsAsync();
        var (committed, serverCpu) = await InsertBacklogAsync(queue, first, count, @case.Keyed ? C.Keys : 0);
        await WaitHandledAsync(() => consumers.Sum(p => p.Count), before + count, $"cluster overhead, {@case.Name}", () => DescribeTableAsync(schema));
        var ended = consumers.Max(p => p.LastEnded);
        var server = ServerCpu.Read(Server.DataDirectory) - serverCpu;
        await WaitCompletedAsync(schema, count);
        var (statements, settingsReads) = await NodeStatementsAsync();
        await ScalarAsync<int>($"{DriverTag}TRUNCATE {schema}.items; SELECT 1");
        return (Rate(count, committed, ended), server.TotalMicroseconds / count, statements / (double)count, settingsReads / (double)count);
    }

    // ---- binding ----

    private async Task<BindingResult> BindingAsync(string name, string schema, Limits limits, int keys)
    {
        var c = C;
        var limitText = LimitText(limits, keys);
        Progress($"cluster binding, {name}: {c.BindingConsumers} process(es) x {c.BindingWorkers} workers, {c.HandlerMilliseconds} ms handlers, {limitText}");
        var host = await StartProducerHostAsync(schema, queueOptions: o => o.OrderingKey = item => item.Key);
        List<ConsumerProcess> consumers = [];
        try
        {
            consumers = await ConsumerProcess.StartManyAsync(c.BindingConsumers,
                [.. ClusterConsumerArguments(schema, c.BindingWorkers), "--handler-ms", c.HandlerMilliseconds.ToString(CultureInfo.InvariantCulture), "--record-spans"], _cancellation);
            var queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<BenchItem>>();
            await SetLimitsAsync(schema, limits);

            // Every node claims (an idle poll, PollInterval 1 s) at least once with the row in place before the backlog arrives.
            await Task.Delay(TimeSpan.FromSeconds(1.5), _cancellation);

            // Enough items for every worker to stay busy through the run if the limit does not bind, so a limit that
            // does not hold shows as such instead of as a backlog that ran dry. Per key, twice what the keys allow
            // (a per-key limit that does not hold shows in the most runs of one key at once whatever the backlog; and
            // every claim looks through the ready items of the keys, so a larger backlog would only slow the claims).
            var workers = keys > 0 ? 2 * keys * limits.MaxRunningPerKey : c.BindingConsumers * c.BindingWorkers;
            var backlog = (int)Math.Min(200_000, Math.Ceiling(workers * 1000.0 / c.HandlerMilliseconds * (c.BindingWarmUpSeconds + c.BindingSeconds + 2)));
            using var sampling = CancellationTokenSource.CreateLinkedTokenSource(_cancellation);
            var samples = new List<(long At, long Running, long Ready)>();
            var sampler = SampleRowsAsync(schema, samples, sampling.Token);
            await ResetStatementsAsync();
            var (committed, _) = await InsertBacklogAsync(queue, 0, backlog, keys);
            var windowStart = committed + (long)(c.BindingWarmUpSeconds * Stopwatch.Frequency);
            var windowEnd = windowStart + (long)(c.BindingSeconds * Stopwatch.Frequency);
            var wait = windowEnd - Stopwatch.GetTimestamp();
            if (wait > 0)
            {
                await Task.Delay(TimeSpan.FromSeconds(wait / (double)Stopwatch.Frequency), _cancellation);
            }

            await sampling.CancelAsync();
            await sampler;

            // The rest of the backlog is not needed: delete what is still ready, let what runs finish.
            var deleted = await ScalarAsync<long>($"{DriverTag}WITH d AS (DELETE FROM {schema}.items WHERE state IN (0, 5) RETURNING 1) SELECT count(*) FROM d");
            await WaitRowsDoneAsync(schema);
            await WaitSpansAsync(consumers);
            var (_, settingsReads) = await NodeStatementsAsync();
            var spans = consumers.SelectMany(p => p.Spans).ToList();
            var result = Analyse(name, limits, keys, limitText, spans, samples, windowStart, windowEnd, committed, settingsReads);
            Progress($"  {result.Verdict}");
            if (spans.Count != backlog - deleted)
            {
                _clusterNotes.Add($"Binding, {name}: {backlog - deleted} items left the backlog but {spans.Count} handler runs were reported.");
            }

            return result;
        }
        finally
        {
            await StopConsumersAsync(consumers);
            await StopHostAsync(host);
        }
    }

    private BindingResult Analyse(string name, Limits limits, int keys, string limitText, List<(int Number, long Started, long Ended)> spans,
        List<(long At, long Running, long Ready)> samples, long windowStart, long windowEnd, long committed, long settingsReads)
    {
        var c = C;
        var windowSeconds = (windowEnd - windowStart) / (double)Stopwatch.Frequency;

        // Concurrency of the handlers, a step function from their start (+1) and end (-1) stamps; an end sorts before
        // a start at the same instant.
        var events = new List<(long At, int Delta)>(spans.Count * 2);
        foreach (var (_, started, ended) in spans)
        {
            events.Add((started, +1));
            events.Add((ended, -1));
        }

        events.Sort((a, b) => a.At != b.At ? a.At.CompareTo(b.At) : a.Delta.CompareTo(b.Delta));
        var level = 0;
        var maxWhole = 0;
        var maxWindow = 0;
        var timeAtLevel = new Dictionary<int, long>();
        var previous = windowStart;
        foreach (var (at, delta) in events)
        {
            if (at > windowStart && previous < windowEnd)
            {
                var from = Math.Max(previous, windowStart);
                var to = Math.Min(at, windowEnd);
                if (to > from)
                {
                    timeAtLevel[level] = timeAtLevel.GetValueOrDefault(level) + (to - from);
                    maxWindow = Math.Max(maxWindow, level);
                }
            }

            previous = Math.Max(previous, at);
            level += delta;
            maxWhole = Math.Max(maxWhole, level);
        }

        if (previous < windowEnd)
        {
            timeAtLevel[level] = timeAtLevel.GetValueOrDefault(level) + (windowEnd - Math.Max(previous, windowStart));
        }

        var total = (double)Math.Max(1, timeAtLevel.Values.Sum());
        var mean = timeAtLevel.Sum(kv => kv.Key * (double)kv.Value) / total;
        var p5 = 0;
        var cumulative = 0L;
        foreach (var (l, t) in timeAtLevel.OrderBy(kv => kv.Key))
        {
            cumulative += t;
            if (cumulative >= 0.05 * total)
            {
                p5 = l;
                break;
            }
        }

        // The limit on concurrency this run sets (rate: none).
        int? concurrencyLimit = limits.MaxRunning ?? (keys > 0 ? keys * limits.MaxRunningPerKey : null);
        double? atLimit = concurrencyLimit is { } cl ? timeAtLevel.Where(kv => kv.Key >= cl).Sum(kv => (double)kv.Value) / total : null;

        // Per key: the most runs of one key at once, over the whole run.
        var maxPerKey = 0;
        if (keys > 0)
        {
            foreach (var group in spans.GroupBy(s => s.Number % keys))
            {
                var keyEvents = group.SelectMany(s => new[] { (At: s.Started, Delta: +1), (At: s.Ended, Delta: -1) })
                    .OrderBy(e => e.At).ThenBy(e => e.Delta);
                var k = 0;
                foreach (var e in keyEvents)
                {
                    k += e.Delta;
                    maxPerKey = Math.Max(maxPerKey, k);
                }
            }
        }

        // Starts: per second in the window, and the most in any one-second window of the whole run (burst included).
        var starts = spans.Select(s => s.Started).Order().ToArray();
        var startsInWindow = starts.Count(s => s >= windowStart && s < windowEnd);
        var startsPerSecond = startsInWindow / windowSeconds;
        var mostInOneSecond = 0;
        for (int i = 0, j = 0; i < starts.Length; i++)
        {
            while (starts[i] - starts[j] >= Stopwatch.Frequency)
            {
                j++;
            }

            mostInOneSecond = Math.Max(mostInOneSecond, i - j + 1);
        }

        // The database's own count: rows in state 1 (claimed, not yet finished), sampled.
        var inWindow = samples.Where(s => s.At >= windowStart && s.At < windowEnd).ToList();
        var maxRows = samples.Count > 0 ? samples.Max(s => s.Running) : 0;
        double? meanRows = inWindow.Count > 0 ? inWindow.Average(s => (double)s.Running) : null;
        var dry = inWindow.FirstOrDefault(s => s.Ready == 0);

        // The verdict, in plain words.
        var verdict = new List<string>();
        var held = true;
        if (limits.MaxRunning is { } max)
        {
            if (maxWhole > max)
            {
                held = false;
                verdict.Add($"max concurrency {maxWhole} > limit {max}: the limit did not hold");
            }
            else
            {
                if (maxRows > max)
                {
                    // A permit is given back when the handler ends; its row stays in state 1 until the outcome is written.
                    verdict.Add($"rows in state 1 peaked at {maxRows} (handlers ended, outcomes not yet written)");
                }

                verdict.Add($"held (max {maxWhole}); mean {Format(mean, "0.00")} = {Format(mean / max * 100, "0")}% of the limit, p5 {p5}"
                    + (mean < 0.95 * max ? ": under-use" : string.Empty));
            }
        }

        if (limits.StartsPerSecond is { } rate)
        {
            // A token bucket of R per second and B tokens allows at most R x T + B starts in any T seconds.
            var burst = limits.StartBurst ?? Math.Max(1, (int)Math.Ceiling(rate));
            var bound = rate + burst;
            var windowBound = (rate * windowSeconds) + burst;
            if (mostInOneSecond > bound)
            {
                held = false;
                verdict.Add($"{mostInOneSecond} starts in one second > rate {Format(rate, "0.##")} + burst {burst}: the limit did not hold ({Format(startsPerSecond, "#,0")} starts/s in the window)");
            }
            else if (startsInWindow > windowBound)
            {
                held = false;
                verdict.Add($"{startsInWindow} starts in the {Format(windowSeconds, "0.#")} s window > rate x time + burst = {Format(windowBound, "0")}: the limit did not hold ({Format(startsPerSecond, "#,0")} starts/s)");
            }
            else
            {
                verdict.Add($"held (most in one second {mostInOneSecond} <= {Format(bound, "0")}); {Format(startsPerSecond, "0.0")} starts/s = {Format(startsPerSecond / rate * 100, "0")}% of the rate"
                    + (startsPerSecond < 0.95 * rate ? ": under-use" : string.Empty));
            }
        }

        if (keys > 0 && limits.MaxRunningPerKey is var perKey)
        {
            var keyLimit = keys * perKey;
            if (maxPerKey > perKey)
            {
                held = false;
                verdict.Add($"max {maxPerKey} running for one key > limit {perKey} per key: the limit did not hold");
            }
            else
            {
                verdict.Add($"held (max {maxPerKey} per key); mean {Format(mean, "0.00")} = {Format(mean / keyLimit * 100, "0")}% of {keys} keys x {perKey}, p5 {p5}"
                    + (mean < 0.95 * keyLimit ? ": under-use" : string.Empty));
            }
        }

        if (dry != default)
        {
            verdict.Add($"the backlog ran dry {Format((dry.At - committed) / (double)Stopwatch.Frequency, "0.0")} s after the commit (the window's figures after it are not the limit's)");
        }

        if (settingsReads == 0)
        {
            verdict.Add("no node read queue_settings during the run: this build does not implement the cluster limits");
        }

        if (!held)
        {
            _failedLimits.Add(name);
        }

        return new BindingResult(name, $"{c.BindingConsumers} × {c.BindingWorkers}", c.HandlerMilliseconds, limitText, spans.Count, maxWhole, maxWindow, mean, p5, atLimit,
            keys > 0 ? maxPerKey : null, maxRows, meanRows, startsPerSecond, mostInOneSecond, held, string.Join("; ", verdict));
    }

    private static string LimitText(Limits limits, int keys)
    {
        var parts = new List<string>();
        if (limits.MaxRunning is { } m)
        {
            parts.Add($"max_running {m}");
        }

        if (limits.StartsPerSecond is { } r)
        {
            parts.Add(limits.StartBurst is { } b
                ? $"starts_per_second {Format(r, "0.##")} (burst {b})"
                : $"starts_per_second {Format(r, "0.##")} (burst default {Math.Max(1, (int)Math.Ceiling(r))})");
        }

        if (keys > 0)
        {
            parts.Add($"max_running_per_key {limits.MaxRunningPerKey}, {keys} keys");
        }

        return string.Join(", ", parts);
    }

    /// <summary>Samples the rows running (state 1) and ready every 25 ms until cancelled (the database's own view of the limit).</summary>
    private async Task SampleRowsAsync(string schema, List<(long At, long Running, long Ready)> samples, CancellationToken cancellationToken)
    {
        await using var connection = await Database.OpenConnectionAsync(cancellationToken);
        await using var command = new NpgsqlCommand(
            $"{DriverTag}SELECT (SELECT count(*) FROM {schema}.items WHERE queue = $1 AND state = 1), (SELECT count(*) FROM {schema}.items WHERE queue = $1 AND state = 0)", connection)
        {
            Parameters = { new NpgsqlParameter<string> { TypedValue = ConsumerNode.QueueName } },
        };
        try
        {
            using var timer = new PeriodicTimer(TimeSpan.FromMilliseconds(25));
            while (await timer.WaitForNextTickAsync(cancellationToken))
            {
                var at = Stopwatch.GetTimestamp();
                await using var reader = await command.ExecuteReaderAsync(cancellationToken);
                await reader.ReadAsync(cancellationToken);
                samples.Add((at, reader.GetInt64(0), reader.GetInt64(1)));
            }
        }
        catch (Exception e) when (cancellationToken.IsCancellationRequested && e is OperationCanceledException or NpgsqlException)
        {
        }
    }

    // ---- parts ----

    private List<string> ClusterConsumerArguments(string schema, int workers) =>
        ["--connection", ConnectionString, "--schema", schema, "--workers", workers.ToString(CultureInfo.InvariantCulture),
         "--claims-per-worker", C.ClaimsPerWorker.ToString(CultureInfo.InvariantCulture)];

    /// <summary>
    /// The queue's row in <c>queue_settings</c>, as an operator would set it: a plain upsert that bumps the version (null
    /// limits: every limit null, the defaults). The row is never deleted, as the API never deletes it: a version that
    /// started again at 1 could match a grant a node holds from an earlier case.
    /// </summary>
    private async Task SetLimitsAsync(string schema, Limits? limits)
    {
        limits ??= new Limits(null, 1, null);
        await using var command = Database.CreateCommand($"""
              {DriverTag}INSERT INTO {schema}.queue_settings AS s (queue, max_running, max_running_per_key, starts_per_second, start_burst, tokens, tokens_at, version, updated_at, updated_by)
              VALUES ($1, $2, $3, $4, $5, NULL, NULL, 1, now(), 'cluster-limits benchmark')
              ON CONFLICT (queue) DO UPDATE SET max_running = EXCLUDED.max_running, max_running_per_key = EXCLUDED.max_running_per_key,
                  starts_per_second = EXCLUDED.starts_per_second, start_burst = EXCLUDED.start_burst, tokens = NULL, tokens_at = NULL,
                  version = s.version + 1, updated_at = now(), updated_by = EXCLUDED.updated_by
              """);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = ConsumerNode.QueueName });
        command.Parameters.Add(new NpgsqlParameter<int?> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Integer, TypedValue = limits.MaxRunning });
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = limits.MaxRunningPerKey });
        command.Parameters.Add(new NpgsqlParameter<double?> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Double, TypedValue = limits.StartsPerSecond });
        command.Parameters.Add(new NpgsqlParameter<int?> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Integer, TypedValue = limits.StartBurst });

        await command.ExecuteNonQueryAsync(_cancellation);
    }

    /// <summary>
    /// Inserts items <paramref name="first"/> .. + <paramref name="count"/> - 1 (keyed: key <c>k{number % keys}</c>) in
    /// statements of <see cref="Settings.BulkBatch"/>, in one transaction, and commits; returns when the commit
    /// returned and the server's CPU time just before it.
    /// </summary>
    private async Task<(long Committed, TimeSpan ServerCpu)> InsertBacklogAsync(IPostgreSqlWorkQueue<BenchItem> queue, int first, int count, int keys)
    {
        await using var connection = await Database.OpenConnectionAsync(_cancellation);
        await using var transaction = await connection.BeginTransactionAsync(_cancellation);
        for (var from = first; from < first + count; from += _settings.BulkBatch)
        {
            var size = Math.Min(_settings.BulkBatch, first + count - from);
            await queue.EnqueueManyAsync(Enumerable.Range(from, size).Select(n => new BenchItem(n, keys > 0 ? "k" + (n % keys).ToString(CultureInfo.InvariantCulture) : null)), transaction, _cancellation);
        }

        var serverCpu = ServerCpu.Read(Server.DataDirectory);
        await transaction.CommitAsync(_cancellation);
        return (Stopwatch.GetTimestamp(), serverCpu);
    }

    /// <summary>Polls (every 10 ms) until the table holds <paramref name="total"/> completed rows (the outcome writer batches completions).</summary>
    private async Task WaitCompletedAsync(string schema, long total)
    {
        var deadline = Stopwatch.GetTimestamp() + (long)(RowsCompletedTimeout.TotalSeconds * Stopwatch.Frequency);
        while (await ScalarAsync<long>($"{DriverTag}SELECT count(*) FROM {schema}.items WHERE state = 2") < total)
        {
            if (Stopwatch.GetTimestamp() > deadline)
            {
                throw new TimeoutException($"{schema}: fewer than {total} rows completed after {RowsCompletedTimeout.TotalSeconds:0} s. {await DescribeTableAsync(schema)}");
            }

            await Task.Delay(10, _cancellation);
        }
    }

    /// <summary>Polls until no row is ready, scheduled or running (at most a minute).</summary>
    private async Task WaitRowsDoneAsync(string schema)
    {
        var deadline = Stopwatch.GetTimestamp() + (long)(RowsCompletedTimeout.TotalSeconds * Stopwatch.Frequency);
        while (await ScalarAsync<long>($"{DriverTag}SELECT count(*) FROM {schema}.items WHERE state IN (0, 1, 5)") > 0)
        {
            if (Stopwatch.GetTimestamp() > deadline)
            {
                throw new TimeoutException($"{schema}: rows still ready or running {RowsCompletedTimeout.TotalSeconds:0} s after the backlog was deleted. {await DescribeTableAsync(schema)}");
            }

            await Task.Delay(20, _cancellation);
        }
    }

    /// <summary>Waits until every node has reported the span of every item it counted, and its count stopped moving.</summary>
    private async Task WaitSpansAsync(List<ConsumerProcess> consumers)
    {
        var deadline = Stopwatch.GetTimestamp() + (long)(30 * Stopwatch.Frequency);
        await Task.Delay(300, _cancellation); // two reports
        while (consumers.Any(p => p.Spans.Count < p.Count))
        {
            if (Stopwatch.GetTimestamp() > deadline)
            {
                throw new TimeoutException("The consumers' handler spans did not all arrive within 30 s: "
                    + string.Join(", ", consumers.Select(p => $"consumer {p.Index}: {p.Spans.Count} spans, {p.Count} handled")));
            }

            await Task.Delay(50, _cancellation);
        }
    }

    /// <summary>What the nodes ran since the last reset (every statement but the driver's own and the insert): all of them, and those that read queue_settings.</summary>
    private async Task<(long All, long SettingsReads)> NodeStatementsAsync()
    {
        await using var command = Database.CreateCommand($"""
            {DriverTag}SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(calls) FILTER (WHERE query LIKE '%queue_settings%'), 0)::bigint
            FROM pg_stat_statements
            WHERE query NOT LIKE '%pg_stat%' AND query NOT LIKE '%bench-driver%' AND query NOT LIKE '%unnest(%'
            """);
        await using var reader = await command.ExecuteReaderAsync(_cancellation);
        await reader.ReadAsync(_cancellation);
        return (reader.GetInt64(0), reader.GetInt64(1));
    }

    // ---- output ----

    private string RenderCluster()
    {
        var c = C;
        var text = new StringBuilder();
        text.AppendLine("## Cluster limits: what they cost when they do not bind");
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"{c.Items} items bulk-inserted per case and drained; {c.Rounds} round(s), the cases alternating (forward, then backward); "
            + $"the ratio is the median of the per-round ratios to the baseline measured in the same round. Goal: a ratio of at least 0.90 (the limits cost no more than 10%).");
        text.AppendLine();
        text.AppendLine("| processes × workers | case | row in queue_settings | median items/s | baseline | ratio (median) | ratio per round | node statements/item | queue_settings reads/item | server CPU µs/item | goal |");
        text.AppendLine("| --- | --- | --- | ---: | --- | ---: | --- | ---: | ---: | ---: | --- |");
        var limitsRead = true;
        foreach (var group in _overhead.GroupBy(r => (r.Processes, r.Case.Name)))
        {
            var rows = group.ToList();
            var @case = rows[0].Case;
            var ratio = Median(rows.Select(r => r.Ratio));
            var isBaseline = @case.Baseline == @case.Name;
            var reads = rows.Average(r => r.SettingsReads);
            if (!isBaseline && @case.Limits is not null && reads == 0)
            {
                limitsRead = false;
            }

            var goal = isBaseline ? "(baseline)"
                : @case.Limits is not null && reads == 0 ? "not measured: no node read queue_settings"
                : ratio >= 0.90 ? "met" : $"not met: costs {Format((1 - ratio) * 100, "0")}%";
            text.AppendLine(CultureInfo.InvariantCulture, $"| {rows[0].Processes} × {rows[0].Workers} | {@case.Name} | {@case.Row} | {Format(Median(rows.Select(r => r.Rate)), "#,0")} | {@case.Baseline} | "
                + $"{Format(ratio, "0.00")} | {string.Join(" ", rows.Select(r => Format(r.Ratio, "0.00")))} | {Format(rows.Average(r => r.Statements), "0.000")} | {Format(reads, "0.000")} | "
                + $"{Format(Median(rows.Select(r => r.ServerCpu)), "0.0")} | {goal} |");
        }

        if (!limitsRead)
        {
            text.AppendLine();
            text.AppendLine("**No node read queue_settings while a limit was set: this build does not implement the cluster limits, so the ratios compare the same code (noise), not the limits' cost.**");
        }

        text.AppendLine();
        text.AppendLine("## Cluster limits: whether they hold when they bind");
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"A backlog that keeps every worker busy; measured over {Format(c.BindingSeconds, "0.#")} s after {Format(c.BindingWarmUpSeconds, "0.#")} s of warm-up. "
            + $"Concurrency from the handlers' own start and end stamps (time-weighted over the window; max also over the whole run); rows running = the items table's rows in state 1, sampled every 25 ms.");
        text.AppendLine();
        text.AppendLine("| run | processes × workers | handler ms | limit | handler runs | max concurrency (run / window) | mean | p5 | time at the limit | max per key | rows running max / mean | starts/s | most starts in 1 s | verdict |");
        text.AppendLine("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
        foreach (var b in _binding)
        {
            text.AppendLine(CultureInfo.InvariantCulture, $"| {b.Name} | {b.Shape} | {b.HandlerMilliseconds} | {b.Limit} | {b.Runs} | {b.MaxWhole} / {b.MaxWindow} | {Format(b.Mean, "0.00")} | {b.P5} | "
                + $"{(b.AtLimit is { } a ? Format(a * 100, "0") + "%" : "–")} | {(b.MaxPerKey is { } k ? k.ToString(CultureInfo.InvariantCulture) : "–")} | {b.MaxRows} / {(b.MeanRows is { } m ? Format(m, "0.00") : "–")} | "
                + $"{Format(b.StartsPerSecond, "0.0")} | {b.MostInOneSecond} | {(b.Held ? string.Empty : "**")}{b.Verdict}{(b.Held ? string.Empty : "**")} |");
        }

        text.AppendLine();
        text.AppendLine(MachineLine());
        text.AppendLine(CultureInfo.InvariantCulture, $"Command: `{c.CommandLine ?? "BoundedWork.PostgreSql.Benchmark run " + string.Join(' ', Environment.GetCommandLineArgs().Skip(2))}`");
        foreach (var note in _clusterNotes)
        {
            text.AppendLine("- " + note);
        }

        return text.ToString();
    }

    private string MachineLine()
    {
        static string Read(string path, Func<string, string?> pick)
        {
            try
            {
                return pick(File.ReadAllText(path)) ?? "unknown";
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                return "unknown";
            }
        }

        var cpu = Read("/proc/cpuinfo", t => t.Split('\n').FirstOrDefault(l => l.StartsWith("model name", StringComparison.Ordinal))?.Split(':', 2)[1].Trim());
        var memory = Read("/proc/meminfo", t => t.Split('\n').FirstOrDefault(l => l.StartsWith("MemTotal:", StringComparison.Ordinal)) is { } l
            ? Format(long.Parse(l.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1], CultureInfo.InvariantCulture) / 1024.0 / 1024.0, "0.0") + " GiB"
            : null);
        return $"Machine: {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC; {Environment.ProcessorCount} cores ({cpu}); {memory}; {RuntimeInformation.OSDescription}; {RuntimeInformation.FrameworkDescription}; "
            + $"PostgreSQL {_serverVersion}; load average {_loadAtStart} at the start, {LoadAverage()} at the end; the run took {Format(Stopwatch.GetElapsedTime(_runStarted).TotalMinutes, "0.0")} min (build excluded); commit {C.Commit ?? "unknown"}.";
    }

    /// <summary>Writes the cluster tables (markdown) and the raw rows (CSV) to <see cref="ClusterSettings.OutputDirectory"/>.</summary>
    private async Task WriteClusterFilesAsync(string markdown)
    {
        if (C.OutputDirectory is not { } directory)
        {
            return;
        }

        Directory.CreateDirectory(directory);
        await File.WriteAllTextAsync(Path.Combine(directory, "cluster-limits.md"), "# Cluster limits benchmark\n\n" + markdown, _cancellation);
        var overhead = new StringBuilder("round,processes,workers,case,row,baseline,items,items_per_s,ratio_to_baseline,node_statements_per_item,settings_reads_per_item,server_cpu_us_per_item\n");
        foreach (var r in _overhead)
        {
            overhead.AppendLine(CultureInfo.InvariantCulture, $"{r.Round},{r.Processes},{r.Workers},{Csv(r.Case.Name)},{Csv(r.Case.Row)},{Csv(r.Case.Baseline)},{r.Items},{Format(r.Rate, "0.0")},{Format(r.Ratio, "0.0000")},{Format(r.Statements, "0.0000")},{Format(r.SettingsReads, "0.0000")},{Format(r.ServerCpu, "0.00")}");
        }

        await File.WriteAllTextAsync(Path.Combine(directory, "overhead.csv"), overhead.ToString(), _cancellation);
        var binding = new StringBuilder("run,processes_x_workers,handler_ms,limit,handler_runs,max_concurrency_run,max_concurrency_window,mean_concurrency,p5_concurrency,time_at_limit,max_per_key,rows_running_max,rows_running_mean,starts_per_s,most_starts_in_1s,held,verdict\n");
        foreach (var b in _binding)
        {
            binding.AppendLine(CultureInfo.InvariantCulture, $"{Csv(b.Name)},{Csv(b.Shape)},{b.HandlerMilliseconds},{Csv(b.Limit)},{b.Runs},{b.MaxWhole},{b.MaxWindow},{Format(b.Mean, "0.000")},{b.P5},"
                + $"{(b.AtLimit is { } a ? Format(a, "0.0000") : string.Empty)},{b.MaxPerKey?.ToString(CultureInfo.InvariantCulture) ?? string.Empty},{b.MaxRows},{(b.MeanRows is { } m ? Format(m, "0.000") : string.Empty)},"
                + $"{Format(b.StartsPerSecond, "0.00")},{b.MostInOneSecond},{(b.Held ? "true" : "false")},{Csv(b.Verdict)}");
        }

        await File.WriteAllTextAsync(Path.Combine(directory, "binding.csv"), binding.ToString(), _cancellation);
        Progress($"cluster limits: results in {Path.GetFullPath(directory)} (cluster-limits.md, overhead.csv, binding.csv)");
    }

    private static string Csv(string value) => "\"" + value.Replace("\"", "\"\"", StringComparison.Ordinal) + "\"";

    private static double Median(IEnumerable<double> values)
    {
        var sorted = values.Order().ToList();
        return sorted.Count == 0 ? double.NaN : sorted.Count % 2 == 1 ? sorted[sorted.Count / 2] : (sorted[(sorted.Count / 2) - 1] + sorted[sorted.Count / 2]) / 2;
    }

    /// <summary>A queue's cluster limits as the row stores them (null: not set).</summary>
    private sealed record Limits(int? MaxRunning, int MaxRunningPerKey, double? StartsPerSecond, int? StartBurst = null);

    private sealed record OverheadCase(string Name, string Row, bool Keyed, string Baseline, Limits? Limits);

    private sealed record OverheadResult(int Round, int Processes, int Workers, OverheadCase Case, int Items, double Rate, double Ratio, double ServerCpu, double Statements, double SettingsReads);

    private sealed record BindingResult(string Name, string Shape, int HandlerMilliseconds, string Limit, int Runs, int MaxWhole, int MaxWindow, double Mean, int P5, double? AtLimit,
        int? MaxPerKey, long MaxRows, double? MeanRows, double StartsPerSecond, int MostInOneSecond, bool Held, string Verdict);
}
