using System.Diagnostics;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>
/// The fleet-wide promise under failure: three consumer processes run a one-second durable schedule for about two
/// minutes while nodes are SIGKILLed and replaced and the database restarts. The handler writes to witness tables of
/// the test's own: every tick is enqueued once, none is missed (every outage is shorter than the misfire threshold),
/// and each tick's effect happens once.
/// </summary>
public sealed class ScheduleProofTests
{
    /// <summary>How long the schedule runs; <c>BOUNDEDWORK_SCHEDULE_PROOF_SECONDS</c> changes it.</summary>
    private static readonly int Seconds = int.TryParse(Environment.GetEnvironmentVariable("BOUNDEDWORK_SCHEDULE_PROOF_SECONDS"), out var s) ? s : 120;

    [Fact]
    public async Task ThreeProcesses_OneSecondSchedule_UnderSigkillAndADatabaseRestart_EachTickEnqueuedOnceAndItsEffectOnce()
    {
        await using var server = await PostgresServer.StartAsync();
        const string schema = "proof";
        await ExecuteAsync(server, $"""
            CREATE SCHEMA {schema};
            CREATE TABLE {schema}.tick_runs (scheduled_at timestamptz NOT NULL, item_id bigint NOT NULL, attempt integer NOT NULL, pid integer NOT NULL);
            CREATE TABLE {schema}.tick_effects (scheduled_at timestamptz PRIMARY KEY, item_id bigint NOT NULL);
            """);
        var lease = TimeSpan.FromSeconds(3);
        Task<ConsumerProcess> Start() => ConsumerProcess.StartAsync(server.ConnectionString, schema, workers: 2, TimeSpan.Zero, lease, mode: "schedule");
        var nodes = new List<ConsumerProcess> { await Start(), await Start(), await Start() };
        var clock = Stopwatch.StartNew();
        try
        {
            // Gated on the witness's progress, not on sleeps: each failure happens once enough ticks have run.
            long Effects() => Scalar<long>(server, $"SELECT count(*) FROM {schema}.tick_effects");
            async Task UntilAsync(long effects)
            {
                try
                {
                    await DurableQueueTests.WaitAsync(() => Effects() >= effects, $"{effects} ticks ran");
                }
                catch (Exception ex) when (ex is not OutOfMemoryException)
                {
                    Assert.Fail(ex.Message + "\n" + string.Join("\n", nodes.Select(n => n.Output[Math.Max(0, n.Output.Length - 2000)..])));
                }
            }
            var step = Math.Max(Seconds / 6, 3);

            await UntilAsync(step);
            await nodes[0].KillAsync(); // SIGKILL mid-run, replaced at once
            nodes[0] = await Start();

            await UntilAsync(2 * step);
            await server.RestartAsync();
            NpgsqlConnection.ClearAllPools();

            await UntilAsync(3 * step);
            await nodes[1].KillAsync();
            await nodes[2].KillAsync(); // two at once: one node is left alone for a while
            await UntilAsync(4 * step);
            nodes[1] = await Start();
            nodes[2] = await Start();

            await DurableQueueTests.WaitAsync(() => clock.Elapsed.TotalSeconds >= Seconds && Effects() >= 5 * step, "the schedule ran its time");

            // Stop the schedule, then let the fleet finish every enqueued tick.
            await ExecuteAsync(server, $"UPDATE {schema}.schedules SET paused = true WHERE name = 'pulse'");
            await DurableQueueTests.WaitAsync(() => Scalar<long>(server, $"SELECT count(*) FROM {schema}.items WHERE queue = 'ticks' AND state <> 2") == 0, "every enqueued tick completed");
        }
        finally
        {
            foreach (var node in nodes)
            {
                await node.DisposeAsync();
            }
        }

        var items = Scalar<long>(server, $"SELECT count(*) FROM {schema}.items WHERE queue = 'ticks'");
        var first = Scalar<DateTime>(server, $"SELECT min((payload->>'ScheduledAt')::timestamptz) FROM {schema}.items");
        var last = Scalar<DateTime>(server, $"SELECT max((payload->>'ScheduledAt')::timestamptz) FROM {schema}.items");

        // Enqueued once: one item per tick, and every second from the first tick to the last is there (none missed).
        Assert.Equal(items, Scalar<long>(server, $"SELECT count(DISTINCT payload->>'ScheduledAt') FROM {schema}.items"));
        Assert.Equal((long)(last - first).TotalSeconds + 1, items);
        Assert.Equal(0L, Scalar<long>(server, $"SELECT missed FROM {schema}.schedules WHERE name = 'pulse'"));
        Assert.Equal(items, Scalar<long>(server, $"SELECT enqueued FROM {schema}.schedules WHERE name = 'pulse'"));
        Assert.True(items >= Seconds - 10, $"{items} ticks in {Seconds} s");

        // Run once: each tick's effect once, by the item that holds the tick; a second run only for an item delivered again after a kill.
        Assert.Equal(items, Scalar<long>(server, $"SELECT count(*) FROM {schema}.tick_effects e JOIN {schema}.items i ON i.id = e.item_id AND (i.payload->>'ScheduledAt')::timestamptz = e.scheduled_at"));
        Assert.Equal(0L, Scalar<long>(server, $"""
            SELECT count(*) FROM (SELECT item_id FROM {schema}.tick_runs GROUP BY item_id HAVING count(*) > 1 AND max(attempt) = 1) repeated
            """));
    }

    private static async Task ExecuteAsync(PostgresServer server, string sql)
    {
        await using var connection = new NpgsqlConnection(server.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(sql, connection);
        await command.ExecuteNonQueryAsync();
    }

    private static T Scalar<T>(PostgresServer server, string sql)
    {
        using var connection = new NpgsqlConnection(server.ConnectionString);
        connection.Open();
        using var command = new NpgsqlCommand(sql, connection);
        return (T)command.ExecuteScalar()!;
    }
}
