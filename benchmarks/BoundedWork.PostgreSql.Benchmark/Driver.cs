using System.Diagnostics;
using System.Globalization;
using System.Text;
using BoundedWork.Hosting;
using BoundedWork.Testing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The <c>run</c> verb: starts a throwaway PostgreSQL cluster, measures throughput (in memory, enqueue only, then 1, 2
/// and 4 consumer processes), latency from commit to handler start, bulk insert (the library against binary COPY),
/// the bulk-insert-then-drain shape, and optionally table bloat under a steady load; prints the tables on stdout,
/// progress on stderr. pg_stat_statements counts what the server ran for each PostgreSQL row. Every wait is bounded;
/// the consumers and the server are stopped however the run ends.
/// </summary>
internal sealed partial class Driver : IAsyncDisposable
{
    private static readonly TimeSpan HostTimeout = TimeSpan.FromSeconds(60);
    private static readonly TimeSpan RowsCompletedTimeout = TimeSpan.FromSeconds(60);

    private readonly Settings _settings;
    private readonly CancellationToken _cancellation;
    private readonly List<Row> _rows = [];
    private readonly List<BloatSample> _bloat = [];
    private readonly List<string> _notes = [];
    private PostgresServer? _server;
    private NpgsqlDataSource? _database;

    private Driver(Settings settings, CancellationToken cancellation)
    {
        _settings = settings;
        _cancellation = cancellation;
    }

    private PostgresServer Server => _server ?? throw new InvalidOperationException("The server is not started.");

    private NpgsqlDataSource Database => _database ?? throw new InvalidOperationException("The server is not started.");

    private string ConnectionString => Server.ConnectionString;

    public static async Task<int> RunAsync(Arguments arguments, CancellationToken cancellation)
    {
        var settings = Settings.From(arguments);
        var driver = new Driver(settings, cancellation);
        await using (driver)
        {
            await driver.RunAsync();
        }

        if (settings.Cluster.Strict && driver._failedLimits.Count > 0)
        {
            Console.Error.WriteLine($"--strict: the cluster limit(s) did not hold in: {string.Join(", ", driver._failedLimits)}.");
            return 1;
        }

        return 0;
    }

    public async ValueTask DisposeAsync()
    {
        if (_database is not null)
        {
            await _database.DisposeAsync();
        }

        NpgsqlConnection.ClearAllPools();
        if (_server is not null)
        {
            Progress("stopping the PostgreSQL server");
            await _server.DisposeAsync();
        }

        if (_settings.ServerDirectoryFile is { } file)
        {
            File.Delete(file);
        }
    }

    private static void Progress(string message) =>
        Console.Error.WriteLine($"[{DateTime.UtcNow:HH:mm:ss}] {message}");

    private static string Format(double value, string format) => value.ToString(format, CultureInfo.InvariantCulture);

    private static double Milliseconds(long fromTimestamp, long toTimestamp) =>
        (toTimestamp - fromTimestamp) * 1000.0 / Stopwatch.Frequency;

    private static double Rate(int items, long fromTimestamp, long toTimestamp) =>
        items / ((toTimestamp - fromTimestamp) / (double)Stopwatch.Frequency);

    private async Task RunAsync()
    {
        var s = _settings;
        _loadAtStart = LoadAverage();
        Progress($"items {s.Items} ({s.WarmUpItems} warm-up), {s.Producers} producers, consumers {string.Join(",", s.Consumers)} x {s.Workers} workers, "
            + $"latency {s.LatencyRate}/s for {s.LatencySeconds} s, bloat {(s.BloatSeconds > 0 ? s.BloatSeconds + " s at " + s.BloatRate + "/s" : "off")}, fsync {(s.Fsync ? "on" : "off")}");
        Progress("starting PostgreSQL (initdb in a temporary folder)");
        string[] serverSettings = [.. s.Fsync ? ["fsync=on"] : Array.Empty<string>(), "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_planning=on"];
        // BOUNDEDWORK_PG_SETTINGS: more server settings for profiling (space-separated name=value, e.g. auto_explain's),
        // the last shared_preload_libraries given winning.
        if (Environment.GetEnvironmentVariable("BOUNDEDWORK_PG_SETTINGS") is { Length: > 0 } extra)
        {
            serverSettings = [.. serverSettings, .. extra.Split(' ', StringSplitOptions.RemoveEmptyEntries)];
        }

        _server = await PostgresServer.StartAsync(serverSettings).WaitAsync(TimeSpan.FromMinutes(3), _cancellation);
        if (s.ServerDirectoryFile is { } file)
        {
            await File.WriteAllTextAsync(file, Server.DataDirectory, _cancellation);
        }

        _database = NpgsqlDataSource.Create(ConnectionString);
        var version = await ScalarAsync<string>("SELECT current_setting('server_version') || ', fsync ' || current_setting('fsync') || ', synchronous_commit ' || current_setting('synchronous_commit')");
        await ScalarAsync<int>("CREATE EXTENSION pg_stat_statements; SELECT 1");
        _notes.Add($"PostgreSQL {version}; Unix socket; shared_buffers 128MB; autovacuum at its defaults (naptime 1 min); pg_stat_statements loaded (it counts the statements)");
        Progress("PostgreSQL " + version);
        _serverVersion = version;

        // The cluster shape alone needs no in-memory baseline.
        var inMemory = s.ClusterOnly ? new Row("in memory", "–", 0) : await InMemoryThroughputAsync();
        if (!s.ClusterOnly)
        {
            _rows.Add(inMemory);
        }

        if (s.Shapes.Contains("per-item"))
        {
            _rows.Add(await EnqueueOnlyAsync(inMemory.HandledRate));
            _rows.Add(await RawInsertAsync(inMemory.HandledRate, notify: true));
            _rows.Add(await RawInsertAsync(inMemory.HandledRate, notify: false));
            foreach (var consumers in s.Consumers)
            {
                _rows.Add(await PostgresThroughputAsync(consumers, inMemory.HandledRate));
            }
        }

        if (s.Shapes.Contains("enqueue"))
        {
            // What ordering keys cost the producers: every producer on one key (they take turns), each on its own.
            if (!s.Shapes.Contains("per-item"))
            {
                _rows.Add(await EnqueueOnlyAsync(inMemory.HandledRate));
            }

            _rows.Add(await EnqueueOnlyAsync(inMemory.HandledRate, keys: 1));
            _rows.Add(await EnqueueOnlyAsync(inMemory.HandledRate, keys: s.Producers));
        }

        if (s.Shapes.Contains("latency"))
        {
            _rows.Add(await InMemoryLatencyAsync());
            _rows.Add(await PostgresLatencyAsync(inCallersTransaction: true));
            _rows.Add(await PostgresLatencyAsync(inCallersTransaction: false));
        }

        if (s.Shapes.Contains("bulk"))
        {
            _rows.AddRange(await BulkInsertComparisonAsync(inMemory.HandledRate));
        }

        if (s.Shapes.Contains("drain"))
        {
            foreach (var consumers in s.Consumers)
            {
                _rows.AddRange(await DrainComparisonAsync(consumers, inMemory.HandledRate));
            }
        }

        if (s.BloatSeconds > 0)
        {
            await BloatAsync();
        }

        if (s.Shapes.Contains("cluster"))
        {
            await ClusterAsync();
        }

        if (s.Shapes.Contains("fair"))
        {
            await FairShareAsync();
        }

        if (_rows.Count > 0 || _bloat.Count > 0)
        {
            Console.Out.Write(Render());
        }

        if (s.Shapes.Contains("cluster"))
        {
            var cluster = RenderCluster();
            Console.Out.WriteLine();
            Console.Out.Write(cluster);
            await WriteClusterFilesAsync(cluster);
        }

        if (s.Shapes.Contains("fair"))
        {
            Console.Out.WriteLine();
            Console.Out.Write(RenderFairShare());
        }
    }

    // ---- throughput ----

    private async Task<Row> InMemoryThroughputAsync()
    {
        Progress($"in memory: 1 process x {_settings.Workers} workers");
        var recorder = new Recorder(recordStarts: false);
        using var host = ConsumerNode.BuildHost(recorder, _settings.Workers, storage: null);
        await StartHostAsync(host);
        try
        {
            var queue = host.Services.GetRequiredService<IWorkQueue<BenchItem>>();
            Func<long> count = () => recorder.Count;
            await ProduceAsync(queue, 0, _settings.WarmUpItems);
            await WaitHandledAsync(count, _settings.WarmUpItems, "in-memory warm-up", () => Task.FromResult(string.Empty));

            var cpu = Environment.CpuUsage.TotalTime;
            var start = Stopwatch.GetTimestamp();
            var produced = await ProduceAsync(queue, _settings.WarmUpItems, _settings.Items);
            await WaitHandledAsync(count, _settings.WarmUpItems + _settings.Items, "in memory", () => Task.FromResult(string.Empty));
            var processCpu = Environment.CpuUsage.TotalTime - cpu;
            var ended = recorder.LastEnded;
            return new Row("in memory", $"1 × {_settings.Workers} (in the producers' process)", _settings.Items)
            {
                EnqueueRate = Rate(_settings.Items, start, produced),
                HandledRate = Rate(_settings.Items, start, ended),
                Ratio = 1,
                Cpu = $"{PerItem(processCpu)} (one process)",
            };
        }
        finally
        {
            await StopHostAsync(host);
        }
    }

    /// <summary>
    /// Enqueues only, one item per transaction; with <paramref name="keys"/> above 0 the items have ordering keys,
    /// producer p's items the key <c>k{p % keys}</c> (1: one key for every producer; the producer count: a key each).
    /// </summary>
    private async Task<Row> EnqueueOnlyAsync(double? inMemoryRate, int keys = 0)
    {
        var Schema = keys == 0 ? "bench_enqueue" : $"bench_enqueue_keys_{keys}";
        var name = keys switch
        {
            0 => "PostgreSQL, enqueue only",
            1 => "PostgreSQL, enqueue only, one ordering key",
            _ => $"PostgreSQL, enqueue only, {keys} ordering keys (one per producer)",
        };
        Progress($"{name}: {_settings.Producers} producers, no consumer");
        var host = await StartProducerHostAsync(Schema, queueOptions: keys == 0 ? null : o => o.OrderingKey = item => item.Key);
        try
        {
            var queue = host.Services.GetRequiredService<IWorkQueue<BenchItem>>();
            await ProduceAsync(queue, 0, _settings.WarmUpItems, keys);
            await ResetStatementsAsync();
            var cpu = Environment.CpuUsage.TotalTime;
            var serverCpu = ServerCpu.Read(Server.DataDirectory);
            var start = Stopwatch.GetTimestamp();
            var produced = await ProduceAsync(queue, _settings.WarmUpItems, _settings.Items, keys);
            var counts = await StatementCounts.ReadAsync(Database, _cancellation);
            var stored = await ScalarAsync<long>($"SELECT count(*) FROM {Schema}.items WHERE state = 0");
            if (stored != _settings.WarmUpItems + _settings.Items)
            {
                throw new InvalidOperationException($"Enqueue only: {stored} rows ready, expected {_settings.WarmUpItems + _settings.Items}.");
            }

            var rate = Rate(_settings.Items, start, produced);
            return new Row(name, "none", _settings.Items)
            {
                EnqueueRate = rate,
                Ratio = inMemoryRate is { } r ? rate / r : null,
                Cpu = $"{PerItem(Environment.CpuUsage.TotalTime - cpu)} / – / {PerItem(ServerCpu.Read(Server.DataDirectory) - serverCpu)}",
                Counts = counts,
            };
        }
        finally
        {
            await StopHostAsync(host);
        }
    }

    /// <summary>
    /// The controls for the enqueue rate: the insert, with or without a notification in its own transaction (one
    /// batch, one implicit transaction, a pooled connection opened per item), written with Npgsql directly into a copy of
    /// the items table: what the database and the driver cost without the library, and what a notification sent by
    /// every committing transaction costs (PostgreSQL serializes such commits).
    /// </summary>
    private async Task<Row> RawInsertAsync(double? inMemoryRate, bool notify)
    {
        var Schema = notify ? "bench_raw" : "bench_raw_quiet";
        Progress($"raw Npgsql insert{(notify ? " + pg_notify" : ", no notification")} (no library): {_settings.Producers} producers");
        await ScalarAsync<int>($"CREATE SCHEMA {Schema}; CREATE TABLE {Schema}.items (LIKE bench_enqueue.items INCLUDING ALL); SELECT 1");
        await using var dataSource = NpgsqlDataSource.Create(ConnectionString);
        var insert = $"INSERT INTO {Schema}.items (queue, payload, ordering_key) VALUES ($1, $2, $3) RETURNING id";
        async Task<long> ProduceRawAsync(int first, int count)
        {
            var producers = _settings.Producers;
            var tasks = Enumerable.Range(0, producers).Select(p => Task.Run(async () =>
            {
                for (var number = first + p; number < first + count; number += producers)
                {
                    var connection = await dataSource.OpenConnectionAsync(_cancellation);
                    await using (connection)
                    {
                        var batch = new NpgsqlBatch(connection)
                        {
                            BatchCommands =
                            {
                                new NpgsqlBatchCommand(insert)
                                {
                                    Parameters =
                                    {
                                        new NpgsqlParameter<string> { TypedValue = ConsumerNode.QueueName },
                                        new NpgsqlParameter<string> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Jsonb, TypedValue = System.Text.Json.JsonSerializer.Serialize(new BenchItem(number), BenchJson.Default.BenchItem) },
                                        new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Text, TypedValue = null },
                                    },
                                },
                            },
                        };
                        if (notify)
                        {
                            batch.BatchCommands.Add(new NpgsqlBatchCommand("SELECT pg_notify($1, $2)")
                            {
                                Parameters = { new NpgsqlParameter<string> { TypedValue = "boundedwork_raw" }, new NpgsqlParameter<string> { TypedValue = ConsumerNode.QueueName } },
                            });
                        }

                        await using (batch)
                        {
                            await batch.ExecuteScalarAsync(_cancellation);
                        }
                    }
                }
            }, _cancellation));
            await Task.WhenAll(tasks).WaitAsync(TimeSpan.FromSeconds(60 + (count / 100.0)), _cancellation);
            return Stopwatch.GetTimestamp();
        }

        await ProduceRawAsync(0, _settings.WarmUpItems);
        var cpu = Environment.CpuUsage.TotalTime;
        var serverCpu = ServerCpu.Read(Server.DataDirectory);
        var start = Stopwatch.GetTimestamp();
        var produced = await ProduceRawAsync(_settings.WarmUpItems, _settings.Items);
        var rate = Rate(_settings.Items, start, produced);
        return new Row(notify ? "raw Npgsql insert + notify (no library), enqueue only" : "raw Npgsql insert, no notification (no library), enqueue only", "none", _settings.Items)
        {
            EnqueueRate = rate,
            Ratio = inMemoryRate is { } r ? rate / r : null,
            Cpu = $"{PerItem(Environment.CpuUsage.TotalTime - cpu)} / – / {PerItem(ServerCpu.Read(Server.DataDirectory) - serverCpu)}",
        };
    }

    private async Task<Row> PostgresThroughputAsync(int consumerCount, double? inMemoryRate)
    {
        var schema = "bench_c" + consumerCount.ToString(CultureInfo.InvariantCulture);
        Progress($"PostgreSQL: {consumerCount} consumer process(es) x {_settings.Workers} workers, {_settings.Producers} producers");
        var host = await StartProducerHostAsync(schema);
        List<ConsumerProcess> consumers = [];
        try
        {
            consumers = await ConsumerProcess.StartManyAsync(consumerCount, ConsumerArguments(schema), _cancellation);
            var queue = host.Services.GetRequiredService<IWorkQueue<BenchItem>>();
            Func<long> count = () => consumers.Sum(c => c.Count);
            Func<Task<string>> state = () => DescribeTableAsync(schema);
            await ProduceAsync(queue, 0, _settings.WarmUpItems);
            await WaitHandledAsync(count, _settings.WarmUpItems, "warm-up", state);
            await Task.Delay(TimeSpan.FromMilliseconds(300), _cancellation); // Every node reports its CPU time after the warm-up.

            var total = _settings.WarmUpItems + _settings.Items;
            await ResetStatementsAsync();
            var cpu = Environment.CpuUsage.TotalTime;
            var consumerCpu = Sum(consumers.Select(c => c.Cpu));
            var serverCpu = ServerCpu.Read(Server.DataDirectory);
            var start = Stopwatch.GetTimestamp();
            var produced = await ProduceAsync(queue, _settings.WarmUpItems, _settings.Items);
            await WaitHandledAsync(count, total, $"{consumerCount} consumer(s)", state);
            var ended = consumers.Max(c => c.LastEnded);
            var producerCpu = Environment.CpuUsage.TotalTime - cpu;
            var serverUsed = ServerCpu.Read(Server.DataDirectory) - serverCpu;
            var completed = await WaitRowsCompletedAsync(schema, total);
            await Task.Delay(TimeSpan.FromMilliseconds(200), _cancellation); // The last CPU reports.
            var consumersUsed = Sum(consumers.Select(c => c.Cpu)) - consumerCpu;
            var counts = await StatementCounts.ReadAsync(Database, _cancellation);
            await CheckDeliveriesAsync(schema, total, consumers.Sum(c => c.Count), $"{consumerCount} consumer(s)");
            await PrintStatementsAsync($"{consumerCount} consumer process(es)");

            var rate = Rate(_settings.Items, start, ended);
            return new Row("PostgreSQL", $"{consumerCount} × {_settings.Workers}", _settings.Items)
            {
                EnqueueRate = Rate(_settings.Items, start, produced),
                HandledRate = rate,
                Ratio = inMemoryRate is { } r ? rate / r : null,
                RowsCompletedAfter = Milliseconds(ended, completed),
                Cpu = $"{PerItem(producerCpu)} / {PerItem(consumersUsed)} / {PerItem(serverUsed)}",
                Counts = counts,
            };
        }
        finally
        {
            await StopConsumersAsync(consumers);
            await StopHostAsync(host);
        }
    }

    // ---- latency ----

    private async Task<Row> InMemoryLatencyAsync()
    {
        Progress($"in memory, latency: {_settings.LatencyRate} items/s for {_settings.LatencySeconds} s");
        var recorder = new Recorder(recordStarts: true);
        using var host = ConsumerNode.BuildHost(recorder, _settings.Workers, storage: null);
        await StartHostAsync(host);
        try
        {
            var queue = host.Services.GetRequiredService<IWorkQueue<BenchItem>>();
            var (total, warmUp, returned) = await PaceAsync(async number =>
            {
                await queue.EnqueueAsync(new BenchItem(number), _cancellation);
                return Stopwatch.GetTimestamp();
            });
            await WaitHandledAsync(() => recorder.Count, total, "in-memory latency", () => Task.FromResult(string.Empty));
            var starts = new Dictionary<int, long>();
            while (recorder.TryTakeStart(out var start))
            {
                starts.TryAdd(start.Number, start.Started);
            }

            return LatencyRow("in memory, latency", $"1 × {_settings.Workers}", starts, returned, warmUp, "enqueue return");
        }
        finally
        {
            await StopHostAsync(host);
        }
    }

    /// <summary>
    /// Commit to handler start, one item at a time: in the caller's transaction (the statement notifies at the commit)
    /// or in the queue's own (the node's notifier notifies after the commit).
    /// </summary>
    private async Task<Row> PostgresLatencyAsync(bool inCallersTransaction)
    {
        var Schema = inCallersTransaction ? "bench_latency" : "bench_latency_own";
        Progress($"PostgreSQL, latency: 1 consumer process, {_settings.LatencyRate} items/s for {_settings.LatencySeconds} s, each in {(inCallersTransaction ? "the caller's" : "its own")} transaction");
        var host = await StartProducerHostAsync(Schema);
        List<ConsumerProcess> consumers = [];
        try
        {
            consumers = await ConsumerProcess.StartManyAsync(1, [.. ConsumerArguments(Schema), "--record-starts"], _cancellation);
            var consumer = consumers[0];
            var queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<BenchItem>>();
            var connection = await Database.OpenConnectionAsync(_cancellation);
            await using (connection)
            {
                var (total, warmUp, committed) = await PaceAsync(async number =>
                {
                    if (!inCallersTransaction)
                    {
                        await queue.EnqueueAsync(new BenchItem(number), _cancellation);
                        return Stopwatch.GetTimestamp();
                    }

                    var transaction = await connection.BeginTransactionAsync(_cancellation);
                    await using (transaction)
                    {
                        await queue.EnqueueAsync(new BenchItem(number), transaction, _cancellation);
                        await transaction.CommitAsync(_cancellation);
                        return Stopwatch.GetTimestamp();
                    }
                });
                await WaitHandledAsync(() => Math.Min(consumer.Count, consumer.Starts.Count), total, "PostgreSQL latency", () => DescribeTableAsync(Schema));
                var starts = new Dictionary<int, long>();
                foreach (var (number, started) in consumer.Starts)
                {
                    starts.TryAdd(number, started);
                }

                return LatencyRow(inCallersTransaction ? "PostgreSQL, latency (caller's transaction)" : "PostgreSQL, latency (own transaction, notifier)",
                    "1 × " + _settings.Workers.ToString(CultureInfo.InvariantCulture), starts, committed, warmUp, "commit return");
            }
        }
        finally
        {
            await StopConsumersAsync(consumers);
            await StopHostAsync(host);
        }
    }

    /// <summary>Calls <paramref name="enqueue"/> for item 0, 1, ... at the latency rate (an absolute schedule), one at a time; returns what each call returned.</summary>
    private async Task<(int Total, int WarmUp, long[] Timestamps)> PaceAsync(Func<int, Task<long>> enqueue)
    {
        var warmUp = (int)Math.Ceiling(_settings.LatencyRate * _settings.LatencyWarmUpSeconds);
        var total = warmUp + (int)Math.Ceiling(_settings.LatencyRate * _settings.LatencySeconds);
        var timestamps = new long[total];
        var period = Stopwatch.Frequency / _settings.LatencyRate;
        var start = Stopwatch.GetTimestamp();
        for (var number = 0; number < total; number++)
        {
            var due = start + (long)(number * period);
            var wait = due - Stopwatch.GetTimestamp();
            if (wait > 0)
            {
                await Task.Delay(TimeSpan.FromSeconds(wait / (double)Stopwatch.Frequency), _cancellation);
            }

            timestamps[number] = await enqueue(number);
        }

        var seconds = (Stopwatch.GetTimestamp() - start) / (double)Stopwatch.Frequency;
        var expected = total / _settings.LatencyRate;
        if (seconds > expected * 1.05 + 0.05)
        {
            _notes.Add($"The latency pacer fell behind: {total} items took {Format(seconds, "0.00")} s instead of {Format(expected, "0.00")} s (the machine was busy).");
        }

        return (total, warmUp, timestamps);
    }

    private Row LatencyRow(string name, string shape, Dictionary<int, long> starts, long[] reference, int warmUp, string from)
    {
        var latencies = new List<double>();
        for (var number = warmUp; number < reference.Length; number++)
        {
            if (!starts.TryGetValue(number, out var started))
            {
                throw new InvalidOperationException($"{name}: item {number} was counted but its start was not reported.");
            }

            latencies.Add(Milliseconds(reference[number], started));
        }

        latencies.Sort();
        var early = latencies.Count(l => l < 0);
        if (early > 0)
        {
            _notes.Add($"{name}: {early} of {latencies.Count} handlers started before the producer's {from} (negative latencies; they count in the percentiles as they are).");
        }

        return new Row(name, shape, latencies.Count)
        {
            EnqueueRate = _settings.LatencyRate,
            Latency = (Percentile(latencies, 0.50), Percentile(latencies, 0.99), latencies[^1]),
        };
    }

    private static double Percentile(List<double> sorted, double p) =>
        sorted[Math.Clamp((int)Math.Ceiling(p * sorted.Count) - 1, 0, sorted.Count - 1)];

    // ---- bloat ----

    private async Task BloatAsync()
    {
        const string Schema = "bench_bloat";
        var retention = TimeSpan.FromSeconds(5);
        var cleanup = TimeSpan.FromSeconds(1);
        Progress($"bloat: {_settings.BloatRate} items/s for {_settings.BloatSeconds} s, 1 consumer process x {_settings.Workers} workers, "
            + $"CompletedRetention {retention.TotalSeconds} s, CleanupInterval {cleanup.TotalSeconds} s, a sample every {_settings.BloatSampleSeconds} s");
        var host = await StartProducerHostAsync(Schema, o =>
        {
            o.CompletedRetention = retention;
            o.CleanupInterval = cleanup;
        });
        List<ConsumerProcess> consumers = [];
        try
        {
            consumers = await ConsumerProcess.StartManyAsync(1, [.. ConsumerArguments(Schema),
                "--retention-ms", ((int)retention.TotalMilliseconds).ToString(CultureInfo.InvariantCulture),
                "--cleanup-ms", ((int)cleanup.TotalMilliseconds).ToString(CultureInfo.InvariantCulture)], _cancellation);
            var consumer = consumers[0];
            var queue = host.Services.GetRequiredService<IWorkQueue<BenchItem>>();
            long enqueued = 0;
            var start = Stopwatch.GetTimestamp();
            var deadline = start + (long)(_settings.BloatSeconds * Stopwatch.Frequency);
            var perProducer = _settings.BloatRate / (double)_settings.Producers;
            var producers = Enumerable.Range(0, _settings.Producers).Select(p => Task.Run(async () =>
            {
                var period = Stopwatch.Frequency / perProducer;
                var offset = (long)(period * p / _settings.Producers);
                for (long k = 0; ; k++)
                {
                    var due = start + offset + (long)(k * period);
                    if (due >= deadline)
                    {
                        return;
                    }

                    var wait = due - Stopwatch.GetTimestamp();
                    if (wait > 0)
                    {
                        await Task.Delay(TimeSpan.FromSeconds(wait / (double)Stopwatch.Frequency), _cancellation);
                    }

                    await queue.EnqueueAsync(new BenchItem((int)((k * _settings.Producers) + p)), _cancellation);
                    Interlocked.Increment(ref enqueued);
                }
            }, _cancellation)).ToList();

            var sampleEvery = (long)(_settings.BloatSampleSeconds * Stopwatch.Frequency);
            _bloat.Add(await SampleAsync(Schema, 0, 0, consumer.Count));
            for (var next = start + sampleEvery; next <= deadline; next += sampleEvery)
            {
                var wait = next - Stopwatch.GetTimestamp();
                if (wait > 0)
                {
                    await Task.Delay(TimeSpan.FromSeconds(wait / (double)Stopwatch.Frequency), _cancellation);
                }

                if (producers.FirstOrDefault(p => p.IsFaulted) is { } failed)
                {
                    await failed;
                }

                _bloat.Add(await SampleAsync(Schema, (next - start) / (double)Stopwatch.Frequency, Interlocked.Read(ref enqueued), consumer.Count));
                Progress($"  bloat sample at {Format(_bloat[^1].Seconds, "0")} s: {_bloat[^1].TotalBytes / 1024} kB, {_bloat[^1].LiveTuples} live, {_bloat[^1].DeadTuples} dead tuples");
            }

            await Task.WhenAll(producers).WaitAsync(TimeSpan.FromSeconds(60), _cancellation);
            var total = Interlocked.Read(ref enqueued);
            await WaitHandledAsync(() => consumer.Count, total, "bloat drain", () => DescribeTableAsync(Schema));
            var achieved = total / _settings.BloatSeconds;
            if (achieved < _settings.BloatRate * 0.95)
            {
                _notes.Add($"Bloat: the producers reached {Format(achieved, "0")} items/s of the {_settings.BloatRate} asked.");
            }

            // Once the load stops: retention plus a few cleanup rounds later, what is left.
            await Task.Delay(retention + TimeSpan.FromSeconds(3), _cancellation);
            _bloat.Add(await SampleAsync(Schema, (Stopwatch.GetTimestamp() - start) / (double)Stopwatch.Frequency, total, consumer.Count) with { AfterLoad = true });
        }
        finally
        {
            await StopConsumersAsync(consumers);
            await StopHostAsync(host);
        }
    }

    private async Task<BloatSample> SampleAsync(string schema, double seconds, long enqueued, long handled)
    {
        var connection = await Database.OpenConnectionAsync(_cancellation);
        await using (connection)
        {
            var command = new NpgsqlCommand($"""
                SELECT pg_total_relation_size('{schema}.items'), pg_relation_size('{schema}.items'),
                       coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0), coalesce(s.autovacuum_count, 0),
                       (SELECT count(*) FROM {schema}.items WHERE state = 0), (SELECT count(*) FROM {schema}.items WHERE state = 2)
                FROM pg_stat_user_tables s WHERE s.schemaname = '{schema}' AND s.relname = 'items'
                """, connection);
            await using (command)
            {
                var reader = await command.ExecuteReaderAsync(_cancellation);
                await using (reader)
                {
                    if (!await reader.ReadAsync(_cancellation))
                    {
                        throw new InvalidOperationException($"{schema}.items is not in pg_stat_user_tables.");
                    }

                    return new BloatSample(seconds, enqueued, handled, reader.GetInt64(5), reader.GetInt64(6), reader.GetInt64(0), reader.GetInt64(1),
                        reader.GetInt64(2), reader.GetInt64(3), reader.GetInt64(4));
                }
            }
        }
    }

    // ---- parts ----

    private List<string> ConsumerArguments(string schema) =>
        ["--connection", ConnectionString, "--schema", schema, "--workers", _settings.Workers.ToString(CultureInfo.InvariantCulture)];

    /// <summary>A host that only produces (Consume = false): the producers' side of every PostgreSQL row; it creates the schema.</summary>
    private async Task<IHost> StartProducerHostAsync(string schema, Action<PostgreSqlWorkQueueOptions<BenchItem>>? configure = null, Action<WorkQueueOptions<BenchItem>>? queueOptions = null)
    {
        var host = ConsumerNode.BuildHost(new Recorder(recordStarts: false), _settings.Workers, builder => builder.UsePostgreSql(ConnectionString, BenchJson.Default.BenchItem, o =>
        {
            o.Schema = schema;
            o.Consume = false;
            configure?.Invoke(o);
        }), queueOptions);
        try
        {
            await StartHostAsync(host);
            return host;
        }
        catch
        {
            host.Dispose();
            throw;
        }
    }

    private async Task StartHostAsync(IHost host)
    {
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(_cancellation);
        deadline.CancelAfter(HostTimeout);
        await host.StartAsync(deadline.Token);
    }

    private static async Task StopHostAsync(IHost host)
    {
        using (var deadline = new CancellationTokenSource(HostTimeout))
        {
            await host.StopAsync(deadline.Token);
        }

        host.Dispose();
    }

    private static async Task StopConsumersAsync(List<ConsumerProcess> consumers)
    {
        try
        {
            await ConsumerProcess.StopAllAsync(consumers);
        }
        finally
        {
            await ConsumerProcess.DisposeAllAsync(consumers);
        }
    }

    /// <summary>Enqueues items first .. first + count - 1 from the producer tasks, each item with <see cref="IWorkQueue{T}.EnqueueAsync"/> (its own transaction); returns when the last producer finished.</summary>
    private async Task<long> ProduceAsync(IWorkQueue<BenchItem> queue, int first, int count, int keys = 0)
    {
        var producers = _settings.Producers;
        var tasks = Enumerable.Range(0, producers).Select(p => Task.Run(async () =>
        {
            var key = keys == 0 ? null : "k" + (p % keys).ToString(CultureInfo.InvariantCulture);
            for (var number = first + p; number < first + count; number += producers)
            {
                await queue.EnqueueAsync(new BenchItem(number, key), _cancellation);
            }
        }, _cancellation));
        var timeout = TimeSpan.FromSeconds(60 + (count / 100.0));
        try
        {
            await Task.WhenAll(tasks).WaitAsync(timeout, _cancellation);
        }
        catch (TimeoutException)
        {
            throw new TimeoutException($"{producers} producers did not enqueue {count} items within {timeout.TotalSeconds:0} s.");
        }

        return Stopwatch.GetTimestamp();
    }

    /// <summary>Waits until <paramref name="count"/> reaches <paramref name="target"/> (polling every 5 ms), at most a minute plus 10 ms per item.</summary>
    private async Task WaitHandledAsync(Func<long> count, long target, string what, Func<Task<string>> describe)
    {
        var timeout = TimeSpan.FromSeconds(60 + (target / 100.0));
        var deadline = Stopwatch.GetTimestamp() + (long)(timeout.TotalSeconds * Stopwatch.Frequency);
        while (count() < target)
        {
            if (Stopwatch.GetTimestamp() > deadline)
            {
                throw new TimeoutException($"{what}: {count()} of {target} items handled after {timeout.TotalSeconds:0} s. {await describe()}");
            }

            await Task.Delay(5, _cancellation);
        }
    }

    /// <summary>Polls (every 10 ms) until the table has <paramref name="total"/> completed rows; returns when it saw them.</summary>
    private async Task<long> WaitRowsCompletedAsync(string schema, long total)
    {
        var deadline = Stopwatch.GetTimestamp() + (long)(RowsCompletedTimeout.TotalSeconds * Stopwatch.Frequency);
        while (true)
        {
            var completed = await ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 2");
            var now = Stopwatch.GetTimestamp();
            if (completed >= total)
            {
                return now;
            }

            if (now > deadline)
            {
                throw new TimeoutException($"{schema}: {completed} of {total} rows completed {RowsCompletedTimeout.TotalSeconds:0} s after the last handler ended. {await DescribeTableAsync(schema)}");
            }

            await Task.Delay(10, _cancellation);
        }
    }

    /// <summary>Every item ran once: as many rows as items, one delivery each, and the handlers counted as many; false (and a note) otherwise.</summary>
    private async Task<bool> CheckDeliveriesAsync(string schema, long total, long handled, string what)
    {
        var deliveries = await ScalarAsync<long>($"SELECT coalesce(sum(attempts), 0)::bigint FROM {schema}.items");
        var rows = await ScalarAsync<long>($"SELECT count(*) FROM {schema}.items");
        if (rows != total || deliveries != total || handled != total)
        {
            _notes.Add($"{what}: {rows} rows, {deliveries} deliveries and {handled} handler runs for {total} items (at least once: a repeat means a lease expired).");
            return false;
        }

        return true;
    }

    private async Task ResetStatementsAsync() => await ScalarAsync<object>("SELECT pg_stat_statements_reset(), pg_stat_reset_shared('wal')");

    /// <summary>With --statements: what the server ran since the last reset, per measured item, on stderr.</summary>
    private async Task PrintStatementsAsync(string what, int? measuredItems = null)
    {
        var items = measuredItems ?? _settings.Items;
        if (!_settings.Statements)
        {
            return;
        }

        var connection = await Database.OpenConnectionAsync(_cancellation);
        await using (connection)
        {
            var command = new NpgsqlCommand("""
                SELECT calls, rows, total_exec_time, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
                FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 12
                """, connection);
            await using (command)
            {
                var reader = await command.ExecuteReaderAsync(_cancellation);
                await using (reader)
                {
                    Console.Error.WriteLine($"statements, {what}, {items} items: calls/item, rows/call, exec µs/item, statement");
                    while (await reader.ReadAsync(_cancellation))
                    {
                        var calls = reader.GetInt64(0);
                        Console.Error.WriteLine(string.Create(CultureInfo.InvariantCulture,
                            $"  {calls / (double)items,8:0.000} {reader.GetInt64(1) / (double)Math.Max(calls, 1),8:0.00} {reader.GetDouble(2) * 1000 / items,8:0.0}  {reader.GetString(3)}"));
                    }
                }
            }
        }
    }

    private async Task<string> DescribeTableAsync(string schema)
    {
        try
        {
            var connection = await Database.OpenConnectionAsync(_cancellation);
            await using (connection)
            {
                var command = new NpgsqlCommand($"SELECT state, count(*) FROM {schema}.items GROUP BY state ORDER BY state", connection);
                await using (command)
                {
                    var reader = await command.ExecuteReaderAsync(_cancellation);
                    await using (reader)
                    {
                        var text = new StringBuilder("Rows by state (0 ready, 1 running, 2 completed, 3 dead):");
                        while (await reader.ReadAsync(_cancellation))
                        {
                            text.Append(CultureInfo.InvariantCulture, $" {reader.GetInt16(0)}: {reader.GetInt64(1)}");
                        }

                        return text.ToString();
                    }
                }
            }
        }
        catch (NpgsqlException ex)
        {
            return "The table could not be read: " + ex.Message;
        }
    }

    private async Task<T> ScalarAsync<T>(string sql)
    {
        var command = Database.CreateCommand(sql);
        await using (command)
        {
            return (T)(await command.ExecuteScalarAsync(_cancellation))!;
        }
    }

    private static TimeSpan Sum(IEnumerable<TimeSpan> values) => values.Aggregate(TimeSpan.Zero, (a, b) => a + b);

    private string PerItem(TimeSpan cpu) => Format(cpu.TotalMicroseconds / _settings.Items, "0");

    // ---- output ----

    private string Render()
    {
        var s = _settings;
        var text = new StringBuilder();
        text.AppendLine("| row | consumer processes × workers | items | enqueue items/s | handled items/s | vs in memory | rows completed (ms after the last handler) | CPU µs/item: producers / consumers / PostgreSQL | latency p50 ms | p99 ms | max ms |");
        text.AppendLine("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        foreach (var row in _rows)
        {
            static string N(double? value, string format) => value is { } v ? Format(v, format) : "–";
            text.AppendLine(CultureInfo.InvariantCulture, $"| {row.Name} | {row.Shape} | {row.Items} | {N(row.EnqueueRate, "#,0")} | {N(row.HandledRate, "#,0")} | "
                + $"{(row.Ratio is { } r ? Format(r, r >= 0.1 ? "0.00" : "0.0000") + "x" : "–")} | {N(row.RowsCompletedAfter, "0")} | {row.Cpu ?? "–"} | "
                + $"{N(row.Latency?.P50, "0.00")} | {N(row.Latency?.P99, "0.00")} | {N(row.Latency?.Max, "0.00")} |");
        }

        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"{DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC; {Environment.ProcessorCount} cores; load average {LoadAverage()} at the end; "
            + $"{s.Producers} producer tasks, {s.WarmUpItems} warm-up items per row (not measured); latency rows: {s.LatencyRate} items/s for {s.LatencySeconds} s after {s.LatencyWarmUpSeconds} s of warm-up.");
        foreach (var note in _notes)
        {
            text.AppendLine("- " + note);
        }

        if (_drainComparisons.Count > 0)
        {
            text.AppendLine();
            text.Append(RenderDrainComparison());
        }

        if (_rows.Any(row => row.Counts is not null))
        {
            text.AppendLine();
            text.AppendLine("| row (counts per measured item, pg_stat_statements) | consumer processes × workers | statements | round trips | enqueue statements | NOTIFY statements of their own | claims | items per claim | outcome writes | items per outcome write | WAL bytes | WAL flushes | planning µs | execution µs |");
            text.AppendLine("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
            foreach (var row in _rows.Where(row => row.Counts is not null))
            {
                text.AppendLine(CultureInfo.InvariantCulture, $"| {row.Name} | {row.Shape} | {row.Counts!.Describe(row.Items)} |");
            }
        }

        if (_bloat.Count > 0)
        {
            text.AppendLine();
            text.AppendLine("| seconds | enqueued | handled | ready | completed rows kept | table + indexes kB | table kB | n_live_tup | n_dead_tup | autovacuum runs |");
            text.AppendLine("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
            foreach (var b in _bloat)
            {
                text.AppendLine(CultureInfo.InvariantCulture,
                    $"| {Format(b.Seconds, "0")}{(b.AfterLoad ? " (load stopped)" : string.Empty)} | {b.Enqueued} | {b.Handled} | {b.Ready} | {b.Completed} | {b.TotalBytes / 1024} | {b.TableBytes / 1024} | {b.LiveTuples} | {b.DeadTuples} | {b.Autovacuums} |");
            }
        }

        return text.ToString();
    }

    private static string LoadAverage()
    {
        try
        {
            return string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3));
        }
        catch (IOException)
        {
            return "unknown";
        }
    }

    private sealed record Row(string Name, string Shape, int Items)
    {
        public double? EnqueueRate { get; init; }

        public double? HandledRate { get; init; }

        public double? Ratio { get; init; }

        public double? RowsCompletedAfter { get; init; }

        public string? Cpu { get; init; }

        public (double P50, double P99, double Max)? Latency { get; init; }

        /// <summary>Gets what the server ran for the measured items (pg_stat_statements), for the counts table.</summary>
        public StatementCounts? Counts { get; init; }
    }

    private sealed record BloatSample(double Seconds, long Enqueued, long Handled, long Ready, long Completed, long TotalBytes, long TableBytes, long LiveTuples, long DeadTuples, long Autovacuums)
    {
        public bool AfterLoad { get; init; }
    }
}
