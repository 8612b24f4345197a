using System.Diagnostics;
using System.Globalization;
using System.Text;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The shapes other durable queues publish: items bulk-inserted, then drained (River, Graphile Worker, Oban), by the
/// library and by a hand-written reference, and the bulk insert itself, the library's statement (INSERT ... SELECT FROM
/// unnest) against binary COPY.
/// </summary>
internal sealed partial class Driver
{
    private readonly List<(int Consumers, DrainRun Library, DrainRun Reference, DrainRun? Bounded)> _drainComparisons = [];

    /// <summary>
    /// Bulk insert, <see cref="Settings.BulkBatch"/> items per statement, each batch its own transaction: the library's
    /// <c>EnqueueManyAsync</c> (one statement, ids returned, one wake-up by the notifier) against binary COPY into a copy
    /// of the table written with Npgsql directly (ids drawn from the sequence first, as an implementation would need
    /// them, then COPY, then one NOTIFY). The two run alternately, <see cref="Settings.BulkRounds"/> times each; the rows
    /// give each side's median round.
    /// </summary>
    private async Task<IReadOnlyList<Row>> BulkInsertComparisonAsync(double? inMemoryRate)
    {
        const string LibrarySchema = "bench_bulk";
        const string CopySchema = "bench_copy";
        var items = _settings.DrainItems;
        var batch = _settings.BulkBatch;
        Progress($"bulk insert: {items} items in statements of {batch}, library (unnest) against binary COPY, alternating {_settings.BulkRounds} times");
        var host = await StartProducerHostAsync(LibrarySchema);
        try
        {
            await ScalarAsync<int>($"CREATE SCHEMA {CopySchema}; CREATE TABLE {CopySchema}.items (LIKE {LibrarySchema}.items INCLUDING ALL); SELECT 1");
            var queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<BenchItem>>();
            var library = new List<(double Rate, TimeSpan Server, StatementCounts Counts)>();
            var copy = new List<(double Rate, TimeSpan Server, StatementCounts Counts)>();
            await using var dataSource = NpgsqlDataSource.Create(ConnectionString);
            for (var round = 0; round < _settings.BulkRounds + 1; round++)
            {
                // Round 0 warms both sides up and is not kept.
                var a = await MeasureBulkAsync(items, batch, (first, count) => queue.EnqueueManyAsync(Enumerable.Range(first, count).Select(n => new BenchItem(n)), _cancellation));
                var b = await MeasureBulkAsync(items, batch, (first, count) => CopyAsync(dataSource, CopySchema, first, count));
                if (round > 0)
                {
                    library.Add(a);
                    copy.Add(b);
                }

                await ScalarAsync<int>($"TRUNCATE {LibrarySchema}.items, {CopySchema}.items; SELECT 1");
            }

            Row Median(string name, List<(double Rate, TimeSpan Server, StatementCounts Counts)> runs)
            {
                var median = runs.OrderBy(r => r.Rate).ElementAt(runs.Count / 2);
                return new Row(name, "none", items)
                {
                    EnqueueRate = median.Rate,
                    Ratio = inMemoryRate is { } r ? median.Rate / r : null,
                    Cpu = $"– / – / {Format(median.Server.TotalMicroseconds / items, "0.0")}",
                    Counts = median.Counts,
                };
            }

            _notes.Add($"Bulk insert: median of {_settings.BulkRounds} alternating rounds each; items/s per round: library {string.Join(", ", library.Select(r => Format(r.Rate, "#,0")))}; COPY {string.Join(", ", copy.Select(r => Format(r.Rate, "#,0")))}.");
            return
            [
                Median($"bulk insert, EnqueueManyAsync ({batch} per statement, unnest)", library),
                Median($"bulk insert, raw binary COPY ({batch} per COPY, ids drawn first; no library)", copy),
            ];
        }
        finally
        {
            await StopHostAsync(host);
        }
    }

    private async Task<(double Rate, TimeSpan Server, StatementCounts Counts)> MeasureBulkAsync(int items, int batch, Func<int, int, Task> insert)
    {
        await ResetStatementsAsync();
        var serverCpu = ServerCpu.Read(Server.DataDirectory);
        var start = Stopwatch.GetTimestamp();
        for (var first = 0; first < items; first += batch)
        {
            await insert(first, Math.Min(batch, items - first));
        }

        var ended = Stopwatch.GetTimestamp();
        var server = ServerCpu.Read(Server.DataDirectory) - serverCpu;
        return (Rate(items, start, ended), server, await StatementCounts.ReadAsync(Database, _cancellation));
    }

    /// <summary>What an implementation of bulk enqueue on binary COPY would do: draw the ids, COPY the rows with them, notify.</summary>
    private async Task CopyAsync(NpgsqlDataSource dataSource, string schema, int first, int count)
    {
        var connection = await dataSource.OpenConnectionAsync(_cancellation);
        await using (connection)
        {
            long[] ids;
            var draw = new NpgsqlCommand($"SELECT array_agg(nextval(pg_get_serial_sequence('{schema}.items', 'id'))) FROM generate_series(1, $1)", connection)
            {
                Parameters = { new NpgsqlParameter<int> { TypedValue = count } },
            };
            await using (draw)
            {
                ids = (long[])(await draw.ExecuteScalarAsync(_cancellation))!;
            }

            var writer = await connection.BeginBinaryImportAsync($"COPY {schema}.items (id, queue, payload, ordering_key, priority, run_at, state) FROM STDIN (FORMAT BINARY)", _cancellation);
            await using (writer)
            {
                var now = DateTime.UtcNow;
                for (var i = 0; i < count; i++)
                {
                    await writer.StartRowAsync(_cancellation);
                    await writer.WriteAsync(ids[i], NpgsqlDbType.Bigint, _cancellation);
                    await writer.WriteAsync(ConsumerNode.QueueName, NpgsqlDbType.Text, _cancellation);
                    await writer.WriteAsync(System.Text.Json.JsonSerializer.Serialize(new BenchItem(first + i), BenchJson.Default.BenchItem), NpgsqlDbType.Jsonb, _cancellation);
                    await writer.WriteNullAsync(_cancellation);
                    await writer.WriteAsync((short)0, NpgsqlDbType.Smallint, _cancellation);
                    await writer.WriteAsync(now, NpgsqlDbType.TimestampTz, _cancellation);
                    await writer.WriteAsync((short)0, NpgsqlDbType.Smallint, _cancellation);
                }

                await writer.CompleteAsync(_cancellation);
            }

            var notify = new NpgsqlCommand("SELECT pg_notify($1, $2)", connection)
            {
                Parameters = { new NpgsqlParameter<string> { TypedValue = "boundedwork_raw" }, new NpgsqlParameter<string> { TypedValue = ConsumerNode.QueueName } },
            };
            await using (notify)
            {
                await notify.ExecuteNonQueryAsync(_cancellation);
            }
        }
    }

    /// <summary>
    /// The drain shape, the library against a hand-written reference (<see cref="ReferenceConsumer"/>): each side runs
    /// <see cref="Settings.DrainRounds"/> times with <paramref name="consumerCount"/> consumer processes, alternating
    /// (which side goes first alternates too, so a drift of the machine falls on both alike), each run on a fresh schema
    /// (see <see cref="DrainOnceAsync"/>). Returns each side's median run as a row, and keeps both for the comparison table.
    /// </summary>
    private async Task<IReadOnlyList<Row>> DrainComparisonAsync(int consumerCount, double? inMemoryRate)
    {
        var rounds = _settings.DrainRounds;
        Progress($"drain: {_settings.DrainItems} items bulk-inserted, then drained by {consumerCount} consumer process(es) x {_settings.Workers} workers, "
            + $"{ClaimsLabel()}; the library against the hand-written reference, alternating {rounds} times");
        var library = new List<DrainRun>();
        var reference = new List<DrainRun>();
        var bounded = new List<DrainRun>();
        DrainSide[] sides = _settings.DrainBoundedReference ? [DrainSide.Library, DrainSide.Reference, DrainSide.BoundedReference] : [DrainSide.Library, DrainSide.Reference];
        for (var round = 0; round < rounds; round++)
        {
            // Which side goes first rotates, so a drift of the machine falls on every side alike.
            for (var turn = 0; turn < sides.Length; turn++)
            {
                var side = sides[(round + turn) % sides.Length];
                var run = await DrainOnceAsync(consumerCount, round, side);
                (side switch { DrainSide.Library => library, DrainSide.Reference => reference, _ => bounded }).Add(run);
            }
        }

        static DrainRun Median(List<DrainRun> runs) => runs.OrderBy(r => r.Rate).ElementAt(runs.Count / 2);
        var (lib, refer) = (Median(library), Median(reference));
        var boundedMedian = bounded.Count > 0 ? Median(bounded) : null;
        _drainComparisons.Add((consumerCount, lib, refer, boundedMedian));
        var counted = library.Concat(reference).Concat(bounded).All(r => r.Counted);
        _notes.Add($"Drain, {consumerCount} consumer process(es): median of {rounds} alternating round(s) each, library / reference {Format(lib.Rate / refer.Rate, "0.00")}x"
            + (boundedMedian is null ? "" : $", library / bounded reference {Format(lib.Rate / boundedMedian.Rate, "0.00")}x")
            + $"; items/s per round: library {string.Join(", ", library.Select(r => Format(r.Rate, "#,0")))}; reference {string.Join(", ", reference.Select(r => Format(r.Rate, "#,0")))}"
            + (boundedMedian is null ? "" : $"; bounded reference {string.Join(", ", bounded.Select(r => Format(r.Rate, "#,0")))}")
            + "; " + (counted ? "every run: every item completed, one delivery and one handler run each" : "a run miscounted: see its note")
            + $"; items held at once per process (claimed, outcome not yet written): library at most {_settings.Workers * _settings.DrainLibraryClaims} (its bound, workers × claims per worker), "
            + $"reference up to {string.Join(", ", reference.Select(r => Format(r.MaxHeld, "#,0")))} (measured; nothing bounds it but its channel)"
            + (boundedMedian is null ? "." : $", bounded reference up to {string.Join(", ", bounded.Select(r => Format(r.MaxHeld, "#,0")))} (measured; its bound {_settings.Workers * _settings.DrainClaimsPerWorker})."));

        var shape = $"{consumerCount} × {_settings.Workers}, {ClaimsLabel()}";
        Row ToRow(string name, DrainRun run) => new(name, shape, _settings.DrainItems)
        {
            EnqueueRate = run.InsertRate,
            HandledRate = run.Rate,
            Ratio = inMemoryRate is { } r ? run.Rate / r : null,
            RowsCompletedAfter = run.RowsCompletedAfter,
            Cpu = $"– / {Format(run.ConsumerCpu.TotalMicroseconds / _settings.DrainItems, "0.0")} / {Format(run.ServerCpu.TotalMicroseconds / _settings.DrainItems, "0.0")}",
            Counts = run.Counts,
        };
        return
        [
            ToRow("PostgreSQL, bulk-inserted then drained", lib),
            ToRow("reference (Npgsql only, no library), bulk-inserted then drained", refer),
            .. boundedMedian is null ? Array.Empty<Row>() : [ToRow("bounded reference (Npgsql only, holds at most workers × claims per worker), bulk-inserted then drained", boundedMedian)],
        ];
    }

    /// <summary>The drain's claims per worker, as the tables show them: the library's too when it differs.</summary>
    private string ClaimsLabel() => _settings.DrainLibraryClaims == _settings.DrainClaimsPerWorker
        ? $"{_settings.DrainClaimsPerWorker} claims/worker"
        : $"{_settings.DrainClaimsPerWorker} claims/worker (library {_settings.DrainLibraryClaims})";

    /// <summary>
    /// One drain: <see cref="Settings.DrainItems"/> items bulk-inserted with the library's <c>EnqueueManyAsync</c>
    /// (statements of <see cref="Settings.BulkBatch"/>) in one transaction into a fresh schema (the library's, migrated
    /// by the producers' host) while the consumer processes wait, ready; its commit makes them visible at once and wakes
    /// every consumer; the rate is the items over the time from that commit to the last handler's end. A warm-up drain
    /// comes first. The consumers are the library's nodes or, with <paramref name="reference"/>, the hand-written
    /// reference, both with <see cref="Settings.Workers"/> workers and claims of up to workers ×
    /// <see cref="Settings.DrainClaimsPerWorker"/>; handlers do nothing. The schema is dropped afterwards.
    /// </summary>
    private async Task<DrainRun> DrainOnceAsync(int consumerCount, int round, DrainSide drainSide)
    {
        var reference = drainSide != DrainSide.Library;
        var side = drainSide switch { DrainSide.Library => "library", DrainSide.Reference => "reference", _ => "bounded reference" };
        var schema = string.Create(CultureInfo.InvariantCulture, $"bench_drain_c{consumerCount}_{drainSide switch { DrainSide.Library => "lib", DrainSide.Reference => "ref", _ => "refb" }}_{round}");
        var what = $"drain, {consumerCount} consumer(s), {side}, round {round + 1}";
        var items = _settings.DrainItems;
        Progress(what);
        var host = await StartProducerHostAsync(schema);
        List<ConsumerProcess> consumers = [];
        try
        {
            var claims = (reference ? _settings.DrainClaimsPerWorker : _settings.DrainLibraryClaims).ToString(CultureInfo.InvariantCulture);
            consumers = reference
                ? await ConsumerProcess.StartManyAsync(consumerCount,
                    [.. ConsumerArguments(schema), "--claims-per-worker", claims, "--channel", "boundedwork." + schema, .. drainSide == DrainSide.BoundedReference ? ["--bounded"] : Array.Empty<string>()],
                    _cancellation, verb: "reference-consumer")
                : await ConsumerProcess.StartManyAsync(consumerCount, [.. ConsumerArguments(schema), "--claims-per-worker", claims], _cancellation);
            var queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<BenchItem>>();
            Func<long> count = () => consumers.Sum(c => c.Count);
            var warmUp = Math.Min(Math.Max(_settings.WarmUpItems, 1000), items);
            await InsertInOneTransactionAsync(queue, 0, warmUp, resetAtCommit: false);
            await WaitHandledAsync(count, warmUp, what + " (warm-up)", () => DescribeTableAsync(schema));
            await Task.Delay(TimeSpan.FromMilliseconds(300), _cancellation); // every node reports its CPU time after the warm-up

            var consumerCpu = Sum(consumers.Select(c => c.Cpu));
            var (insertRate, committed, serverCpu) = await InsertInOneTransactionAsync(queue, warmUp, items, resetAtCommit: true);
            await WaitHandledAsync(count, warmUp + items, what, () => DescribeTableAsync(schema));
            var ended = consumers.Max(c => c.LastEnded);
            var serverUsed = ServerCpu.Read(Server.DataDirectory) - serverCpu;
            var counts = await StatementCounts.ReadAsync(Database, _cancellation);
            var completed = await WaitRowsCompletedAsync(schema, warmUp + items);
            await Task.Delay(TimeSpan.FromMilliseconds(200), _cancellation); // the last CPU reports
            var consumersUsed = Sum(consumers.Select(c => c.Cpu)) - consumerCpu;
            var counted = await CheckDeliveriesAsync(schema, warmUp + items, consumers.Sum(c => c.Count), what);
            await PrintStatementsAsync(what, items);
            return new DrainRun(Rate(items, committed, ended), insertRate, Milliseconds(ended, completed), consumersUsed, serverUsed, counts, counted)
            {
                MaxHeld = reference ? consumers.Max(c => c.MaxHeld) : _settings.Workers * _settings.DrainLibraryClaims,
            };
        }
        finally
        {
            await StopConsumersAsync(consumers);
            await StopHostAsync(host);
            if (!_cancellation.IsCancellationRequested)
            {
                try
                {
                    await ScalarAsync<int>($"DROP SCHEMA {schema} CASCADE; SELECT 1"); // 200,000 rows per run add up
                }
                catch (NpgsqlException ex)
                {
                    Progress($"could not drop {schema}: {ex.Message}");
                }
            }
        }
    }

    /// <summary>One drain's measurements: items/s (commit to the last handler's end), the insert's rate, the outcome writer's lag, CPU, what the server ran, and whether every item was counted.</summary>
    /// <summary>The sides of the drain comparison.</summary>
    private enum DrainSide
    {
        Library,
        Reference,
        BoundedReference,
    }

    private sealed record DrainRun(double Rate, double InsertRate, double RowsCompletedAfter, TimeSpan ConsumerCpu, TimeSpan ServerCpu, StatementCounts Counts, bool Counted)
    {
        /// <summary>Gets the most items one consumer held at once (claimed, outcome not yet written): measured for the reference, the bound (workers × claims per worker) for the library.</summary>
        public long MaxHeld { get; init; }
    }

    /// <summary>
    /// Inserts items <paramref name="first"/> .. <paramref name="first"/> + <paramref name="count"/> - 1 with bulk
    /// statements in one transaction, and commits; returns the insert rate (commit included), when the commit returned,
    /// and the server's CPU time read just before the commit.
    /// </summary>
    private async Task<(double Rate, long Committed, TimeSpan ServerCpu)> InsertInOneTransactionAsync(IPostgreSqlWorkQueue<BenchItem> queue, int first, int count, bool resetAtCommit)
    {
        var connection = await Database.OpenConnectionAsync(_cancellation);
        await using (connection)
        {
            var start = Stopwatch.GetTimestamp();
            var transaction = await connection.BeginTransactionAsync(_cancellation);
            await using (transaction)
            {
                for (var from = first; from < first + count; from += _settings.BulkBatch)
                {
                    var size = Math.Min(_settings.BulkBatch, first + count - from);
                    await queue.EnqueueManyAsync(Enumerable.Range(from, size).Select(n => new BenchItem(n)), transaction, _cancellation);
                }

                if (resetAtCommit)
                {
                    await ResetStatementsAsync();
                }

                var serverCpu = ServerCpu.Read(Server.DataDirectory);
                await transaction.CommitAsync(_cancellation);
                var committed = Stopwatch.GetTimestamp();
                return (Rate(count, start, committed), committed, serverCpu);
            }
        }
    }

    /// <summary>
    /// The drain comparison: per consumer count, each side's median run, the ratio of their rates, and per item what
    /// each cost: statements (each one round trip), server CPU, the consumers' CPU, and the wall time per item (times
    /// the cores, the CPU time there was; what is left over was spent waiting, or by other processes).
    /// </summary>
    private string RenderDrainComparison()
    {
        var text = new StringBuilder();
        text.AppendLine("| drain, library against the hand-written reference (medians) | consumer processes × workers | library items/s | reference items/s | library / reference | bounded reference items/s | library / bounded reference | round trips per item: library / reference | server CPU µs/item: library / reference | consumer CPU µs/item: library / reference | wall µs/item: library / reference |");
        text.AppendLine("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        var items = (double)_settings.DrainItems;
        foreach (var (consumers, library, reference, bounded) in _drainComparisons)
        {
            string Pair(Func<DrainRun, double> value, string format) => $"{Format(value(library), format)} / {Format(value(reference), format)}";
            text.AppendLine(CultureInfo.InvariantCulture,
                $"| {_settings.DrainItems} items, {_settings.DrainRounds} round(s) each | {consumers} × {_settings.Workers}, {ClaimsLabel()} | "
                + $"{Format(library.Rate, "#,0")} | {Format(reference.Rate, "#,0")} | {Format(library.Rate / reference.Rate, "0.00")}x | "
                + $"{(bounded is null ? "–" : Format(bounded.Rate, "#,0"))} | {(bounded is null ? "–" : Format(library.Rate / bounded.Rate, "0.00") + "x")} | "
                + $"{Pair(r => r.Counts.RoundTrips / items, "0.0000")} | {Pair(r => r.ServerCpu.TotalMicroseconds / items, "0.0")} | "
                + $"{Pair(r => r.ConsumerCpu.TotalMicroseconds / items, "0.0")} | {Pair(r => 1_000_000 / r.Rate, "0.0")} |");
        }

        return text.ToString();
    }
}
