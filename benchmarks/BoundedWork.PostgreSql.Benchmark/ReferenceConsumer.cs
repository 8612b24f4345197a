using System.Diagnostics;
using System.Text.Json;
using System.Threading.Channels;
using Npgsql;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The <c>reference-consumer</c> verb: what a user could write in an afternoon with Npgsql alone, as the bar the
/// library's drain is measured against. It uses no BoundedWork type: it reads and writes the library's table directly
/// (a schema the library migrated, items the library enqueued). One process is one consumer:
/// <list type="bullet">
/// <item><description>a claim loop claims up to workers × claims-per-worker ready items in one statement
/// (<c>UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING id, payload</c>, in the library's claim
/// order, with a lease) and writes them into a channel of that capacity, so one batch waits while the next is
/// claimed; when a claim finds nothing it waits for a notification on the library's wake-up channel (LISTEN), or
/// 1 s at most (a poll);</description></item>
/// <item><description>W worker tasks read the channel, run the handler (the payload deserialized as the library does,
/// then recorded, as the library's benchmark handler does), and pass the item's id on;</description></item>
/// <item><description>an outcome writer marks every id it has been given since its last write completed, in one
/// statement (<c>UPDATE ... SET state = 2 WHERE id = ANY($1)</c>).</description></item>
/// </list>
/// Nothing bounds what it holds (items claimed whose outcomes are not written yet) but the channel: up to two claims'
/// worth and the outcomes not yet written. With <c>--bounded</c> it holds at most workers × claims-per-worker, the
/// library's node's bound: a claim takes only the room that written outcomes freed (it waits for a write when there is none). It reports the most it held at once (<c>HELD n</c> every 100 ms), which the
/// driver prints beside the library's bound (workers × claims per worker per node).
/// At least once: an item is marked completed only after its handler ran; an item whose process died stays running
/// until its lease (5 minutes: the handlers are short, so there is no heartbeat) expires, and every 30 s the claim loop
/// makes such items ready again. A failed statement is logged on standard error and tried again 100 ms later. Npgsql
/// prepares the statements (auto-prepare) and does not reset a connection returned to its pool, as the library's data
/// source is set up. The protocol with the driver is the
/// <c>consumer</c> verb's: <c>READY</c> once listening, <c>COUNT</c> every 100 ms, <c>STOP</c>, <c>STOPPED</c>.
/// </summary>
internal static class ReferenceConsumer
{
    private static readonly TimeSpan Lease = TimeSpan.FromMinutes(5);
    private static readonly TimeSpan PollInterval = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan ReapInterval = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan RetryDelay = TimeSpan.FromMilliseconds(100);

    public static async Task<int> RunAsync(Arguments arguments)
    {
        var connectionString = arguments.Required("connection");
        var schema = arguments.Required("schema");
        var channelName = arguments.Required("channel");
        var workers = arguments.Int("workers", 2, 1, 64);
        var batch = workers * arguments.Int("claims-per-worker", 2, 1, 100);
        var bounded = arguments.Flag("bounded"); // hold at most `batch` items until their outcomes are written, as the library's node does
        arguments.CheckAllUsed();

        var table = "\"" + schema + "\".items";
        var claimSql = $"""
            /* reference claim */
            UPDATE {table} SET state = 1, attempts = attempts + 1, lease_until = now() + $3
            WHERE id IN (
                SELECT id FROM {table}
                WHERE queue = $1 AND state = 0 AND run_at <= now()
                ORDER BY priority DESC, run_at, id
                LIMIT $2
                FOR UPDATE SKIP LOCKED)
            RETURNING id, payload
            """;
        var completeSql = $"/* reference outcomes */ UPDATE {table} SET state = 2, finished_at = now() WHERE id = ANY($1)";
        var reapSql = $"/* reference reaper */ UPDATE {table} SET state = 0 WHERE queue = $1 AND state = 1 AND lease_until < now()";

        var builder = new NpgsqlDataSourceBuilder(connectionString);
        builder.ConnectionStringBuilder.NoResetOnClose = true;
        builder.ConnectionStringBuilder.MaxAutoPrepare = 8;
        builder.ConnectionStringBuilder.AutoPrepareMinUsages = 2;
        await using var dataSource = builder.Build();

        var recorder = new Recorder(recordStarts: false);
        long held = 0, maxHeld = 0; // items claimed whose outcome is not written yet, and the most at once
        using var roomFreed = new SemaphoreSlim(0, 1);
        void Held(long change)
        {
            var now = Interlocked.Add(ref held, change);
            for (var max = Interlocked.Read(ref maxHeld); now > max; max = Interlocked.Read(ref maxHeld))
            {
                if (Interlocked.CompareExchange(ref maxHeld, now, max) == max)
                {
                    break;
                }
            }
        }

        var claimed = Channel.CreateBounded<(long Id, string Payload)>(new BoundedChannelOptions(batch) { SingleWriter = true });
        var handled = Channel.CreateUnbounded<long>(new UnboundedChannelOptions { SingleReader = true });
        using var stop = new CancellationTokenSource();
        using var wake = new SemaphoreSlim(0, 1);
        void Wake()
        {
            try
            {
                wake.Release();
            }
            catch (SemaphoreFullException)
            {
                // Already woken.
            }
        }

        // The wake-up: the library's producers notify this channel when their enqueue commits.
        var listener = await dataSource.OpenConnectionAsync();
        await using var listening = listener;
        listener.Notification += (_, _) => Wake();
        await using (var listen = new NpgsqlCommand($"LISTEN \"{channelName}\"", listener))
        {
            await listen.ExecuteNonQueryAsync();
        }

        var listenLoop = Task.Run(async () =>
        {
            try
            {
                while (true)
                {
                    await listener.WaitAsync(stop.Token);
                }
            }
            catch (OperationCanceledException)
            {
            }
        });

        async Task<T> RetryAsync<T>(string what, Func<NpgsqlConnection, Task<T>> statement)
        {
            while (true)
            {
                try
                {
                    var connection = await dataSource.OpenConnectionAsync();
                    await using (connection)
                    {
                        return await statement(connection);
                    }
                }
                catch (NpgsqlException ex)
                {
                    Console.Error.WriteLine($"{what} failed, trying again: {ex.Message}");
                    await Task.Delay(RetryDelay);
                }
            }
        }

        var claimLoop = Task.Run(async () =>
        {
            var nextReap = Stopwatch.GetTimestamp();
            while (!stop.IsCancellationRequested)
            {
                if (Stopwatch.GetTimestamp() >= nextReap)
                {
                    await RetryAsync("reaping", async connection =>
                    {
                        await using var reap = new NpgsqlCommand(reapSql, connection) { Parameters = { new NpgsqlParameter<string> { TypedValue = ConsumerNode.QueueName } } };
                        return await reap.ExecuteNonQueryAsync();
                    });
                    nextReap = Stopwatch.GetTimestamp() + (long)(ReapInterval.TotalSeconds * Stopwatch.Frequency);
                }

                var want = batch;
                if (bounded)
                {
                    // Bounded like the library's node: claim only the room that written outcomes freed.
                    while (Interlocked.Read(ref held) >= batch && !stop.IsCancellationRequested)
                    {
                        try
                        {
                            await roomFreed.WaitAsync(PollInterval, stop.Token);
                        }
                        catch (OperationCanceledException)
                        {
                        }
                    }

                    want = (int)(batch - Interlocked.Read(ref held));
                    if (want <= 0)
                    {
                        continue; // stopping
                    }
                }

                var items = await RetryAsync("claim", async connection =>
                {
                    await using var claim = new NpgsqlCommand(claimSql, connection)
                    {
                        Parameters =
                        {
                            new NpgsqlParameter<string> { TypedValue = ConsumerNode.QueueName },
                            new NpgsqlParameter<int> { TypedValue = want },
                            new NpgsqlParameter<TimeSpan> { TypedValue = Lease },
                        },
                    };
                    var rows = new List<(long Id, string Payload)>(batch);
                    await using var reader = await claim.ExecuteReaderAsync();
                    while (await reader.ReadAsync())
                    {
                        rows.Add((reader.GetInt64(0), reader.GetString(1)));
                    }

                    return rows;
                });
                Held(items.Count);
                foreach (var item in items)
                {
                    await claimed.Writer.WriteAsync(item); // waits while a whole batch is queued
                }

                if (items.Count == 0)
                {
                    try
                    {
                        await wake.WaitAsync(PollInterval, stop.Token);
                    }
                    catch (OperationCanceledException)
                    {
                    }
                }
            }

            claimed.Writer.Complete();
        });

        var workerLoops = Enumerable.Range(0, workers).Select(_ => Task.Run(async () =>
        {
            while (await claimed.Reader.WaitToReadAsync())
            {
                while (claimed.Reader.TryRead(out var item))
                {
                    // The handler: the payload as the library deserializes it, then what the benchmark's handler records.
                    var started = Stopwatch.GetTimestamp();
                    var value = JsonSerializer.Deserialize(item.Payload, BenchJson.Default.BenchItem)
                        ?? throw new InvalidOperationException($"Item {item.Id} has a null payload.");
                    recorder.Handled(value.Number, started);
                    handled.Writer.TryWrite(item.Id);
                }
            }
        })).ToArray();
        var workersDone = Task.WhenAll(workerLoops).ContinueWith(_ => handled.Writer.Complete(), TaskScheduler.Default);

        var writer = Task.Run(async () =>
        {
            var ids = new List<long>();
            while (await handled.Reader.WaitToReadAsync())
            {
                while (handled.Reader.TryRead(out var id))
                {
                    ids.Add(id);
                }

                var batchIds = ids.ToArray();
                await RetryAsync("outcome write", async connection =>
                {
                    await using var complete = new NpgsqlCommand(completeSql, connection) { Parameters = { new NpgsqlParameter<long[]> { TypedValue = batchIds } } };
                    return await complete.ExecuteNonQueryAsync();
                });
                Held(-batchIds.Length);
                if (bounded && roomFreed.CurrentCount == 0)
                {
                    try
                    {
                        roomFreed.Release();
                    }
                    catch (SemaphoreFullException)
                    {
                        // Already signalled.
                    }
                }

                ids.Clear();
            }
        });

        var output = Console.Out;
        lock (output)
        {
            output.WriteLine("READY");
            output.Flush();
        }

        var reporter = Task.Run(() => ConsumerNode.ReportAsync(recorder, output, stop.Token));
        var heldReporter = Task.Run(async () =>
        {
            try
            {
                while (true)
                {
                    await Task.Delay(TimeSpan.FromMilliseconds(100), stop.Token);
                    lock (output)
                    {
                        output.WriteLine(string.Create(System.Globalization.CultureInfo.InvariantCulture, $"HELD {Interlocked.Read(ref maxHeld)}"));
                        output.Flush();
                    }
                }
            }
            catch (OperationCanceledException)
            {
            }
        });
        var input = new Thread(() =>
        {
            while (Console.In.ReadLine() is { } line && line != "STOP")
            {
            }

            stop.Cancel();
        })
        { IsBackground = true, Name = "stdin" };
        input.Start();

        await reporter;
        await heldReporter;
        await Task.WhenAll(claimLoop, workersDone, writer, listenLoop);
        await Task.WhenAll(workerLoops); // their failures, if any
        var loaded = AppDomain.CurrentDomain.GetAssemblies().Select(a => a.GetName().Name)
            .Where(name => name is "BoundedWork" || (name is not null && name.StartsWith("BoundedWork.", StringComparison.Ordinal) && name != typeof(ReferenceConsumer).Assembly.GetName().Name))
            .ToList();
        if (loaded.Count > 0)
        {
            Console.Error.WriteLine($"the reference consumer loaded the library: {string.Join(", ", loaded)}");
        }

        ConsumerNode.Report(recorder, output);
        lock (output)
        {
            output.WriteLine("STOPPED");
            output.Flush();
        }

        return 0;
    }
}
